/**
 * Accept (spec 3.6): the incoming owner, proven by the acceptance token, takes the agent.
 * Checks in this order, so that a caller without the token learns nothing of the transfer's
 * state: 404 (unknown transfer), 403 (token missing or wrong: nothing changes), 409 (not
 * pending, expired, not yet effective, incoming owner deactivated).
 */
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import { getAgentRow } from '../agents/agent-store.js';
import { expireDueTransfers } from './expire-transfers.js';
import { setAgentOwner } from './set-agent-owner.js';
import { assertToken, getTransferRow, lockActiveOwner, notPending, recordTransferEvent, resolveTransfer, toTransfer, type OwnershipTransfer, type Who } from './transfer-store.js';

export async function acceptTransfer(ctx: AppContext, agentId: string, transferId: string, token: string | null, via: Who): Promise<OwnershipTransfer> {
  await expireDueTransfers(ctx, { agentId });
  const now = ctx.clock.now();
  return ctx.db.tx(async (db) => {
    const seen = await getTransferRow(db, agentId, transferId);
    assertToken(seen, token);
    if (seen.status !== 'pending') throw notPending(seen);
    // Owner before agent (the lock order of transfer-store.ts); the owner may have been deactivated since the request.
    await lockActiveOwner(db, seen.to_owner_id, now);
    const agent = await getAgentRow(db, agentId, true);
    const t = await getTransferRow(db, agentId, transferId);
    if (t.status !== 'pending') throw notPending(t);
    if (t.expires_at <= now) throw notPending({ id: t.id, status: 'expired' });
    if (now < t.effective_at) {
      throw new AppError('conflict', `Transfer ${t.id} cannot be accepted before its effective_at ${t.effective_at.toISOString()}`, {
        details: { status: t.status, rule: 'not_yet_effective', effective_at: t.effective_at.toISOString() },
      });
    }
    const row = await resolveTransfer(db, t, ['pending'], 'accepted', t.to_owner_id, now);
    await setAgentOwner(db, agentId, t.to_owner_id, now);
    // The incoming owner acts (the token proves it); the admin key that carried the call is kept beside.
    const who: Who = { actor: t.to_owner_id, request_id: via.request_id };
    const saved = await recordTransferEvent(
      ctx,
      db,
      who,
      row,
      'ownership.transfer_accepted',
      { status: 'pending', owner_id: agent.owner_id },
      { status: 'accepted', owner_id: t.to_owner_id, agent_id: agentId, reason: t.reason, resolved_by: t.to_owner_id, presented_by: via.actor },
    );
    return toTransfer(saved);
  });
}
