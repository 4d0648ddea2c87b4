import { pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';

/** migration 0015: the console's sessions; only the token's SHA-256 is stored, never the key. */
export const consoleSessions = pgTable('console_sessions', {
  token_hash: text('token_hash').primaryKey(),
  key_name: text('key_name').notNull(),
  role: text('role', { enum: ['admin', 'auditor'] }).notNull(),
  csrf_token: text('csrf_token').notNull(),
  created_at: timestamptz3('created_at').notNull().defaultNow(),
  last_seen_at: timestamptz3('last_seen_at').notNull().defaultNow(),
});
