import { integer, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';
import { agents } from './agents.js';

/** migration 0009: Subscribe streams, open (`ended_at` null) and ended. */
export const activeSubscriptions = pgTable('active_subscriptions', {
  subscription_id: text('subscription_id').primaryKey(),
  tag_name: text('tag_name').notNull(),
  agent_id: text('agent_id').notNull().references(() => agents.agent_id),
  process_id: text('process_id').notNull(),
  auth_method: text('auth_method', { enum: ['token', 'api_key'] }).notNull(),
  started_at: timestamptz3('started_at').notNull().defaultNow(),
  last_seen_at: timestamptz3('last_seen_at').notNull().defaultNow(),
  messages_sent: integer('messages_sent').notNull().default(0),
  ended_at: timestamptz3('ended_at'),
  end_reason: text('end_reason', { enum: ['client_closed', 'server_shutdown', 'tag_not_found', 'revoked', 'error'] }),
});
