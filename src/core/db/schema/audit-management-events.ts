import { bigint, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';

/**
 * migration 0012: management events (issue 22), a hash chain of their own and leaves of the
 * transparency log. Append-only (trigger); written only by svc_event_append
 * (src/core/audit/events.ts recordEvent).
 */
export const auditManagementEvents = pgTable('audit_management_events', {
  event_sequence: bigint('event_sequence', { mode: 'number' }).primaryKey(),
  event_id: text('event_id').notNull().unique(),
  event_type: text('event_type').notNull(),
  resource_type: text('resource_type').notNull(),
  resource_id: text('resource_id').notNull(),
  actor: text('actor').notNull(),
  before: jsonb('before').$type<Record<string, unknown>>(),
  after: jsonb('after').$type<Record<string, unknown>>(),
  request_id: text('request_id'),
  occurred_at: timestamptz3('occurred_at').notNull(),
  previous_hash: text('previous_hash').notNull(),
  record_hash: text('record_hash').notNull(),
  leaf_index: bigint('leaf_index', { mode: 'number' }).notNull().unique(),
});
