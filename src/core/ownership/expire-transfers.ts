/**
 * Expiry (spec 3.6): a pending transfer not accepted by its expires_at (effective_at +
 * TRANSFER_WINDOW_HOURS) becomes `expired`, and the expiry escalates to an admin: two events,
 * `ownership.transfer_expired` and `ownership.escalated` (what an admin can do next:
 * force-assign or request a new transfer), and a warning in the log. The agent keeps its owner.
 *
 * Run every TRANSFER_EXPIRY_INTERVAL_SECONDS by the job below, and lazily for one agent before
 * any transition or read of its transfers, so a due expiry never waits for the job. Any number
 * of processes may run it: the update is conditional on `status = 'pending'`, so each transfer
 * expires once.
 */
import { and, eq, lte } from 'drizzle-orm';
import type { AppContext } from '../../shared/app-context.js';
import { agentOwnershipTransfers } from '../db/schema/index.js';
import { recordTransferEvent, type Who } from './transfer-store.js';
import { notifyOwnership } from './notify.js';

const EXPIRY_ACTOR: Who = { actor: 'system:transfer-expiry', request_id: null };

/** Expires every due pending transfer (of one agent when given); returns how many. */
export async function expireDueTransfers(ctx: AppContext, opts: { agentId?: string } = {}): Promise<number> {
  const now = ctx.clock.now();
  const t = agentOwnershipTransfers;
  const due = and(eq(t.status, 'pending'), lte(t.expires_at, now), opts.agentId ? eq(t.agent_id, opts.agentId) : undefined);
  // The cheap read first: most calls find nothing and open no transaction.
  const [any] = await ctx.db.orm.select({ id: t.id }).from(t).where(due).limit(1);
  if (!any) return 0;
  const rows = await ctx.db.tx(async (db) => {
    const expired = await db.orm.update(t).set({ status: 'expired', resolved_at: now, resolved_by: EXPIRY_ACTOR.actor }).where(due).returning();
    expired.sort((a, b) => a.id.localeCompare(b.id));
    for (const row of expired) {
      const saved = await recordTransferEvent(ctx, db, EXPIRY_ACTOR, row, 'ownership.transfer_expired', { status: 'pending' }, { status: 'expired', agent_id: row.agent_id, expires_at: row.expires_at.toISOString() });
      notifyOwnership(ctx, db, 'ownership.escalated', saved);
      await recordTransferEvent(ctx, db, EXPIRY_ACTOR, saved, 'ownership.escalated', null, {
        escalated_to: 'admin',
        agent_id: row.agent_id,
        from_owner_id: row.from_owner_id,
        to_owner_id: row.to_owner_id,
        next: 'force-assign this transfer or request a new one',
      });
    }
    return expired;
  });
  for (const r of rows) {
    ctx.logger.warn('ownership transfer expired: escalated to an admin', { transfer_id: r.id, agent_id: r.agent_id, from_owner_id: r.from_owner_id, to_owner_id: r.to_owner_id });
  }
  return rows.length;
}

/** Starts the periodic job (and one run now); the returned function stops it and waits for a run in flight. */
export function startTransferExpiryJob(ctx: AppContext): () => Promise<void> {
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  const run = () => {
    if (stopped) return;
    running = running.then(() => expireDueTransfers(ctx)).catch((e) => ctx.logger.error('transfer expiry job failed', { error: e as Error }));
  };
  run();
  const timer = setInterval(run, ctx.config.ownership.expiryIntervalSeconds * 1000);
  timer.unref();
  return async () => {
    stopped = true;
    clearInterval(timer);
    await running;
  };
}
