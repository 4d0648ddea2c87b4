/**
 * The transparency log's leaves: every audit record (context requests, agent outputs and
 * management events) is one leaf, at its `leaf_index`. A leaf's data is the RFC 8785 canonical
 * JSON of the record exactly as its read endpoint returns it (`GET /api/audit/requests` for a
 * context request, `GET /api/audit/output/{output_id}` for an output, `GET /api/audit/events`
 * for an event), `leaf_index` included; the leaf hash is SHA-256(0x00 || data) (RFC 9162 2.1.1).
 */
import type { Db } from '../db/index.js';
import { leafHash } from './merkle.js';
import { asBuffer } from './tiles.js';
import { canonicalJson } from '../../shared/canonical-json.js';
import { AUDIT_COLUMNS, toAuditRecord, type AuditRecord, type AuditRow } from '../audit/read.js';
import { OUTPUT_COLUMNS, toAgentOutput, type OutputRow } from '../audit/output.js';
import { EVENT_COLUMNS, toManagementEvent, type EventRow } from '../audit/events.js';
import { ByteChainChecker, CHECK_COLUMNS, N_CHECK_COLUMNS } from '../audit/chain-check.js';
import { CopyBinaryReader, forEachCopyBinaryRow, int64 } from '../audit/copy-binary.js';
import { entryBundle } from './tile-path.js';

/**
 * The RFC 8785 canonical JSON of an audit record, written field by field in the canonical
 * (sorted) key order: strings, integers, booleans and arrays of strings are written by
 * JSON.stringify, which RFC 8785 adopts for them; only the two free-form objects
 * (request_params, validation_errors) go through the general canonicalizer. The integrator
 * writes one per record, and the general one spent about 40 µs of a W1 request's server CPU
 * on it (bench/tlog.bench.ts); `leaves.test.ts` checks this against `canonicalize` on records
 * with every kind of value.
 */
export function auditRecordJson(r: AuditRecord): string {
  return recordJson(r, JSON.stringify(r.context_bundle_ids), JSON.stringify(r.context_scd_ids));
}

/**
 * The same, with the two id lists already as JSON text: the integrator has PostgreSQL write
 * them (`array_to_json(...)::text`, whose escaping of text is JSON.stringify's: `\uXXXX` in
 * lower case for control characters but the five short escapes, nothing else escaped), since
 * the driver's parse of a text[] cost over a microsecond per element (a W2 record holds 56).
 */
function recordJson(r: Omit<AuditRecord, 'context_bundle_ids' | 'context_scd_ids'>, bundleIds: string, scdIds: string): string {
  const s = JSON.stringify;
  const obj = (v: Record<string, unknown> | null) => (v === null ? 'null' : canonicalJson(v));
  const num = (v: number | null) => (v === null ? 'null' : canonicalJson(v));
  return (
    `{"agent_id":${s(r.agent_id)},"chain_id":${s(r.chain_id)},"chain_sequence":${num(r.chain_sequence)},"content_hash":${s(r.content_hash)},` +
    `"context_bundle_ids":${bundleIds},"context_scd_ids":${scdIds},"intent_valid":${r.intent_valid},` +
    `"leaf_index":${num(r.leaf_index)},"parent_request_id":${s(r.parent_request_id)},"previous_hash":${s(r.previous_hash)},` +
    `"processing_time_ms":${num(r.processing_time_ms)},"record_hash":${s(r.record_hash)},"request_id":${s(r.request_id)},` +
    `"request_params":${obj(r.request_params)},"requested_at":${s(r.requested_at)},"task_type":${s(r.task_type)},"validation_errors":${obj(r.validation_errors)}}`
  );
}

/** The audit columns, the two id lists as JSON text (see recordJson). */
const LEAF_COLUMNS = `${AUDIT_COLUMNS.replace(/\bcontext_bundle_ids,|\bcontext_scd_ids,/g, '')},
  array_to_json(context_bundle_ids)::text AS bundle_ids_json, array_to_json(context_scd_ids)::text AS scd_ids_json`;
type LeafRow = Omit<AuditRow, 'context_bundle_ids' | 'context_scd_ids'> & { bundle_ids_json: string | null; scd_ids_json: string | null };

