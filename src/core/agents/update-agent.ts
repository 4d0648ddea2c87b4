/**
 * Agent changes (spec 3.1): partial update (name, description, intents, status, owner) and
 * the policy (overrides, restrictions). Revoking revokes every active key in the same
 * transaction; un-revoking counts toward the license cap again. Every change is followed,
 * after its commit, by a key-cache invalidation for the agent on every process.
 */
import type { components } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import type { Db } from '../db/index.js';
import { invalidateKeys } from '../keys/key-cache.js';
import { ownerUnverifiable } from './create-agent.js';
import { assertUnderCap, getAgentRow, intentsToStore, lockAgentCap, syncAgentGraph, toAgent, type Agent, type AgentRow } from './agent-store.js';

export type UpdateAgentInput = components['schemas']['AgentUpdate'];
export type AgentPolicyInput = components['schemas']['AgentPolicyUpdate'];
export type AgentRevocation = components['schemas']['AgentRevocation'];

export const AGENT_REVOKED_BY = 'system:agent-revoked';

/** Revokes the agent's active keys (inside the caller's transaction); returns how many. */
export async function revokeAgentKeys(db: Db, agentId: string, at: Date): Promise<number> {
  const rows = await db.query(
    `UPDATE agent_api_keys SET status = 'revoked', is_active = false, revoked_at = $2, revoked_by = $3
      WHERE agent_id = $1 AND status = 'active' RETURNING key_id`,
    [agentId, at, AGENT_REVOKED_BY],
  );
  return rows.length;
}

export async function updateAgent(ctx: AppContext, agentId: string, input: UpdateAgentInput): Promise<Agent> {
  if (input.owner_verified === true) throw ownerUnverifiable();
  const now = ctx.clock.now();
  const cap = ctx.license?.agent_cap ?? 0;
  try {
    return await ctx.db.tx(async (db) => {
      // Un-revoking adds to the licensed count: take the cap lock before the row lock, in the
      // same order as createAgent, so the two cannot deadlock.
      if (input.status && input.status !== 'revoked' && cap > 0) await lockAgentCap(db);
      const cur = await getAgentRow(db, agentId, true);
      if (input.status && input.status !== 'revoked' && cur.status === 'revoked' && cap > 0) await assertUnderCap(db, cap);
      const ownerGiven = input.owner_name !== undefined;
      const [row] = await db.query<AgentRow>(
        `UPDATE agents SET
           name = COALESCE($2, name),
           description = CASE WHEN $3 THEN $4 ELSE description END,
           allowed_intents = COALESCE($5::jsonb, allowed_intents),
           status = COALESCE($6, status),
           owner_name = CASE WHEN $7 THEN $8 ELSE owner_name END,
           owner_verified = false,
           updated_at = $9
         WHERE agent_id = $1 RETURNING *`,
        [
          agentId,
          input.name ?? null,
          input.description !== undefined,
          input.description ?? null,
          input.allowed_intents ? intentsToStore(input.allowed_intents) : null,
          input.status ?? null,
          ownerGiven,
          input.owner_name ?? null,
          now,
        ],
      );
      if (input.status === 'revoked') await revokeAgentKeys(db, agentId, now);
      return toAgent(row);
    });
  } finally {
    await invalidateKeys(ctx, { kind: 'agent', agent_id: agentId });
  }
}

export async function setAgentPolicy(ctx: AppContext, agentId: string, input: AgentPolicyInput, setBy = 'admin'): Promise<Agent> {
  const now = ctx.clock.now();
  try {
    return await ctx.db.tx(async (db) => {
      await getAgentRow(db, agentId, true);
      const [row] = await db.query<AgentRow>(
        `UPDATE agents SET overrides = COALESCE($2::text[], overrides), restrictions = COALESCE($3::text[], restrictions), updated_at = $4
          WHERE agent_id = $1 RETURNING *`,
        [agentId, input.overrides ?? null, input.restrictions ?? null, now],
      );
      await db.query(
        `INSERT INTO agent_policy_overrides (agent_id, overrides, restrictions, set_by, set_at) VALUES ($1, $2::text[], $3::text[], $4, $5)`,
        [agentId, row.overrides, row.restrictions, setBy, now],
      );
      await syncAgentGraph(db, row);
      return toAgent(row);
    });
  } finally {
    await invalidateKeys(ctx, { kind: 'agent', agent_id: agentId });
  }
}

/** DELETE: revoke the agent and its active keys in one transaction; idempotent. */
export async function revokeAgent(ctx: AppContext, agentId: string): Promise<AgentRevocation> {
  const now = ctx.clock.now();
  try {
    return await ctx.db.tx(async (db) => {
      let row = await getAgentRow(db, agentId, true);
      if (row.status !== 'revoked') {
        [row] = await db.query<AgentRow>(`UPDATE agents SET status = 'revoked', updated_at = $2 WHERE agent_id = $1 RETURNING *`, [agentId, now]);
      }
      const revoked = await revokeAgentKeys(db, agentId, now);
      return { agent: toAgent(row), revoked_key_count: revoked };
    });
  } finally {
    await invalidateKeys(ctx, { kind: 'agent', agent_id: agentId });
  }
}
