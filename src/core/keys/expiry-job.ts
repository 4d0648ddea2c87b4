/**
 * The expiry job (spec 3.2, 8): every KEY_EXPIRY_INTERVAL_SECONDS (3600), and once at start,
 * active keys whose expires_at has passed become `expired` (is_active false, revoked_by
 * `system:expiry-job`), and the count is logged. Authentication never waits for it:
 * expires_at is checked on every request. Several processes may run it at once: the
 * update is conditional on `status = 'active'`, so each key is moved once.
 */
import type { AppContext } from '../../shared/app-context.js';
import { and, eq, isNotNull, lte } from 'drizzle-orm';
import { agentApiKeys } from '../db/schema/index.js';
import { invalidateKeys } from './key-cache.js';

const EXPIRY_REVOKED_BY = 'system:expiry-job';

/** One run; returns the number of keys it expired. */
export async function expireKeys(ctx: AppContext): Promise<number> {
  const now = ctx.clock.now();
  const rows = await ctx.db.orm
    .update(agentApiKeys)
    .set({ status: 'expired', is_active: false, revoked_at: now, revoked_by: EXPIRY_REVOKED_BY })
    .where(and(eq(agentApiKeys.status, 'active'), isNotNull(agentApiKeys.expires_at), lte(agentApiKeys.expires_at, now)))
    .returning({ key_id: agentApiKeys.key_id });
  ctx.logger.info('key expiry job: expired agent keys', { expired: rows.length });
  if (rows.length) await invalidateKeys(ctx, { kind: 'keys', key_ids: rows.map((r) => r.key_id) });
  return rows.length;
}

/** Starts the periodic job; the returned function stops it and waits for a run in flight. */
export function startExpiryJob(ctx: AppContext): () => Promise<void> {
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  const run = () => {
    if (stopped) return;
    running = running.then(() => expireKeys(ctx)).catch((e) => ctx.logger.error('key expiry job failed', { error: e as Error }));
  };
  run();
  const timer = setInterval(run, ctx.config.keyExpiryIntervalSeconds * 1000);
  timer.unref();
  return async () => {
    stopped = true;
    clearInterval(timer);
    await running;
  };
}
