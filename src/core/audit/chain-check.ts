/**
 * The chain checker of `verifyAuditChain`, on bytes: it takes each record as the fields of
 * a binary COPY row (copy-binary.ts), writes both hash inputs (hash.ts, decisions.md) into
 * reusable buffers and hashes them there, with no string per field and nothing kept from
 * one record to the next but the two previous hashes.
 *
 * The canonical JSON of every field is written straight from its binary form: text fields
 * are quoted (escaped with JSON.stringify when they hold a quote, a backslash or a control
 * character), text[] elements likewise, jsonb text is compacted (PostgreSQL writes it with
 * a space after ':' and ',', escapes strings exactly as JSON.stringify does, and sorts keys
 * by length first, so key order is checked); any jsonb this cannot prove canonical (a
 * fraction, an exponent, a long number, keys out of order) goes through JSON.parse and
 * canonicalJson, as the writer's own value did. requested_at (microseconds since 2000) is
 * written as Date.prototype.toISOString() text.
 */
import { canonicalJson } from './hash.js';
import { int32, int64 } from './copy-binary.js';
import { sha256HexIs, sha256Is } from '../../shared/sha256.js';

/** The columns the checker reads, in order (each cast pins its binary form). */
export const CHECK_COLUMNS = [
  'r.chain_sequence::int8',
  'r.request_id::text',
  'r.agent_id::text',
  'r.task_type::text',
  'r.request_params::jsonb',
  'r.intent_valid::bool',
  'r.validation_errors::jsonb',
  'r.context_bundle_ids::text[]',
  'r.context_scd_ids::text[]',
  'r.processing_time_ms::int4',
  'r.requested_at::timestamptz',
  'r.chain_id::text',
  'r.parent_request_id::text',
  'r.previous_hash::text',
  'r.record_hash::text',
  'r.content_hash::text',
  'r.leaf_index::int8',
  'r.leaf_hash::bytea',
].join(', ');
export const N_CHECK_COLUMNS = 18;

export interface Failure {
  seq: number;
  chain: 'record_hash' | 'content_hash';
  error: string;
}

/** A record whose stored leaf hash is not the hash of the record as it is now (the transparency log's). */
export interface LeafFailure {
  leaf: number;
  error: string;
}

const Q = 0x22; // "
const BS = 0x5c; // \
const COMMA = 0x2c;
const COLON = 0x3a;
const MS_PER_DAY = 86_400_000;
/** 2000-01-01T00:00:00Z, PostgreSQL's timestamp epoch, in Unix milliseconds. */
const PG_EPOCH_MS = 946_684_800_000;
const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');
const NULL = Buffer.from('null');
const MAX_DEPTH = 32;

const uint32 = (b: Uint8Array, p: number) => int32(b, p) >>> 0;

/** Copies src[s, e) to dst at d; returns the position after it. */
export function copy(src: Uint8Array, s: number, e: number, dst: Uint8Array, d: number): number {
  // A loop beats a native copy (and the view it needs) up to a few hundred bytes.
  if (e - s > 512) {
    dst.set(src.subarray(s, e), d);
    return d + e - s;
  }
  while (s < e) dst[d++] = src[s++]!;
  return d;
}

/*
 * The same on DataViews, four bytes at a time (about twice as fast as byte loops; offsets
 * need no alignment). Little-endian access: no byte swapping.
 */
function wcopy(src: DataView, s: number, e: number, dst: DataView, d: number): number {
  while (e - s >= 4) {
    dst.setInt32(d, src.getInt32(s, true), true);
    s += 4;
    d += 4;
  }
  while (s < e) dst.setUint8(d++, src.getUint8(s++));
  return d;
}

function wcopyPlain(src: DataView, s: number, e: number, dst: DataView, d: number): number {
  while (e - s >= 4) {
    const x = src.getInt32(s, true);
    // Any byte < 0x20, any byte 0x22, any byte 0x5c (exact "any" tests; bytes >= 0x80 pass).
    const q = x ^ 0x22222222;
    const k = x ^ 0x5c5c5c5c;
    if ((((x - 0x20202020) & ~x) | ((q - 0x01010101) & ~q) | ((k - 0x01010101) & ~k)) & 0x80808080) return -1;
    dst.setInt32(d, x, true);
    s += 4;
    d += 4;
  }
  while (s < e) {
    const b = src.getUint8(s++);
    if (b < 0x20 || b === Q || b === BS) return -1;
    dst.setUint8(d++, b);
  }
  return d;
}

/** True when a[s, s + len) and b[t, t + len) hold the same bytes. */
function wequal(a: DataView, s: number, b: DataView, t: number, len: number): boolean {
  while (len >= 4) {
    if (a.getInt32(s, true) !== b.getInt32(t, true)) return false;
    s += 4;
    t += 4;
    len -= 4;
  }
  while (len-- > 0) if (a.getUint8(s++) !== b.getUint8(t++)) return false;
  return true;
}

/** Number of decimal digits of a non-negative integer. */
function digits(v: number): number {
  let n = 1;
  while (v >= 10) {
    v = Math.floor(v / 10);
    n++;
  }
  return n;
}

