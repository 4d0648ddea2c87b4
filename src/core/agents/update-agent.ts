/**
 * Agent changes (spec 3.1): partial update (name, description, role, intents, status, owner) and
 * the policy (overrides, restrictions). Revoking revokes every active key in the same
 * transaction; un-revoking counts toward the license cap again. Every change is followed,
 * after its commit, by a key-cache invalidation for the agent on every process.
 */
import type { components } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import type { Db } from '../db/index.js';
import { invalidateKeys } from '../keys/key-cache.js';
import { keyEndedEvent } from '../keys/key-events.js';
import { ownerUnverifiable } from './create-agent.js';
import { reassignOwner } from '../ownership/force-assign.js';
import { lockOwner, ownerDeactivated } from '../ownership/transfer-store.js';
import { and, eq } from 'drizzle-orm';
import { agentApiKeys, agentPolicyOverrides, agents } from '../db/schema/index.js';
import { assertUnderCap, checkIfMatch, getAgentRow, intentsToStore, lockAgentCap, syncAgentGraph, toAgent, type Agent } from './agent-store.js';
import { changedFields, eventFields, recordEvent, type Who } from '../audit/events.js';

export type UpdateAgentInput = components['schemas']['AgentUpdate'];
export type AgentPolicyInput = components['schemas']['AgentPolicyUpdate'];
export type AgentRevocation = components['schemas']['AgentRevocation'];

const AGENT_REVOKED_BY = 'system:agent-revoked';

/**
 * Revokes the agent's active keys (inside the caller's transaction), each with its
 * `key.revoked` event (by key_id and prefix); returns how many.
 */
async function revokeAgentKeys(db: Db, agentId: string, at: Date, who: Who): Promise<number> {
  const rows = await db.orm
    .update(agentApiKeys)
    .set({ status: 'revoked', is_active: false, revoked_at: at, revoked_by: AGENT_REVOKED_BY })
    .where(and(eq(agentApiKeys.agent_id, agentId), eq(agentApiKeys.status, 'active')))
    .returning({ key_id: agentApiKeys.key_id, agent_id: agentApiKeys.agent_id, key_prefix: agentApiKeys.key_prefix });
  for (const k of rows) await recordEvent(db, who, keyEndedEvent('key.revoked', k, at, AGENT_REVOKED_BY), at);
  return rows.length;
}

/** The event type of an agent change: its status move when there is one, else `agent.updated`. */
function agentEventType(before: Agent['status'], after: Agent['status']): string {
  if (before === after) return 'agent.updated';
  return after === 'revoked' ? 'agent.revoked' : after === 'suspended' ? 'agent.suspended' : 'agent.activated';
}

/** The agent's event: only the fields that changed (none: no event). */
async function agentChanged(db: Db, who: Who, before: Agent, after: Agent, at: Date, type = agentEventType(before.status, after.status)): Promise<void> {
  const changed = changedFields(eventFields(before), eventFields(after));
  if (!changed.after) return;
  await recordEvent(db, who, { event_type: type, resource_type: 'agent', resource_id: after.agent_id, ...changed }, at);
}

