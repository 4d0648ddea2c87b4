/** Registers an agent under the license cap (spec 4.2, 7.3, 8). */
import type { components } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import { agents } from '../db/schema/index.js';
import { lockActiveOwner } from '../ownership/transfer-store.js';
import { assertUnderCap, intentsToStore, lockAgentCap, syncAgentGraph, toAgent, type Agent } from './agent-store.js';
import { eventFields, recordEvent, type Who } from '../audit/events.js';

/** The contract's body; `status` and `created_by` (contract defaults) may be left out, and are defaulted here. */
export type CreateAgentInput = components['schemas']['AgentCreate'];

export async function createAgent(ctx: AppContext, input: CreateAgentInput, who: Who): Promise<Agent> {
  // The contract already allows only false here; the verb holds the rule for other callers too.
  if ((input.owner_verified as boolean | undefined) === true) throw ownerUnverifiable();
  const cap = ctx.license?.agent_cap ?? 0;
  const now = ctx.clock.now();
  const graph = { agent_id: input.agent_id, role_id: input.role_id, overrides: input.overrides ?? [], restrictions: input.restrictions ?? [] };
  return ctx.db.tx(async (db) => {
    // The graph rows first: the cap lock, held until commit, then covers only count + insert.
    // (A duplicate id rolls all of it back.)
    await syncAgentGraph(db, graph);
    // Never ownerless: the org admin holds an agent registered without an owner.
    const ownerId = input.owner_id ?? ctx.config.ownership.orgAdminOwnerId;
    await lockActiveOwner(db, ownerId, now);
    if (cap > 0) {
      await lockAgentCap(db);
      await assertUnderCap(db, cap);
    }
    const [row] = await db.orm
      .insert(agents)
      .values({
        agent_id: input.agent_id,
        name: input.name,
        description: input.description ?? null,
        role_id: input.role_id,
        allowed_intents: intentsToStore(input.allowed_intents),
        overrides: input.overrides ?? [],
        restrictions: input.restrictions ?? [],
        status: input.status ?? 'active',
        owner_name: input.owner_name ?? null,
        owner_verified: false,
        owner_id: ownerId,
        created_by: input.created_by ?? 'admin',
        created_at: now,
        updated_at: now,
      })
      .onConflictDoNothing({ target: agents.agent_id })
      .returning();
    if (!row) throw new AppError('conflict', `Agent ${input.agent_id} already exists (agent ids are never reused, revoked agents included)`);
    const agent = toAgent(row);
    await recordEvent(db, who, { event_type: 'agent.created', resource_type: 'agent', resource_id: agent.agent_id, after: eventFields(agent) }, now);
    return agent;
  });
}

/** owner_verified can only be true after identity-provider confirmation, and none is configured. */
export function ownerUnverifiable(): AppError {
  return new AppError(
    'validation_error',
    'owner_verified cannot be set to true: no identity provider is configured, so an owner is recorded as manually asserted (owner_verified false)',
    { details: { errors: [{ path: '/body/owner_verified', rule: 'owner_unverifiable', message: 'no identity provider is configured' }] } },
  );
}
