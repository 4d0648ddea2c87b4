/** Agent reads: the filtered, paged list and one agent with every key it was ever issued. */
import type { components, operations } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import { listKeyRows, toApiKey } from '../keys/key-store.js';
import { getAgentRow, toAgent, type AgentRow } from './agent-store.js';

export type AgentList = components['schemas']['AgentList'];
export type AgentDetail = components['schemas']['AgentDetail'];

/** The filters and paging of `GET /api/agents` (its query parameters). */
export type ListAgentsInput = NonNullable<operations['listAgents']['parameters']['query']>;

export async function listAgents(ctx: AppContext, input: ListAgentsInput): Promise<AgentList> {
  const limit = input.limit ?? 100;
  const offset = input.offset ?? 0;
  const where: string[] = [];
  const params: unknown[] = [];
  if (input.role_id) {
    params.push(input.role_id);
    where.push(`role_id = $${params.length}`);
  }
  if (input.status === 'inactive') where.push(`status <> 'active'`);
  else if (input.status) {
    params.push(input.status);
    where.push(`status = $${params.length}`);
  }
  const filter = where.length ? `WHERE ${where.join(' AND ')}` : '';
  const [{ n }] = await ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM agents ${filter}`, params);
  const rows = await ctx.db.query<AgentRow>(
    `SELECT * FROM agents ${filter} ORDER BY created_at, agent_id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
    [...params, limit, offset],
  );
  return { agents: rows.map(toAgent), total: n, limit, offset };
}

export async function getAgent(ctx: AppContext, agentId: string): Promise<AgentDetail> {
  const row = await getAgentRow(ctx.db, agentId);
  const keys = await listKeyRows(ctx.db, agentId);
  const now = ctx.clock.now();
  return { ...toAgent(row), api_keys: keys.map((k) => toApiKey(k, now)) };
}
