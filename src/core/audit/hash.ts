/**
 * The audit chain's hash rules (spec 2.3, 2.4 and decisions.md "Audit chain: the exact
 * canonical form"). Two chains run side by side over the same records:
 *
 * - `record_hash` (the spec's): SHA-256 of record_content followed by previous_hash, where
 *   record_content = chain_sequence + request_id + agent_id ('' when null) + task_type +
 *   ('true' | 'false') + requested_at (ISO text), concatenated with no separator.
 * - `content_hash` (decisions.md): SHA-256 of the previous record's content_hash (the
 *   genesis hash for the first) followed by the netstrings `<bytes>:<canonical JSON>,` of
 *   every stored field, in content order: chain_sequence, request_id, agent_id, task_type,
 *   request_params, intent_valid, validation_errors, context_bundle_ids, context_scd_ids,
 *   processing_time_ms, requested_at, chain_id, parent_request_id. It covers what the
 *   spec's hash does not: which SCDs were delivered, and where agent_id ends and task_type
 *   begins.
 *
 * The writer computes the parts that do not depend on the chain tip here and lets the
 * database finish them under the chain lock (see migration 0001, svc_audit_append); verify
 * recomputes everything here, from the stored fields alone.
 */
import { hash as oneShotHash } from 'node:crypto';
import { canonicalJson } from '../../shared/canonical-json.js';

/** record_hash of records written before the chain existed; counted, never chained. */
export const LEGACY_SENTINEL = 'LEGACY_PRE_AUDIT';

/** One audit record's hashed fields, as stored. */
export interface ChainFields {
  chain_sequence: number;
  request_id: string;
  agent_id: string | null;
  task_type: string;
  request_params: Record<string, unknown> | null;
  intent_valid: boolean;
  validation_errors: Record<string, unknown> | null;
  context_bundle_ids: string[] | null;
  context_scd_ids: string[] | null;
  processing_time_ms: number | null;
  requested_at: Date;
  chain_id: string | null;
  parent_request_id: string | null;
}

/** Lowercase hex SHA-256 of the UTF-8 bytes of `s`. */
export function sha256Hex(s: string): string {
  return oneShotHash('sha256', s, 'hex');
}

/** The canonical JSON of every hashed field: RFC 8785, from the `canonicalize` package (see src/shared/canonical-json.ts). */
export { canonicalJson };

/** `<UTF-8 byte length>:<text>,` */
export function netstring(text: string): string {
  return `${Buffer.byteLength(text, 'utf8')}:${text},`;
}

/** The spec's record_content without the leading chain_sequence (requested_at as ISO text). */
export function recordContentTail(f: Pick<ChainFields, 'request_id' | 'agent_id' | 'task_type' | 'intent_valid'>, requestedAtIso: string): string {
  return f.request_id + (f.agent_id ?? '') + f.task_type + (f.intent_valid ? 'true' : 'false') + requestedAtIso;
}

/**
 * The content netstrings of the fields after chain_sequence, from their canonical JSON texts
 * in content order (a caller that already holds some of the texts passes them).
 */
export function contentTailOf(canonicalTexts: readonly string[]): string {
  let out = '';
  for (const t of canonicalTexts) out += netstring(t);
  return out;
}

/** The content netstrings of every field after chain_sequence. */
function contentTail(f: Omit<ChainFields, 'chain_sequence'>): string {
  return contentTailOf([
    JSON.stringify(f.request_id),
    canonicalJson(f.agent_id),
    JSON.stringify(f.task_type),
    canonicalJson(f.request_params),
    f.intent_valid ? 'true' : 'false',
    canonicalJson(f.validation_errors),
    canonicalJson(f.context_bundle_ids),
    canonicalJson(f.context_scd_ids),
    canonicalJson(f.processing_time_ms),
    JSON.stringify(f.requested_at.toISOString()),
    canonicalJson(f.chain_id),
    canonicalJson(f.parent_request_id),
  ]);
}

/** record_hash's input: record_content + previous_hash. */
export function recordHashInput(f: ChainFields, previousHash: string): string {
  return String(f.chain_sequence) + recordContentTail(f, f.requested_at.toISOString()) + previousHash;
}

/** content_hash's input: previous content_hash + netstrings of the fields in content order. */
export function contentHashInput(f: ChainFields, previousContentHash: string): string {
  return previousContentHash + netstring(String(f.chain_sequence)) + contentTail(f);
}

/** record_hash = SHA-256(record_content + previous_hash). */
export function computeRecordHash(f: ChainFields, previousHash: string): string {
  return sha256Hex(recordHashInput(f, previousHash));
}

/** content_hash = SHA-256(previous content_hash + netstrings of the fields in content order). */
export function computeContentHash(f: ChainFields, previousContentHash: string): string {
  return sha256Hex(contentHashInput(f, previousContentHash));
}

/**
 * Makes a string storable and hash-stable: PostgreSQL text and jsonb refuse NUL, and a
 * lone UTF-16 surrogate would be stored as U+FFFD, so the stored text would no longer be
 * the hashed one. Both are replaced by U+FFFD before hashing and storing.
 */
export function storableText(s: string): string {
  // String.prototype.toWellFormed is in Node 20; TypeScript's ES2022 lib does not declare it.
  const str = s as string & { isWellFormed(): boolean; toWellFormed(): string };
  const w = str.isWellFormed() ? s : str.toWellFormed();
  // eslint-disable-next-line no-control-regex -- NUL is matched on purpose: PostgreSQL text cannot store U+0000, so it is replaced
  return w.includes('\u0000') ? w.replace(/\u0000/g, '\uFFFD') : w;
}

/**
 * storableText applied to every string (keys included) of a JSON value, and every number
 * JSON cannot hold (NaN, ±Infinity) made null: that is what JSON text and jsonb keep of it,
 * and what the hashes of records already stored took for it (the hand-written canonical JSON
 * before RFC 8785's wrote it as null; `canonicalize` refuses it).
 */
export function storableJson<T>(v: T): T {
  if (typeof v === 'string') return storableText(v) as T;
  if (typeof v === 'number') return (Number.isFinite(v) ? v : null) as T;
  if (Array.isArray(v)) return Array.from(v, (x) => storableJson(x)) as T; // a hole becomes undefined, written null
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[storableText(k)] = storableJson(x);
    return out as T;
  }
  return v;
}
