/**
 * Context selection (decisions.md, "Selection for an agent"): the SCDs of the active
 * deployments that apply to the role, plus the SCDs that govern them (GOVERNED_BY,
 * transitively), then the overrides added and the restrictions removed (a restriction wins).
 *
 * Order is deterministic: deployed SCDs in universe order (active deployments oldest first,
 * each in resolution order, SCDs in manifest order), then overrides found outside the
 * deployments, in the order given. Served from the in-memory materialization; results are
 * cached per (role, overrides, restrictions) for the life of the snapshot.
 */
import type { AppContext } from '../../shared/app-context.js';
import type { Db } from '../db/index.js';
import { contentCache, snapshotCache, type Snapshot, type Universe } from './materialization.js';
import { jsonMember } from './build-snapshot.js';
import { semverSortKey } from '../../shared/semver.js';

export interface SelectedContext {
  /** `bundle:<name>:<version>` of the bundles whose SCDs were selected, deterministic order. */
  bundleIds: string[];
  scdIds: string[];
  /** SCD id -> YAML text. */
  scdContent: Record<string, string>;
  /**
   * Each selected SCD's JSON member `"<id>":"<yaml>"` as UTF-8 bytes, in scdIds order: the
   * shared bytes of the materialization, joined only by an answer that wants JSON
   * (scdContentJsonBytes), so choosing the SCDs copies no content.
   */
  scdMembers: readonly Buffer[];
  /** The content version of the snapshot it was selected from (the answer's `content_revision`). */
  revision: number;
}

/** The snapshot each selection was computed from (for explainSelection): set once per computed selection. */
const selectedFrom = new WeakMap<SelectedContext, Snapshot>();
export const snapshotOf = (s: SelectedContext): Snapshot | undefined => selectedFrom.get(s);

/**
 * The SCDs an agent gets from the active deployments: role-applicable SCDs plus those that
 * govern them (GOVERNED_BY, transitively), then overrides added and restrictions removed
 * (restriction wins). Deterministic order. An override that is not deployed is taken from
 * the newest active published version that holds it; one stored nowhere is ignored.
 * The returned object is shared between callers and frozen: do not mutate it.
 */
export async function selectContext(ctx: AppContext, input: { roleId: string; overrides: string[]; restrictions: string[] }): Promise<SelectedContext> {
  const snap = await contentCache(ctx).current();
  const key = `${input.roleId}\u0000${input.overrides.join('\u0001')}\u0000${input.restrictions.join('\u0001')}`;
  const results = snapshotCache<SelectedContext>(snap, 'select');
  const hit = results.get(key);
  if (hit) return hit;
  const result = await compute(ctx.db, snap, input);
  results.set(key, result);
  return result;
}

/** Universe indices applicable to the role, closed over GOVERNED_BY, ascending. */
export function roleBase(u: Universe, roleId: string): number[] {
  const cache = u.roleCache;
  const hit = cache.get(roleId);
  if (hit) return hit;
  const picked = new Uint8Array(u.scds.length);
  const out: number[] = [];
  const pick = (i: number) => {
    if (!picked[i]) {
      picked[i] = 1;
      out.push(i);
    }
  };
  for (const i of u.unscoped) pick(i);
  for (const i of u.byRole.get(roleId) ?? []) pick(i);
  for (let k = 0; k < out.length; k++) for (const g of u.scds[out[k]!]!.governedBy) pick(g);
  out.sort((a, b) => a - b);
  cache.set(roleId, out);
  return out;
}

export type Extra = { id: string; bundleRef: string; yaml: string } | null;

