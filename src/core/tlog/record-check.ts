/**
 * Rechecks the audit records that are a transparency log's leaves, leaf by leaf in leaf
 * order, from their leaf data alone (the RFC 8785 canonical JSON of each record):
 *
 * - every record names its own leaf (`leaf_index`);
 * - a context request record (it has `chain_sequence`) carries the record_hash and
 *   content_hash that core/audit/hash.ts computes from its fields, and links to the previous
 *   context request record: previous_hash is that record's record_hash, chain_sequence is
 *   one more, and the content chain continues from its content_hash. Legacy records
 *   (record_hash LEGACY_PRE_AUDIT, content_hash null) come before every chained record; the
 *   first chained record after them (or at the very start) starts from the genesis hash,
 *   which is its own previous_hash for both chains;
 * - an agent output record (it has `output_id`) carries output_hash = SHA-256 of the
 *   canonical JSON of its output.
 *
 * A leaf is first checked on its bytes (`fastCheck`): when it is canonical JSON, each field's
 * canonical JSON text is its value's span in the leaf, so both hash inputs are built by
 * copying spans into reusable buffers, with no parse and no string per field. What that path
 * cannot prove right (an escape in a record_content string, a fraction, a non-canonical text,
 * a legacy record, a broken link, a wrong hash...) goes through JSON.parse and the rules of
 * core/audit/hash.ts (`checkRecord`), which give the verdict: the fast path only ever accepts
 * a leaf that path accepts, with the same effect on the checker.
 */
import { eventRecordHash } from '../audit/events.js';
import { isUtf8 } from 'node:buffer';
import { canonicalJson, computeContentHash, computeRecordHash, LEGACY_SENTINEL, sha256Hex, type ChainFields } from '../audit/hash.js';
import { compactJsonb, copy, writeUint } from '../audit/chain-check.js';
import { sha256HexIs } from '../../shared/sha256.js';

/** The chain tip a context request record links to; null: none yet, or only legacy records (the genesis comes next). */
export interface ChainTip {
  chain_sequence: number;
  record_hash: string;
  content_hash: string;
}

/** The tip left by a context request record (null for a legacy one: the next record starts from the genesis). */
export function tipOf(r: Record<string, unknown>): ChainTip | null {
  if (r.record_hash === LEGACY_SENTINEL) return null;
  return { chain_sequence: Number(r.chain_sequence), record_hash: String(r.record_hash), content_hash: String(r.content_hash) };
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const HEX64 = /^[0-9a-f]{64}$/;

export type RecordKind = 'request' | 'output' | 'event';

/** The kind of a parsed leaf record, or null when it is neither. */
export function recordKind(r: Record<string, unknown>): RecordKind | null {
  if ('chain_sequence' in r) return 'request';
  if ('output_id' in r) return 'output';
  if ('event_sequence' in r) return 'event';
  return null;
}

/** Parses one leaf's data as a JSON object; a string is the reason it is not one. */
export function parseLeafRecord(data: Uint8Array): Record<string, unknown> | string {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.length).toString('utf8'));
  } catch {
    return 'the leaf data is not JSON';
  }
  return isObject(v) ? v : 'the leaf data is not a JSON object';
}

function chainFields(r: Record<string, unknown>): ChainFields | string {
  if (!Number.isSafeInteger(r.chain_sequence) || (r.chain_sequence as number) < 1) return 'chain_sequence is not a positive integer';
  if (typeof r.request_id !== 'string') return 'request_id is not a string';
  if (r.agent_id !== null && typeof r.agent_id !== 'string') return 'agent_id is not a string or null';
  if (typeof r.task_type !== 'string') return 'task_type is not a string';
  if (typeof r.intent_valid !== 'boolean') return 'intent_valid is not a boolean';
  if (typeof r.requested_at !== 'string' || Number.isNaN(Date.parse(r.requested_at))) return 'requested_at is not a date-time';
  return {
    chain_sequence: r.chain_sequence as number,
    request_id: r.request_id,
    agent_id: (r.agent_id as string | null) ?? null,
    task_type: r.task_type,
    request_params: (r.request_params ?? null) as ChainFields['request_params'],
    intent_valid: r.intent_valid,
    validation_errors: (r.validation_errors ?? null) as ChainFields['validation_errors'],
    context_bundle_ids: (r.context_bundle_ids ?? null) as ChainFields['context_bundle_ids'],
    context_scd_ids: (r.context_scd_ids ?? null) as ChainFields['context_scd_ids'],
    processing_time_ms: (r.processing_time_ms ?? null) as ChainFields['processing_time_ms'],
    requested_at: new Date(r.requested_at),
    chain_id: (r.chain_id ?? null) as string | null,
    parent_request_id: (r.parent_request_id ?? null) as string | null,
  };
}


