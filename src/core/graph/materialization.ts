/**
 * The in-memory materialization of the active deployments: every deployed SCD (with its
 * YAML, pre-serialized as JSON too), which roles it applies to, and which SCDs govern it.
 * Built from the graph tables (build-snapshot.ts), tagged with the content version it was
 * read at, and rebuilt when that version moves (broker message `svc:content-changes`, a
 * local write, or the periodic counter check: see content-version.ts).
 *
 * Invariant: a snapshot is never served after this process learned of a newer version,
 * and never longer than CONTENT_CHECK_MS after a change committed elsewhere.
 */
import type { AppContext } from '../../shared/app-context.js';
import type { Db } from '../db/index.js';
export type { Snapshot, Universe } from './snapshot.js';
import { buildSnapshot, type BundleContent } from './build-snapshot.js';
import type { LRUCache } from 'lru-cache';
import { boundedCache, type Snapshot } from './snapshot.js';
import { CONTENT_CHANGES_CHANNEL, CONTENT_CHECK_MS, onContentChange, readContentVersion } from './content-version.js';

/** The named bounded cache of a snapshot (least recently used entries dropped past MAX_CACHE_ENTRIES), dropped with it. */
export function snapshotCache<V extends object>(snap: Snapshot, name: string): LRUCache<string, V> {
  let m = snap.caches.get(name) as LRUCache<string, V> | undefined;
  if (!m) {
    m = boundedCache<V>();
    snap.caches.set(name, m);
  }
  return m;
}

/** How often (ms) a request waiting for a content revision re-reads the counter without a broker message. */
const REVISION_RECHECK_MS = 250;

export class ContentCache {
  private snap: Snapshot | null = null;
  private checkedAt = -Infinity;
  /** Set by an invalidation (broker message, local write, reconnect); cleared by a check that began after it. */
  private dirty = true;
  private invalidations = 0;
  private inflight: Promise<Snapshot> | null = null;
  /** Immutable per-bundle-version content, kept while deployed. */
  private readonly contents = new Map<string, BundleContent>();
  /** Rebuild count (tests and benchmarks). */
  builds = 0;

  constructor(
    private readonly db: Db,
    private readonly now: () => number = () => performance.now(),
    private readonly onError: (e: Error) => void = () => {},
  ) {}

  /** Callers of `atLeast` waiting for the next invalidation. */
  private waiters = new Set<() => void>();

  /** Marks the snapshot as possibly stale: the next read waits for a check of the counter. */
  invalidate(): void {
    this.invalidations++;
    this.dirty = true;
    if (this.waiters.size) for (const wake of this.waiters) wake();
  }

  /**
   * The current snapshot once its version is at least `revision` (a consistency token), or
   * null when it is not within `timeoutMs`. While waiting, every invalidation (broker message
   * `svc:content-changes`, local write, reconnect) re-reads the counter at once, and so does
   * every REVISION_RECHECK_MS without one (a lost broker message, another process's write),
   * the last time at the deadline. Costs nothing unless asked: the hot path never calls it.
   */
  async atLeast(revision: number, timeoutMs: number): Promise<{ snapshot: Snapshot; reached: boolean }> {
    const first = await this.current();
    if (first.version >= revision) return { snapshot: first, reached: true };
    const deadline = this.now() + timeoutMs;
    for (;;) {
      // Re-read the counter now (the write may have landed elsewhere with its message lost), after each wake-up, and at the deadline.
      const snap = await this.refreshShared();
      if (snap.version >= revision) return { snapshot: snap, reached: true };
      const left = deadline - this.now();
      if (left <= 0) return { snapshot: snap, reached: false };
      await this.nextInvalidation(Math.min(left, REVISION_RECHECK_MS));
    }
  }

  private nextInvalidation(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      timer.unref();
      this.waiters.add(wake);
    });
  }

  /**
   * The current snapshot. After an invalidation the read waits for the counter check (and a
   * rebuild when the version moved), so a process reads its own writes and acts on every
   * broker message. When only the check period ran out, the read is answered from the
   * snapshot at once and the check runs in the background: the database stays off the hot
   * path, and a change missed by the broker is picked up within one period plus one check.
   */
  current(): Promise<Snapshot> {
    const s = this.snap;
    if (s && !this.dirty) {
      if (this.now() - this.checkedAt >= CONTENT_CHECK_MS && !this.inflight) {
        this.refreshShared().catch((e: Error) => this.onError(e));
      }
      return Promise.resolve(s);
    }
    return this.refreshShared();
  }

  /** Coalesced: concurrent callers share one check (and at most one rebuild). */
  private refreshShared(): Promise<Snapshot> {
    this.inflight ??= this.refresh().finally(() => {
      this.inflight = null;
    });
    return this.inflight;
  }

  private async refresh(): Promise<Snapshot> {
    const seenInvalidations = this.invalidations;
    const started = this.now();
    const version = await readContentVersion(this.db);
    let snap = this.snap;
    if (!snap || snap.version !== version) {
      // The version is read before the data: a write landing in between makes the next check rebuild again.
      snap = await buildSnapshot(this.db, version, this.contents, snap);
      this.builds++;
      this.snap = snap;
    }
    this.checkedAt = started;
    // An invalidation that arrived while we were reading must not be forgotten.
    if (seenInvalidations === this.invalidations) this.dirty = false;
    else if (this.dirty) return this.refresh();
    return snap;
  }
}

/** The cache of this context, subscribed to content changes (local and broker). */
export function contentCache(ctx: AppContext): ContentCache {
  return ctx.singleton('graph-content-cache', () => {
    const cache = new ContentCache(ctx.db, undefined, (e) => ctx.logger.warn('content version check failed; serving the current materialization', { error: e.message }));
    const offLocal = onContentChange(ctx, () => cache.invalidate());
    const offReconnect = ctx.broker.onReconnect(() => cache.invalidate());
    let unsubscribe: (() => Promise<void>) | null = null;
    let closed = false;
    void ctx.broker
      .subscribe(CONTENT_CHANGES_CHANNEL, () => cache.invalidate())
      .then((u) => {
        if (closed) void u();
        else unsubscribe = u;
      })
      .catch((e: Error) => ctx.logger.warn('content-changes subscription failed; relying on the periodic version check', { error: e.message }));
    ctx.onClose(async () => {
      closed = true;
      offLocal();
      offReconnect();
      if (unsubscribe) await unsubscribe();
    });
    return cache;
  });
}
