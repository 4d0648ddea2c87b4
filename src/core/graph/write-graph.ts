/**
 * Writes one bundle version into the graph tables (decisions.md, "Edges"):
 * - Bundle node `bundle:<name>:<version>`, SCD nodes, Role nodes;
 * - CONTAINS bundle -> SCD, IMPORTS bundle -> resolved bundle version;
 * - APPLIES_TO SCD -> role, from the SCD's own `applies_to.roles`, else the bundle's;
 *   an SCD with neither has no APPLIES_TO edge and applies to every role;
 * - relationships: A `satisfies`/`implements` B gives A GOVERNED_BY B, A `constrains` B
 *   gives B GOVERNED_BY A, any other type gives A REFERENCES B (the type kept in props).
 * Every edge carries `source` = the bundle version, so selection only follows the edges of
 * deployed versions and a replaced DRAFT's edges can be removed exactly.
 */
import type { Db } from '../db/index.js';
import { SCD_ID_RE, scdTier } from './refs.js';

export interface GraphInput {
  ref: string;
  bundleId: string;
  version: string;
  type: string;
  /** Bundle-level applies_to roles (null when not given). */
  roles: string[] | null;
  scds: Array<{ id: string; document: Record<string, unknown> }>;
  imports: Array<{ ref: string; target: string; pinned: boolean }>;
}

interface Edge {
  type: 'CONTAINS' | 'IMPORTS' | 'APPLIES_TO' | 'GOVERNED_BY' | 'REFERENCES';
  from: string;
  to: string;
  props: Record<string, unknown> | null;
}

const rolesOf = (doc: Record<string, unknown>): string[] | null => {
  const a = doc.applies_to as { roles?: unknown } | undefined;
  return a && Array.isArray(a.roles) ? a.roles.filter((r): r is string => typeof r === 'string') : null;
};

/** The edges a bundle version produces (pure; exported for tests). */
export function graphEdges(g: GraphInput): Edge[] {
  const edges: Edge[] = [];
  const refs = new Map<string, Edge>();
  g.scds.forEach((s, position) => edges.push({ type: 'CONTAINS', from: g.ref, to: s.id, props: { position } }));
  for (const i of g.imports) edges.push({ type: 'IMPORTS', from: g.ref, to: i.target, props: { ref: i.ref, pinned: i.pinned } });
  for (const s of g.scds) {
    for (const role of new Set(rolesOf(s.document) ?? g.roles ?? [])) edges.push({ type: 'APPLIES_TO', from: s.id, to: role, props: null });
    const rels = Array.isArray(s.document.relationships) ? (s.document.relationships as unknown[]) : [];
    for (const r of rels) {
      if (typeof r !== 'object' || r === null) continue;
      const { type, target } = r as { type?: unknown; target?: unknown };
      if (typeof target !== 'string' || !SCD_ID_RE.test(target) || target === s.id) continue;
      const t = typeof type === 'string' ? type : 'references';
      if (t === 'satisfies' || t === 'implements') edges.push({ type: 'GOVERNED_BY', from: s.id, to: target, props: { relationship: t } });
      else if (t === 'constrains') edges.push({ type: 'GOVERNED_BY', from: target, to: s.id, props: { relationship: t } });
      else {
        // One REFERENCES edge per pair; several relationship types between the same pair are all kept.
        const key = `${s.id}\u0000${target}`;
        const prev = refs.get(key);
        if (prev) (prev.props!.types as string[]).push(t);
        else {
          const e: Edge = { type: 'REFERENCES', from: s.id, to: target, props: { type: t, types: [t] } };
          refs.set(key, e);
          edges.push(e);
        }
      }
    }
  }
  return edges;
}

export async function writeGraph(t: Db, g: GraphInput): Promise<void> {
  const edges = graphEdges(g);
  const nodes = new Map<string, { label: string; props: Record<string, unknown> | null }>();
  nodes.set(g.ref, { label: 'Bundle', props: { bundle_id: g.bundleId, version: g.version, type: g.type } });
  for (const s of g.scds) nodes.set(s.id, { label: 'SCD', props: { tier: scdTier(s.id) } });
  for (const e of edges) if (e.type === 'APPLIES_TO') nodes.set(e.to, { label: 'Role', props: null });
  const nodeIds = [...nodes.keys()];
  // Raw SQL: one INSERT ... SELECT FROM unnest(arrays) per table, whatever the bundle's size.
  // A multi-row VALUES insert (the query builder's form) takes 3-5 parameters per row and
  // passes PostgreSQL's 65,535-parameter limit at about 13,000 edges.
  await t.query(
    `INSERT INTO graph_nodes (node_id, label, props)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[]::jsonb[]) ON CONFLICT (node_id) DO NOTHING`,
    [nodeIds, nodeIds.map((n) => nodes.get(n)!.label), nodeIds.map((n) => { const p = nodes.get(n)!.props; return p === null ? null : JSON.stringify(p); })],
  );
  if (!edges.length) return;
  await t.query(
    `INSERT INTO graph_edges (edge_type, from_id, to_id, source, props)
     SELECT e.edge_type, e.from_id, e.to_id, $4, e.props
       FROM unnest($1::text[], $2::text[], $3::text[], $5::text[]::jsonb[]) AS e(edge_type, from_id, to_id, props)
     ON CONFLICT (edge_type, from_id, to_id, source) DO NOTHING`,
    [edges.map((e) => e.type), edges.map((e) => e.from), edges.map((e) => e.to), g.ref, edges.map((e) => (e.props === null ? null : JSON.stringify(e.props)))],
  );
}

/** Removes what a bundle version wrote (only for replacing a DRAFT: published versions are immutable). */
export async function removeGraph(t: Db, ref: string): Promise<void> {
  await t.query('DELETE FROM graph_edges WHERE source = $1', [ref]);
}