const Q = 0x22; // "
const BS = 0x5c; // \
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b; // {, and } is LBRACE + 2
const LBRACK = 0x5b; // [, and ] is LBRACK + 2
const MAX_DEPTH = 64;

/** Set by scanString / scanValue since they were last cleared. */
let sawEscape = false;
let sawObject = false;
let sawHigh = false;
const stack = new Uint8Array(MAX_DEPTH);
/** A view of the whole buffer of the leaf being scanned (made once per buffer), and where the leaf's Uint8Array starts in it. */
let view: DataView = new DataView(new ArrayBuffer(0));
let viewOf: ArrayBufferLike | null = null;
let viewBase = 0;

/** An object key and its colon at b[i]: the position after the colon, or -1. */
function scanKey(b: Uint8Array, i: number, end: number): number {
  if (i >= end || b[i] !== Q) return -1;
  i = scanString(b, i + 1, end);
  return i < 0 || i >= end || b[i] !== COLON ? -1 : i + 1;
}

/**
 * The position after the string whose opening quote is at i - 1, or -1 when it is not a JSON
 * string as JSON.stringify writes it: a control character escaped other than as JSON.stringify
 * escapes it (\" \\ \b \f \n \r \t, else \u00xx in lower case), or any other escape (\/,
 * \u0041, a surrogate...). Bytes >= 0x80 are taken as they are (sawHigh: the caller checks
 * the leaf is UTF-8, which JSON.stringify's output of a parsed string then is byte for byte).
 */
function scanString(b: Uint8Array, i: number, end: number): number {
  const v = view;
  const o = viewBase;
  for (;;) {
    // Four bytes at a time while none is a quote, a backslash, a control character or >= 0x80
    // (exact "any" tests): most of a leaf is such text, and a byte loop costs twice as much.
    while (i + 4 <= end) {
      const x = v.getInt32(o + i, true);
      const q = x ^ 0x22222222;
      const k = x ^ 0x5c5c5c5c;
      if ((((x - 0x20202020) & ~x) | ((q - 0x01010101) & ~q) | ((k - 0x01010101) & ~k) | x) & 0x80808080) break;
      i += 4;
    }
    // Then byte by byte up to the byte that stopped it (within four bytes), and back.
    for (;;) {
      if (i >= end) return -1;
      const c = b[i++]!;
      if (c === Q) return i;
      if (c === BS) {
        sawEscape = true;
        if (i >= end) return -1;
        const e = b[i++]!;
        if (e === Q || e === BS || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) break;
        if (e !== 0x75 || i + 4 > end || b[i] !== 0x30 || b[i + 1] !== 0x30) return -1;
        const h = b[i + 2]!;
        const l = b[i + 3]!;
        const lv = l >= 0x30 && l <= 0x39 ? l - 0x30 : l >= 0x61 && l <= 0x66 ? l - 0x57 : -1;
        if ((h !== 0x30 && h !== 0x31) || lv < 0) return -1;
        const n = (h - 0x30) * 16 + lv;
        if (n === 8 || n === 9 || n === 10 || n === 12 || n === 13) return -1; // \b \t \n \f \r
        i += 4;
        break;
      }
      if (c < 0x20) return -1;
      if (c >= 0x80) {
        sawHigh = true;
        break;
      }
    }
  }
}