/** Writes a non-negative integer in decimal at d; returns the position after it. */
export function writeUint(dst: Uint8Array, d: number, v: number): number {
  const end = d + digits(v);
  let p = end;
  do {
    const q = Math.floor(v / 10);
    dst[--p] = 48 + (v - q * 10);
    v = q;
  } while (v > 0);
  return end;
}

/** Compares two byte ranges (0x20..0x7f): negative, zero or positive, as UTF-16 strings compare. */
function compareBytes(b: Uint8Array, s1: number, e1: number, s2: number, e2: number): number {
  const n = Math.min(e1 - s1, e2 - s2);
  for (let i = 0; i < n; i++) {
    const d = b[s1 + i]! - b[s2 + i]!;
    if (d !== 0) return d;
  }
  return e1 - s1 - (e2 - s2);
}

const kind = new Uint8Array(MAX_DEPTH); // 1 object, 2 array
const expectKey = new Uint8Array(MAX_DEPTH);
const keyStart = new Int32Array(MAX_DEPTH);
const keyEnd = new Int32Array(MAX_DEPTH);
const keyPlain = new Uint8Array(MAX_DEPTH);

/**
 * Writes the canonical JSON of jsonb's text output src[s, e) at dst[d...] when it can be
 * done by removing PostgreSQL's spaces alone; returns the position after it, or -1 when the
 * text needs the general path (JSON.parse + canonicalJson). dst needs e - s bytes.
 */
export function compactJsonb(src: Uint8Array, s: number, e: number, dst: Uint8Array, d: number): number {
  let depth = 0;
  let i = s;
  while (i < e) {
    const c = src[i]!;
    if (c === Q) {
      const start = i++;
      dst[d++] = Q;
      let plain = true;
      for (;;) {
        if (i >= e) return -1;
        const b = src[i++]!;
        dst[d++] = b;
        if (b === Q) break;
        if (b === BS) {
          plain = false;
          if (i >= e) return -1;
          dst[d++] = src[i++]!;
        } else if (b >= 0x80) plain = false;
        else if (b < 0x20) return -1; // PostgreSQL escapes these; JSON.stringify would
      }
      if (depth > 0 && kind[depth] === 1 && expectKey[depth] === 1) {
        // A key: it must sort after the previous key of its object, as canonicalJson sorts.
        if (keyStart[depth]! >= 0) {
          if (!plain || keyPlain[depth] !== 1) return -1;
          if (compareBytes(src, keyStart[depth]! + 1, keyEnd[depth]! - 1, start + 1, i - 1) >= 0) return -1;
        }
        keyStart[depth] = start;
        keyEnd[depth] = i;
        keyPlain[depth] = plain ? 1 : 0;
        expectKey[depth] = 0;
      }
    } else if (c === 0x20) {
      i++;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth >= MAX_DEPTH) return -1;
      kind[depth] = c === 0x7b ? 1 : 2;
      expectKey[depth] = 1;
      keyStart[depth] = -1;
      dst[d++] = c;
      i++;
    } else if (c === 0x7d || c === 0x5d) {
      if (--depth < 0) return -1;
      dst[d++] = c;
      i++;
    } else if (c === COMMA) {
      expectKey[depth] = 1;
      dst[d++] = c;
      i++;
    } else if (c === COLON) {
      dst[d++] = c;
      i++;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      // Integers of up to 15 digits read and print back the same; anything else is general.
      const start = i;
      if (c === 0x2d) i++;
      const first = i;
      while (i < e && src[i]! >= 0x30 && src[i]! <= 0x39) i++;
      const n = i - first;
      if (n === 0 || n > 15) return -1;
      if (i < e && (src[i] === 0x2e || src[i] === 0x65 || src[i] === 0x45)) return -1;
      if (c === 0x2d && n === 1 && src[first] === 0x30) return -1; // -0 prints as 0
      d = copy(src, start, i, dst, d);
    } else if (c === 0x74 || c === 0x66 || c === 0x6e) {
      // true, false, null
      while (i < e && src[i]! >= 0x61 && src[i]! <= 0x7a) dst[d++] = src[i++]!;
    } else {
      return -1;
    }
  }
  return depth === 0 ? d : -1;
}

/** Buffer of at least `n` bytes, keeping the first `keep` bytes of `b`. */
function grow(b: Buffer, n: number, keep: number): Buffer {
  if (n <= b.length) return b;
  const g = Buffer.allocUnsafeSlow(Math.max(n, b.length * 2));
  b.copy(g, 0, 0, keep);
  return g;
}

/** ByteChainChecker.state(): what a checker carries from one row to the next. */
export interface CheckerState {
  count: number;
  first: number | null;
  failure: Failure | null;
  leafFailure: LeafFailure | null;
  leavesChecked: number;
  lastSeq: number;
  expectedFirst: number | null;
  /** The previous record_hash (or the genesis hash) as text bytes; empty when none can match. */
  prevRh: Uint8Array;
  /** The previous content_hash likewise. */
  prevCh: Uint8Array;
}

