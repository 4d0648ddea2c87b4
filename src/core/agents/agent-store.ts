/**
 * Agent rows and their wire form, the queries that fetch-or-throw, and the agent's part of
 * the graph (Agent node; HAS_ROLE, HAS_OVERRIDE, HAS_RESTRICTION edges, source
 * `agent-registry`), kept in the same transaction as the row.
 */
import type { components } from '../../../gen/openapi/control-plane.js';
import type { Db } from '../db/index.js';
import { AppError } from '../../shared/errors.js';
import { intentsFromStore } from '../keys/verify-key.js';

export type Agent = components['schemas']['Agent'];
export type AgentStatus = Agent['status'];

export interface AgentRow {
  agent_id: string;
  name: string;
  description: string | null;
  role_id: string;
  allowed_intents: unknown;
  overrides: string[];
  restrictions: string[];
  status: AgentStatus;
  owner_name: string | null;
  owner_verified: boolean;
  created_by: string;
  created_at: Date;
  updated_at: Date;
  organization_id: string | null;
}

export const GRAPH_SOURCE = 'agent-registry';

/** API strings to the store's `[{task_type}]` (JSON text for a `$n::jsonb` parameter). */
export function intentsToStore(intents: string[]): string {
  return JSON.stringify(intents.map((task_type) => ({ task_type })));
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
    created_by: r.created_by,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
    organization_id: r.organization_id,
  };
}

/** The agent row, locked for the rest of the transaction when `lock` is set; 404 when absent. */
export async function getAgentRow(db: Db, agentId: string, lock = false): Promise<AgentRow> {
  const [row] = await db.query<AgentRow>(`SELECT * FROM agents WHERE agent_id = $1${lock ? ' FOR UPDATE' : ''}`, [agentId]);
  if (!row) throw new AppError('not_found', `Agent ${agentId} does not exist`);
  return row;
}

/** Rewrites the agent's node and edges from its row (inside the caller's transaction). */
export async function syncAgentGraph(db: Db, row: Pick<AgentRow, 'agent_id' | 'role_id' | 'overrides' | 'restrictions'>): Promise<void> {
  await db.query(`INSERT INTO graph_nodes (node_id, label) VALUES ($1, 'Agent') ON CONFLICT (node_id) DO NOTHING`, [row.agent_id]);
  await db.query(`INSERT INTO graph_nodes (node_id, label) VALUES ($1, 'Role') ON CONFLICT (node_id) DO NOTHING`, [row.role_id]);
  await db.query(`DELETE FROM graph_edges WHERE from_id = $1 AND source = $2 AND edge_type IN ('HAS_ROLE', 'HAS_OVERRIDE', 'HAS_RESTRICTION')`, [row.agent_id, GRAPH_SOURCE]);
  await db.query(
    `INSERT INTO graph_edges (edge_type, from_id, to_id, source)
     SELECT 'HAS_ROLE', $1, $2, $5
     UNION ALL SELECT 'HAS_OVERRIDE', $1, o, $5 FROM unnest($3::text[]) AS o
     UNION ALL SELECT 'HAS_RESTRICTION', $1, r, $5 FROM unnest($4::text[]) AS r
     ON CONFLICT DO NOTHING`,
    [row.agent_id, row.role_id, row.overrides ?? [], row.restrictions ?? [], GRAPH_SOURCE],
  );
}

/** Non-revoked agents: what the license cap counts. */
export async function countLicensedAgents(db: Db): Promise<number> {
  const [r] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM agents WHERE status <> 'revoked'`);
  return r.n;
}

/**
 * Serializes every change that adds to the licensed count (create, un-revoke) across all
 * processes and connections until the transaction ends, so two creates at cap - 1 cannot
 * both see room.
 */
export async function lockAgentCap(db: Db): Promise<void> {
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
