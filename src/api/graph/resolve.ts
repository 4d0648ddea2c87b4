/**
 * Import resolution: from root bundle versions to the deduplicated transitive closure, in
 * resolution order (depth-first pre-order, imports in manifest order, first visit wins).
 *
 * A pinned import names exactly one version; an unpinned `bundle:<name>` resolves to the
 * highest active semver version stored at the time of resolution (never a DRAFT). A cycle
 * is a 400 whose message spells the cycle. Fetches every version of the names it meets,
 * one query per import level, so a five-level graph costs five queries.
 */
import type { Db } from '../../shared/db/index.js';
import { AppError } from '../../shared/errors.js';
import { compareSemver, parseRef, pinned, type BundleType } from './refs.js';

export interface BundleHead {
  id: string;
  version: string;
  type: BundleType;
  isActive: boolean;
  /** As posted (pinned or unpinned). */
  imports: string[];
}

export interface ResolvedBundle extends BundleHead {
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

/** The highest active semver version among `versions`, or null. */
export function highestActive(versions: BundleHead[]): BundleHead | null {
  let best: BundleHead | null = null;
  for (const v of versions) {
    if (!v.isActive || v.version === 'DRAFT') continue;
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
 * Resolves the closure of `roots` (pinned refs that must exist; callers check them first).
 * `preloaded` lets a caller pass heads it already holds (publish passes the new version).
 */
export async function resolveClosure(db: Db, roots: string[], opts: ResolveOptions, preloaded?: Map<string, BundleHead[]>): Promise<Resolution> {
  const heads = new Map<string, BundleHead[]>(preloaded ?? []);
  const bundles = new Map<string, ResolvedBundle>();
  const need = (ids: string[]) => ids.filter((id) => !heads.has(id));

  // Level by level: resolve every reachable version's imports, fetching unseen names in one query.
  let pending: Array<{ id: string; version: string }> = roots.map((r) => {
    const i = r.lastIndexOf(':');
    return { id: r.slice(0, i), version: r.slice(i + 1) };
  });
  const seen = new Set<string>();
  while (pending.length) {
    const missing = need([...new Set(pending.map((p) => p.id))]);
    for (const [k, v] of await loadHeads(db, missing)) heads.set(k, v);
    const next: Array<{ id: string; version: string }> = [];
    const importNames = new Set<string>();
    const batch: ResolvedBundle[] = [];
    for (const p of pending) {
      const ref = pinned(p.id, p.version);
      if (seen.has(ref)) continue;
      seen.add(ref);
      const head = heads.get(p.id)?.find((h) => h.version === p.version);
      if (!head) throw new AppError('not_found', `Bundle version ${ref} does not exist`, { details: { reference: ref } });
      const rb: ResolvedBundle = { ...head, ref, resolvedImports: [] };
      bundles.set(ref, rb);
      batch.push(rb);
      for (const imp of head.imports) {
        const parsed = parseRef(imp);
        if (parsed) importNames.add(parsed.id);
      }
    }
    for (const [k, v] of await loadHeads(db, need([...importNames]))) heads.set(k, v);
    for (const rb of batch) {
      for (const imp of rb.imports) {
        const parsed = parseRef(imp);
        const r = resolveImport(imp, parsed ? heads.get(parsed.id) : undefined);
        if (!r.head || r.reason) {
          // Lenient: follow a pinned import of a deactivated version (the edge exists), skip the unresolvable.
          if (opts.mode === 'lenient' && !r.head) continue;
        }
        if (opts.mode === 'strict' && (!r.head || r.reason)) {
          const why = r.reason === 'inactive' ? 'resolves to no active version' : 'resolves to no stored version';
          throw new AppError(r.reason === 'inactive' ? 'conflict' : 'not_found', `Bundle ${rb.ref} imports ${imp}, which ${why}`, {
            details: { reference: imp, bundle: rb.ref },
          });
        }
        const target = pinned(r.head!.id, r.head!.version);
        rb.resolvedImports.push(target);
        if (!seen.has(target)) next.push({ id: r.head!.id, version: r.head!.version });
      }
    }
    pending = next;
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