/**
 * Feeds records in order (`row`, a RowHandler of copy-binary.ts); remembers the first
 * failure. After a failure the remaining rows are only counted.
 */
export class ByteChainChecker {
  count = 0;
  first: number | null = null;
  failure: Failure | null = null;
  /** The first record (in chain order, so the lowest leaf) whose stored leaf hash is not its record's. */
  leafFailure: LeafFailure | null = null;
  /** Records whose stored leaf hash was checked. */
  leavesChecked = 0;
  private lastSeq = 0;
  private readonly prevRh = new DataView(new ArrayBuffer(64));
  private prevRhLen: number;
  /** The current row's bytes: a view of its whole ArrayBuffer, and where the row's Buffer starts in it. */
  private sv: DataView = new DataView(new ArrayBuffer(0));
  private svOf: ArrayBufferLike | null = null;
  private base = 0;
  private prevChLen: number;
  /** Room the fast paths of the current row may still need in cb (2 x its bytes + 512: they write less). */
  private rowRoom = 0;
  /** record_hash input, then content_hash input. */
  private rb: Buffer = Buffer.allocUnsafeSlow(4096);
  private rv: DataView = new DataView(this.rb.buffer, this.rb.byteOffset, this.rb.length);
  /** Starts with the previous content_hash (prevChLen bytes). */
  private cb: Buffer = Buffer.allocUnsafeSlow(8192);
  private cv: DataView = new DataView(this.cb.buffer, this.cb.byteOffset, this.cb.length);
  /** Where each content field's canonical JSON lies in cb: [start, end) per field, in content order. */
  private readonly spans = new Int32Array(26);
  /** 0x00 then the record's leaf data (its canonical JSON, src/core/tlog/leaves.ts). */
  private lb: Buffer = Buffer.allocUnsafeSlow(8192);
  private lv: DataView = new DataView(this.lb.buffer, this.lb.byteOffset, this.lb.length);
  /** requested_at as ISO text, and the day its first 11 characters are of. */
  private readonly iso = Buffer.alloc(40);
  private readonly isoView = new DataView(this.iso.buffer, this.iso.byteOffset, this.iso.length);
  private isoLen = 0;
  private isoDay = NaN;
  private isoDayLen = 0;

  constructor(
    genesis: string,
    /**
     * The sequence the first chained record must carry (after the last legacy record); null
     * when not known yet: the first row is taken as it comes and `settleFirst` judges it.
     */
    private readonly expectedFirst: number | null,
  ) {
    const g = Buffer.from(genesis, 'utf8');
    // A genesis hash is 64 hex characters (a CHECK constraint); anything else cannot match.
    this.prevRhLen = this.prevChLen = g.length === 64 ? 64 : 0;
    for (let i = 0; i < this.prevRhLen; i++) this.prevRh.setUint8(i, g[i]!);
    g.copy(this.cb, 0, 0, this.prevChLen);
  }

  fail(seq: number, chain: Failure['chain'], error: string): void {
    this.failure ??= { seq, chain, error };
  }

  /**
   * Everything the checker carries from one row to the next, as plain data (structured-clone
   * safe): another thread goes on from it with `ByteChainChecker.resume` (verify-thread.ts).
   */
  state(): CheckerState {
    return {
      count: this.count,
      first: this.first,
      failure: this.failure,
      leafFailure: this.leafFailure,
      leavesChecked: this.leavesChecked,
      lastSeq: this.lastSeq,
      expectedFirst: this.expectedFirst,
      prevRh: new Uint8Array(this.prevRh.buffer.slice(0, this.prevRhLen)),
      prevCh: Uint8Array.from(this.cb.subarray(0, this.prevChLen)),
    };
  }

  /** A checker that goes on where the one whose `state()` this is stopped. */
  static resume(s: CheckerState): ByteChainChecker {
    const c = new ByteChainChecker('', s.expectedFirst);
    c.count = s.count;
    c.first = s.first;
    c.failure = s.failure;
    c.leafFailure = s.leafFailure;
    c.leavesChecked = s.leavesChecked;
    c.lastSeq = s.lastSeq;
    c.prevRhLen = s.prevRh.length;
    new Uint8Array(c.prevRh.buffer).set(s.prevRh);
    c.prevChLen = s.prevCh.length;
    c.cb.set(s.prevCh, 0);
    return c;
  }

  /** The first chained record must be `expectedFirst` (for a checker made without it). */
  settleFirst(expectedFirst: number): void {
    this.failure = firstFailure(this.first, expectedFirst) ?? this.failure;
  }

