/**
 * The content version: one counter row (migration 0006) bumped in the same transaction as
 * every change to bundles, tags and deployments. In-memory materializations remember the
 * version they were built from; a change is announced on the broker channel
 * `svc:content-changes` so every process drops its cache at once, and each process also
 * re-reads the counter at most every CONTENT_CHECK_MS, so a lost broker message (Redis
 * down) cannot keep a stale materialization in service for longer than that.
 */
import { eq, sql } from 'drizzle-orm';
import type { AppContext } from '../../shared/app-context.js';
import type { Db } from '../db/index.js';
import { contentVersion } from '../db/schema/index.js';

export const CONTENT_CHANGES_CHANNEL = 'svc:content-changes';

/** How often (ms) a process re-reads the counter when no broker message told it to. */
export const CONTENT_CHECK_MS = 1000;

/**
 * Bumps the counter inside the caller's transaction and returns the new version, with
 * `bundlesVersion`, which moves only when `bundles` is true (a write to the bundles table:
 * publish, deactivate). Call it first in a content write: its row lock serializes content
 * writers, so checks made after it (version conflicts, cycles through unpinned imports)
 * see every committed write.
 */
export async function bumpVersions(t: Db, bundles: boolean): Promise<{ version: number; bundlesVersion: number }> {
  const [row] = await t.orm
    .update(contentVersion)
    .set({ version: sql`${contentVersion.version} + 1`, ...(bundles && { bundles_version: sql`${contentVersion.bundles_version} + 1` }) })
    .where(eq(contentVersion.singleton, true))
    .returning({ version: contentVersion.version, bundlesVersion: contentVersion.bundles_version });
  return row!;
}

export async function readContentVersion(db: Db): Promise<number> {
  const [row] = await db.orm.select({ version: contentVersion.version }).from(contentVersion).where(eq(contentVersion.singleton, true));
  return row?.version ?? 0;
}

type Listener = (version: number | null) => void;

/** Local listeners (the materialization of this context) told synchronously after a commit. */
function listeners(ctx: AppContext): Set<Listener> {
  return ctx.singleton('content-change-listeners', () => new Set<Listener>());
}

export function onContentChange(ctx: AppContext, fn: Listener): () => void {
  const set = listeners(ctx);
  set.add(fn);
  return () => set.delete(fn);
}

/** After commit: invalidate this process now, then tell the others through the broker. */
export async function announceContentChange(ctx: AppContext, version: number): Promise<void> {
  for (const fn of listeners(ctx)) fn(version);
  await ctx.broker.publish(CONTENT_CHANGES_CHANNEL, JSON.stringify({ version, process_id: ctx.processId }));
}
