/** Pure unit tests: PostgreSQL's binary COPY format as verify reads it. */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { CopyBinaryReader, CopyFormatError, forEachCopyBinaryRow } from './copy-binary.js';

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

function int16(v: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeInt16BE(v);
  return b;
}
function int32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(v);
  return b;
}

/** Binary COPY data of `rows` (null: a NULL field), with an optional header extension. */
function copyData(rows: Array<Array<Buffer | string | null>>, ext = Buffer.alloc(0)): Buffer {
  const parts = [SIGNATURE, int32(0), int32(ext.length), ext];
  for (const r of rows) {
    parts.push(int16(r.length));
    for (const v of r) {
      if (v === null) parts.push(int32(-1));
      else {
        const b = typeof v === 'string' ? Buffer.from(v, 'utf8') : v;
        parts.push(int32(b.length), b);
      }
    }
  }
  parts.push(int16(-1));
  return Buffer.concat(parts);
}

/** The rows the reader gives for `chunks`, fields decoded as UTF-8 (null for NULL). */
function read(chunks: Buffer[], columns: number): Array<Array<string | null>> {
  const rows: Array<Array<string | null>> = [];
  const reader = new CopyBinaryReader(columns, (buf, f) => {
    const row: Array<string | null> = [];
    for (let i = 0; i < columns; i++) row.push(f[2 * i + 1] === -1 ? null : buf.toString('utf8', f[2 * i]!, f[2 * i]! + f[2 * i + 1]!));
    rows.push(row);
  });
  for (const c of chunks) reader.push(c);
  reader.end();
  return rows;
}

const ROWS = [
  ['1', 'é☃𝄞', null, ''],
  ['2', null, 'a\tb\\c\nd"', 'NULL'],
  ['3', 'x'.repeat(300), '\\N', '{"k": "v"}'],
];

describe('binary COPY reader', () => {
  it('gives every field, NULL apart from the empty string, in one chunk', () => {
    expect(read([copyData(ROWS)], 4)).toEqual(ROWS);
  });

  it('skips the header extension', () => {
    expect(read([copyData(ROWS, Buffer.from('extension bytes'))], 4)).toEqual(ROWS);
  });

  it('reads rows split at every byte, multi-byte characters and length words included', () => {
    const data = copyData(ROWS);
    for (let cut = 0; cut <= data.length; cut++) {
      expect(read([data.subarray(0, cut), data.subarray(cut)], 4)).toEqual(ROWS);
    }
    for (let a = 1; a < 60; a += 3) {
      for (let b = a; b < data.length; b += 17) {
        expect(read([data.subarray(0, a), data.subarray(a, b), data.subarray(b)], 4)).toEqual(ROWS);
      }
    }
  });

  it('reads the data one byte at a time', () => {
    const data = copyData(ROWS);
    expect(read([...data].map((b) => Buffer.from([b])), 4)).toEqual(ROWS);
  });

  it('reads rows from chunks that end on row boundaries (one row per chunk, as postgres.js sends them)', () => {
    const data = copyData(ROWS);
    const header = 19;
    const chunks = [data.subarray(0, header + 1), data.subarray(header + 1, 60), data.subarray(60)];
    expect(read(chunks, 4)).toEqual(ROWS);
  });

  it('reads ranges of larger buffers in place (pushRange), cut anywhere', () => {
    const data = copyData(ROWS);
    const framed = Buffer.concat([Buffer.from('junk before'), data, Buffer.from('after')]);
    const s = 11;
    for (let cut = 0; cut <= data.length; cut += 5) {
      const rows: Array<Array<string | null>> = [];
      const reader = new CopyBinaryReader(4, (buf, f) => {
        const row: Array<string | null> = [];
        for (let i = 0; i < 4; i++) row.push(f[2 * i + 1] === -1 ? null : buf.toString('utf8', f[2 * i]!, f[2 * i]! + f[2 * i + 1]!));
        rows.push(row);
      });
      reader.pushRange(framed, s, s + cut);
      reader.pushRange(framed, s + cut, s + data.length);
      reader.end();
      expect(rows).toEqual(ROWS);
    }
  });

  it('refuses bad data', () => {
    expect(() => read([Buffer.from('1\tx\n')], 2)).toThrow(CopyFormatError);
    expect(() => read([copyData([['a', 'b', 'c']])], 2)).toThrow(/3 fields, expected 2/);
    const data = copyData(ROWS);
    expect(() => read([data.subarray(0, data.length - 2)], 4)).toThrow(/ended inside a row/);
    expect(() => read([data.subarray(0, 10)], 4)).toThrow(/inside its header/);
    expect(() => read([data, Buffer.from('x')], 4)).toThrow(/after the end/);
    const withOids = Buffer.from(data);
    withOids.writeInt32BE(0x10000, 11);
    expect(() => read([withOids], 4)).toThrow(/OIDs/);
  });

  it('reads a stream to its end, and rejects one cut short', async () => {
    const data = copyData(ROWS);
    const chunks = [data.subarray(0, 25), data.subarray(25, 26), data.subarray(26)];
    const rows: number[] = [];
    await forEachCopyBinaryRow(Readable.from(chunks), 4, (buf, f) => rows.push(f[1]!));
    expect(rows).toEqual([1, 1, 1]);
    await expect(forEachCopyBinaryRow(Readable.from([data.subarray(0, 40)]), 4, () => {})).rejects.toThrow(/ended inside a row/);
    await expect(forEachCopyBinaryRow(Readable.from([data]), 4, () => {
      throw new Error('handler failed');
    })).rejects.toThrow('handler failed');
  });
});