  readonly row = (buf: Buffer, f: Int32Array): void => {
    this.count++;
    if (f[1] !== 8) throw new Error('chain_sequence is not int8');
    const base = this.at(buf);
    if (this.failure) return this.leafOnly(buf, f);
    const seq = int64(buf, f[0]!);
    const isFirst = this.first === null;
    const expected = isFirst ? (this.expectedFirst ?? seq) : this.lastSeq + 1;
    if (this.first === null) this.first = seq;
    if (seq !== expected) {
      this.fail(expected, 'record_hash', missing(expected, seq));
      return this.leafOnly(buf, f);
    }
    this.lastSeq = seq;
    const sv = this.sv;
    if (f[27] !== this.prevRhLen || !wequal(sv, base + f[26]!, this.prevRh, 0, this.prevRhLen)) {
      this.fail(seq, 'record_hash', `previous_hash of record ${seq} is not the record_hash of ${isFirst ? 'the genesis' : `record ${seq - 1}`}`);
      return this.leafOnly(buf, f);
    }
    if (!this.writeIso(buf, f[20]!, f[21]!) || !this.checkRecordHash(buf, f, seq, this.rowLen(f))) {
      this.fail(seq, 'record_hash', `record_hash of record ${seq} does not match its fields`);
      return this.leafOnly(buf, f);
    }
    let ok = false;
    try {
      ok = this.checkContentHash(buf, f, seq, this.rowLen(f));
    } catch {
      /* unparsable stored text: the record does not verify */
    }
    if (!ok) {
      this.fail(seq, 'content_hash', `content_hash of record ${seq} does not match its fields`);
      return this.leafOnly(buf, f);
    }
    if (!this.leafFailure && f[35]! >= 0) this.checkLeaf(buf, f);
    wcopy(sv, base + f[28]!, base + f[28]! + 64, this.prevRh, 0);
    wcopy(sv, base + f[30]!, base + f[30]! + 64, this.cv, 0);
    this.prevRhLen = this.prevChLen = 64;
  };

  /**
   * A record another thread checks (verify-thread.ts): nothing checked here, but the next
   * record is checked against this one's stored hashes, as `row` would after it passed.
   */
  readonly pass = (buf: Buffer, f: Int32Array): void => {
    if (f[1] !== 8) throw new Error('chain_sequence is not int8');
    const base = this.at(buf);
    const seq = int64(buf, f[0]!);
    if (this.first === null) this.first = seq;
    this.lastSeq = seq;
    const rh = f[29]!;
    const ch = f[31]!;
    this.prevRhLen = rh >= 0 && rh <= 64 ? rh : 0;
    this.prevChLen = ch >= 0 && ch <= 64 ? ch : 0;
    wcopy(this.sv, base + f[28]!, base + f[28]! + this.prevRhLen, this.prevRh, 0);
    wcopy(this.sv, base + f[30]!, base + f[30]! + this.prevChLen, this.cv, 0);
  };

  /**
   * A record's leaf data (src/core/tlog/leaves.ts: its canonical JSON as the read endpoint
   * returns it), written from a row of CHECK_COLUMNS as verify writes it, checking nothing; null
   * for a record this cannot write as the read endpoint does (a year outside 100..9999, a
   * free-form value that is not an object, a chain_sequence or leaf_index past 2^53, an
   * unparsable value): the caller writes those the general way.
   */
  leafData(buf: Buffer, f: Int32Array): Buffer | null {
    const end = this.prepareLeaf(buf, f);
    if (end > 0) return Buffer.from(this.lb.subarray(1, end));
    return end === 0 ? this.leafText(buf, f, int64(buf, f[32]!)).subarray(1) : null;
  }

  /**
   * leafData without a Buffer of its own (an entry bundle's writer copies it straight into the
   * bundle): the length of the record's leaf data, which copyLeafData then copies out (until the
   * next row), or -1 for a record leafData writes another way (the general way, or as text).
   */
  leafDataLength(buf: Buffer, f: Int32Array): number {
    const end = this.prepareLeaf(buf, f);
    this.lbEnd = end;
    return end > 0 ? end - 1 : -1;
  }

  /** The leaf data leafDataLength measured, copied to out[at]. */
  copyLeafData(out: Buffer, at: number): void {
    this.lb.copy(out, at, 1, this.lbEnd);
  }
  private lbEnd = 0;

  /**
   * leafData's work: the end of 0x00 and the leaf data in lb; 0 when a hash column is not
   * text a JSON string holds as it is (leafText writes it); -1 for the general way.
   */
  private prepareLeaf(buf: Buffer, f: Int32Array): number {
    if (f[1] !== 8 || f[33] !== 8) return -1;
    this.at(buf);
    const seq = int64(buf, f[0]!);
    const leaf = int64(buf, f[32]!);
    if (!Number.isSafeInteger(seq) || !Number.isSafeInteger(leaf)) return -1;
    for (const col of [8, 12]) if (f[col + 1]! >= 0 && !(f[col + 1]! > 1 && buf[f[col]! + 1] === 0x7b)) return -1; // jsonb: version 1, then '{'
    try {
      if (!this.writeIso(buf, f[20]!, f[21]!)) return -1;
      const iso = this.iso;
      if (iso[4] !== 0x2d || (iso[0] === 0x30 && iso[1] === 0x30)) return -1; // years 100..9999 only
      this.writeContent(buf, f, seq, this.rowLen(f));
    } catch {
      return -1;
    }
    return this.plainHashes(f) ? this.writeLeaf(buf, f, leaf) : 0;
  }

  /** Points sv and base at the row's bytes; returns base. */
  private at(buf: Buffer): number {
    if (buf.buffer !== this.svOf) {
      this.svOf = buf.buffer;
      this.sv = new DataView(buf.buffer);
    }
    return (this.base = buf.byteOffset);
  }