/** `ifMatch`: the request's `If-Match` header, checked against the agent under its row lock. */
export async function updateAgent(ctx: AppContext, agentId: string, input: UpdateAgentInput, who: Who, ifMatch?: string): Promise<Agent> {
  if (input.owner_verified === true) throw ownerUnverifiable();
  const now = ctx.clock.now();
  const cap = ctx.license?.agent_cap ?? 0;
  try {
    return await ctx.db.tx(async (db) => {
      // Un-revoking adds to the licensed count: take the cap lock before the row lock, in the
      // same order as createAgent, so the two cannot deadlock.
      if (input.status && input.status !== 'revoked' && cap > 0) await lockAgentCap(db);
      // A new owner is locked before the agent (the lock order of ownership/transfer-store.ts).
      const newOwner = input.owner_id ? await lockOwner(db, input.owner_id, now) : null;
      const cur = await getAgentRow(db, agentId, true);
      const before = toAgent(cur);
      checkIfMatch(before, ifMatch);
      // The same owner changes nothing (even a deactivated one); another must be active.
      if (newOwner && newOwner.owner_id !== cur.owner_id && newOwner.status !== 'active') throw ownerDeactivated(newOwner);
      // Another owner: an admin's reassignment, recorded as a completed transfer (force_assigned).
      const recordReassignment = input.owner_id ? await reassignOwner(ctx, db, cur, input.owner_id, who) : null;
      if (input.status && input.status !== 'revoked' && cur.status === 'revoked' && cap > 0) await assertUnderCap(db, cap);
      // A field left out (or a null name, intents or status) keeps its stored value; a null
      // description or owner_name clears it.
      const [row] = await db.orm
        .update(agents)
        .set({
          ...(input.name != null && { name: input.name }),
          ...(input.role_id != null && { role_id: input.role_id }),
          ...(input.description !== undefined && { description: input.description ?? null }),
          ...(input.allowed_intents && { allowed_intents: intentsToStore(input.allowed_intents) }),
          ...(input.status != null && { status: input.status }),
          ...(input.owner_name !== undefined && { owner_name: input.owner_name ?? null }),
          owner_verified: false,
          updated_at: now,
        })
        .where(eq(agents.agent_id, agentId))
        .returning();
      // Another role: the agent's HAS_ROLE edge follows (selection reads the role from the row).
      if (row.role_id !== cur.role_id) await syncAgentGraph(db, row);
      const agent = toAgent(row);
      // The owner change's own event (ownership.force_assigned) first, then the agent's.
      await recordReassignment?.();
      await agentChanged(db, who, before, agent, now);
      if (input.status === 'revoked') await revokeAgentKeys(db, agentId, now, who);
      return agent;
    });
  } finally {
    await invalidateKeys(ctx, { kind: 'agent', agent_id: agentId });
  }
}

export async function setAgentPolicy(ctx: AppContext, agentId: string, input: AgentPolicyInput, who: Who, ifMatch?: string): Promise<Agent> {
  const now = ctx.clock.now();
  try {
    return await ctx.db.tx(async (db) => {
      const before = toAgent(await getAgentRow(db, agentId, true));
      checkIfMatch(before, ifMatch);
      const [row] = await db.orm
        .update(agents)
        .set({
          ...(input.overrides != null && { overrides: input.overrides }),
          ...(input.restrictions != null && { restrictions: input.restrictions }),
          updated_at: now,
        })
        .where(eq(agents.agent_id, agentId))
        .returning();
      await db.orm.insert(agentPolicyOverrides).values({ agent_id: agentId, overrides: row.overrides, restrictions: row.restrictions, set_by: who.actor, set_at: now });
      await syncAgentGraph(db, row);
      const agent = toAgent(row);
      await agentChanged(db, who, before, agent, now, 'agent.policy_set');
      return agent;
    });
  } finally {
    await invalidateKeys(ctx, { kind: 'agent', agent_id: agentId });
  }
}

/** DELETE: revoke the agent and its active keys in one transaction; idempotent. */
export async function revokeAgent(ctx: AppContext, agentId: string, who: Who): Promise<AgentRevocation> {
  const now = ctx.clock.now();
  try {
    return await ctx.db.tx(async (db) => {
      const cur = await getAgentRow(db, agentId, true);
      let row = cur;
      if (row.status !== 'revoked') {
        [row] = await db.orm.update(agents).set({ status: 'revoked', updated_at: now }).where(eq(agents.agent_id, agentId)).returning();
        await agentChanged(db, who, toAgent(cur), toAgent(row), now);
      }
      const revoked = await revokeAgentKeys(db, agentId, now, who);
      return { agent: toAgent(row), revoked_key_count: revoked };
    });
  } finally {
    await invalidateKeys(ctx, { kind: 'agent', agent_id: agentId });
  }
}
