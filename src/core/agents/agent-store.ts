/**
 * Agent rows and their wire form, the queries that fetch-or-throw, and the agent's part of
 * the graph (Agent node; HAS_ROLE, HAS_OVERRIDE, HAS_RESTRICTION edges, source
 * `agent-registry`), kept in the same transaction as the row.
 */
import { createHash } from 'node:crypto';
import { and, count, eq, inArray, ne } from 'drizzle-orm';
import type { components } from '../../../gen/openapi/control-plane.js';
import type { Db } from '../db/index.js';
import { agents, graphEdges, graphNodes } from '../db/schema/index.js';
import { canonicalJson } from '../../shared/canonical-json.js';
import { AppError } from '../../shared/errors.js';
import { intentsFromStore } from '../keys/verify-key.js';

export type Agent = components['schemas']['Agent'];
export type AgentRow = typeof agents.$inferSelect;

const GRAPH_SOURCE = 'agent-registry';

/** API strings to the store's `[{task_type}]`. */
export function intentsToStore(intents: string[]): { task_type: string }[] {
  return intents.map((task_type) => ({ task_type }));
}

export function toAgent(r: AgentRow): Agent {
  return {
    agent_id: r.agent_id,
    name: r.name,
    description: r.description,
    role_id: r.role_id,
    allowed_intents: intentsFromStore(r.allowed_intents),
    overrides: r.overrides ?? [],
    restrictions: r.restrictions ?? [],
    status: r.status,
    owner_name: r.owner_name,
    owner_verified: r.owner_verified,
    owner_id: r.owner_id,
    created_by: r.created_by,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
    organization_id: r.organization_id,
  };
}

/**
 * The agent's entity tag (HTTP `ETag`, strong): a digest of its wire form, keys left out
 * (an `AgentDetail`'s `api_keys` too), so that any change to the agent changes it
 * (`updated_at` moves on every write) and a key's issue or use does not.
 */
export function agentEtag(a: Agent & { api_keys?: unknown }): string {
  const { api_keys: _keys, ...agent } = a;
  return `"${createHash('sha256').update(canonicalJson(agent)).digest('base64url').slice(0, 27)}"`;
}

/**
 * An `If-Match` header against the agent as it is now (read under the row lock): absent, `*`,
 * or a list naming its tag passes; otherwise 412 `precondition_failed`. Weak tags never match
 * (RFC 9110 13.1.1: strong comparison).
 */
export function checkIfMatch(a: Agent, ifMatch: string | undefined): void {
  if (ifMatch === undefined) return;
  const tags = ifMatch.split(',').map((t) => t.trim());
  const etag = agentEtag(a);
  if (tags.includes('*') || tags.includes(etag)) return;
  throw new AppError('precondition_failed', `Agent ${a.agent_id} changed since it was read (If-Match does not name its current ETag): read it again and retry`, {
    details: { agent_id: a.agent_id, etag },
  });
}

/** The agent row, locked for the rest of the transaction when `lock` is set; 404 when absent. */
export async function getAgentRow(db: Db, agentId: string, lock = false): Promise<AgentRow> {
  const q = db.orm.select().from(agents).where(eq(agents.agent_id, agentId));
  const [row] = lock ? await q.for('update') : await q;
  if (!row) throw new AppError('not_found', `Agent ${agentId} does not exist`);
  return row;
}

/** Rewrites the agent's node and edges from its row (inside the caller's transaction). */
export async function syncAgentGraph(db: Db, row: Pick<AgentRow, 'agent_id' | 'role_id' | 'overrides' | 'restrictions'>): Promise<void> {
  await db.orm.insert(graphNodes).values({ node_id: row.agent_id, label: 'Agent' }).onConflictDoNothing({ target: graphNodes.node_id });
  await db.orm.insert(graphNodes).values({ node_id: row.role_id, label: 'Role' }).onConflictDoNothing({ target: graphNodes.node_id });
  await db.orm
    .delete(graphEdges)
    .where(and(eq(graphEdges.from_id, row.agent_id), eq(graphEdges.source, GRAPH_SOURCE), inArray(graphEdges.edge_type, ['HAS_ROLE', 'HAS_OVERRIDE', 'HAS_RESTRICTION'])));
  const edge = (edge_type: 'HAS_ROLE' | 'HAS_OVERRIDE' | 'HAS_RESTRICTION', to_id: string) => ({ edge_type, from_id: row.agent_id, to_id, source: GRAPH_SOURCE });
  // A policy may name an SCD twice: the unique (type, from, to, source) keeps one edge.
  await db.orm
    .insert(graphEdges)
    .values([edge('HAS_ROLE', row.role_id), ...(row.overrides ?? []).map((o) => edge('HAS_OVERRIDE', o)), ...(row.restrictions ?? []).map((r) => edge('HAS_RESTRICTION', r))])
    .onConflictDoNothing();
}

/** Non-revoked agents: what the license cap counts. */
async function countLicensedAgents(db: Db): Promise<number> {
  const [r] = await db.orm.select({ n: count() }).from(agents).where(ne(agents.status, 'revoked'));
  return r.n;
}

/**
 * Serializes every change that adds to the licensed count (create, un-revoke) across all
 * processes and connections until the transaction ends, so two creates at cap - 1 cannot
 * both see room.
 */
export async function lockAgentCap(db: Db): Promise<void> {
  // An advisory lock has no query-builder form: raw SQL on the same transaction.
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended('svc:agent-license-cap', 0))`);
}

/** 402 when the license caps agents and the non-revoked count is at or above the cap. */
export async function assertUnderCap(db: Db, cap: number): Promise<void> {
  const current = await countLicensedAgents(db);
  if (current >= cap) {
    throw new AppError('license_limit', `Agent limit of the license reached (${current} of ${cap}); upgrade the license to register more agents`, {
      details: { agent_cap: cap, current },
    });
  }
}
