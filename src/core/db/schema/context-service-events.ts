import { bigserial, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';

/** migration 0009: the context service's own event record. */
export const contextServiceEvents = pgTable('context_service_events', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  event_type: text('event_type', { enum: ['subscribe', 'subscribe_refused', 'unsubscribe', 'update_delivered', 'resync'] }).notNull(),
  tag_name: text('tag_name'),
  agent_id: text('agent_id'),
  subscription_id: text('subscription_id'),
  process_id: text('process_id').notNull(),
  details: jsonb('details').$type<Record<string, unknown>>(),
  created_at: timestamptz3('created_at').notNull().defaultNow(),
});
