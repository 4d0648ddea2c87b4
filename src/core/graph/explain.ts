/**
 * Explained answers (`explain: true`): why each selected SCD was selected and why the SCDs
 * the deployments hold or name were left out, read from the very snapshot the selection was
 * computed from (so the explanation and the answer agree, whatever was deployed since).
 *
 * Never on the hot path: only a request that asks for it calls this. What it reads from the
 * database is immutable for the snapshot (IMPORTS edges of published versions) or tagged with
 * it (stored versions of the deployed bundle ids, relationships naming SCDs outside), and is
 * cached with the snapshot; whole explanations are cached per (role, overrides, restrictions)
 * as selections are.
 */
import type { components } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import type { Db } from '../db/index.js';
import { compareSemver, parseRef } from './refs.js';
import { loadExtras, roleBase, snapshotOf, type SelectedContext } from './select.js';
import { snapshotCache, type Snapshot, type Universe } from './materialization.js';
import type { ScdEntry } from './snapshot.js';
import { semverSortKey } from '../../shared/semver.js';

export type ContextExplanation = components['schemas']['ContextExplanation'];
type ScdSelection = components['schemas']['ScdSelection'];
type ScdExclusion = components['schemas']['ScdExclusion'];

export interface ExplainInput {
  roleId: string;
  overrides: string[];
  restrictions: string[];
}

/** `bundle:<name>:<version>` → its two parts. */
const split = (ref: string): { bundle_id: string; bundle_version: string } => {
  const i = ref.lastIndexOf(':');
  return { bundle_id: ref.slice(0, i), bundle_version: ref.slice(i + 1) };
};

/**
 * Per deployed bundle version, the import path from a project bundle of the first active
 * deployment (oldest first) that resolves it, walked as resolution walks (depth-first,
 * imports in manifest order, first visit wins). An import is followed to the version the
 * deployment's lockfile holds: a pinned import to that version, an unpinned one to the
 * version of that name the deployment resolved.
 */
const pathsByUniverse = new WeakMap<Universe, Promise<Map<string, string[]>>>();
function importPaths(db: Db, u: Universe): Promise<Map<string, string[]>> {
  let p = pathsByUniverse.get(u);
  if (!p) {
    p = computePaths(db, u);
    pathsByUniverse.set(u, p);
    p.catch(() => pathsByUniverse.delete(u));
  }
  return p;
}

async function computePaths(db: Db, u: Universe): Promise<Map<string, string[]>> {
  // IMPORTS edges of published versions never change; `id` keeps the manifest's order.
  const rows = await db.query<{ from_id: string; props: { ref?: string; pinned?: boolean } | null }>(
    `SELECT from_id, props FROM graph_edges WHERE edge_type = 'IMPORTS' AND source = ANY($1::text[]) ORDER BY id`,
    [u.bundleRefs],
  );
  const importsOf = new Map<string, Array<{ name: string; ref: string; pinned: boolean }>>();
  for (const r of rows) {
    const ref = r.props?.ref;
    const parsed = ref ? parseRef(ref) : null;
    if (!ref || !parsed) continue;
    const list = importsOf.get(r.from_id) ?? [];
    list.push({ name: parsed.id, ref, pinned: parsed.version !== null });
    importsOf.set(r.from_id, list);
  }
  const paths = new Map<string, string[]>();
  for (const d of u.deployments) {
    const held = new Set(d.resolved);
    const byName = new Map<string, string>();
    for (const ref of d.resolved) {
      const { bundle_id, bundle_version } = split(ref);
      const prev = byName.get(bundle_id);
      if (!prev || compareSemver(bundle_version, split(prev).bundle_version) > 0) byName.set(bundle_id, ref);
    }
    const seen = new Set<string>();
    const visit = (ref: string, path: string[]) => {
      if (seen.has(ref)) return;
      seen.add(ref);
      const here = [...path, ref];
      if (!paths.has(ref)) paths.set(ref, here);
      for (const imp of importsOf.get(ref) ?? []) {
        const target = imp.pinned ? (held.has(imp.ref) ? imp.ref : null) : (byName.get(imp.name) ?? null);
        if (target) visit(target, here);
      }
    };
    for (const root of d.projectBundles) visit(root, []);
  }
  return paths;
}

interface Outside {
  /** The newest active published version holding it, or null when none does. */
  bundleRef: string | null;
  referencedBy: string[];
}

/**
 * SCDs outside the deployed universe that it names: held by another active published
 * version of a deployed bundle id, or named by a relationship of a deployed version. Sorted by id.
 */
async function outsideScds(db: Db, snap: Snapshot): Promise<Map<string, Outside>> {
  const cache = snapshotCache<{ value: Promise<Map<string, Outside>> }>(snap, 'explain-outside');
  let hit = cache.get('');
  if (!hit) {
    hit = { value: computeOutside(db, snap) };
    hit.value.catch(() => cache.delete(''));
    cache.set('', hit);
  }
  return hit.value;
}

