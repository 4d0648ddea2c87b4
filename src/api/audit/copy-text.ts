/**
 * Reads PostgreSQL's `COPY ... TO STDOUT` text format from a byte stream, one row at a time
 * and with back-pressure: rows are lines, columns are separated by tabs, `\N` is NULL, and a
 * backslash escapes `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, `\v` (the only escapes PostgreSQL
 * writes in this format).
 */
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';

// eslint-disable-next-line no-control-regex
const NON_ASCII = /[^\x00-\x7f]/;

const ESCAPES: Record<string, string> = { '\\': '\\', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };

function unescapeCopy(s: string): string {
  return s.replace(/\\(.)/g, (_, c: string) => ESCAPES[c] ?? c);
}

/** Splits one COPY text line into its columns (null for `\N`). */
export function parseCopyLine(line: string, columns: number): Array<string | null> {
  const out: Array<string | null> = new Array(columns);
  let start = 0;
  for (let i = 0; i < columns; i++) {
    let end = line.indexOf('\t', start);
    if (end < 0 || i === columns - 1) end = line.length;
    const field = line.slice(start, end);
    out[i] = field === '\\N' ? null : field.includes('\\') ? unescapeCopy(field) : field;
    start = end + 1;
  }
  return out;
}

/**
 * Calls `onRow` for every row of a COPY text stream; resolves at the end of the stream.
 *
 * The stream is read in flowing mode with a synchronous handler, so chunks are handled as
 * they arrive and nothing accumulates (TCP holds the rest). Not `for await`: postgres.js
 * pauses its socket when the stream's buffer fills and resumes it only from the stream's
 * `_read`; when COPY ends while paused, the socket stays paused and the connection's next
 * query never gets an answer. `_read` is called once more at the end for that reason.
 */
export function forEachCopyRow(stream: Readable, columns: number, onRow: (row: Array<string | null>, ascii: boolean) => void): Promise<void> {
  const decoder = new StringDecoder('utf8');
  let rest = '';
  return new Promise<void>((resolve, reject) => {
    let failed = false;
    const fail = (e: unknown) => {
      if (failed) return;
      failed = true;
      reject(e);
    };
    stream.on('data', (chunk: Buffer) => {
      if (failed) return;
      try {
        const decoded = decoder.write(chunk);
        const text = rest + decoded;
        // As many characters as bytes: every byte is ASCII (PostgreSQL sends a row per message).
        const ascii = decoded.length === chunk.length && (rest.length === 0 || !NON_ASCII.test(rest));
        let start = 0;
        for (;;) {
          const nl = text.indexOf('\n', start);
          if (nl < 0) break;
          onRow(parseCopyLine(text.slice(start, nl), columns), ascii);
          start = nl + 1;
        }
        rest = text.slice(start);
      } catch (e) {
        fail(e);
      }
    });
    stream.once('error', fail);
    stream.once('end', () => {
      (stream as Readable & { _read?: (n: number) => void })._read?.(0);
      if (failed) return;
      try {
        rest += decoder.end();
        if (rest.length) onRow(parseCopyLine(rest, columns), !NON_ASCII.test(rest));
        resolve();
      } catch (e) {
        fail(e);
      }
    });
  });
}
