/** Checkpoint bodies: the spec's example round-trips, and every rule of c2sp.org/tlog-checkpoint is enforced. */
import { describe, expect, it } from 'vitest';
import { CheckpointError, formatCheckpoint, parseCheckpoint } from './checkpoint.js';

// The example of c2sp.org/tlog-checkpoint.
const EXAMPLE = 'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n';

describe('checkpoint', () => {
  it("parses and re-formats the spec's example", () => {
    const c = parseCheckpoint(EXAMPLE);
    expect(c.origin).toBe('example.com/behind-the-sofa');
    expect(c.size).toBe(20852163);
    expect(c.root.toString('base64')).toBe('CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=');
    expect(c.extensions).toEqual([]);
    expect(formatCheckpoint(c)).toBe(EXAMPLE);
  });

  it('keeps extension lines', () => {
    const body = `${EXAMPLE}ext one\nsecond: 2\n`;
    const c = parseCheckpoint(body);
    expect(c.extensions).toEqual(['ext one', 'second: 2']);
    expect(formatCheckpoint(c)).toBe(body);
  });

  it('the empty tree is size 0', () => {
    const root = Buffer.alloc(32, 7);
    expect(parseCheckpoint(formatCheckpoint({ origin: 'o', size: 0, root })).size).toBe(0);
  });

  it('rejects every malformed body', () => {
    const root = 'CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=';
    for (const bad of [
      EXAMPLE.slice(0, -1), // no final newline
      `\n1\n${root}\n`, // empty origin
      `o\n01\n${root}\n`, // leading zero
      `o\n-1\n${root}\n`,
      `o\n+1\n${root}\n`,
      `o\n1.0\n${root}\n`,
      `o\n 1\n${root}\n`,
      `o\n9007199254740992\n${root}\n`, // beyond 2^53 - 1
      `o\n1\n${root.slice(0, -1)}\n`, // bad base64
      `o\n1\n${Buffer.alloc(31).toString('base64')}\n`, // 31 bytes
      `o\n1\n${Buffer.alloc(33).toString('base64')}\n`,
      `o\n1\n${root.replace('/', '_')}\n`, // url-safe alphabet
      `o\n1\n`, // two lines
      `o\n1\n${root}\n\n`, // empty extension line
      `o\n1\n${root}\n\next\n`,
      `o\tx\n1\n${root}\n`, // control character
    ]) {
      expect(() => parseCheckpoint(bad), JSON.stringify(bad)).toThrow(CheckpointError);
    }
  });

  it('formatCheckpoint validates its input', () => {
    const root = Buffer.alloc(32);
    expect(() => formatCheckpoint({ origin: '', size: 1, root })).toThrow(/origin is empty/);
    expect(() => formatCheckpoint({ origin: 'a\nb', size: 1, root })).toThrow(/newline/);
    expect(() => formatCheckpoint({ origin: 'o', size: -1, root })).toThrow(/size/);
    expect(() => formatCheckpoint({ origin: 'o', size: 1.5, root })).toThrow(/size/);
    expect(() => formatCheckpoint({ origin: 'o', size: 1, root: Buffer.alloc(31) })).toThrow(/32 bytes/);
    expect(() => formatCheckpoint({ origin: 'o', size: 1, root, extensions: [''] })).toThrow(/extension/);
    expect(() => formatCheckpoint({ origin: 'o', size: 1, root, extensions: ['a\nb'] })).toThrow(/extension/);
  });
});
