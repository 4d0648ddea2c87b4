/** Registers an agent under the license cap (spec 4.2, 7.3, 8). */
import type { components } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import { assertUnderCap, intentsToStore, lockAgentCap, syncAgentGraph, toAgent, type Agent, type AgentRow } from './agent-store.js';

/** The contract's body; `status` and `created_by` (contract defaults) may be left out, and are defaulted here. */
export type CreateAgentInput = components['schemas']['AgentCreate'];

export async function createAgent(ctx: AppContext, input: CreateAgentInput): Promise<Agent> {
  // The contract already allows only false here; the verb holds the rule for other callers too.
  if ((input.owner_verified as boolean | undefined) === true) throw ownerUnverifiable();
  const cap = ctx.license?.agent_cap ?? 0;
  const now = ctx.clock.now();
  const graph = { agent_id: input.agent_id, role_id: input.role_id, overrides: input.overrides ?? [], restrictions: input.restrictions ?? [] };
  return ctx.db.tx(async (db) => {
    // The graph rows first: the cap lock, held until commit, then covers only count + insert.
    // (A duplicate id rolls all of it back.)
    await syncAgentGraph(db, graph);
    if (cap > 0) {
      await lockAgentCap(db);
      await assertUnderCap(db, cap);
    }
    const [row] = await db.query<AgentRow>(
      `INSERT INTO agents (agent_id, name, description, role_id, allowed_intents, overrides, restrictions, status,
                           owner_name, owner_verified, created_by, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6::text[], $7::text[], $8, $9, false, $10, $11, $11)
       ON CONFLICT (agent_id) DO NOTHING
       RETURNING *`,
      [
        input.agent_id,
        input.name,
        input.description ?? null,
        input.role_id,
        intentsToStore(input.allowed_intents),
        input.overrides ?? [],
        input.restrictions ?? [],
        input.status ?? 'active',
        input.owner_name ?? null,
        input.created_by ?? 'admin',
        now,
      ],
    );
    if (!row) throw new AppError('conflict', `Agent ${input.agent_id} already exists (agent ids are never reused, revoked agents included)`);
    return toAgent(row);
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