/** One leaf: its index and its data (UTF-8 bytes of the canonical JSON). */
export interface Leaf {
  index: number;
  data: Buffer;
}

/**
 * The SQL expressions writing a context request's canonical JSON (recordJson's), all of it but
 * the values of its two free-form objects: `head` runs up to request_params' value, `mid` from
 * there to validation_errors' value; the record's JSON is head, request_params, mid,
 * validation_errors, `}`. PostgreSQL's JSON escaping of text (to_json) is JSON.stringify's,
 * array_to_json is what readLeaves used for the id lists already, requested_at is
 * timestamptz(3) (to_char's milliseconds are all of it) and the integers print alike below
 * 2^53; the records where those may not hold are left to Node (see readLeaves).
 */
function requestJsonSql(): { head: string; mid: string } {
  const j = (col: string) => `coalesce(to_json(${col})::text, 'null')`;
  const head =
    `'{"agent_id":' || ${j('agent_id')} || ',"chain_id":' || ${j('chain_id')} || ',"chain_sequence":' || chain_sequence::text` +
    ` || ',"content_hash":' || ${j('content_hash')} || ',"context_bundle_ids":' || coalesce(array_to_json(context_bundle_ids)::text, 'null')` +
    ` || ',"context_scd_ids":' || coalesce(array_to_json(context_scd_ids)::text, 'null')` +
    ` || ',"intent_valid":' || CASE WHEN intent_valid THEN 'true' ELSE 'false' END || ',"leaf_index":' || leaf_index::text` +
    ` || ',"parent_request_id":' || ${j('parent_request_id')} || ',"previous_hash":' || ${j('previous_hash')}` +
    ` || ',"processing_time_ms":' || coalesce(processing_time_ms::text, 'null') || ',"record_hash":' || ${j('record_hash')}` +
    ` || ',"request_id":' || ${j('request_id')} || ',"request_params":'`;
  const mid = `',"requested_at":"' || to_char(requested_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '","task_type":' || ${j('task_type')} || ',"validation_errors":'`;
  return { head, mid };
}

/**
 * The context requests' leaves, written by PostgreSQL (requestJsonSql): whole for a record
 * with no free-form object (`json`), else `head` and `mid` around the objects, which Node
 * canonicalizes. `plain` is false for a record whose integers or date PostgreSQL and
 * JSON.stringify / toISOString might write differently: past 2^53, or a year outside
 * 100..9999 (toISOString's are signed six digits past 9999, and the drivers' Date parse takes
 * years 0..99 as 1950..2049: readLeavesInNode writes 0001 as 2001, and keeps doing so).
 */
const REQUEST_LEAVES_SQL = (() => {
  const { head, mid } = requestJsonSql();
  const objects = 'request_params IS NOT NULL OR validation_errors IS NOT NULL';
  return `SELECT leaf_index, request_params, validation_errors,
      CASE WHEN NOT (${objects}) THEN ${head} || 'null' || ${mid} || 'null}' END AS json,
      CASE WHEN ${objects} THEN ${head} END AS head, CASE WHEN ${objects} THEN ${mid} END AS mid,
      (chain_sequence BETWEEN -9007199254740991 AND 9007199254740991
        AND extract(year FROM requested_at AT TIME ZONE 'UTC') BETWEEN 100 AND 9999) AS plain
    FROM agent_context_requests WHERE leaf_index >= $1 AND leaf_index < $2 ORDER BY leaf_index`;
})();
interface RequestLeafRow {
  leaf_index: number | string;
  request_params: unknown;
  validation_errors: unknown;
  json: string | null;
  head: string | null;
  mid: string | null;
  plain: boolean;
}

/** A free-form object's canonical JSON as the read endpoint gives it (toAuditRecord: anything but an object is null). */
function objectJson(v: unknown): string {
  let o = v;
  if (typeof v === 'string') {
    try {
      o = JSON.parse(v);
    } catch {
      o = null;
    }
  }
  return o && typeof o === 'object' && !Array.isArray(o) ? canonicalJson(o) : 'null';
}

/**
 * The leaves `from` .. `from + count - 1` that exist, in order, stopping at the first index
 * no record holds (the leaves after a gap are not returned: the tree grows only by a prefix).
 * A context request's JSON is written by PostgreSQL but for its two free-form objects
 * (requestJsonSql): parsing every column of a record and writing its JSON here cost about
 * 40 µs of server CPU a leaf on audit.bench's records (bench/tlog.bench.ts, entry bundles);
 * leaves.test.ts checks the two ways agree byte for byte (readLeavesInNode).
 */
