/**
 * Import resolution: from root bundle versions to the deduplicated transitive closure, in
 * resolution order (depth-first pre-order, imports in manifest order, first visit wins).
 *
 * A pinned import names exactly one version; an unpinned `bundle:<name>` resolves to the
 * highest active semver version stored at the time of resolution (never a DRAFT). A cycle
 * is a 400 whose message spells the cycle. The closure is read in one recursive query
 * (one round trip whatever the depth); publish-time checks of a single manifest use
 * `loadHeads`/`resolveImport`.
 */
import type { AppContext } from '../../shared/app-context.js';
import type { Db } from '../db/index.js';
import { AppError } from '../../shared/errors.js';
import { compareSemver, parseRef, pinned, type BundleType } from './refs.js';
import { isReleaseVersion, RELEASE_VERSION_PATTERN, semverSortKey } from '../../shared/semver.js';

export interface BundleHead {
  id: string;
  version: string;
  type: BundleType;
  isActive: boolean;
  /** As posted (pinned or unpinned). */
  imports: string[];
}

interface ResolvedBundle extends BundleHead {
  ref: string;
  /** The pinned refs this version's imports resolved to, in manifest order. */
  resolvedImports: string[];
}

export interface Resolution {
  /** Pinned refs of the roots and their transitive imports, deduplicated, in resolution order. */
  order: string[];
  bundles: Map<string, ResolvedBundle>;
}

export interface ResolveOptions {
  /**
   * `strict` (deploy, tag): an import that resolves to no active version is a 409 naming the
   * reference. `lenient` (publish): such an import is skipped; only cycles are refused
   * (the new version's own imports are checked by the publish validation).
   */
  mode: 'strict' | 'lenient';
}

type HeadRow = { bundle_id: string; version: string; bundle_type: BundleType; is_active: boolean; imports: string[] | null };

/** Loads every stored version of the given bundle ids. */
export async function loadHeads(db: Db, ids: string[]): Promise<Map<string, BundleHead[]>> {
  const out = new Map<string, BundleHead[]>();
  if (!ids.length) return out;
  const rows = await db.query<HeadRow>(
    `SELECT bundle_id, version, bundle_type, is_active, manifest->'imports' AS imports
       FROM bundles WHERE bundle_id = ANY($1::text[])`,
    [ids],
  );
  for (const id of ids) out.set(id, []);
  for (const r of rows) {
    out.get(r.bundle_id)!.push({ id: r.bundle_id, version: r.version, type: r.bundle_type, isActive: r.is_active, imports: Array.isArray(r.imports) ? r.imports : [] });
  }
  return out;
}

/**
 * The highest active semver version among `versions`, or null. Never a DRAFT, nor a version
 * stored before the contract bounded its parts to 15 digits (which `semver` cannot read):
 * RESOLVE_IMPORT skips the same ones, so both walks pick alike.
 */
export function highestActive(versions: BundleHead[]): BundleHead | null {
  let best: BundleHead | null = null;
  for (const v of versions) {
    if (!v.isActive || !isReleaseVersion(v.version)) continue;
    if (!best || compareSemver(v.version, best.version) > 0) best = v;
  }
  return best;
}

/** Resolves one import reference against the loaded versions of its name. */
export function resolveImport(ref: string, versions: BundleHead[] | undefined): { head: BundleHead | null; reason?: 'unknown' | 'inactive' } {
  const p = parseRef(ref);
  if (!p || !versions) return { head: null, reason: 'unknown' };
  if (p.version === null) {
    const h = highestActive(versions);
    if (h) return { head: h };
    return { head: null, reason: versions.some((v) => v.version !== 'DRAFT') ? 'inactive' : 'unknown' };
  }
  const h = versions.find((v) => v.version === p.version);
  if (!h) return { head: null, reason: 'unknown' };
  return h.isActive ? { head: h } : { head: h, reason: 'inactive' };
}

/**
 * One import resolved in SQL: a pinned reference to exactly that version (active or not:
 * the caller decides), an unpinned one to the highest active semver version (as
 * highestActive: release versions only, ordered by numeric parts).
 */
const RESOLVE_IMPORT = String.raw`
  SELECT x.bundle_id, x.version, x.is_active FROM bundles x
   WHERE x.bundle_id = substring(imp.ref from '^(bundle:[A-Za-z0-9._-]+)')
     AND CASE WHEN imp.ref ~ ':[0-9]+\.[0-9]+\.[0-9]+$'
              THEN x.version = substring(imp.ref from ':([0-9]+\.[0-9]+\.[0-9]+)$')
              ELSE x.is_active AND x.version ~ '${RELEASE_VERSION_PATTERN}' END
   ORDER BY CASE WHEN x.version = 'DRAFT' THEN NULL ELSE ${semverSortKey('x.version')} END DESC NULLS LAST
   LIMIT 1`;

