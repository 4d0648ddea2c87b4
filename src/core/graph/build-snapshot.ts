/**
 * Builds the deployed universe from the tables, incrementally: a bundle version's content
 * and its APPLIES_TO / GOVERNED_BY edges never change once published (DRAFTs cannot be
 * deployed), so they are read once per process and kept while deployed. A rebuild reads the
 * active deployments, loads only bundle versions it has not seen, and reassembles in
 * memory; when the deployed set did not change, the previous universe (and its per-role
 * cache) is kept as it is.
 */
import type { Db } from '../db/index.js';
import { boundedCache, type DeployedSet, type ScdEntry, type Snapshot, type Universe } from './snapshot.js';

/** What one deployed bundle version contributes (immutable). */
export interface BundleContent {
  scds: Array<{ id: string; yaml: string; member: Buffer; scoped: boolean }>;
  /** SCD id -> roles (APPLIES_TO edges sourced by this version). */
  roles: Map<string, string[]>;
  /** GOVERNED_BY edges sourced by this version: [governed, governing]. */
  governs: Array<[string, string]>;
}

type ScdRow = { bundle_id: string; bundle_version: string; scd_id: string; content_yaml: string };
type EdgeRow = { edge_type: 'APPLIES_TO' | 'GOVERNED_BY'; from_id: string; to_id: string; source: string };

async function loadBundleContents(db: Db, refs: string[]): Promise<Map<string, BundleContent>> {
  const out = new Map<string, BundleContent>();
  for (const r of refs) out.set(r, { scds: [], roles: new Map(), governs: [] });
  if (!refs.length) return out;
  const rows = await db.query<ScdRow>(
    `SELECT s.bundle_id, s.bundle_version, s.scd_id, s.content_yaml
       FROM unnest($1::text[], $2::text[]) AS r(bundle_id, version)
       JOIN bundle_scds s ON s.bundle_id = r.bundle_id AND s.bundle_version = r.version
      ORDER BY s.bundle_id, s.bundle_version, s.position`,
    [refs.map((r) => r.slice(0, r.lastIndexOf(':'))), refs.map((r) => r.slice(r.lastIndexOf(':') + 1))],
  );
  const edges = await db.query<EdgeRow>(
    `SELECT edge_type, from_id, to_id, source FROM graph_edges
      WHERE source = ANY($1::text[]) AND edge_type IN ('APPLIES_TO', 'GOVERNED_BY')`,
    [refs],
  );
  for (const e of edges) {
    const bc = out.get(e.source)!;
    if (e.edge_type === 'GOVERNED_BY') bc.governs.push([e.from_id, e.to_id]);
    else {
      const list = bc.roles.get(e.from_id) ?? [];
      list.push(e.to_id);
      bc.roles.set(e.from_id, list);
    }
  }
  for (const r of rows) {
    const bc = out.get(`${r.bundle_id}:${r.bundle_version}`)!;
    // Pre-serialized `"id":"yaml"` member, so a response can splice the content without re-escaping it.
    bc.scds.push({ id: r.scd_id, yaml: r.content_yaml, member: jsonMember(r.scd_id, r.content_yaml), scoped: bc.roles.has(r.scd_id) });
  }
  return out;
}

/** The active deployments (oldest first) and the union of their resolved bundles. */
async function deployedRefs(db: Db): Promise<{ refs: string[]; deployments: DeployedSet[] }> {
  const deps = await db.query<{ project_bundles: string[]; resolved_bundles: string[] }>(
    `SELECT project_bundles, resolved_bundles FROM deployments WHERE status = 'active' ORDER BY created_at, deployment_id`,
  );
  const refs: string[] = [];
  const seen = new Set<string>();
  for (const d of deps) {
    for (const r of d.resolved_bundles) {
      if (!seen.has(r)) {
        seen.add(r);
        refs.push(r);
      }
    }
  }
  return { refs, deployments: deps.map((d) => ({ projectBundles: d.project_bundles, resolved: d.resolved_bundles })) };
}

const sameDeployments = (a: DeployedSet[], b: DeployedSet[]): boolean =>
  a.length === b.length &&
  a.every((d, i) => d.projectBundles.join('\n') === b[i]!.projectBundles.join('\n') && d.resolved.join('\n') === b[i]!.resolved.join('\n'));

/**
 * The UTF-8 bytes of the JSON object member `"<id>":"<yaml>"`: a selection's `scd_content` is
 * these members joined by commas in braces, copied as bytes, never re-serialized per role.
 */
export function jsonMember(id: string, yaml: string): Buffer {
  return Buffer.from(`${JSON.stringify(id)}:${JSON.stringify(yaml)}`, 'utf8');
}

function assemble(bundleRefs: string[], deployments: DeployedSet[], contents: Map<string, BundleContent>): Universe {
  const scds: ScdEntry[] = [];
  const byId = new Map<string, ScdEntry>();
  for (const ref of bundleRefs) {
    const bc = contents.get(ref)!;
    for (const s of bc.scds) {
      let e = byId.get(s.id);
      if (!e) {
        e = { id: s.id, index: scds.length, bundleRef: ref, yaml: s.yaml, member: s.member, roles: s.scoped ? new Set() : null, governedBy: [] };
        scds.push(e);
        byId.set(s.id, e);
      } else if (!s.scoped) {
        e.roles = null; // held unscoped by another deployed bundle: every role
      }
      if (s.scoped && e.roles) for (const role of bc.roles.get(s.id)!) e.roles.add(role);
    }
  }
  for (const ref of bundleRefs) {
    for (const [from, to] of contents.get(ref)!.governs) {
      const governed = byId.get(from);
      const governing = byId.get(to);
      if (governed && governing && governed !== governing && !governed.governedBy.includes(governing.index)) governed.governedBy.push(governing.index);
    }
  }
  // Who gets what, indexed once: a role's first selection reads its own SCDs, not the universe.
  const unscoped: number[] = [];
  const byRole = new Map<string, number[]>();
  for (const e of scds) {
    if (e.roles === null) unscoped.push(e.index);
    else
      for (const role of e.roles) {
        const list = byRole.get(role);
        if (list) list.push(e.index);
        else byRole.set(role, [e.index]);
      }
  }
  return { bundleRefs, deployments, scds, byId, unscoped, byRole, roleCache: boundedCache() };
}

/**
 * Reads the deployed universe at `version`. `contents` is the process's cache of bundle
 * contents (updated in place: new versions added, undeployed ones dropped); `prev` is the
 * previous snapshot, whose universe is reused when the deployed set is unchanged.
 */
export async function buildSnapshot(db: Db, version: number, contents: Map<string, BundleContent> = new Map(), prev?: Snapshot | null): Promise<Snapshot> {
  const { refs: bundleRefs, deployments } = await deployedRefs(db);
  // The project bundles count too: they are where an explanation's import paths start.
  const same = !!prev && sameDeployments(prev.universe.deployments, deployments);
  if (same) return { version, universe: prev!.universe, caches: new Map() };
  const missing = bundleRefs.filter((r) => !contents.has(r));
  for (const [ref, bc] of await loadBundleContents(db, missing)) contents.set(ref, bc);
  const keep = new Set(bundleRefs);
  for (const ref of contents.keys()) if (!keep.has(ref)) contents.delete(ref);
  return { version, universe: assemble(bundleRefs, deployments, contents), caches: new Map() };
}
