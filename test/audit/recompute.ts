/**
 * An independent recomputation of the audit chain from the spec's rule and decisions.md,
 * written without the product's hash module: tests compare every stored hash with it.
 */
import { createHash } from 'node:crypto';
import type { Db } from '../../src/core/db/index.js';

const sha = (s: string) => createHash('sha256').update(Buffer.from(s, 'utf8')).digest('hex');

/** Sorted keys (UTF-16 order), compact separators. */
function canon(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return `[${v.map(canon).join(',')}]`;
  if (v instanceof Date) return JSON.stringify(v.toISOString());
  if (typeof v === 'object') {
    return `{${Object.keys(v as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canon((v as any)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}
const netstring = (s: string) => `${Buffer.from(s, 'utf8').length}:${s},`;

export interface Mismatch {
  seq: number;
  what: string;
}

/** Reads the whole table and returns every place where a stored hash is not the recomputed one. */
export async function recomputeChain(db: Db): Promise<{ chained: number; legacy: number; mismatches: Mismatch[] }> {
  const [g] = await db.query('SELECT * FROM audit_chain_genesis');
  const genesis = createHash('sha256').update(`svc-audit-genesis:${g!.deployment_id}${(g!.initialized_at as Date).toISOString()}`).digest('hex');
  const mismatches: Mismatch[] = [];
  if (genesis !== g!.genesis_hash) mismatches.push({ seq: 0, what: 'genesis' });
  const rows = await db.query('SELECT * FROM agent_context_requests ORDER BY chain_sequence');
  let prev = genesis;
  let prevContent = genesis;
  let legacy = 0;
  let chained = 0;
  let lastSeq: number | null = null;
  for (const r of rows) {
    const seq = Number(r.chain_sequence);
    if (r.record_hash === 'LEGACY_PRE_AUDIT') {
      legacy++;
      continue;
    }
    chained++;
    if (lastSeq !== null && seq !== lastSeq + 1) mismatches.push({ seq, what: 'gap' });
    lastSeq = seq;
    const at = (r.requested_at as Date).toISOString();
    const content = `${seq}${r.request_id}${r.agent_id ?? ''}${r.task_type}${r.intent_valid ? 'true' : 'false'}${at}`;
    if (r.previous_hash !== prev) mismatches.push({ seq, what: 'previous_hash' });
    const rh = sha(content + prev);
    if (rh !== r.record_hash) mismatches.push({ seq, what: 'record_hash' });
    const fields = [
      seq,
      r.request_id,
      r.agent_id,
      r.task_type,
      r.request_params,
      r.intent_valid,
      r.validation_errors,
      r.context_bundle_ids,
      r.context_scd_ids,
      r.processing_time_ms,
      at,
      r.chain_id,
      r.parent_request_id,
    ];
    const ch = sha(prevContent + fields.map((f) => netstring(canon(f))).join(''));
    if (ch !== r.content_hash) mismatches.push({ seq, what: 'content_hash' });
    // Chain on the stored values, so that one tampered record is reported once, where it is.
    prev = r.record_hash;
    prevContent = r.content_hash;
  }
  return { chained, legacy, mismatches };
}