/** The position after the integer at i, or -1 unless it is one JSON.stringify writes as it is (at most 15 digits, no -0). */
function scanInt(b: Uint8Array, i: number, end: number): number {
  const neg = b[i] === 0x2d;
  if (neg) i++;
  const first = i;
  if (i < end && b[i] === 0x30) i++;
  else while (i < end && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
  const n = i - first;
  if (n === 0 || n > 15 || (neg && b[first] === 0x30)) return -1;
  // A fraction, an exponent or a digit after a leading 0: not taken (JSON.parse's verdict, or a general text).
  if (i < end) {
    const c = b[i]!;
    if (c === 0x2e || c === 0x65 || c === 0x45 || (c >= 0x30 && c <= 0x39)) return -1;
  }
  return i;
}

/** The position after `word` at b[i], or -1. */
function scanWord(b: Uint8Array, i: number, end: number, word: Uint8Array): number {
  if (i + word.length > end) return -1;
  for (let k = 0; k < word.length; k++) if (b[i + k] !== word[k]) return -1;
  return i + word.length;
}
const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');
const NULL = Buffer.from('null');

/**
 * The position after the JSON value at b[i], or -1 when it is not JSON or not written as
 * RFC 8785 writes it, key order aside (compactJsonb checks that where it matters): no
 * whitespace, strings as scanString takes them, integers as scanInt takes them. Sets
 * sawObject when the value holds an object, sawEscape when a string holds an escape.
 */
function scanValue(b: Uint8Array, i: number, end: number): number {
  let depth = 0;
  for (;;) {
    // A value at i.
    if (i >= end) return -1;
    const c = b[i]!;
    if (c === Q) i = scanString(b, i + 1, end);
    else if (c === LBRACE || c === LBRACK) {
      i++;
      if (c === LBRACE) sawObject = true;
      if (i < end && b[i] === c + 2) i++; // {} or []
      else {
        if (depth >= MAX_DEPTH) return -1;
        stack[depth++] = c;
        if (c === LBRACE && (i = scanKey(b, i, end)) < 0) return -1;
        continue;
      }
    } else if (c === 0x74) i = scanWord(b, i, end, TRUE);
    else if (c === 0x66) i = scanWord(b, i, end, FALSE);
    else if (c === 0x6e) i = scanWord(b, i, end, NULL);
    else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) i = scanInt(b, i, end);
    else return -1;
    if (i < 0) return -1;
    // After a value: the ends of the containers it closes, then a comma (and a key) or the end.
    for (;;) {
      if (depth === 0) return i;
      if (i >= end) return -1;
      const d = b[i]!;
      const open = stack[depth - 1]!;
      if (d === open + 2) {
        depth--;
        i++;
        continue;
      }
      if (d !== COMMA) return -1;
      i++;
      if (open === LBRACE && (i = scanKey(b, i, end)) < 0) return -1;
      break;
    }
  }
}

/** The top-level keys the checker reads, by id. */
const KEYS = [
  'agent_id', 'chain_id', 'chain_sequence', 'content_hash', 'context_bundle_ids', 'context_scd_ids', 'intent_valid', 'leaf_index', 'parent_request_id',
  'previous_hash', 'processing_time_ms', 'record_hash', 'request_id', 'request_params', 'requested_at', 'task_type', 'validation_errors',
  'output', 'output_hash', 'output_id',
] as const;
const [AGENT_ID, CHAIN_ID, CHAIN_SEQUENCE, CONTENT_HASH, CONTEXT_BUNDLE_IDS, CONTEXT_SCD_IDS, INTENT_VALID, LEAF_INDEX, PARENT_REQUEST_ID,
  PREVIOUS_HASH, PROCESSING_TIME_MS, RECORD_HASH, REQUEST_ID, REQUEST_PARAMS, REQUESTED_AT, TASK_TYPE, VALIDATION_ERRORS, OUTPUT, OUTPUT_HASH, OUTPUT_ID] =
  KEYS.map((_, k) => k) as number[] as [number, number, number, number, number, number, number, number, number, number, number, number, number, number, number, number, number, number, number, number];
const KEY_BYTES = KEYS.map((k) => Buffer.from(k, 'latin1'));
/** Key id by (length, first byte): no two keys share both (checked here). */
const KEY_BY_SHAPE = new Int8Array(32 * 128).fill(-1);
KEY_BYTES.forEach((k, id) => {
  const at = k.length * 128 + k[0]!;
  if (KEY_BY_SHAPE[at] !== -1) throw new Error(`record-check: keys ${KEYS[KEY_BY_SHAPE[at]!]} and ${KEYS[id]} share a shape`);
  KEY_BY_SHAPE[at] = id;
});

