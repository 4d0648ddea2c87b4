import { boolean, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';
import { agents } from './agents.js';

/** migrations 0000 (table), 0002 (status, revoked_at, revoked_by), 0014 (rotation). Only the prefix and SHA-256 of a key. */
export const agentApiKeys = pgTable('agent_api_keys', {
  key_id: text('key_id').primaryKey(),
  agent_id: text('agent_id').notNull().references(() => agents.agent_id),
  key_prefix: text('key_prefix').notNull(),
  key_hash: text('key_hash').notNull(),
  name: text('name'),
  scopes: text('scopes').array(),
  is_active: boolean('is_active').notNull().default(true),
  created_at: timestamptz3('created_at').notNull().defaultNow(),
  expires_at: timestamptz3('expires_at'),
  last_used_at: timestamptz3('last_used_at'),
  status: text('status', { enum: ['active', 'revoked', 'expired'] }).notNull().default('active'),
  revoked_at: timestamptz3('revoked_at'),
  revoked_by: text('revoked_by'),
  rotated_from: text('rotated_from'),
  rotated_to: text('rotated_to'),
  rotated_at: timestamptz3('rotated_at'),
  grace_until: timestamptz3('grace_until'),
});