/**
 * The whole walk in one round trip. The recursive part collects import edges (each
 * reachable version's imports with what they resolve to; UNION, so a cycle terminates);
 * the outer part adds every reachable version's own row (leaves have no edges). Ordering
 * and cycle detection are done in memory.
 */
const CLOSURE_SQL = `
WITH RECURSIVE edges(from_id, from_version, ord, ref, to_id, to_version, to_active) AS (
  SELECT b.bundle_id, b.version, imp.ord, imp.ref, t.bundle_id, t.version, t.is_active
    FROM unnest($1::text[], $2::text[]) AS r(bundle_id, version)
    JOIN bundles b ON b.bundle_id = r.bundle_id AND b.version = r.version
    CROSS JOIN LATERAL jsonb_array_elements_text(b.manifest->'imports') WITH ORDINALITY AS imp(ref, ord)
    LEFT JOIN LATERAL (${RESOLVE_IMPORT}) t ON true
  UNION
  SELECT b.bundle_id, b.version, imp.ord, imp.ref, t.bundle_id, t.version, t.is_active
    FROM edges e
    JOIN bundles b ON b.bundle_id = e.to_id AND b.version = e.to_version
    CROSS JOIN LATERAL jsonb_array_elements_text(b.manifest->'imports') WITH ORDINALITY AS imp(ref, ord)
    LEFT JOIN LATERAL (${RESOLVE_IMPORT}) t ON true
),
nodes(bundle_id, version) AS (
  SELECT bundle_id, version FROM unnest($1::text[], $2::text[]) AS r(bundle_id, version)
  UNION
  SELECT to_id, to_version FROM edges WHERE to_id IS NOT NULL
)
SELECT b.bundle_id, b.version, b.bundle_type, b.is_active, e.ref, e.ord, e.to_id, e.to_version, e.to_active
  FROM nodes n
  JOIN bundles b ON b.bundle_id = n.bundle_id AND b.version = n.version
  LEFT JOIN edges e ON e.from_id = n.bundle_id AND e.from_version = n.version
 ORDER BY b.bundle_id, b.version, e.ord`;

type ClosureRow = {
  bundle_id: string;
  version: string;
  bundle_type: BundleType;
  is_active: boolean;
  ref: string | null;
  ord: number | null;
  to_id: string | null;
  to_version: string | null;
  to_active: boolean | null;
};

/** Resolves the closure of `roots` (pinned refs; an unknown root is a 404 naming it). */
export async function resolveClosure(db: Db, roots: string[], opts: ResolveOptions): Promise<Resolution> {
  const split = roots.map((r) => ({ id: r.slice(0, r.lastIndexOf(':')), version: r.slice(r.lastIndexOf(':') + 1) }));
  const rows = await db.query<ClosureRow>(CLOSURE_SQL, [split.map((x) => x.id), split.map((x) => x.version)]);
  const bundles = new Map<string, ResolvedBundle>();
  for (const r of rows) {
    const ref = pinned(r.bundle_id, r.version);
    let rb = bundles.get(ref);
    if (!rb) {
      rb = { id: r.bundle_id, version: r.version, type: r.bundle_type, isActive: r.is_active, imports: [], ref, resolvedImports: [] };
      bundles.set(ref, rb);
    }
    if (r.ref === null) continue;
    rb.imports.push(r.ref);
    if (r.to_id === null || r.to_version === null) {
      if (opts.mode === 'lenient') continue;
      // Unresolvable: a pinned version that does not exist, or a name with no active version left.
      const parsed = parseRef(r.ref);
      const [inactive] = parsed && parsed.version === null
        ? await db.query("SELECT 1 FROM bundles WHERE bundle_id = $1 AND version <> 'DRAFT' LIMIT 1", [parsed.id])
        : [];
      throw new AppError(inactive ? 'conflict' : 'not_found', `Bundle ${ref} imports ${r.ref}, which resolves to no ${inactive ? 'active' : 'stored'} version`, {
        details: { reference: r.ref, bundle: ref },
      });
    }
    if (opts.mode === 'strict' && r.to_active === false) {
      throw new AppError('conflict', `Bundle ${ref} imports ${r.ref}, which is deactivated`, { details: { reference: r.ref, bundle: ref } });
    }
    rb.resolvedImports.push(pinned(r.to_id, r.to_version));
  }
  for (const root of roots) {
    if (!bundles.has(root)) throw new AppError('not_found', `Bundle version ${root} does not exist`, { details: { reference: root } });
  }
  return { order: orderAndCheckCycles(roots, bundles), bundles };
}