/** The id of the key b[s, e) (no escape in it), or -1 for a key the checker does not read. */
function keyId(b: Uint8Array, s: number, e: number): number {
  const len = e - s;
  if (len >= 32 || len === 0) return -1;
  const first = b[s]!;
  if (first >= 128) return -1;
  const id = KEY_BY_SHAPE[len * 128 + first]!;
  if (id < 0) return -1;
  const k = KEY_BYTES[id]!;
  for (let j = 1; j < len; j++) if (b[s + j] !== k[j]) return -1;
  return id;
}

/** Value spans of the keys read, per leaf (start -1: absent), and what the scan saw in each. */
const spanS = new Int32Array(KEYS.length);
const spanE = new Int32Array(KEYS.length);
const OBJ = 1;
const ESC = 2;
const HIGH = 4;
const spanF = new Uint8Array(KEYS.length);
/**
 * The last value of 64 bytes or more each key had that scanned right, and what the scan saw
 * in it: a leaf holding the same bytes there is compared (natively) instead of scanned again.
 * Lists of SCD ids repeat from one record to the next, and scanning one costs about as much
 * as hashing it.
 */
const lastText: Array<Buffer | null> = KEYS.map(() => null);
const lastF = new Uint8Array(KEYS.length);
/** The keys whose values may repeat (not the hashes, which never do: comparing and keeping them cost a microsecond a leaf). */
const REPEATING = new Uint8Array(KEYS.length);
for (const id of [CONTEXT_SCD_IDS, CONTEXT_BUNDLE_IDS, REQUEST_PARAMS, VALIDATION_ERRORS, OUTPUT]) REPEATING[id] = 1;

/**
 * Finds the spans of the top-level keys of the JSON object b[s, e); false when it is not an
 * object as canonical JSON writes one (key order aside: the checker reads each key's last value,
 * as JSON.parse keeps it), a key holds an escape, or its text is not UTF-8.
 */
function scanRecord(b: Uint8Array, s: number, e: number): boolean {
  spanS.fill(-1);
  if (e - s < 2 || b[s] !== LBRACE || b[e - 1] !== LBRACE + 2) return false;
  if (b.buffer !== viewOf) {
    viewOf = b.buffer;
    view = new DataView(b.buffer);
  }
  viewBase = b.byteOffset;
  sawHigh = false;
  let i = s + 1;
  for (;;) {
    if (b[i] !== Q) return false;
    sawEscape = false;
    const ks = i + 1;
    i = scanString(b, ks, e);
    if (i < 0 || i >= e || sawEscape || b[i] !== COLON) return false;
    const id = keyId(b, ks, i - 1);
    const vs = ++i;
    const last = id >= 0 && REPEATING[id] === 1 ? (lastText[id] ?? null) : null;
    let f: number;
    if (last !== null && vs + last.length <= e && last.compare(b, vs, vs + last.length) === 0) {
      // The value the key had in an earlier leaf (a value of 64 bytes or more ends where its bytes say: no number).
      i = vs + last.length;
      f = lastF[id]!;
      if (f & HIGH) sawHigh = true;
    } else {
      const high: boolean = sawHigh;
      sawEscape = sawObject = sawHigh = false;
      i = scanValue(b, i, e);
      if (i < 0) return false;
      f = (sawObject ? OBJ : 0) | (sawEscape ? ESC : 0) | (sawHigh ? HIGH : 0);
      sawHigh ||= high;
      if (id >= 0 && REPEATING[id] === 1 && i - vs >= 64) {
        lastText[id] = Buffer.from(b.subarray(vs, i));
        lastF[id] = f;
      }
    }
    if (id >= 0) {
      spanS[id] = vs;
      spanE[id] = i;
      spanF[id] = f;
    }
    if (i === e - 1) break; // the closing brace
    if (i >= e || b[i] !== COMMA) return false;
    i++;
  }
  // Strings are delimited by ASCII quotes, so a UTF-8 leaf makes every string UTF-8.
  return !sawHigh || isUtf8(b.subarray(s, e));
}

/** The non-negative integer of the digits b[s, e) (a span scanInt took), or -1 for a negative one. */
function uintAt(b: Uint8Array, s: number, e: number): number {
  if (b[s] === 0x2d) return -1;
  let v = 0;
  for (let i = s; i < e; i++) v = v * 10 + b[i]! - 0x30;
  return v;
}

