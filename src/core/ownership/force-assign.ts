/**
 * Force-assign (spec 3.6): an admin completes a `pending` or `expired` transfer without the
 * incoming owner's acceptance. A distinct transition (`force_assigned`) and a distinct event
 * (`ownership.force_assigned`), so that it never reads as the owner's consent.
 */
import { and, eq, ne } from 'drizzle-orm';
import { randomUUID } from 'node:crypto';
import type { components } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import type { Db } from '../db/index.js';
import { getAgentRow, type AgentRow } from '../agents/agent-store.js';
import { agentOwnershipTransfers } from '../db/schema/index.js';
import { expireDueTransfers } from './expire-transfers.js';
import { setAgentOwner } from './set-agent-owner.js';
import { getTransferRow, lockActiveOwner, newAcceptanceToken, notPending, recordTransferEvent, resolveTransfer, toTransfer, windowEnd, type OwnershipTransfer, type TransferRow, type Who } from './transfer-store.js';

export type ForceAssignRequest = components['schemas']['ForceAssignRequest'];

async function assertNothingElsePending(db: Db, agentId: string, exceptId: string | null): Promise<void> {
  const others = await db.orm
    .select({ id: agentOwnershipTransfers.id })
    .from(agentOwnershipTransfers)
    .where(and(eq(agentOwnershipTransfers.agent_id, agentId), eq(agentOwnershipTransfers.status, 'pending'), exceptId ? ne(agentOwnershipTransfers.id, exceptId) : undefined));
  if (others.length) {
    throw new AppError('conflict', `Transfer ${others[0].id} of agent ${agentId} is pending: resolve it first`, { details: { pending_transfer_id: others[0].id } });
  }
}

async function recordForced(ctx: AppContext, db: Db, who: Who, row: TransferRow, before: { status: string; owner_id: string }, reason: string | null): Promise<OwnershipTransfer> {
  const saved = await recordTransferEvent(ctx, db, who, row, 'ownership.force_assigned', before, {
    status: 'force_assigned',
    owner_id: row.to_owner_id,
    agent_id: row.agent_id,
    reason: reason ?? row.reason,
    resolved_by: who.actor,
  });
  return toTransfer(saved);
}

export async function forceAssignTransfer(ctx: AppContext, agentId: string, transferId: string, input: ForceAssignRequest | undefined, who: Who): Promise<OwnershipTransfer> {
  await expireDueTransfers(ctx, { agentId });
  const now = ctx.clock.now();
  return ctx.db.tx(async (db) => {
    const seen = await getTransferRow(db, agentId, transferId);
    if (seen.status !== 'pending' && seen.status !== 'expired') throw notPending(seen);
    await lockActiveOwner(db, seen.to_owner_id, now);
    const agent = await getAgentRow(db, agentId, true);
    const t = await getTransferRow(db, agentId, transferId);
    if (t.status !== 'pending' && t.status !== 'expired') throw notPending(t);
    if (agent.owner_id !== t.from_owner_id) {
      throw new AppError('conflict', `Agent ${agentId} has changed owner since transfer ${t.id} was requested (now ${agent.owner_id})`, {
        details: { status: t.status, owner_id: agent.owner_id },
      });
    }
    await assertNothingElsePending(db, agentId, t.id);
    const row = await resolveTransfer(db, t, ['pending', 'expired'], 'force_assigned', who.actor, now);
    await setAgentOwner(db, agentId, t.to_owner_id, now);
    return recordForced(ctx, db, who, row, { status: t.status, owner_id: agent.owner_id }, input?.reason ?? null);
  });
}

/** The reason recorded when PUT /api/agents/{id} changes the owner. */
const PUT_REASON = 'PUT /api/agents';

/**
 * An admin's direct reassignment (PUT /api/agents/{id} with another owner_id), inside the
 * caller's transaction: recorded as a transfer completed at once (`force_assigned`), so the
 * chain of custody has every owner change. The caller has locked the new owner, then the agent.
 * Returns the recording of its event, for the caller to run last in its transaction (the
 * event takes the chain lock, held to commit).
 */
export async function reassignOwner(ctx: AppContext, db: Db, agent: AgentRow, toOwnerId: string, who: Who): Promise<() => Promise<void>> {
  if (agent.owner_id === toOwnerId) return async () => {};
  const now = ctx.clock.now();
  await assertNothingElsePending(db, agent.agent_id, null);
  const [row] = await db.orm
    .insert(agentOwnershipTransfers)
    .values({
      id: randomUUID(),
      agent_id: agent.agent_id,
      from_owner_id: agent.owner_id,
      to_owner_id: toOwnerId,
      status: 'force_assigned',
      reason: PUT_REASON,
      initiated_by: who.actor,
      initiated_at: now,
      effective_at: now,
      expires_at: windowEnd(ctx, now),
      resolved_at: now,
      resolved_by: who.actor,
      // Never shown: a completed transfer cannot be accepted.
      acceptance_token_hash: newAcceptanceToken().hash,
    })
    .returning();
  await setAgentOwner(db, agent.agent_id, toOwnerId, now);
  return async () => {
    await recordForced(ctx, db, who, row, { status: 'none', owner_id: agent.owner_id }, null);
  };
}
