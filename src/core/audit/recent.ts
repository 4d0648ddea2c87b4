/**
 * An agent's latest audit records, newest first (the console's agent page). The API's
 * `GET /api/audit/requests` reads in ascending chain order from a sequence; this read is the
 * same records the other way round, limited.
 */
import type { AppContext } from '../../shared/app-context.js';
import { AUDIT_COLUMNS, toAuditRecord, type AuditRecord, type AuditRow } from './read.js';

export async function latestAuditRequests(ctx: Pick<AppContext, 'db'>, agentId: string, limit: number): Promise<AuditRecord[]> {
  const rows = await ctx.db.query<AuditRow>(`SELECT ${AUDIT_COLUMNS} FROM agent_context_requests WHERE agent_id = $1 ORDER BY chain_sequence DESC LIMIT $2`, [agentId, limit]);
  return rows.map(toAuditRecord);
}
