import { bigserial, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';
import { agents } from './agents.js';

/** migration 0000: every change to an agent's overrides and restrictions, in order. */
export const agentPolicyOverrides = pgTable('agent_policy_overrides', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  agent_id: text('agent_id').notNull().references(() => agents.agent_id),
  overrides: text('overrides').array().notNull(),
  restrictions: text('restrictions').array().notNull(),
  set_by: text('set_by').notNull(),
  set_at: timestamptz3('set_at').notNull().defaultNow(),
});
