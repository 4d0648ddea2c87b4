/**
 * Audit reads (decisions.md "Audit reads"): a filtered page of records, the records of one
 * multi-agent chain, and the records after a sequence (for the SSE stream). Always in
 * ascending integer chain_sequence order; legacy records included.
 */
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import type { components } from '../../../gen/openapi/control-plane.js';

/** The wire shape of an audit record comes from the contract (gen/), never a hand-written copy. */
export type AuditRecord = components['schemas']['AuditRecord'];
export type AuditRecordPage = components['schemas']['AuditRecordPage'];
export type AuditChain = components['schemas']['AuditChain'];

export const AUDIT_COLUMNS = `request_id, agent_id, task_type, request_params, intent_valid, validation_errors, context_bundle_ids,
  context_scd_ids, processing_time_ms, requested_at, chain_sequence, previous_hash, record_hash, content_hash, chain_id,
  parent_request_id, leaf_index`;

/** A jsonb value as an object (null for anything else). */
function objectOrNull(v: unknown): Record<string, unknown> | null {
  const o = typeof v === 'string' ? safeParse(v) : v;
  return o && typeof o === 'object' && !Array.isArray(o) ? (o as Record<string, unknown>) : null;
}
function safeParse(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
}

/** A row of COLUMNS as the drivers return it: jsonb may arrive as text, requested_at as a Date. */
export type AuditRow = Omit<AuditRecord, 'request_params' | 'validation_errors' | 'requested_at' | 'chain_sequence' | 'leaf_index'> & {
  leaf_index: number | string;
  request_params: unknown;
  validation_errors: unknown;
  requested_at: Date;
  chain_sequence: number | string;
};

export function toAuditRecord(r: AuditRow): AuditRecord {
  return {
    request_id: r.request_id,
    agent_id: r.agent_id ?? null,
    task_type: r.task_type,
    request_params: objectOrNull(r.request_params),
    intent_valid: r.intent_valid,
    validation_errors: objectOrNull(r.validation_errors),
    context_bundle_ids: r.context_bundle_ids ?? null,
    context_scd_ids: r.context_scd_ids ?? null,
    processing_time_ms: r.processing_time_ms ?? null,
    requested_at: r.requested_at.toISOString(),
    chain_sequence: Number(r.chain_sequence),
    previous_hash: r.previous_hash,
    record_hash: r.record_hash,
    content_hash: r.content_hash ?? null,
    chain_id: r.chain_id ?? null,
    parent_request_id: r.parent_request_id ?? null,
    leaf_index: Number(r.leaf_index),
  };
}

export interface AuditQuery {
  agentId?: string;
  taskType?: string;
  intentValid?: boolean;
  since?: string;
  until?: string;
  requestId?: string;
  /** The refused records with this `validation_errors.error_code`. */
  errorCode?: string;
  afterSequence?: number;
  beforeSequence?: number;
  /** 'desc': newest first (default 'asc'). */
  order?: 'asc' | 'desc';
  limit: number;
}

/** A date-time query parameter, or a 400 naming it. */
export function toDate(v: string, name: string): Date {
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) throw new AppError('validation_error', `${name} is not a valid date-time`, { details: { errors: [{ path: `/query/${name}`, rule: 'format', message: 'must match format "date-time"' }] } });
  return d;
}

/** A page of records matching every given filter; `next_after_sequence` is set when the page is full. */
export async function listAuditRequests(ctx: AppContext, q: AuditQuery): Promise<AuditRecordPage> {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (sql: string, v: unknown) => {
    params.push(v);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (q.agentId !== undefined) add('agent_id = ?', q.agentId);
  if (q.taskType !== undefined) add('task_type = ?', q.taskType);
  if (q.intentValid !== undefined) add('intent_valid = ?', q.intentValid);
  if (q.since !== undefined) add('requested_at >= ?', toDate(q.since, 'since'));
  if (q.until !== undefined) add('requested_at < ?', toDate(q.until, 'until'));
  if (q.requestId !== undefined) add('request_id = ?', q.requestId);
  if (q.errorCode !== undefined) add("validation_errors->>'error_code' = ?", q.errorCode);
  if (q.afterSequence !== undefined) add('chain_sequence > ?', q.afterSequence);
  if (q.beforeSequence !== undefined) add('chain_sequence < ?', q.beforeSequence);
  params.push(q.limit);
  const rows = await ctx.db.query<AuditRow>(
    `SELECT ${AUDIT_COLUMNS} FROM agent_context_requests ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY chain_sequence ${q.order === 'desc' ? 'DESC' : ''} LIMIT $${params.length}`,
    params,
  );
  const records = rows.map(toAuditRecord);
  return { records, next_after_sequence: records.length === q.limit ? records[records.length - 1]!.chain_sequence : null };
}

/** The records of one multi-agent chain; 404 when none carries the id. */
export async function getAuditChain(ctx: AppContext, chainId: string): Promise<AuditChain> {
  const rows = await ctx.db.query<AuditRow>(`SELECT ${AUDIT_COLUMNS} FROM agent_context_requests WHERE chain_id = $1 ORDER BY chain_sequence`, [chainId]);
  if (!rows.length) throw new AppError('not_found', 'No audit record carries this chain_id');
  return { chain_id: chainId, records: rows.map(toAuditRecord) };
}

/** Up to `limit` records after `after`, in order (the SSE stream's reads). */
export async function readAuditAfter(ctx: Pick<AppContext, 'db'>, after: number, limit: number): Promise<AuditRecord[]> {
  const rows = await ctx.db.query<AuditRow>(`SELECT ${AUDIT_COLUMNS} FROM agent_context_requests WHERE chain_sequence > $1 ORDER BY chain_sequence LIMIT $2`, [after, limit]);
  return rows.map(toAuditRecord);
}

/** The highest chain_sequence (0 for an empty log). */
export async function lastSequence(ctx: Pick<AppContext, 'db'>): Promise<number> {
  const [r] = await ctx.db.query<{ s: number | null }>('SELECT max(chain_sequence) AS s FROM agent_context_requests');
  return Number(r?.s ?? 0);
}
