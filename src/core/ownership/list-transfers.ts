/**
 * Every agent's ownership transfers, pending first (oldest first: the longest waiting on top),
 * then the others, most recently initiated first; filtered by agent and status, paged. Used by the
 * console's transfers page only: the API has no list-all operation (its transfers are read
 * per agent, GET /api/agents/{id}/ownership/history). Due expiries are applied first, so a
 * transfer shown as pending is one that can still be accepted.
 */
import { and, asc, count, desc, eq, sql } from 'drizzle-orm';
import type { AppContext } from '../../shared/app-context.js';
import { agentOwnershipTransfers } from '../db/schema/index.js';
import { expireDueTransfers } from './expire-transfers.js';
import { toTransfer, type OwnershipTransfer, type TransferRow } from './transfer-store.js';

export interface TransferQuery {
  agentId?: string;
  status?: TransferRow['status'];
  limit: number;
  offset: number;
}

export async function listTransfers(ctx: AppContext, q: TransferQuery): Promise<{ transfers: OwnershipTransfer[]; total: number }> {
  await expireDueTransfers(ctx, { agentId: q.agentId });
  const t = agentOwnershipTransfers;
  const filter = and(q.agentId ? eq(t.agent_id, q.agentId) : undefined, q.status ? eq(t.status, q.status) : undefined);
  const [{ n }] = await ctx.db.orm.select({ n: count() }).from(t).where(filter);
  const rows = await ctx.db.orm
    .select()
    .from(t)
    .where(filter)
    .orderBy(sql`CASE WHEN ${t.status} = 'pending' THEN 0 ELSE 1 END`, sql`CASE WHEN ${t.status} = 'pending' THEN ${t.initiated_at} END ASC`, desc(t.initiated_at), asc(t.id))
    .limit(q.limit)
    .offset(q.offset);
  return { transfers: rows.map(toTransfer), total: n };
}
