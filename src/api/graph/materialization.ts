/**
 * The in-memory materialization of the active deployments: every deployed SCD (with its
 * pre-serialized YAML), which roles it applies to, and which SCDs govern it. Built from the
 * graph tables, tagged with the content version it was read at, and rebuilt when that
 * version moves (broker message `svc:content-changes`, a local write, or the periodic
 * counter check: see content-version.ts).
 *
 * Invariant: a snapshot is never served after this process learned of a newer version,
 * and never longer than CONTENT_CHECK_MS after a change committed elsewhere.
 */
import type { AppContext } from '../../shared/app-context.js';
import type { Db } from '../../shared/db/index.js';
import { CONTENT_CHANGES_CHANNEL, CONTENT_CHECK_MS, onContentChange, readContentVersion } from './content-version.js';

export interface ScdEntry {
  id: string;
  /** Position in the deployed universe (resolution order of the bundles, then manifest order). */
  index: number;
  /** `bundle:<name>:<version>` the content comes from (first occurrence in resolution order). */
  bundleRef: string;
  yaml: string;
  /** Roles it applies to; null = every role. Union over the deployed bundles that hold it. */
  roles: Set<string> | null;
  /** SCDs that govern it (GOVERNED_BY targets inside the deployed universe). */
  governedBy: number[];
}

export interface Snapshot {
  version: number;
  /** Union of the active deployments' resolved bundles, in deployment then resolution order. */
  bundleRefs: string[];
  scds: ScdEntry[];
  byId: Map<string, ScdEntry>;
  /** Per-snapshot caches, dropped with the snapshot. */
  caches: Map<string, Map<string, unknown>>;
}

export const MAX_CACHE_ENTRIES = 20_000;

/** A bounded per-snapshot cache (cleared wholesale when full: entries are cheap to rebuild). */
export function snapshotCache<V>(snap: Snapshot, name: string): Map<string, V> {
  let m = snap.caches.get(name);
  if (!m) {
    m = new Map();
    snap.caches.set(name, m);
  }
  if (m.size >= MAX_CACHE_ENTRIES) m.clear();
  return m as Map<string, V>;
}

export class ContentCache {
  private snap: Snapshot | null = null;
  private checkedAt = 0;
  private invalidations = 0;
  private inflight: Promise<Snapshot> | null = null;
  /** Rebuild count (tests and benchmarks). */
  builds = 0;

  constructor(
    private readonly db: Db,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Marks the snapshot as possibly stale: the next read re-checks the counter. */
  invalidate(): void {
    this.invalidations++;
    this.checkedAt = -Infinity;
  }

  /** The current snapshot; re-reads the counter when told to or when the check period ran out. */
  current(): Promise<Snapshot> {
    const s = this.snap;
    if (s && this.now() - this.checkedAt < CONTENT_CHECK_MS) return Promise.resolve(s);
    // Coalesce: concurrent callers share one check (and at most one rebuild).
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
      snap = await buildSnapshot(this.db, version);
      this.builds++;
      this.snap = snap;
    }
    // An invalidation that arrived while we were reading must not be forgotten.
    if (seenInvalidations === this.invalidations) this.checkedAt = started;
    return snap;
  }
}

type ScdRow = { ord: number; bundle_id: string; bundle_version: string; scd_id: string; content_yaml: string };
type EdgeRow = { edge_type: 'APPLIES_TO' | 'GOVERNED_BY'; from_id: string; to_id: string; source: string };

/** Reads the deployed universe from the tables. */
export async function buildSnapshot(db: Db, version: number): Promise<Snapshot> {
  const deps = await db.query<{ resolved_bundles: string[] }>(
    `SELECT resolved_bundles FROM deployments WHERE status = 'active' ORDER BY created_at, deployment_id`,
  );
  const bundleRefs: string[] = [];
  const seenRef = new Set<string>();
  for (const d of deps) {
    for (const r of d.resolved_bundles) {
      if (!seenRef.has(r)) {
        seenRef.add(r);
        bundleRefs.push(r);
      }
    }
  }
  const snap: Snapshot = { version, bundleRefs, scds: [], byId: new Map(), caches: new Map() };
  if (!bundleRefs.length) return snap;
  const ids = bundleRefs.map((r) => r.slice(0, r.lastIndexOf(':')));
  const versions = bundleRefs.map((r) => r.slice(r.lastIndexOf(':') + 1));
  const [rows, edges] = await Promise.all([
    db.query<ScdRow>(
      `SELECT r.ord, s.bundle_id, s.bundle_version, s.scd_id, s.content_yaml
         FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS r(bundle_id, version, ord)
         JOIN bundle_scds s ON s.bundle_id = r.bundle_id AND s.bundle_version = r.version
        ORDER BY r.ord, s.position`,
      [ids, versions],
    ),
    db.query<EdgeRow>(
      `SELECT edge_type, from_id, to_id, source FROM graph_edges
        WHERE source = ANY($1::text[]) AND edge_type IN ('APPLIES_TO', 'GOVERNED_BY')`,
      [bundleRefs],
    ),
  ]);
  // Roles per SCD (union over the deployed bundles), and which (bundle, SCD) pairs are
  // role-scoped at all: an SCD a bundle holds without APPLIES_TO edges applies to every role.
  const rolesByScd = new Map<string, Set<string>>();
  const scopedPairs = new Set<string>();
  const governs = new Map<string, Set<string>>();
  for (const e of edges) {
    const map = e.edge_type === 'APPLIES_TO' ? rolesByScd : governs;
    let s = map.get(e.from_id);
    if (!s) map.set(e.from_id, (s = new Set()));
    s.add(e.to_id);
    if (e.edge_type === 'APPLIES_TO') scopedPairs.add(`${e.source}\u0000${e.from_id}`);
  }
  for (const r of rows) {
    const ref = `${r.bundle_id}:${r.bundle_version}`;
    const scoped = scopedPairs.has(`${ref}\u0000${r.scd_id}`);
    let entry = snap.byId.get(r.scd_id);
    if (!entry) {
      entry = { id: r.scd_id, index: snap.scds.length, bundleRef: ref, yaml: r.content_yaml, roles: scoped ? new Set() : null, governedBy: [] };
      snap.scds.push(entry);
      snap.byId.set(r.scd_id, entry);
    } else if (!scoped) {
      entry.roles = null; // held unscoped by another deployed bundle: every role
    }
  }
  for (const e of snap.scds) {
    if (e.roles) for (const role of rolesByScd.get(e.id) ?? []) e.roles.add(role);
    for (const g of governs.get(e.id) ?? []) {
      const target = snap.byId.get(g);
      if (target && target !== e) e.governedBy.push(target.index);
    }
  }
  return snap;
}

/** The cache of this context, subscribed to content changes (local and broker). */
export function contentCache(ctx: AppContext): ContentCache {
  return ctx.singleton('graph-content-cache', () => {
    const cache = new ContentCache(ctx.db);
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
