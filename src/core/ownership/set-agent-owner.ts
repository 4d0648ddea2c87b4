/** The agent's owner changes here only (inside a transfer's transaction, the agent row locked). */
import { eq } from 'drizzle-orm';
import type { Db } from '../db/index.js';
import { agents } from '../db/schema/index.js';

/**
 * Sets owner_id. owner_name was the previous owner's display name: it is cleared (and
 * owner_verified is false), to be set again by PUT /api/agents/{id}.
 */
export async function setAgentOwner(db: Db, agentId: string, ownerId: string, now: Date): Promise<void> {
  await db.orm.update(agents).set({ owner_id: ownerId, owner_name: null, owner_verified: false, updated_at: now }).where(eq(agents.agent_id, agentId));
}
