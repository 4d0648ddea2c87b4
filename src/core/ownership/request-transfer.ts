/** POST /api/agents/{id}/ownership/transfer (spec 3.6, 4.10): a pending transfer and its token, shown once. */
import type { components } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import { getAgentRow } from '../agents/agent-store.js';
import { expireDueTransfers } from './expire-transfers.js';
import { insertPendingTransfer, lockActiveOwner, type OwnershipTransferCreated, type Who } from './transfer-store.js';

export type OwnershipTransferRequest = components['schemas']['OwnershipTransferRequest'];

/** How far ahead effective_at may be. */
const MAX_EFFECTIVE_AHEAD_MS = 365 * 86_400_000;

export async function requestTransfer(ctx: AppContext, agentId: string, input: OwnershipTransferRequest, who: Who): Promise<OwnershipTransferCreated> {
  const now = ctx.clock.now();
  const asked = input.effective_at ? new Date(input.effective_at) : now;
  if (Number.isNaN(asked.getTime()) || asked.getTime() - now.getTime() > MAX_EFFECTIVE_AHEAD_MS) {
    throw new AppError('validation_error', 'effective_at must be a date-time at most 365 days ahead', {
      details: { errors: [{ path: '/body/effective_at', rule: 'effective_at', message: 'at most 365 days ahead' }] },
    });
  }
  // A past effective_at means now: the transfer can be accepted at once.
  const effective = asked < now ? now : asked;
  // A pending transfer whose window has passed no longer blocks a new one.
  await expireDueTransfers(ctx, { agentId });
  return ctx.db.tx(async (db) => {
    // Owner before agent (the lock order of transfer-store.ts).
    await lockActiveOwner(db, input.to_owner_id, now);
    const agent = await getAgentRow(db, agentId, true);
    if (agent.owner_id === input.to_owner_id) {
      throw new AppError('conflict', `Agent ${agentId} is already held by ${input.to_owner_id}`, { details: { owner_id: agent.owner_id } });
    }
    return insertPendingTransfer(ctx, db, who, {
      agent_id: agentId,
      from_owner_id: agent.owner_id,
      to_owner_id: input.to_owner_id,
      reason: input.reason,
      initiated_by: who.actor,
      effective_at: effective,
    });
  });
}
