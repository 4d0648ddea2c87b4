/**
 * Reject (the incoming owner, with the token) and cancel (an admin): `pending` to `rejected` or
 * `cancelled`; the current owner keeps the agent. When that owner is deactivated, a transfer
 * to ORG_ADMIN_OWNER_ID is started in the same transaction (unless the closed one was to the
 * org admin already), so that closing a transfer never leaves an agent with a deactivated
 * owner and nothing in flight.
 */
import type { AppContext } from '../../shared/app-context.js';
import { getAgentRow } from '../agents/agent-store.js';
import { expireDueTransfers } from './expire-transfers.js';
import { startFallbackTransfers } from './fallback.js';
import { assertToken, getTransferRow, notPending, recordTransferEvent, resolveTransfer, toTransfer, type OwnershipTransfer, type Who } from './transfer-store.js';

type Closed = 'rejected' | 'cancelled';

async function close(ctx: AppContext, agentId: string, transferId: string, status: Closed, who: Who, token?: string | null): Promise<OwnershipTransfer> {
  await expireDueTransfers(ctx, { agentId });
  return ctx.db.tx(async (db) => {
    const seen = await getTransferRow(db, agentId, transferId);
    if (token !== undefined) assertToken(seen, token);
    await getAgentRow(db, agentId, true);
    const t = await getTransferRow(db, agentId, transferId);
    if (t.status !== 'pending') throw notPending(t);
    const resolvedBy = status === 'rejected' ? t.to_owner_id : who.actor;
    const actor: Who = status === 'rejected' ? { actor: t.to_owner_id, request_id: who.request_id } : who;
    const row = await resolveTransfer(db, t, ['pending'], status, resolvedBy, ctx.clock.now());
    const fallbackOk = t.to_owner_id !== ctx.config.ownership.orgAdminOwnerId;
    // Events last: recordEvent takes the chain lock, held to commit.
    const saved = await recordTransferEvent(ctx, db, actor, row, `ownership.transfer_${status}`, { status: 'pending' }, {
      status,
      agent_id: agentId,
      resolved_by: resolvedBy,
      ...(status === 'rejected' && { presented_by: who.actor }),
    });
    if (fallbackOk) await startFallbackTransfers(ctx, db, [agentId]);
    return toTransfer(saved);
  });
}

/** The incoming owner declines (needs the acceptance token: 403 without it, nothing changes). */
export function rejectTransfer(ctx: AppContext, agentId: string, transferId: string, token: string | null, who: Who): Promise<OwnershipTransfer> {
  return close(ctx, agentId, transferId, 'rejected', who, token);
}

/** The initiator (an admin) withdraws the transfer. */
export function cancelTransfer(ctx: AppContext, agentId: string, transferId: string, who: Who): Promise<OwnershipTransfer> {
  return close(ctx, agentId, transferId, 'cancelled', who);
}