  /** The row's bytes: the fields lie one after the other (and 4 per length word). */
  private rowLen(f: Int32Array): number {
    return f[34]! + Math.max(f[35]!, 0) - f[0]!;
  }

  /**
   * After a chain failure (the chains are no longer checked): the stored leaf hash of each
   * record still against the record, so that the transparency log's part of verify names the
   * first record that no longer hashes to its leaf whatever the chains say.
   */
  private leafOnly(buf: Buffer, f: Int32Array): void {
    if (this.leafFailure || f[35]! < 0) return;
    const seq = int64(buf, f[0]!);
    let written = false;
    try {
      written = this.writeIso(buf, f[20]!, f[21]!) && (this.checkContentHash(buf, f, seq, this.rowLen(f)), true);
    } catch {
      /* unparsable stored text */
    }
    if (!written) {
      if (f[33] === 8) this.leafFailure = { leaf: int64(buf, f[32]!), error: `leaf ${int64(buf, f[32]!)}: the record (chain_sequence ${seq}) holds a value no record can (its leaf data cannot be written)` };
      return;
    }
    this.checkLeaf(buf, f);
  }

  /** requested_at as toISOString() text into this.iso; false when it has none (out of Date's range, infinity, NULL). */
  private writeIso(buf: Buffer, s: number, len: number): boolean {
    if (len !== 8) return false;
    const hi = int32(buf, s);
    let ms: number;
    if (hi >= -0x100000 && hi < 0x100000) {
      // |microseconds| < 2^52: exact as a double.
      ms = Math.floor((hi * 4294967296 + uint32(buf, s + 4)) / 1000) + PG_EPOCH_MS;
    } else {
      const us = buf.readBigInt64BE(s);
      const q = us / 1000n;
      ms = Number(us < 0n && q * 1000n !== us ? q - 1n : q) + PG_EPOCH_MS;
    }
    const day = Math.floor(ms / MS_PER_DAY);
    const iso = this.iso;
    if (day !== this.isoDay) {
      const t = day * MS_PER_DAY;
      if (!(Math.abs(t) <= 8.64e15)) return false;
      let text: string;
      try {
        text = new Date(t).toISOString();
      } catch {
        return false;
      }
      this.isoDayLen = iso.write(text.slice(0, text.indexOf('T') + 1), 0, 'latin1');
      this.isoDay = day;
    }
    if (!(Math.abs(ms) <= 8.64e15)) return false;
    let rem = ms - day * MS_PER_DAY;
    let p = this.isoDayLen;
    const h = Math.floor(rem / 3_600_000);
    rem -= h * 3_600_000;
    const m = Math.floor(rem / 60_000);
    rem -= m * 60_000;
    const sec = Math.floor(rem / 1000);
    const milli = rem - sec * 1000;
    iso[p++] = 48 + Math.floor(h / 10);
    iso[p++] = 48 + (h % 10);
    iso[p++] = COLON;
    iso[p++] = 48 + Math.floor(m / 10);
    iso[p++] = 48 + (m % 10);
    iso[p++] = COLON;
    iso[p++] = 48 + Math.floor(sec / 10);
    iso[p++] = 48 + (sec % 10);
    iso[p++] = 0x2e;
    iso[p++] = 48 + Math.floor(milli / 100);
    iso[p++] = 48 + (Math.floor(milli / 10) % 10);
    iso[p++] = 48 + (milli % 10);
    iso[p++] = 0x5a;
    this.isoLen = p;
    return true;
  }

  /** record_hash = SHA-256(seq + request_id + agent_id + task_type + true|false + ISO time + previous record_hash). */
  private checkRecordHash(buf: Buffer, f: Int32Array, seq: number, rowLen: number): boolean {
    if (f[3]! < 0 || f[7]! < 0 || f[11] !== 1) return false; // NOT NULL columns
    if (this.rb.length < rowLen + 256) {
      this.rb = grow(this.rb, rowLen + 256, 0);
      this.rv = new DataView(this.rb.buffer, this.rb.byteOffset, this.rb.length);
    }
    const b = this.rb;
    const rv = this.rv;
    const sv = this.sv;
    const base = this.base;
    let d = writeUint(b, 0, seq);
    d = wcopy(sv, base + f[2]!, base + f[2]! + f[3]!, rv, d);
    if (f[5]! > 0) d = wcopy(sv, base + f[4]!, base + f[4]! + f[5]!, rv, d);
    d = wcopy(sv, base + f[6]!, base + f[6]! + f[7]!, rv, d);
    const v = buf[f[10]!] ? TRUE : FALSE;
    d = copy(v, 0, v.length, b, d);
    d = wcopy(this.isoView, 0, this.isoLen, rv, d);
    d = wcopy(this.prevRh, 0, this.prevRhLen, rv, d);
    return f[29] === 64 && sha256HexIs(b, 0, d, buf, f[28]!);
  }

