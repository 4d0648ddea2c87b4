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
 */
import { canonicalJson, computeContentHash, computeRecordHash, LEGACY_SENTINEL, sha256Hex, type ChainFields } from '../audit/hash.js';

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

export type RecordKind = 'request' | 'output';

/** The kind of a parsed leaf record, or null when it is neither. */
export function recordKind(r: Record<string, unknown>): RecordKind | null {
  if ('chain_sequence' in r) return 'request';
  if ('output_id' in r) return 'output';
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

/**
 * Checks leaves in order. `tip` is the last context request record before the first leaf
 * checked (null: none, or only legacy ones). `check` returns null when the leaf is right, else
 * why it is not; after a failure the checker's state is undefined.
 */
export class LeafRecordChecker {
  /** Context request records and output records checked. */
  requests = 0;
  outputs = 0;
  private chained: boolean;

  constructor(private tip: ChainTip | null, chainedBefore = tip !== null) {
    this.chained = chainedBefore;
  }

  /** The last context request record's tip so far. */
  get chainTip(): ChainTip | null {
    return this.tip;
  }

  check(leafIndex: number, data: Uint8Array): string | null {
    const r = parseLeafRecord(data);
    if (typeof r === 'string') return r;
    return this.checkRecord(leafIndex, r);
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
    if (kind !== 'request') return 'the record is neither a context request record (chain_sequence) nor an output record (output_id)';
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
}