/** Every stored version's header, by bundle id (one query, no ordering needed). */
export async function loadAllHeads(db: Db): Promise<Map<string, BundleHead[]>> {
  const rows = await db.query<HeadRow>(`SELECT bundle_id, version, bundle_type, is_active, manifest->'imports' AS imports FROM bundles`);
  const out = new Map<string, BundleHead[]>();
  for (const r of rows) {
    let list = out.get(r.bundle_id);
    if (!list) out.set(r.bundle_id, (list = []));
    list.push({ id: r.bundle_id, version: r.version, type: r.bundle_type, isActive: r.is_active, imports: Array.isArray(r.imports) ? r.imports : [] });
  }
  return out;
}

/**
 * The bundle headers as of `bundlesVersion`, from this process's copy when it is that
 * version, else freshly read through `t`. Only for a transaction that holds the content
 * lock (bumpVersions) and does not write bundles itself: the committed headers cannot
 * move under it, so the copy is exact. Deploy and tag writes resolve from it in memory.
 */
export async function headsAt(ctx: AppContext, t: Db, bundlesVersion: number): Promise<Map<string, BundleHead[]>> {
  const cache = ctx.singleton('bundle-heads', () => ({ version: -1, byId: new Map<string, BundleHead[]>() }));
  if (cache.version !== bundlesVersion) {
    cache.byId = await loadAllHeads(t);
    cache.version = bundlesVersion;
  }
  return cache.byId;
}

/** resolveClosure over headers held in memory (same semantics and errors as the SQL walk). */
export function resolveInMemory(heads: Map<string, BundleHead[]>, roots: string[], opts: ResolveOptions): Resolution {
  const bundles = new Map<string, ResolvedBundle>();
  const queue: string[] = [];
  for (const root of roots) {
    const i = root.lastIndexOf(':');
    const head = heads.get(root.slice(0, i))?.find((h) => h.version === root.slice(i + 1));
    if (!head) throw new AppError('not_found', `Bundle version ${root} does not exist`, { details: { reference: root } });
    if (!bundles.has(root)) {
      bundles.set(root, { ...head, ref: root, resolvedImports: [] });
      queue.push(root);
    }
  }
  for (let qi = 0; qi < queue.length; qi++) {
    const rb = bundles.get(queue[qi]!)!;
    for (const imp of rb.imports) {
      const parsed = parseRef(imp);
      const r = resolveImport(imp, parsed ? heads.get(parsed.id) : undefined);
      if (!r.head) {
        if (opts.mode === 'lenient') continue;
        const inactive = r.reason === 'inactive';
        throw new AppError(inactive ? 'conflict' : 'not_found', `Bundle ${rb.ref} imports ${imp}, which resolves to no ${inactive ? 'active' : 'stored'} version`, {
          details: { reference: imp, bundle: rb.ref },
        });
      }
      if (r.reason === 'inactive' && opts.mode === 'strict') {
        throw new AppError('conflict', `Bundle ${rb.ref} imports ${imp}, which is deactivated`, { details: { reference: imp, bundle: rb.ref } });
      }
      const target = pinned(r.head.id, r.head.version);
      rb.resolvedImports.push(target);
      if (!bundles.has(target)) {
        bundles.set(target, { ...r.head, ref: target, resolvedImports: [] });
        queue.push(target);
      }
    }
  }
  return { order: orderAndCheckCycles(roots, bundles), bundles };
}

/** Depth-first pre-order over the resolved graph; a back edge is a cycle (400, spelled out). */
function orderAndCheckCycles(roots: string[], bundles: Map<string, ResolvedBundle>): string[] {
  const order: string[] = [];
  const state = new Map<string, 1 | 2>(); // 1 on the stack, 2 done
  const stack: string[] = [];
  // Iterative DFS so that very deep import chains cannot overflow the call stack.
  for (const root of roots) {
    if (state.has(root)) continue;
    const frames: Array<{ ref: string; i: number }> = [{ ref: root, i: 0 }];
    state.set(root, 1);
    stack.push(root);
    order.push(root);
    while (frames.length) {
      const f = frames[frames.length - 1]!;
      const imports = bundles.get(f.ref)?.resolvedImports ?? [];
      if (f.i >= imports.length) {
        state.set(f.ref, 2);
        stack.pop();
        frames.pop();
        continue;
      }
      const next = imports[f.i++]!;
      const s = state.get(next);
      if (s === 1) {
        const cycle = [...stack.slice(stack.indexOf(next)), next];
        throw new AppError('validation_error', `Import cycle: ${cycle.join(' -> ')}`, { details: { cycle } });
      }
      if (s === 2) continue;
      state.set(next, 1);
      stack.push(next);
      order.push(next);
      frames.push({ ref: next, i: 0 });
    }
  }
  return order;
}