/** True when the span b[s, e) is a string of 64 lower-case hex digits. */
function isHex64(b: Uint8Array, s: number, e: number): boolean {
  if (e - s !== 66 || b[s] !== Q) return false;
  for (let i = s + 1; i < e - 1; i++) {
    const c = b[i]!;
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return true;
}

/** Whether b[s, e) is a JSON string of the lowercase hex of the SHA-256 of src[0, n). */
function isHashOf(src: Uint8Array, n: number, b: Uint8Array, s: number, e: number): boolean {
  return e - s === 66 && b[s] === Q && b[e - 1] === Q && sha256HexIs(src, 0, n, b, s + 1);
}

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const two = (b: Uint8Array, i: number) => (b[i]! - 0x30) * 10 + b[i + 1]! - 0x30;

/** Buffer of at least n bytes keeping the first `keep` bytes of b. */
function grown(b: Buffer, n: number, keep: number): Buffer {
  if (n <= b.length) return b;
  const g = Buffer.allocUnsafeSlow(Math.max(n, 2 * b.length));
  b.copy(g, 0, 0, keep);
  return g;
}

/** The fields after chain_sequence in content order (hash.ts). */
const CONTENT_FIELDS = [REQUEST_ID, AGENT_ID, TASK_TYPE, REQUEST_PARAMS, INTENT_VALID, VALIDATION_ERRORS, CONTEXT_BUNDLE_IDS, CONTEXT_SCD_IDS, PROCESSING_TIME_MS, REQUESTED_AT, CHAIN_ID, PARENT_REQUEST_ID];
/** The strings record_content holds (agent_id may be null). */
const RECORD_STRINGS = [REQUEST_ID, TASK_TYPE, AGENT_ID];
/** Where requested_at's span ("YYYY-MM-DDTHH:MM:SS.sssZ" in quotes) holds digits. */
const ISO_DIGITS = [1, 2, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16, 18, 19, 21, 22, 23];

/**
 * Checks leaves in order. `tip` is the last context request record before the first leaf
 * checked (null: none, or only legacy ones). `check` returns null when the leaf is right, else
 * why it is not; after a failure the checker's state is undefined.
 */
export class LeafRecordChecker {
  /** Context request records, output records and management events checked. */
  requests = 0;
  outputs = 0;
  events = 0;
  /** The last management event checked (its sequence and record_hash), the next one chains from. */
  private eventTip: { seq: number; rh: string } | null = null;
  private chained: boolean;
  /**
   * The tip as the fast path keeps it: its chain_sequence, its record_hash in tipRh and its
   * content_hash as the first 64 bytes of cb (where the next content_hash input starts);
   * tipBytes false when the tip's hashes are not 64 hex digits (no fast path then), tipObject
   * false when `tip` is behind them (made on demand).
   */
  private tipSeq = 0;
  private readonly tipRh = Buffer.alloc(64);
  private tipBytes = false;
  private tipObject = true;
  /** The record_hash input, then the content_hash input. */
  private rb: Buffer = Buffer.allocUnsafeSlow(1024);
  private cb: Buffer = Buffer.allocUnsafeSlow(8192);
  /** The "YYYY-MM-DD" of requested_at last seen to be a real day. */
  private readonly day = Buffer.alloc(10);
  private dayOk = false;
  private readonly parseOnly: boolean;
  /** Leaves the fast path accepted (the others went through JSON.parse). */
  fastLeaves = 0;

  constructor(
    private tip: ChainTip | null,
    chainedBefore = tip !== null,
    /** parseOnly: every leaf through JSON.parse (the reference the fast path is tested against). */
    opts: { parseOnly?: boolean } = {},
  ) {
    this.chained = chainedBefore;
    this.parseOnly = !!opts.parseOnly;
    this.tipToBytes();
  }

  /** The last context request record's tip so far. */
  get chainTip(): ChainTip | null {
    this.bytesToTip();
    return this.tip;
  }

  check(leafIndex: number, data: Uint8Array): string | null {
    return this.checkAt(leafIndex, data, 0, data.length);
  }

  /** check() of the leaf data buf[s, e). */
  checkAt(leafIndex: number, buf: Uint8Array, s: number, e: number): string | null {
    if (!this.parseOnly && this.fastCheck(leafIndex, buf, s, e)) {
      this.fastLeaves++;
      return null;
    }
    this.bytesToTip();
    const r = parseLeafRecord(s === 0 && e === buf.length ? buf : buf.subarray(s, e));
    const verdict = typeof r === 'string' ? r : this.checkRecord(leafIndex, r);
    this.tipToBytes();
    return verdict;
  }

  private bytesToTip(): void {
    if (this.tipObject) return;
    this.tip = { chain_sequence: this.tipSeq, record_hash: this.tipRh.toString('latin1'), content_hash: this.cb.toString('latin1', 0, 64) };
    this.tipObject = true;
  }

  private tipToBytes(): void {
    const t = this.tip;
    this.tipBytes = !!t && HEX64.test(t.record_hash) && HEX64.test(t.content_hash);
    if (!t || !this.tipBytes) return;
    this.tipSeq = t.chain_sequence;
    this.tipRh.write(t.record_hash, 0, 'latin1');
    this.cb.write(t.content_hash, 0, 'latin1');
  }

  /**
   * True when the leaf buf[s, e) is canonical JSON of a record checkRecord accepts, with the
   * checker advanced as checkRecord would advance it; false (the checker untouched) when it is
   * not, or when this cannot tell.
   */
  private fastCheck(leafIndex: number, b: Uint8Array, s: number, e: number): boolean {
    if (!scanRecord(b, s, e)) return false;
    const li = spanS[LEAF_INDEX]!;
    if (li < 0 || b[li] === Q || b[li]! > 0x39 || uintAt(b, li, spanE[LEAF_INDEX]!) !== leafIndex) return false;
    if (spanS[CHAIN_SEQUENCE]! >= 0) return this.fastRequest(b, e - s);
    if (spanS[OUTPUT_ID]! >= 0) return this.fastOutput(b);
    return false;
  }

  /** An output record: output_hash is SHA-256 of the output object's text, which must be canonical. */
  private fastOutput(b: Uint8Array): boolean {
    const os = spanS[OUTPUT]!;
    const n = spanE[OUTPUT]! - os;
    if (os < 0 || b[os] !== LBRACE || spanS[OUTPUT_HASH]! < 0) return false;
    // The output's text must be what canonicalJson writes: compactJsonb copies it when its keys are in order.
    const rb = (this.rb = grown(this.rb, n, 0));
    if (compactJsonb(b, os, os + n, rb, 0) !== n) return false;
    if (!isHashOf(rb, n, b, spanS[OUTPUT_HASH]!, spanE[OUTPUT_HASH]!)) return false;
    this.outputs++;
    return true;
  }

  /**
   * A context request record (not a legacy one): the checks of chainFields and checkRecord on
   * the spans, then both hashes from inputs written here (hash.ts: record_content is the raw
   * text of its strings, content netstrings hold each field's canonical JSON, its span).
   */
  private fastRequest(b: Uint8Array, n: number): boolean {
    const S = spanS;
    const E = spanE;
    // chain_sequence: a positive integer (scanInt took at most 15 digits: a safe integer).
    const qs = S[CHAIN_SEQUENCE]!;
    const qe = E[CHAIN_SEQUENCE]!;
    if (!isDigit(b[qs]!) || b[qs] === 0x30) return false;
    const seq = uintAt(b, qs, qe);
    // request_id and task_type strings, agent_id a string or null, none escaped (record_content holds their raw text).
    for (const id of RECORD_STRINGS) {
      if (S[id]! < 0 || spanF[id]! & ESC || (b[S[id]!] !== Q && !(id === AGENT_ID && b[S[id]!] === 0x6e))) return false;
    }
    const iv = S[INTENT_VALID]!;
    if (iv < 0 || (b[iv] !== 0x74 && b[iv] !== 0x66)) return false;
    if (!this.isoTime(b, S[REQUESTED_AT]!, E[REQUESTED_AT]!)) return false;
    const ps = S[PREVIOUS_HASH]!;
    const pe = E[PREVIOUS_HASH]!;
    if (ps < 0 || !isHex64(b, ps, pe) || S[RECORD_HASH]! < 0 || S[CONTENT_HASH]! < 0) return false;
    // The link: from the tip, or from the genesis (the record's own previous_hash) when there is none.
    if (this.tip !== null || !this.tipObject) {
      if (!this.tipBytes || seq !== this.tipSeq + 1) return false;
      for (let k = 0; k < 64; k++) if (b[ps + 1 + k] !== this.tipRh[k]) return false;
    } else if (this.chained) return false;

    // record_content + previous_hash.
    const rb = (this.rb = grown(this.rb, n, 0));
    let d = copy(b, qs, qe, rb, 0);
    d = copy(b, S[REQUEST_ID]! + 1, E[REQUEST_ID]! - 1, rb, d);
    if (b[S[AGENT_ID]!] === Q) d = copy(b, S[AGENT_ID]! + 1, E[AGENT_ID]! - 1, rb, d);
    d = copy(b, S[TASK_TYPE]! + 1, E[TASK_TYPE]! - 1, rb, d);
    d = copy(b, iv, E[INTENT_VALID]!, rb, d);
    d = copy(b, S[REQUESTED_AT]! + 1, E[REQUESTED_AT]! - 1, rb, d);
    d = copy(b, ps + 1, pe - 1, rb, d);
    if (!isHashOf(rb, d, b, S[RECORD_HASH]!, E[RECORD_HASH]!)) return false;

    // The previous content_hash (cb's first 64 bytes hold the tip's), then the netstrings in content order.
    const cb = (this.cb = grown(this.cb, 64 + n + 16 * CONTENT_FIELDS.length + 16, 64));
    if (!this.tipBytes) copy(b, ps + 1, pe - 1, cb, 0);
    d = writeUint(cb, 64, qe - qs);
    cb[d++] = COLON;
    d = copy(b, qs, qe, cb, d);
    cb[d++] = COMMA;
    for (const id of CONTENT_FIELDS) {
      d = this.netstring(b, id, d);
      if (d < 0) return false;
    }
    const cs = S[CONTENT_HASH]!;
    if (!isHashOf(cb, d, b, cs, E[CONTENT_HASH]!)) return false;

    this.requests++;
    this.chained = true;
    this.tipSeq = seq;
    copy(b, S[RECORD_HASH]! + 1, E[RECORD_HASH]! - 1, this.tipRh, 0);
    copy(b, cs + 1, E[CONTENT_HASH]! - 1, cb, 0);
    this.tipBytes = true;
    this.tipObject = false;
    return true;
  }

  /** Writes the netstring of field `id`'s canonical JSON (its span; null when absent) at cb[d]; -1 when its span is not canonical. */
  private netstring(b: Uint8Array, id: number, d: number): number {
    const cb = this.cb;
    const s = spanS[id]!;
    if (s < 0) {
      cb[d++] = 0x34; // 4:null,
      cb[d++] = COLON;
      d = copy(NULL, 0, 4, cb, d);
      cb[d++] = COMMA;
      return d;
    }
    const n = spanE[id]! - s;
    d = writeUint(cb, d, n);
    cb[d++] = COLON;
    if (spanF[id]! & OBJ) {
      // Key order (and the integers) as canonicalJson writes them: compactJsonb copies the text only then.
      const end = compactJsonb(b, s, s + n, cb, d);
      if (end !== d + n) return -1;
      d = end;
    } else d = copy(b, s, s + n, cb, d);
    cb[d++] = COMMA;
    return d;
  }

  /**
   * True when the span b[s, e) is a string Date.prototype.toISOString() writes back as it is
   * ("YYYY-MM-DDTHH:MM:SS.sssZ"): then new Date(it).toISOString() in hash.ts is its text.
   * Each new day is checked by Date itself, the time by its digits' ranges.
   */
  private isoTime(b: Uint8Array, s: number, e: number): boolean {
    if (s < 0 || e - s !== 26 || b[s] !== Q || b[s + 11] !== 0x54 || b[s + 14] !== COLON || b[s + 17] !== COLON || b[s + 20] !== 0x2e || b[s + 24] !== 0x5a) return false;
    for (const k of ISO_DIGITS) if (!isDigit(b[s + k]!)) return false;
    if (two(b, s + 12) > 23 || two(b, s + 15) > 59 || two(b, s + 18) > 59) return false;
    const day = this.day;
    let same = this.dayOk;
    for (let k = 0; same && k < 10; k++) same = day[k] === b[s + 1 + k];
    if (same) return true;
    copy(b, s + 1, s + 11, day, 0);
    const text = day.toString('latin1');
    const t = Date.parse(`${text}T00:00:00.000Z`);
    this.dayOk = !Number.isNaN(t) && new Date(t).toISOString().slice(0, 10) === text;
    return this.dayOk;
  }

  checkRecord(leafIndex: number, r: Record<string, unknown>): string | null {
    if (r.leaf_index !== leafIndex) return `the record names leaf_index ${JSON.stringify(r.leaf_index)}, it is leaf ${leafIndex}`;
    const kind = recordKind(r);
    if (kind === 'output') {
      this.outputs++;
      if (!isObject(r.output)) return 'output is not a JSON object';
      let text: string;
      try { text = canonicalJson(r.output); } catch (e) { return `output has no canonical JSON (${(e as Error).message})`; }
      const want = sha256Hex(text);
      return r.output_hash === want ? null : `output_hash ${String(r.output_hash)} is not SHA-256 of the output's canonical JSON (${want})`;
    }
    if (kind === 'event') return this.checkEvent(r);
    if (kind !== 'request') return 'the record is neither a context request record (chain_sequence), an output record (output_id) nor a management event (event_sequence)';
    this.requests++;
    const f = chainFields(r);
    if (typeof f === 'string') return f;
    if (r.record_hash === LEGACY_SENTINEL) {
      if (this.chained) return `legacy record (chain_sequence ${f.chain_sequence}) after a chained record`;
      if (r.content_hash !== null) return 'a legacy record has a content_hash';
      this.tip = null;
      return null;
    }
    if (typeof r.previous_hash !== 'string' || !HEX64.test(r.previous_hash)) return 'previous_hash is not 64 hex digits';
    if (typeof r.record_hash !== 'string' || typeof r.content_hash !== 'string') return 'record_hash or content_hash is missing';
    let prevContent: string;
    if (this.tip) {
      if (f.chain_sequence !== this.tip.chain_sequence + 1) return `chain_sequence ${f.chain_sequence} does not follow ${this.tip.chain_sequence}`;
      if (r.previous_hash !== this.tip.record_hash) return `previous_hash is not the record_hash of chain_sequence ${this.tip.chain_sequence}`;
      prevContent = this.tip.content_hash;
    } else {
      if (this.chained) return 'a chained record follows nothing';
      prevContent = r.previous_hash; // the genesis hash starts both chains
    }
    const rh = computeRecordHash(f, r.previous_hash);
    if (rh !== r.record_hash) return `record_hash ${r.record_hash} of chain_sequence ${f.chain_sequence} is not the recomputed ${rh}`;
    const ch = computeContentHash(f, prevContent);
    if (ch !== r.content_hash) return `content_hash ${r.content_hash} of chain_sequence ${f.chain_sequence} is not the recomputed ${ch}`;
    this.chained = true;
    this.tip = { chain_sequence: f.chain_sequence, record_hash: rh, content_hash: ch };
    return null;
  }

  /**
   * A management event: its record_hash recomputed from its fields, and chained from the event
   * before it among the leaves checked (the first one's predecessor is in the old tree, which
   * the consistency proof covers).
   */
  private checkEvent(r: Record<string, unknown>): string | null {
    this.events++;
    const seq = r.event_sequence;
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) return 'event_sequence is not a positive integer';
    for (const k of ['event_id', 'event_type', 'resource_type', 'resource_id', 'actor', 'occurred_at', 'previous_hash', 'record_hash'] as const) {
      if (typeof r[k] !== 'string') return `the management event's ${k} is not a string`;
    }
    if (!HEX64.test(r.previous_hash as string)) return 'previous_hash is not 64 hex digits';
    if (r.request_id !== null && typeof r.request_id !== 'string') return "the management event's request_id is neither null nor a string";
    for (const k of ['before', 'after'] as const) if (r[k] !== null && !isObject(r[k])) return `the management event's ${k} is neither null nor an object`;
    if (this.eventTip) {
      if (seq !== this.eventTip.seq + 1) return `event_sequence ${seq} does not follow ${this.eventTip.seq}`;
      if (r.previous_hash !== this.eventTip.rh) return `previous_hash is not the record_hash of management event ${this.eventTip.seq}`;
    }
    const rh = eventRecordHash(r as Parameters<typeof eventRecordHash>[0]);
    if (rh !== r.record_hash) return `record_hash ${String(r.record_hash)} of management event ${seq} is not the recomputed ${rh}`;
    this.eventTip = { seq, rh };
    return null;
  }
}
