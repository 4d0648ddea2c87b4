/**
 * Reads PostgreSQL's binary COPY format (`COPY ... TO STDOUT WITH (FORMAT binary)`) from a
 * byte stream, one row at a time, without copying or decoding the fields: every row is
 * handed over as the Buffer that holds it and the offsets of its fields.
 *
 * The format: an 11-byte signature, a 32-bit flags word and a header extension (length +
 * bytes); then per row a 16-bit field count and, per field, a 32-bit length (-1 for NULL)
 * followed by that many bytes in the type's binary (send) form; a field count of -1 ends
 * the data. All integers are big-endian. Nothing needs unescaping, and no byte is ever
 * split from its field: rows cut anywhere by the transport are put together here.
 */
import type { Readable } from 'node:stream';

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/** Called for every row: field i is `buf[fields[2i], fields[2i] + fields[2i+1])`, or NULL when fields[2i+1] is -1. */
export type RowHandler = (buf: Buffer, fields: Int32Array) => void;

export class CopyFormatError extends Error {}

/** The big-endian signed 32-bit integer at `p` (COPY's field lengths and counts). */
export const int32 = (b: Uint8Array, p: number) => (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!;

/** The big-endian signed 64-bit integer at `p` as a number (an int8 such as chain_sequence; exact below 2^53). */
export const int64 = (b: Uint8Array, p: number) => int32(b, p) * 4294967296 + (int32(b, p + 4) >>> 0);

/**
 * Incremental parser: `push` the bytes as they come, `end` when there are no more. Rows are
 * parsed in place in the pushed chunk; only a row cut by a chunk boundary is copied (into a
 * buffer that grows to the largest such row, never more).
 */
export class CopyBinaryReader {
  /** [start, length] per field of the current row (length -1: NULL). */
  readonly fields: Int32Array;
  private carry: Buffer = Buffer.allocUnsafe(0);
  private carryLen = 0;
  private headerDone = false;
  private done = false;

  constructor(
    private readonly columns: number,
    private readonly onRow: RowHandler,
    /** The stream's header was read by another reader: this one starts at a row. */
    afterHeader = false,
  ) {
    this.fields = new Int32Array(columns * 2);
    this.headerDone = afterHeader;
  }

  /**
   * Hands the rest of the stream over to another reader (made with afterHeader): the bytes
   * of the row cut by the last chunk, which that reader gets first. This one takes nothing more.
   */
  handOver(): Buffer {
    if (!this.headerDone || this.done) throw new CopyFormatError('a COPY stream is handed over between rows only');
    const rest = Buffer.from(this.carry.subarray(0, this.carryLen));
    this.carryLen = 0;
    this.done = true;
    this.handedOver = true;
    return rest;
  }
  private handedOver = false;

  /** True once the end-of-data marker was read. */
  get finished(): boolean {
    return this.done;
  }

  push(chunk: Buffer): void {
    this.pushRange(chunk, 0, chunk.length);
  }

  /** push(chunk.subarray(start, end)) without the subarray. */
  pushRange(chunk: Buffer, start: number, end: number): void {
    if (this.carryLen === 0) {
      const used = this.parse(chunk, start, end);
      if (used < end) this.keep(chunk, used, end);
      return;
    }
    this.keep(chunk, start, end);
    const used = this.parse(this.carry, 0, this.carryLen);
    this.carry.copy(this.carry, 0, used, this.carryLen);
    this.carryLen -= used;
  }

  /** Checks that the data ended where it should (after the end-of-data marker). */
  end(): void {
    if (!this.done) throw new CopyFormatError(this.headerDone ? 'COPY data ended inside a row' : 'COPY data ended inside its header');
  }

  private keep(src: Buffer, start: number, end: number): void {
    const need = this.carryLen + end - start;
    if (need > this.carry.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.carry.length * 2, 4096));
      this.carry.copy(grown, 0, 0, this.carryLen);
      this.carry = grown;
    }
    src.copy(this.carry, this.carryLen, start, end);
    this.carryLen = need;
  }

  /** Parses the complete rows of buf[pos, end); returns where the first incomplete one starts. */
  private parse(buf: Buffer, pos: number, end: number): number {
    if (this.handedOver) throw new CopyFormatError('this COPY stream was handed over');
    if (this.done) {
      if (end > pos) throw new CopyFormatError('data after the end of the COPY data');
      return end;
    }
    if (!this.headerDone) {
      if (end - pos < 19) return pos;
      if (buf.compare(SIGNATURE, 0, 11, pos, pos + 11) !== 0) throw new CopyFormatError('not binary COPY data (bad signature)');
      if (int32(buf, pos + 11) & 0x10000) throw new CopyFormatError('binary COPY data with OIDs is not supported');
      const ext = int32(buf, pos + 15);
      if (ext < 0) throw new CopyFormatError('bad COPY header extension length');
      if (end - pos < 19 + ext) return pos;
      pos += 19 + ext;
      this.headerDone = true;
    }
    const fields = this.fields;
    const columns = this.columns;
    for (;;) {
      if (end - pos < 2) return pos;
      const n = (buf[pos]! << 8) | buf[pos + 1]!;
      if (n === 0xffff) {
        this.done = true;
        if (end > pos + 2) throw new CopyFormatError('data after the end of the COPY data');
        return end;
      }
      if (n !== columns) throw new CopyFormatError(`a COPY row has ${n} fields, expected ${columns}`);
      let p = pos + 2;
      for (let i = 0; i < columns; i++) {
        if (end - p < 4) return pos;
        const len = int32(buf, p);
        p += 4;
        if (len === -1) {
          fields[2 * i] = p;
          fields[2 * i + 1] = -1;
          continue;
        }
        if (len < 0) throw new CopyFormatError('bad COPY field length');
        if (end - p < len) return pos;
        fields[2 * i] = p;
        fields[2 * i + 1] = len;
        p += len;
      }
      this.onRow(buf, fields);
      pos = p;
    }
  }
}

/**
 * At a COPY stream's end: postgres.js resumes its socket from the stream's `_read` only, and a
 * COPY that ended while the socket was paused would leave the connection's next query unanswered.
 */
export function resumeSocketAtEnd(stream: Readable): void {
  (stream as Readable & { _read?: (n: number) => void })._read?.(0);
}

/**
 * Calls `onRow` for every row of a binary COPY stream; resolves at the end of the stream.
 *
 * The stream is read in flowing mode with a synchronous handler, so chunks are handled as
 * they arrive and nothing accumulates (TCP holds the rest). Not `for await`: postgres.js
 * pauses its socket when the stream's buffer fills and resumes it only from the stream's
 * `_read`; when COPY ends while paused, the socket stays paused and the connection's next
 * query never gets an answer. `_read` is called once more at the end for that reason.
 */
export function forEachCopyBinaryRow(stream: Readable, columns: number, onRow: RowHandler): Promise<void> {
  const reader = new CopyBinaryReader(columns, onRow);
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
        reader.push(chunk);
      } catch (e) {
        fail(e);
      }
    });
    stream.once('error', fail);
    stream.once('end', () => {
      resumeSocketAtEnd(stream);
      if (failed) return;
      try {
        reader.end();
        resolve();
      } catch (e) {
        fail(e);
      }
    });
  });
}