/** An SCD outside the deployments: the newest active published version holding it. */
export async function loadExtras(db: Db, snap: Snapshot, ids: string[]): Promise<Map<string, Extra>> {
  // Cached wrapped ({extra: null} = stored nowhere): a cache holds no null values.
  const cache = snapshotCache<{ extra: Extra }>(snap, 'extra');
  const found = new Map<string, Extra>();
  const missing: string[] = [];
  for (const id of ids) {
    const hit = cache.get(id);
    if (hit) found.set(id, hit.extra);
    else missing.push(id);
  }
  if (missing.length) {
    const rows = await db.query<{ scd_id: string; bundle_id: string; bundle_version: string; content_yaml: string }>(
      `SELECT DISTINCT ON (s.scd_id) s.scd_id, s.bundle_id, s.bundle_version, s.content_yaml
         FROM bundle_scds s JOIN bundles b ON b.bundle_id = s.bundle_id AND b.version = s.bundle_version
        WHERE s.scd_id = ANY($1::text[]) AND b.is_active AND b.version <> 'DRAFT'
        ORDER BY s.scd_id, b.published_at DESC, ${semverSortKey('b.version')} DESC, b.bundle_id`,
      [missing],
    );
    for (const id of missing) found.set(id, null);
    for (const r of rows) found.set(r.scd_id, { id: r.scd_id, bundleRef: `${r.bundle_id}:${r.bundle_version}`, yaml: r.content_yaml });
    // Answered from `found`, not the cache: storing these may evict entries read above.
    for (const id of missing) cache.set(id, { extra: found.get(id)! });
  }
  return new Map(ids.map((id) => [id, found.get(id) ?? null]));
}

async function compute(db: Db, snap: Snapshot, input: { roleId: string; overrides: string[]; restrictions: string[] }): Promise<SelectedContext> {
  const u = snap.universe;
  const restricted = new Set(input.restrictions);
  let indices = roleBase(u, input.roleId);
  const outside: string[] = [];
  if (input.overrides.length) {
    const set = new Set(indices);
    for (const o of input.overrides) {
      const e = u.byId.get(o);
      if (e) set.add(e.index);
      else if (!outside.includes(o)) outside.push(o);
    }
    if (set.size !== indices.length) indices = [...set].sort((a, b) => a - b);
  }
  const scdIds: string[] = [];
  const scdContent: Record<string, string> = {};
  const members: Buffer[] = [];
  const bundleIds: string[] = [];
  const seenBundles = new Set<string>();
  const add = (id: string, yaml: string, member: Buffer, bundleRef: string) => {
    if (restricted.has(id)) return;
    scdIds.push(id);
    scdContent[id] = yaml;
    members.push(member);
    if (!seenBundles.has(bundleRef)) {
      seenBundles.add(bundleRef);
      bundleIds.push(bundleRef);
    }
  };
  // Universe order: bundles in resolution order, so bundleIds follow it too.
  for (const i of indices) {
    const e = u.scds[i]!;
    add(e.id, e.yaml, e.member, e.bundleRef);
  }
  const wanted = outside.filter((id) => !restricted.has(id));
  if (wanted.length) {
    for (const [id, x] of await loadExtras(db, snap, wanted)) if (x) add(id, x.yaml, jsonMember(id, x.yaml), x.bundleRef);
  }
  const selected: SelectedContext = Object.freeze({
    bundleIds: Object.freeze(bundleIds) as string[],
    scdIds: Object.freeze(scdIds) as string[],
    scdContent: Object.freeze(scdContent) as Record<string, string>,
    scdMembers: Object.freeze(members),
    revision: snap.version,
  });
  selectedFrom.set(selected, snap);
  return selected;
}

/**
 * `before` + the UTF-8 bytes of `JSON.stringify(s.scdContent)` + `after`, in one buffer: the
 * selection's members joined by commas in braces.
 */
export function scdContentJsonBytes(s: SelectedContext, before: Buffer = EMPTY, after: Buffer = EMPTY): Buffer {
  const members = s.scdMembers;
  let size = before.length + after.length + 2 + Math.max(members.length - 1, 0);
  for (let i = 0; i < members.length; i++) size += members[i]!.length;
  const out = Buffer.allocUnsafe(size);
  out.set(before, 0);
  let p = before.length;
  out[p++] = 0x7b;
  for (let i = 0; i < members.length; i++) {
    if (i) out[p++] = 0x2c;
    out.set(members[i]!, p);
    p += members[i]!.length;
  }
  out[p++] = 0x7d;
  out.set(after, p);
  return out;
}

const EMPTY = Buffer.alloc(0);
