import { sql } from 'drizzle-orm';
import { bigint, bigserial, boolean, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core';

import { bytea, timestamptz3 } from './columns.js';
import { agents } from './agents.js';

/**
 * The audit log (migrations 0000, 0001 chain columns, 0004 tracing, 0011 leaf index and leaf hash). Append-only: rows are
 * written only by `svc_audit_append` (src/core/audit/writer.ts), never through this table.
 */
export const agentContextRequests = pgTable('agent_context_requests', {
  request_id: text('request_id').primaryKey(),
  agent_id: text('agent_id').references(() => agents.agent_id),
  task_type: text('task_type').notNull(),
  request_params: jsonb('request_params').$type<unknown>(),
  intent_valid: boolean('intent_valid').notNull(),
  validation_errors: jsonb('validation_errors').$type<unknown>(),
  context_bundle_ids: text('context_bundle_ids').array(),
  context_scd_ids: text('context_scd_ids').array(),
  processing_time_ms: integer('processing_time_ms'),
  requested_at: timestamptz3('requested_at').notNull().defaultNow(),
  // bigserial adds NOT NULL (migration 0001).
  chain_sequence: bigserial('chain_sequence', { mode: 'number' }).notNull().unique(),
  previous_hash: text('previous_hash').notNull(),
  record_hash: text('record_hash').notNull(),
  content_hash: text('content_hash'),
  chain_id: text('chain_id'),
  parent_request_id: text('parent_request_id'),
  // The record's leaf in the transparency log (migration 0011), shared with agent_output_logs.
  leaf_index: bigint('leaf_index', { mode: 'number' }).notNull().unique().default(sql`svc_audit_next_leaf()`),
  // SHA-256(0x00 || the record's canonical JSON), computed by svc_audit_append (migration 0011); null before it.
  leaf_hash: bytea('leaf_hash'),
});
