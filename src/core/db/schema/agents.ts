import { boolean, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';

/** migrations 0000 (table), 0005 (owner name), 0013 (owner id). `allowed_intents` holds `[{task_type, scope?}]`. */
export const agents = pgTable('agents', {
  agent_id: text('agent_id').primaryKey(),
  name: text('name').notNull(),
  description: text('description'),
  role_id: text('role_id').notNull(),
  allowed_intents: jsonb('allowed_intents').$type<unknown>().notNull().default([]),
  overrides: text('overrides').array().notNull().default([]),
  restrictions: text('restrictions').array().notNull().default([]),
  status: text('status', { enum: ['active', 'suspended', 'revoked'] }).notNull().default('active'),
  created_by: text('created_by').notNull(),
  created_at: timestamptz3('created_at').notNull().defaultNow(),
  updated_at: timestamptz3('updated_at').notNull().defaultNow(),
  organization_id: text('organization_id'),
  owner_name: text('owner_name'),
  owner_verified: boolean('owner_verified').notNull().default(false),
  /** The accountable owner (a row of `owners`); never null: an agent is never ownerless. */
  owner_id: text('owner_id').notNull().default('org-admin'),
});
