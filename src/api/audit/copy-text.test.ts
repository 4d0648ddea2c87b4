/** Pure unit tests: COPY text rows and PostgreSQL array literals as verify reads them. */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { forEachCopyRow, parseCopyLine } from './copy-text.js';
import { parsePgTextArray } from './verify.js';

describe('COPY text format', () => {
  it('splits columns, reads \\N as NULL and undoes escapes', () => {
    expect(parseCopyLine('1\t\\N\ta\\tb\\\\c\\nd\tlast', 4)).toEqual(['1', null, 'a\tb\\c\nd', 'last']);
  });
  it('reads rows split anywhere across chunks, multi-byte characters included', async () => {
    const text = Buffer.from('1\té☃𝄞\n2\t\\N\n3\tx\n');
    const chunks = [text.subarray(0, 4), text.subarray(4, 9), text.subarray(9)];
    const rows: Array<[Array<string | null>, boolean]> = [];
    await forEachCopyRow(Readable.from(chunks), 2, (r, ascii) => rows.push([r, ascii]));
    expect(rows.map((r) => r[0])).toEqual([['1', 'é☃𝄞'], ['2', null], ['3', 'x']]);
    expect(rows[0]![1]).toBe(false);
  });
});

describe('PostgreSQL text[] literals', () => {
  it('parses plain, quoted, escaped and NULL elements', () => {
    expect(parsePgTextArray('{}')).toEqual([]);
    expect(parsePgTextArray('{scd:a:b,scd:c:d}')).toEqual(['scd:a:b', 'scd:c:d']);
    expect(parsePgTextArray('{"a b","q\\"x","b\\\\s",NULL,"NULL",""}')).toEqual(['a b', 'q"x', 'b\\s', null, 'NULL', '']);
  });
});