export async function readLeaves(db: Pick<Db, 'query'> & Partial<Pick<Db, 'raw' | 'pglite' | 'inTransaction'>>, from: number, count: number): Promise<Leaf[]> {
  const to = from + count;
  if (!db.inTransaction && (db.raw || db.pglite)) {
    const copied = await readLeavesByCopy(db as Db, from, to);
    if (copied) return copied;
  }
  const [requests, others] = await Promise.all([
    db.query<RequestLeafRow>(REQUEST_LEAVES_SQL, [from, to]),
    othersIn(db, from, to),
  ]);
  if (requests.some((r) => !r.plain)) return readLeavesInNode(db, from, count);
  return mergeLeaves(from, to, requests, (r) => r.json ?? `${r.head}${objectJson(r.request_params)}${r.mid}${objectJson(r.validation_errors)}}`, others);
}

/** A leaf that is not a context request (an output or a management event), with its data. */
interface OtherLeaf {
  leaf_index: number;
  data: string;
}

/** The outputs and management events whose leaf index is in [from, to), in leaf order, with their leaf data. */
async function othersIn(db: Pick<Db, 'query'>, from: number, to: number): Promise<OtherLeaf[]> {
  const [outputs, events] = await Promise.all([
    db.query<OutputRow>(`SELECT ${OUTPUT_COLUMNS} FROM agent_output_logs WHERE leaf_index >= $1 AND leaf_index < $2 ORDER BY leaf_index`, [from, to]),
    db.query<EventRow>(`SELECT ${EVENT_COLUMNS} FROM audit_management_events WHERE leaf_index >= $1 AND leaf_index < $2 ORDER BY leaf_index`, [from, to]),
  ]);
  const out: OtherLeaf[] = [
    ...outputs.map((o) => ({ leaf_index: Number(o.leaf_index), data: canonicalJson(toAgentOutput(o)) })),
    ...events.map((e) => ({ leaf_index: Number(e.leaf_index), data: canonicalJson(toManagementEvent(e)) })),
  ];
  return events.length && outputs.length ? out.sort((a, b) => a.leaf_index - b.leaf_index) : out;
}

/**
 * The leaves from `from` (below `to`) in order, from the context requests (`requests`, in leaf
 * order, each written by `json`) and the other leaves (in leaf order), stopping at the first
 * index none holds (the tree grows only by a gapless prefix).
 */
function mergeLeaves<R extends { leaf_index: number | string }>(from: number, to: number, requests: R[], json: (r: R) => string | Buffer, others: OtherLeaf[]): Leaf[] {
  const out: Leaf[] = [];
  let i = 0;
  let j = 0;
  for (let next = from; next < to; next++) {
    const r = requests[i];
    const o = others[j];
    let data: string | Buffer;
    if (r && Number(r.leaf_index) === next) {
      data = json(r);
      i++;
    } else if (o && o.leaf_index === next) {
      data = o.data;
      j++;
    } else break;
    out.push({ index: next, data: typeof data === 'string' ? Buffer.from(data, 'utf8') : data });
  }
  return out;
}

/**
 * readLeaves' fastest way, outside a transaction: the context requests as binary COPY rows,
 * each record's JSON written from the bytes by the chain checker's writer (chain-check.ts
 * leafData: verify's own path, with no row object, no parse of a text[] and no general
 * canonicalizer for the usual objects), the outputs as rows. A record leafData leaves to the
 * general way is read by readLeavesInNode. Null when that cannot be done (the caller reads the
 * range the SQL way).
 */