  /** content_hash = SHA-256(previous content_hash + the netstring of each field's canonical JSON). */
  private checkContentHash(buf: Buffer, f: Int32Array, seq: number, rowLen: number): boolean {
    const d = this.writeContent(buf, f, seq, rowLen);
    return f[31] === 64 && sha256HexIs(this.cb, 0, d, buf, f[30]!);
  }

  /** Writes the content hash's input into cb (noting each field's canonical JSON in spans); returns its length. */
  private writeContent(buf: Buffer, f: Int32Array, seq: number, rowLen: number): number {
    this.rowRoom = 2 * rowLen + 512;
    this.growCb(this.rowRoom, this.prevChLen);
    let d = this.prevChLen;
    // chain_sequence
    const b = this.cb;
    d = writeUint(b, d, digits(seq));
    b[d++] = COLON;
    const sp = this.spans;
    sp[0] = d;
    d = writeUint(b, d, seq);
    sp[1] = d;
    b[d++] = COMMA;
    d = this.mark(1, d, this.text(buf, f[2]!, f[3]!, d));
    d = this.mark(2, d, this.text(buf, f[4]!, f[5]!, d));
    d = this.mark(3, d, this.text(buf, f[6]!, f[7]!, d));
    d = this.mark(4, d, this.jsonb(buf, f[8]!, f[9]!, d));
    d = this.mark(5, d, this.raw(buf[f[10]!] ? TRUE : FALSE, 0, buf[f[10]!] ? 4 : 5, d));
    d = this.mark(6, d, this.jsonb(buf, f[12]!, f[13]!, d));
    d = this.mark(7, d, this.array(buf, f[14]!, f[15]!, d));
    d = this.mark(8, d, this.array(buf, f[16]!, f[17]!, d));
    d = this.mark(9, d, this.int4(buf, f[18]!, f[19]!, d));
    d = this.mark(10, d, this.isoString(d));
    d = this.mark(11, d, this.text(buf, f[22]!, f[23]!, d));
    return this.mark(12, d, this.text(buf, f[24]!, f[25]!, d));
  }

  /**
   * Notes where field k's canonical JSON lies in the netstring written from `from` to `to`
   * (`<length>:<text>,`); returns `to`.
   */
  private mark(k: number, from: number, to: number): number {
    const b = this.cb;
    while (b[from] !== COLON) from++;
    this.spans[2 * k] = from + 1;
    this.spans[2 * k + 1] = to - 1;
    return to;
  }

  /**
   * The record's stored leaf hash against SHA-256(0x00 || its leaf data): the record's RFC 8785
   * canonical JSON, written from the canonical JSON of each field the content hash has just
   * used (the same texts: src/core/tlog/leaves.ts writes them the same way) and the three hashes
   * and leaf_index, in sorted key order. Called once the content hash matched, so the three
   * hashes are known to be 64 hex digits.
   */
  private checkLeaf(buf: Buffer, f: Int32Array): void {
    if (f[33] !== 8 || f[35] !== 32) return;
    const leaf = int64(buf, f[32]!);
    // In a record whose chains verify the three hashes are 64 hex digits, copied as they are;
    // after a chain failure they may hold anything, and the leaf data is written the general way.
    // (writeLeaf may grow lb: taken after it.)
    const text = this.failure && !this.plainHashes(f) ? this.leafText(buf, f, leaf) : null;
    const n = text ? text.length : this.writeLeaf(buf, f, leaf);
    this.leavesChecked++;
    if (!sha256Is(text ?? this.lb, 0, n, buf, f[34]!)) {
      const seq = int64(buf, f[0]!);
      this.leafFailure = { leaf, error: `leaf ${leaf}: the record (chain_sequence ${seq}) is not what its leaf hash was computed from (the record or its leaf hash was changed)` };
    }
  }

  /** True when the three hash columns are all text a JSON string holds as it is. */
  private plainHashes(f: Int32Array): boolean {
    const scratch = this.rv;
    for (const col of [26, 28, 30]) {
      const len = f[col + 1]!;
      if (len < 0 || len > 64 || wcopyPlain(this.sv, this.base + f[col]!, this.base + f[col]! + len, scratch, 0) < 0) return false;
    }
    return true;
  }

  /** Writes 0x00 and the leaf data into lb; returns its length. */
  private writeLeaf(buf: Buffer, f: Int32Array, leaf: number): number {
    const sp = this.spans;
    let need = 1 + LEAF_FIXED;
    for (let k = 0; k < 13; k++) need += sp[2 * k + 1]! - sp[2 * k]!;
    if (this.lb.length < need) {
      this.lb = grow(this.lb, need, 0);
      this.lv = new DataView(this.lb.buffer, this.lb.byteOffset, this.lb.length);
    }
    const lb = this.lb;
    const lv = this.lv;
    const cv = this.cv;
    lb[0] = 0;
    let d = 1;
    for (let i = 0; i < LEAF_SOURCES.length; i++) {
      d = wcopy(LEAF_KEY_VIEW, LEAF_KEY_AT[i]!, LEAF_KEY_AT[i + 1]!, lv, d);
      const src = LEAF_SOURCES[i]!;
      if (src >= 0) {
        const s = sp[2 * src]!;
        const e = sp[2 * src + 1]!;
        // Short texts by words, long ones natively (each is faster on its side of 256 bytes).
        if (e - s < 256) d = wcopy(cv, s, e, lv, d);
        else d += this.cb.copy(lb, d, s, e);
      } else if (src === LEAF_INDEX) {
        if (leaf < 0) lb[d++] = 0x2d;
        d = writeUint(lb, d, Math.abs(leaf));
      } else {
        lb[d++] = Q;
        d = wcopy(this.sv, this.base + f[-src]!, this.base + f[-src]! + f[1 - src]!, lv, d);
        lb[d++] = Q;
      }
    }
    lb[d++] = 0x7d;
    return d;
  }

