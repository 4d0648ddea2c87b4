/**
 * The expiry job (spec 3.2, 8): every KEY_EXPIRY_INTERVAL_SECONDS (3600), and once at start,
 * active keys whose expires_at has passed become `expired` (is_active false, revoked_by
 * `system:expiry-job`), each with a `key.expired` event (actor `system:expiry-job`) in the
 * same transaction, and the count is logged. Authentication never waits for it: expires_at
 * is checked on every request; the first refused use of a past-due key also expires that key
 * at once (`expireKeySoon`), so the event is written when the expiry is first seen. Several
 * processes may run it at once: the update is conditional on `status = 'active'`, so each
 * key is moved, and its event written, once.
 */
import type { AppContext } from '../../shared/app-context.js';
import { and, eq, inArray, isNotNull, lte } from 'drizzle-orm';
import { agentApiKeys } from '../db/schema/index.js';
import { recordEvent, systemActor } from '../audit/events.js';
import { invalidateKeys } from './key-cache.js';
import { keyEndedEvent } from './key-events.js';

const EXPIRY_REVOKED_BY = 'system:expiry-job';
const EXPIRY_WHO = systemActor('expiry-job');

/** One run (all past-due keys, or only the given ones); returns the number of keys it expired. */
export async function expireKeys(ctx: AppContext, only?: string[]): Promise<number> {
  const now = ctx.clock.now();
  const rows = await ctx.db.tx(async (db) => {
    const moved = await db.orm
      .update(agentApiKeys)
      .set({ status: 'expired', is_active: false, revoked_at: now, revoked_by: EXPIRY_REVOKED_BY })
      .where(
        and(
          eq(agentApiKeys.status, 'active'),
          isNotNull(agentApiKeys.expires_at),
          lte(agentApiKeys.expires_at, now),
          only ? inArray(agentApiKeys.key_id, only) : undefined,
        ),
      )
      .returning({ key_id: agentApiKeys.key_id, agent_id: agentApiKeys.agent_id, key_prefix: agentApiKeys.key_prefix });
    for (const r of moved) await recordEvent(db, EXPIRY_WHO, keyEndedEvent('key.expired', r, now, EXPIRY_REVOKED_BY), now);
    return moved;
  });
  if (!only || rows.length) ctx.logger.info('key expiry job: expired agent keys', { expired: rows.length });
  if (rows.length) await invalidateKeys(ctx, { kind: 'keys', key_ids: rows.map((r) => r.key_id) });
  return rows.length;
}

/**
 * Expires one past-due key in the background, after authentication refused it (never on
 * an accepted request). At most one run per key at a time in this process; once it has
 * committed the key is no longer `active`, so later refusals find nothing to do.
 */
export function expireKeySoon(ctx: AppContext, keyId: string): void {
  const tracker = ctx.singleton('agent-key-expire-soon', () => {
    const t = { inFlight: new Map<string, Promise<unknown>>() };
    ctx.onClose(async () => {
      await Promise.allSettled([...t.inFlight.values()]);
    });
    return t;
  });
  if (tracker.inFlight.has(keyId)) return;
  const run = expireKeys(ctx, [keyId])
    .catch((e) => ctx.logger.warn('expiring a past-due key failed; the expiry job will', { error: (e as Error).message }))
    .finally(() => tracker.inFlight.delete(keyId));
  tracker.inFlight.set(keyId, run);
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
