/** Tile and entry bundle paths and bundles, with c2sp.org/tlog-tiles's own examples. */
import { describe, expect, it } from 'vitest';
import { entriesPath, entryBundle, parseEntryBundle, parseTilePath, tilePath } from './tile-path.js';

describe('tile paths', () => {
  it("encodes the spec's example index 1234067 as x001/x234/067", () => {
    expect(tilePath(0, 1234067)).toBe('tile/0/x001/x234/067');
    expect(tilePath(0, 1234067, 3)).toBe('tile/0/x001/x234/067.p/3');
    expect(entriesPath(1234067)).toBe('tile/entries/x001/x234/067');
    expect(entriesPath(1234067, 255)).toBe('tile/entries/x001/x234/067.p/255');
  });

  it('small and boundary indices', () => {
    expect(tilePath(0, 0)).toBe('tile/0/000');
    expect(tilePath(1, 999)).toBe('tile/1/999');
    expect(tilePath(2, 1000)).toBe('tile/2/x001/000');
    expect(tilePath(63, 1_000_000, 256)).toBe('tile/63/x001/x000/000');
    expect(entriesPath(5, 1)).toBe('tile/entries/005.p/1');
  });

  it('rejects bad arguments', () => {
    expect(() => tilePath(64, 0)).toThrow(RangeError);
    expect(() => tilePath(-1, 0)).toThrow(RangeError);
    expect(() => tilePath(0, -1)).toThrow(RangeError);
    expect(() => tilePath(0, 1.5)).toThrow(RangeError);
    expect(() => tilePath(0, 0, 0)).toThrow(RangeError);
    expect(() => tilePath(0, 0, 257)).toThrow(RangeError);
    expect(() => entriesPath(0, 2.5)).toThrow(RangeError);
  });

  it('parseTilePath inverts tilePath and entriesPath', () => {
    for (const index of [0, 1, 999, 1000, 1234067, 9_007_199_254_740_991]) {
      for (const width of [undefined, 1, 3, 255]) {
        for (const level of [0, 1, 63]) {
          const p = parseTilePath(tilePath(level, index, width));
          expect(p).toEqual(width === undefined ? { kind: 'hash', level, index } : { kind: 'hash', level, index, width });
        }
        const e = parseTilePath(entriesPath(index, width));
        expect(e).toEqual(width === undefined ? { kind: 'entries', index } : { kind: 'entries', index, width });
      }
    }
    expect(parseTilePath('tile/0/x001/x234/067.p/3')).toEqual({ kind: 'hash', level: 0, index: 1234067, width: 3 });
  });

  it('parseTilePath returns null for anything malformed', () => {
    for (const bad of [
      '',
      'tile',
      'tile/0',
      'tile/entries',
      '/tile/0/000',
      'tiles/0/000',
      'tile/00/000', // level with a leading zero
      'tile/64/000',
      'tile/-1/000',
      'tile/a/000',
      'tile/0/00',
      'tile/0/0000',
      'tile/0/x000', // last element has an x
      'tile/0/001/002', // non-last element without x
      'tile/0/x000/001', // non-canonical leading zero group
      'tile/0/000.p/0',
      'tile/0/000.p/256',
      'tile/0/000.p/03',
      'tile/0/000.p/',
      'tile/0/000.p',
      'tile/0/000.p/3/4',
      'tile/0/000/',
      'tile/0/.p/3',
      'tile/entries/x1/000',
      'tile/8/0/x001/x234/067', // Go's sumdb layout with a height element
      'tile/0/x999/x999/x999/x999/x999/999', // beyond 2^53
    ]) {
      expect(parseTilePath(bad), bad).toBeNull();
    }
  });
});

describe('entry bundles', () => {
  it('length-prefixes each entry big-endian and parses back', () => {
    const entries = [Buffer.from('a'), Buffer.alloc(0), Buffer.alloc(300, 7), Buffer.alloc(65535, 1)];
    const b = entryBundle(entries);
    expect(b.subarray(0, 3)).toEqual(Buffer.from([0x00, 0x01, 0x61]));
    expect(b.subarray(3, 5)).toEqual(Buffer.from([0x00, 0x00]));
    expect(b.subarray(5, 7)).toEqual(Buffer.from([0x01, 0x2c]));
    expect(b.length).toBe(2 * 4 + 1 + 300 + 65535);
    expect(parseEntryBundle(b)).toEqual(entries);
    expect(parseEntryBundle(new Uint8Array())).toEqual([]);
  });

  it('rejects oversized entries and truncated bundles', () => {
    expect(() => entryBundle([Buffer.alloc(65536)])).toThrow(RangeError);
    const b = entryBundle([Buffer.from('hello'), Buffer.from('world')]);
    expect(() => parseEntryBundle(b.subarray(0, b.length - 1))).toThrow(/truncated/);
    expect(() => parseEntryBundle(b.subarray(0, 8))).toThrow(/truncated/);
    expect(() => parseEntryBundle(Buffer.from([0x00]))).toThrow(/truncated/);
  });
});