  /** 0x00 and the leaf data, written as text (the general way, for any hash column's text). */
  private leafText(buf: Buffer, f: Int32Array, leaf: number): Buffer {
    const sp = this.spans;
    let out = '';
    for (let i = 0; i < LEAF_SOURCES.length; i++) {
      out += LEAF_KEY_BYTES.toString('latin1', LEAF_KEY_AT[i]!, LEAF_KEY_AT[i + 1]!);
      const src = LEAF_SOURCES[i]!;
      if (src >= 0) out += this.cb.toString('utf8', sp[2 * src]!, sp[2 * src + 1]!);
      else if (src === LEAF_INDEX) out += String(leaf);
      else out += f[1 - src]! < 0 ? 'null' : JSON.stringify(buf.toString('utf8', f[-src]!, f[-src]! + f[1 - src]!));
    }
    return Buffer.concat([Buffer.alloc(1), Buffer.from(`${out}}`, 'utf8')]);
  }

  /** Makes cb at least n bytes long, keeping its first `keep` bytes; returns it. */
  private growCb(n: number, keep: number): Buffer {
    if (n > this.cb.length) {
      this.cb = grow(this.cb, n, keep);
      this.cv = new DataView(this.cb.buffer, this.cb.byteOffset, this.cb.length);
    }
    return this.cb;
  }

  /** Netstring of bytes as they are. */
  private raw(src: Uint8Array, s: number, len: number, d: number): number {
    const b = this.growCb(d + len + 16 + this.rowRoom, d);
    d = writeUint(b, d, len);
    b[d++] = COLON;
    d = copy(src, s, s + len, b, d);
    b[d++] = COMMA;
    return d;
  }

  /** Netstring of a JS string's UTF-8 bytes. */
  private str(s: string, d: number): number {
    const len = Buffer.byteLength(s, 'utf8');
    const b = this.growCb(d + len + 16 + this.rowRoom, d);
    d = writeUint(b, d, len);
    b[d++] = COLON;
    d += b.write(s, d, 'utf8');
    b[d++] = COMMA;
    return d;
  }

  /** Netstring of a nullable text field as a JSON string. */
  private text(buf: Buffer, s: number, len: number, d: number): number {
    if (len < 0) return this.raw(NULL, 0, 4, d);
    const b = this.cb;
    let p = writeUint(b, d, len + 2);
    b[p++] = COLON;
    b[p++] = Q;
    p = wcopyPlain(this.sv, this.base + s, this.base + s + len, this.cv, p);
    if (p < 0) return this.str(JSON.stringify(buf.toString('utf8', s, s + len)), d);
    b[p++] = Q;
    b[p++] = COMMA;
    return p;
  }

  /** Netstring of a nullable int4 field. */
  private int4(buf: Buffer, s: number, len: number, d: number): number {
    if (len < 0) return this.raw(NULL, 0, 4, d);
    const v = int32(buf, s);
    const b = this.cb;
    const abs = Math.abs(v);
    d = writeUint(b, d, digits(abs) + (v < 0 ? 1 : 0));
    b[d++] = COLON;
    if (v < 0) b[d++] = 0x2d;
    d = writeUint(b, d, abs);
    b[d++] = COMMA;
    return d;
  }

  /** Netstring of requested_at as a JSON string. */
  private isoString(d: number): number {
    const b = this.cb;
    d = writeUint(b, d, this.isoLen + 2);
    b[d++] = COLON;
    b[d++] = Q;
    d = wcopy(this.isoView, 0, this.isoLen, this.cv, d);
    b[d++] = Q;
    b[d++] = COMMA;
    return d;
  }

  /** Netstring of a nullable jsonb field's canonical JSON (binary form: version 1, then the text). */
  private jsonb(buf: Buffer, s: number, len: number, d: number): number {
    if (len < 0) return this.raw(NULL, 0, 4, d);
    if (len < 1 || buf[s] !== 1) throw new Error('unknown jsonb binary version');
    // Written after room for the longest length prefix, then moved up to its real one.
    const room = digits(len) + 1;
    const b = this.cb;
    const end = compactJsonb(buf, s + 1, s + len, b, d + room);
    if (end < 0) return this.str(canonicalJson(JSON.parse(buf.toString('utf8', s + 1, s + len))), d);
    const n = end - d - room;
    const p = writeUint(b, d, n);
    b[p] = COLON;
    if (p + 1 !== d + room) b.copy(b, p + 1, d + room, end);
    b[p + 1 + n] = COMMA;
    return p + n + 2;
  }