async function computeOutside(db: Db, snap: Snapshot): Promise<Map<string, Outside>> {
  const u = snap.universe;
  const ids = u.scds.map((e) => e.id);
  const names = [...new Set(u.bundleRefs.map((r) => split(r).bundle_id))];
  const versions = await db.query<{ scd_id: string; bundle_id: string; bundle_version: string }>(
    `SELECT DISTINCT ON (s.scd_id) s.scd_id, s.bundle_id, s.bundle_version
       FROM bundle_scds s JOIN bundles b ON b.bundle_id = s.bundle_id AND b.version = s.bundle_version
      WHERE s.bundle_id = ANY($1::text[]) AND b.is_active AND b.version <> 'DRAFT' AND NOT (s.scd_id = ANY($2::text[]))
      ORDER BY s.scd_id, b.published_at DESC, ${semverSortKey('b.version')} DESC, b.bundle_id`,
    [names, ids],
  );
  const named = await db.query<{ from_id: string; to_id: string }>(
    `SELECT DISTINCT from_id, to_id FROM graph_edges
      WHERE source = ANY($1::text[]) AND edge_type IN ('GOVERNED_BY', 'REFERENCES')
        AND (NOT (from_id = ANY($2::text[])) OR NOT (to_id = ANY($2::text[])))`,
    [u.bundleRefs, ids],
  );
  const out = new Map<string, Outside>();
  for (const v of versions) out.set(v.scd_id, { bundleRef: `${v.bundle_id}:${v.bundle_version}`, referencedBy: [] });
  const unplaced: string[] = [];
  for (const e of named) {
    const inFrom = u.byId.has(e.from_id);
    const [outsideId, insideId] = inFrom ? [e.to_id, e.from_id] : [e.from_id, e.to_id];
    if (!u.byId.has(insideId)) continue;
    let o = out.get(outsideId);
    if (!o) {
      o = { bundleRef: null, referencedBy: [] };
      out.set(outsideId, o);
      unplaced.push(outsideId);
    }
    if (!o.referencedBy.includes(insideId)) o.referencedBy.push(insideId);
  }
  if (unplaced.length) for (const [id, x] of await loadExtras(db, snap, unplaced)) if (x) out.get(id)!.bundleRef = x.bundleRef;
  for (const o of out.values()) o.referencedBy.sort();
  return new Map([...out].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * The explanation of `selected` (a result of selectContext for `input`). Throws only when the
 * database cannot be read.
 */
export async function explainSelection(ctx: AppContext, selected: SelectedContext, input: ExplainInput): Promise<ContextExplanation> {
  const snap = snapshotOf(selected);
  if (!snap) throw new Error('explainSelection: not a selection of selectContext');
  const key = `${input.roleId}\u0000${input.overrides.join('\u0001')}\u0000${input.restrictions.join('\u0001')}`;
  const cache = snapshotCache<ContextExplanation>(snap, 'explain');
  const hit = cache.get(key);
  if (hit) return hit;
  const result = await compute(ctx.db, snap, selected, input);
  cache.set(key, result);
  return result;
}

async function compute(db: Db, snap: Snapshot, selected: SelectedContext, input: ExplainInput): Promise<ContextExplanation> {
  const u = snap.universe;
  const paths = await importPaths(db, u);
  const overrides = new Set(input.overrides);
  const base = roleBase(u, input.roleId);
  const inBase = new Set(base);
  // Who governs whom among the role's own SCDs (before overrides and restrictions).
  const governs = new Map<number, string[]>();
  for (const x of base) {
    for (const g of u.scds[x]!.governedBy) {
      const list = governs.get(g) ?? [];
      list.push(u.scds[x]!.id);
      governs.set(g, list);
    }
  }
  const deployedAt = (e: ScdEntry) => ({ ...split(e.bundleRef), import_path: paths.get(e.bundleRef) ?? [e.bundleRef] });
  const undeployed = [...new Set([...input.overrides, ...input.restrictions])].filter((id) => !u.byId.has(id));
  const extras = undeployed.length ? await loadExtras(db, snap, undeployed) : new Map<string, null>();

  const chosen: Record<string, ScdSelection> = {};
  for (const id of selected.scdIds) {
    const e = u.byId.get(id);
    const override = overrides.has(id);
    if (!e) {
      const x = extras.get(id);
      chosen[id] = { reason: 'override', ...(x ? split(x.bundleRef) : { bundle_id: '', bundle_version: '' }), import_path: [], override };
    } else if (e.roles === null) chosen[id] = { reason: 'all_roles', ...deployedAt(e), override };
    else if (e.roles.has(input.roleId)) chosen[id] = { reason: 'role', role_id: input.roleId, ...deployedAt(e), override };
    else if (inBase.has(e.index)) chosen[id] = { reason: 'governs', governs: [...new Set(governs.get(e.index) ?? [])], ...deployedAt(e), override };
    else chosen[id] = { reason: 'override', ...deployedAt(e), override };
  }

  const excluded: Record<string, ScdExclusion> = {};
  for (const id of input.restrictions) {
    if (chosen[id] || excluded[id]) continue;
    const e = u.byId.get(id);
    const override = overrides.has(id);
    // Restricted, but would it have been selected? Otherwise its other reason is the one that counts.
    if (e && (inBase.has(e.index) || override)) excluded[id] = { reason: 'restriction', ...deployedAt(e), override };
    else if (!e && override) {
      const x = extras.get(id);
      excluded[id] = { reason: 'restriction', ...(x ? { ...split(x.bundleRef), import_path: [] } : {}), override };
    }
  }
  for (const e of u.scds) {
    if (chosen[e.id] || excluded[e.id]) continue;
    // Not selected, deployed and not restricted away: scoped to roles that are not this one.
    excluded[e.id] = { reason: 'other_role', roles: [...(e.roles ?? [])].sort(), ...deployedAt(e) };
  }
  for (const id of input.overrides) {
    if (chosen[id] || excluded[id] || u.byId.has(id)) continue;
    excluded[id] = { reason: 'not_imported', override: true, referenced_by: [] };
  }
  for (const [id, o] of await outsideScds(db, snap)) {
    if (chosen[id] || excluded[id]) continue;
    excluded[id] = { reason: 'not_imported', referenced_by: o.referencedBy, ...(o.bundleRef ? split(o.bundleRef) : {}) };
  }
  return Object.freeze({ selected: chosen, excluded });
}