async function readLeavesByCopy(db: Db, from: number, to: number): Promise<Leaf[] | null> {
  const writer = new ByteChainChecker('', null);
  const requests: Array<{ leaf_index: number; data: Buffer | null }> = [];
  const row = (buf: Buffer, f: Int32Array): void => {
    requests.push({ leaf_index: f[33] === 8 ? int64(buf, f[32]!) : NaN, data: writer.leafData(buf, f) });
  };
  let othersP: Promise<OtherLeaf[]> | null = null;
  const copied = await copyRequestRows(db, from, to, row, () => {
    othersP = othersIn(db, from, to);
    othersP.catch(() => {}); // awaited below
  });
  if (!copied) return null;
  const others = await othersP!;
  // The records leafData leaves to the general way, one by one (rare: see leafData).
  for (const r of requests) {
    if (r.data) continue;
    if (!Number.isSafeInteger(r.leaf_index)) return null;
    const [leaf] = await readLeavesInNode(db, r.leaf_index, 1);
    if (!leaf) return null; // gone meanwhile: the caller reads the range again
    r.data = leaf.data;
  }
  return mergeLeaves(from, to, requests, (r) => r.data!, others);
}

/** The binary COPY of CHECK_COLUMNS of the context requests whose leaf index is in [from, to), in leaf order (safe integers only: it takes no parameters). */
export function requestRowsCopy(from: number, to: number): string {
  return `COPY (SELECT ${CHECK_COLUMNS} FROM agent_context_requests r WHERE r.leaf_index >= ${from} AND r.leaf_index < ${to} ORDER BY r.leaf_index) TO STDOUT WITH (FORMAT binary)`;
}

/**
 * The context requests whose leaf index is in [from, to), in leaf order, as binary COPY rows
 * of CHECK_COLUMNS given to `row`; `started` is called once the COPY's connection is taken,
 * before it runs. False when the bounds cannot be written into the COPY (it takes no
 * parameters).
 */
async function copyRequestRows(db: Db, from: number, to: number, row: (buf: Buffer, f: Int32Array) => void, started?: () => void): Promise<boolean> {
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to)) return false;
  const query = requestRowsCopy(from, to);
  // On PostgreSQL the COPY runs on a connection of its own, taken before the other queries
  // so that it starts at once, and given back as soon as it ends (they may wait for it on a
  // pool of one): when every pooled connection is busy, postgres.js queues the next query on
  // a busy one, and on one streaming a COPY that query fails (COPY_IN_PROGRESS): entry
  // bundles asked together answered 500 now and then.
  const conn = db.raw ? await db.raw.reserve() : null;
  started?.();
  try {
    if (conn) {
      await forEachCopyBinaryRow(await conn.unsafe(query).readable(), N_CHECK_COLUMNS, row);
    } else {
      const res = await db.pglite!.query(query.replace('TO STDOUT', "TO '/dev/blob'"));
      const reader = new CopyBinaryReader(N_CHECK_COLUMNS, row);
      reader.push(Buffer.from(await res.blob!.arrayBuffer()));
      reader.end();
    }
  } finally {
    conn?.release();
  }
  return true;
}

/** Buffers an entry bundle is written into (each call holds its own while it writes), kept for the next. */
const bundleScratch: Buffer[] = [];

/**
 * The entry bundle (C2SP tlog-tiles) of the leaves `from` .. `from + count - 1`, or null when
 * not all of them exist. When every leaf of the range is a context request the chain checker's
 * writer writes (the usual case), the COPY rows are written straight into the bundle: no
 * Buffer and no object a leaf, and no query of the outputs and events (a range the context
 * requests fill holds no other leaf: mergeLeaves takes the request's). Else readLeaves and
 * entryBundle, which give the same bytes (leaves.test.ts).
 */
export async function readEntryBundle(db: Pick<Db, 'query'> & Partial<Pick<Db, 'raw' | 'pglite' | 'inTransaction'>>, from: number, count: number): Promise<Buffer | null> {
  if (!db.inTransaction && (db.raw || db.pglite)) {
    const bundle = await entryBundleByCopy(db as Db, from, from + count);
    if (bundle) return bundle;
  }
  const leaves = await readLeaves(db, from, count);
  return leaves.length === count ? entryBundle(leaves.map((l) => l.data)) : null;
}