  /** Netstring of a nullable text[] field's canonical JSON (binary array form). */
  private array(buf: Buffer, s: number, len: number, d: number): number {
    if (len < 0) return this.raw(NULL, 0, 4, d);
    const ndim = int32(buf, s);
    if (ndim === 0) return this.raw(EMPTY_ARRAY, 0, 2, d);
    if (ndim !== 1) return this.str(canonicalJson(readArray(buf, s, len)), d);
    const n = int32(buf, s + 12);
    // Fast path: no NULL element, every element plain text. Then the JSON text is as long as
    // the binary form minus its 20-byte header, minus 4 per element length, plus 2 quotes
    // per element, the commas and the brackets.
    if (int32(buf, s + 4) !== 0 || n < 1) return this.str(canonicalJson(readArray(buf, s, len)), d);
    const b = this.cb;
    const cv = this.cv;
    const sv = this.sv;
    const base = this.base;
    let o = writeUint(b, d, len - 19 - n);
    b[o++] = COLON;
    b[o++] = 0x5b;
    let p = s + 20;
    for (let i = 0; i < n; i++) {
      const l = int32(buf, p);
      if (i) b[o++] = COMMA;
      b[o++] = Q;
      o = wcopyPlain(sv, base + p + 4, base + p + 4 + l, cv, o);
      if (o < 0) return this.str(canonicalJson(readArray(buf, s, len)), d);
      b[o++] = Q;
      p += 4 + l;
    }
    if (p !== s + len) throw new Error('bad array');
    d = o;
    b[d++] = 0x5d;
    b[d++] = COMMA;
    return d;
  }
}

const EMPTY_ARRAY = Buffer.from('[]');

/**
 * The leaf data's keys in canonical order, each with the text before its value, and where
 * the value comes from: a content field's canonical JSON (its index in content order),
 * LEAF_INDEX, or minus the offset slot in the row of a hash column written as a JSON string.
 */
const LEAF_INDEX = -1000;
const LEAF_LAYOUT: Array<[string, number]> = [
  ['agent_id', 2],
  ['chain_id', 11],
  ['chain_sequence', 0],
  ['content_hash', -30],
  ['context_bundle_ids', 7],
  ['context_scd_ids', 8],
  ['intent_valid', 5],
  ['leaf_index', LEAF_INDEX],
  ['parent_request_id', 12],
  ['previous_hash', -26],
  ['processing_time_ms', 9],
  ['record_hash', -28],
  ['request_id', 1],
  ['request_params', 4],
  ['requested_at', 10],
  ['task_type', 3],
  ['validation_errors', 6],
];
const LEAF_SOURCES = LEAF_LAYOUT.map(([, s]) => s);
/** The text before each value (`{"agent_id":`, `,"chain_id":`, ...), one after the other; key i is [LEAF_KEY_AT[i], LEAF_KEY_AT[i + 1]). */
const LEAF_KEY_BYTES = Buffer.from(LEAF_LAYOUT.map(([k], i) => `${i ? ',' : '{'}"${k}":`).join(''), 'latin1');
const LEAF_KEY_VIEW = new DataView(LEAF_KEY_BYTES.buffer, LEAF_KEY_BYTES.byteOffset, LEAF_KEY_BYTES.length);
const LEAF_KEY_AT = LEAF_LAYOUT.reduce((at, [k], i) => [...at, at[i]! + k.length + 4], [0]);
const LEAF_FIXED = LEAF_KEY_BYTES.length + 3 * 66 + 21 + 1;

function missing(expected: number, seq: number): string {
  return `record ${expected} is missing: the chain goes from ${expected - 1} to ${seq}`;
}

/**
 * The failure of a chain whose first chained record is `first` when it should be
 * `expectedFirst` (null when it is): the earliest failure there can be, so it replaces
 * any found after it.
 */
function firstFailure(first: number | null, expectedFirst: number): Failure | null {
  return first !== null && first !== expectedFirst ? { seq: expectedFirst, chain: 'record_hash', error: missing(expectedFirst, first) } : null;
}

/** A binary text[] as nested JS arrays (the general path). */
function readArray(buf: Buffer, s: number, len: number): unknown[] {
  const end = s + len;
  const ndim = int32(buf, s);
  if (ndim < 0 || ndim > 6) throw new Error('bad array');
  if (ndim === 0) return [];
  const dims: number[] = [];
  for (let i = 0; i < ndim; i++) dims.push(int32(buf, s + 12 + 8 * i));
  let p = s + 12 + 8 * ndim;
  const level = (k: number): unknown[] => {
    const out: unknown[] = [];
    for (let i = 0; i < dims[k]!; i++) {
      if (k < ndim - 1) {
        out.push(level(k + 1));
        continue;
      }
      if (p + 4 > end) throw new Error('bad array');
      const l = int32(buf, p);
      p += 4;
      if (l < 0) {
        out.push(null);
        continue;
      }
      if (p + l > end) throw new Error('bad array');
      out.push(buf.toString('utf8', p, p + l));
      p += l;
    }
    return out;
  };
  return level(0);
}
