/**
 * The rule that keeps agents away from deactivated owners: an agent whose owner is deactivated
 * and that has no transfer in flight gets a pending transfer to ORG_ADMIN_OWNER_ID. Run by the
 * owner's deactivation and whenever a transfer away from a deactivated owner is closed.
 */
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import type { Db } from '../db/index.js';
import { insertPendingTransfer, lockActiveOwner, type OwnershipTransferCreated, type Who } from './transfer-store.js';

const FALLBACK_REASON = 'owner deactivated';

/**
 * For each of `agentIds` (their rows already locked by the caller) held by a deactivated owner
 * with nothing pending: a transfer to the org admin. Reads are fresh statements, so they see
 * every transaction that committed before the caller took the agents' locks.
 */
export async function startFallbackTransfers(ctx: AppContext, db: Db, agentIds: string[], who: Who = { actor: 'system:owner-deactivated', request_id: null }): Promise<OwnershipTransferCreated[]> {
  if (!agentIds.length) return [];
  const orgAdmin = ctx.config.ownership.orgAdminOwnerId;
  const rows = await db.query<{ agent_id: string; owner_id: string }>(
    `SELECT a.agent_id, a.owner_id FROM agents a JOIN owners o ON o.owner_id = a.owner_id
      WHERE a.agent_id = ANY($1::text[]) AND o.status = 'deactivated' AND a.owner_id <> $2
        AND NOT EXISTS (SELECT 1 FROM agent_ownership_transfers t WHERE t.agent_id = a.agent_id AND t.status = 'pending')
      ORDER BY a.agent_id`,
    [agentIds, orgAdmin],
  );
  if (!rows.length) return [];
  const now = ctx.clock.now();
  try {
    // The org admin cannot be deactivated (deactivate-owner.ts); this share lock only registers it when new.
    await lockActiveOwner(db, orgAdmin, now);
  } catch (e) {
    if (e instanceof AppError && e.code === 'conflict') throw new AppError('conflict', `ORG_ADMIN_OWNER_ID ${orgAdmin} is deactivated: agents of a deactivated owner cannot be handed to it`);
    throw e;
  }
  const out: OwnershipTransferCreated[] = [];
  for (const r of rows) {
    out.push(await insertPendingTransfer(ctx, db, who, { agent_id: r.agent_id, from_owner_id: r.owner_id, to_owner_id: orgAdmin, reason: FALLBACK_REASON, initiated_by: who.actor, effective_at: now }));
  }
  return out;
}