/** readEntryBundle's fast way: null when it cannot write the whole range so (the caller takes the general way). */
async function entryBundleByCopy(db: Db, from: number, to: number): Promise<Buffer | null> {
  const writer = new ByteChainChecker('', null);
  let out = bundleScratch.pop() ?? Buffer.allocUnsafeSlow(256 * 1024);
  let at = 0;
  let next = from;
  let whole = true;
  const row = (buf: Buffer, f: Int32Array): void => {
    if (!whole) return;
    const n = f[33] === 8 && int64(buf, f[32]!) === next ? writer.leafDataLength(buf, f) : -1;
    if (n < 0 || n > 0xffff) {
      whole = false;
      return;
    }
    if (at + 2 + n > out.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(at + 2 + n, 2 * out.length));
      out.copy(grown, 0, 0, at);
      out = grown;
    }
    out[at] = n >> 8;
    out[at + 1] = n & 0xff;
    writer.copyLeafData(out, at + 2);
    at += 2 + n;
    next++;
  };
  try {
    if (!(await copyRequestRows(db, from, to, row)) || !whole || next !== to) return null;
    const bundle = Buffer.allocUnsafeSlow(at);
    out.copy(bundle, 0, 0, at);
    return bundle;
  } finally {
    if (bundleScratch.length < 4) bundleScratch.push(out);
  }
}

/** readLeaves with every record read whole and written here (recordJson): for the records PostgreSQL might write otherwise. */
export async function readLeavesInNode(db: Pick<Db, 'query'>, from: number, count: number): Promise<Leaf[]> {
  const to = from + count;
  const [requests, others] = await Promise.all([
    db.query<LeafRow>(`SELECT ${LEAF_COLUMNS} FROM agent_context_requests WHERE leaf_index >= $1 AND leaf_index < $2 ORDER BY leaf_index`, [from, to]),
    othersIn(db, from, to),
  ]);
  return mergeLeaves(from, to, requests, (r) => recordJson(toAuditRecord({ ...r, context_bundle_ids: null, context_scd_ids: null }), r.bundle_ids_json ?? 'null', r.scd_ids_json ?? 'null'), others);
}

/** The number of leaves: one past the highest leaf index of either table (0 for none). */
export async function leafCount(db: Pick<Db, 'query'>): Promise<number> {
  const [r] = await db.query<{ n: number | string }>('SELECT svc_audit_next_leaf() AS n');
  return Number(r!.n);
}

/**
 * The leaf hashes `from` .. `from + count - 1` that exist, in order, stopping at the first
 * index no record holds. A context request's comes from its `leaf_hash` column (computed by the
 * database from the record's canonical JSON as it was stored, migration 0011): 40 bytes a
 * record to read instead of the record. Outputs, management events, and requests stored before
 * that column, are read and hashed here (readLeaves).
 */
export async function readLeafHashes(db: Pick<Db, 'query'>, from: number, count: number): Promise<Buffer[]> {
  const to = from + count;
  const [requests, outputs] = await Promise.all([
    db.query<{ leaf_index: number | string; leaf_hash: Uint8Array | string | null }>(
      'SELECT leaf_index, leaf_hash FROM agent_context_requests WHERE leaf_index >= $1 AND leaf_index < $2 ORDER BY leaf_index',
      [from, to],
    ),
    db.query<{ leaf_index: number | string }>(
      `SELECT leaf_index FROM agent_output_logs WHERE leaf_index >= $1 AND leaf_index < $2
       UNION ALL SELECT leaf_index FROM audit_management_events WHERE leaf_index >= $1 AND leaf_index < $2 ORDER BY leaf_index`,
      [from, to],
    ),
  ]);
  const hashes: Array<Buffer | null> = [];
  let i = 0;
  let j = 0;
  for (let next = from; next < to; next++) {
    const r = requests[i];
    if (r && Number(r.leaf_index) === next) {
      hashes.push(r.leaf_hash === null ? null : asBuffer(r.leaf_hash));
      i++;
    } else if (outputs[j] && Number(outputs[j]!.leaf_index) === next) {
      hashes.push(null);
      j++;
    } else break;
  }
  // The leaves without a stored hash, read whole, in runs.
  for (let k = 0; k < hashes.length; k++) {
    if (hashes[k] !== null) continue;
    let end = k;
    while (end < hashes.length && hashes[end] === null) end++;
    const leaves = await readLeaves(db, from + k, end - k);
    for (const l of leaves) hashes[l.index - from] = leafHash(l.data);
    // A record gone between the two reads: the tree grows only by the prefix before it.
    if (leaves.length !== end - k) return hashes.slice(0, k + leaves.length) as Buffer[];
    k = end - 1;
  }
  return hashes as Buffer[];
}
