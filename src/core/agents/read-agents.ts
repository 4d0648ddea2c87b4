/** Agent reads: the filtered, paged list and one agent with every key it was ever issued. */
import type { components, operations } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import { listKeyRows, toApiKey } from '../keys/key-store.js';
import { and, count, eq, ilike, ne, or } from 'drizzle-orm';
import { agents } from '../db/schema/index.js';
import { getAgentRow, toAgent } from './agent-store.js';

export type AgentList = components['schemas']['AgentList'];
export type AgentDetail = components['schemas']['AgentDetail'];

/** The filters and paging of `GET /api/agents` (its query parameters). */
export type ListAgentsInput = NonNullable<operations['listAgents']['parameters']['query']>;

/** An ILIKE pattern matching values that contain `text` literally (`\\`, `%` and `_` escaped). */
function likeContaining(text: string): string {
  return `%${text.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
}

export async function listAgents(ctx: AppContext, input: ListAgentsInput): Promise<AgentList> {
  const limit = input.limit ?? 100;
  const offset = input.offset ?? 0;
  const filter = and(
    input.role_id ? eq(agents.role_id, input.role_id) : undefined,
    input.status === 'inactive' ? ne(agents.status, 'active') : input.status ? eq(agents.status, input.status) : undefined,
    input.search ? or(ilike(agents.agent_id, likeContaining(input.search)), ilike(agents.name, likeContaining(input.search))) : undefined,
  );
  const [{ n }] = await ctx.db.orm.select({ n: count() }).from(agents).where(filter);
  const rows = await ctx.db.orm.select().from(agents).where(filter).orderBy(agents.created_at, agents.agent_id).limit(limit).offset(offset);
  return { agents: rows.map(toAgent), total: n, limit, offset };
}

export async function getAgent(ctx: AppContext, agentId: string): Promise<AgentDetail> {
  const row = await getAgentRow(ctx.db, agentId);
  const keys = await listKeyRows(ctx.db, agentId);
  const now = ctx.clock.now();
  return { ...toAgent(row), api_keys: keys.map((k) => toApiKey(k, now)) };
}
