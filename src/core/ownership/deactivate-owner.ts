/**
 * POST /api/owners/{owner_id}/deactivate (spec 3.6: an agent must never become ownerless).
 * In one transaction: the owner becomes `deactivated` (it can receive no agent from now on);
 * every pending transfer to it is cancelled; every agent it holds with no transfer in flight
 * gets a pending transfer to ORG_ADMIN_OWNER_ID. The agents keep their owner until the org
 * admin accepts or an admin force-assigns, so owner_id is never null (NOT NULL in 0013).
 *
 * Concurrency (two owners deactivated at once, an agent held by one with a transfer pending
 * to the other): the owner row is taken first, then every agent concerned in one statement
 * in agent_id order, so two deactivations cannot deadlock, and the later one waits for the
 * earlier's commit and then reads what it did (fresh statements), so whichever commits
 * second starts the org admin transfer the first could not.
 */
import { and, eq } from 'drizzle-orm';
import type { components } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import { recordEvent } from '../audit/events.js';
import { agentOwnershipTransfers, owners } from '../db/schema/index.js';
import { startFallbackTransfers } from './fallback.js';
import { recordTransferEvent, toOwner, toTransfer, type Who } from './transfer-store.js';

export type OwnerDeactivation = components['schemas']['OwnerDeactivation'];

const DEACTIVATION_ACTOR = 'system:owner-deactivated';

export async function deactivateOwner(ctx: AppContext, ownerId: string, who: Who): Promise<OwnerDeactivation> {
  const orgAdmin = ctx.config.ownership.orgAdminOwnerId;
  if (ownerId === orgAdmin) {
    throw new AppError('conflict', `${ownerId} is ORG_ADMIN_OWNER_ID, which receives the agents of deactivated owners: it cannot be deactivated`);
  }
  const now = ctx.clock.now();
  return ctx.db.tx(async (db) => {
    const [owner] = await db.orm
      .update(owners)
      .set({ status: 'deactivated', deactivated_at: now, deactivated_by: who.actor })
      .where(and(eq(owners.owner_id, ownerId), eq(owners.status, 'active')))
      .returning();
    if (!owner) {
      const [cur] = await db.orm.select().from(owners).where(eq(owners.owner_id, ownerId));
      if (!cur) throw new AppError('not_found', `Owner ${ownerId} does not exist`);
      throw new AppError('conflict', `Owner ${ownerId} is already deactivated`, { details: { owner_status: cur.status } });
    }
    // Every agent concerned, locked in one statement in agent_id order (see above).
    const locked = await db.query<{ agent_id: string }>(
      `SELECT agent_id FROM agents
        WHERE owner_id = $1 OR agent_id IN (SELECT agent_id FROM agent_ownership_transfers WHERE to_owner_id = $1 AND status = 'pending')
        ORDER BY agent_id FOR UPDATE`,
      [ownerId],
    );
    const cancelled = await db.orm
      .update(agentOwnershipTransfers)
      .set({ status: 'cancelled', resolved_at: now, resolved_by: DEACTIVATION_ACTOR })
      .where(and(eq(agentOwnershipTransfers.to_owner_id, ownerId), eq(agentOwnershipTransfers.status, 'pending')))
      .returning();
    cancelled.sort((a, b) => a.agent_id.localeCompare(b.agent_id));
    // Events after every row lock (recordEvent holds the chain lock to commit).
    await recordEvent(db, who, { event_type: 'owner.deactivated', resource_type: 'owner', resource_id: ownerId, before: { status: 'active' }, after: { status: 'deactivated' } }, now);
    const system: Who = { actor: DEACTIVATION_ACTOR, request_id: who.request_id };
    const cancelledOut = [];
    for (const row of cancelled) {
      const saved = await recordTransferEvent(ctx, db, system, row, 'ownership.transfer_cancelled', { status: 'pending' }, { status: 'cancelled', agent_id: row.agent_id, resolved_by: DEACTIVATION_ACTOR });
      cancelledOut.push(toTransfer(saved));
    }
    const started = await startFallbackTransfers(ctx, db, locked.map((r) => r.agent_id), system);
    return { owner: toOwner(owner), started, cancelled: cancelledOut };
  });
}
