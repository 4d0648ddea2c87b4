import { sql } from 'drizzle-orm';
import { bigint, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';
import { agents } from './agents.js';
import { agentContextRequests } from './agent-context-requests.js';

/** migration 0003: agent outputs against their own requests. Append-only (trigger); leaf_index from 0011. */
export const agentOutputLogs = pgTable('agent_output_logs', {
  output_id: text('output_id').primaryKey(),
  request_id: text('request_id').notNull().references(() => agentContextRequests.request_id),
  agent_id: text('agent_id').notNull().references(() => agents.agent_id),
  output_type: text('output_type'),
  output: jsonb('output').$type<unknown>().notNull(),
  output_hash: text('output_hash').notNull(),
  created_at: timestamptz3('created_at').notNull().defaultNow(),
  leaf_index: bigint('leaf_index', { mode: 'number' }).notNull().unique().default(sql`svc_audit_next_leaf()`),
});
