import { pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';
import { agents } from './agents.js';
import { owners } from './owners.js';

export const TRANSFER_STATUSES = ['pending', 'accepted', 'rejected', 'cancelled', 'expired', 'force_assigned'] as const;

/**
 * migration 0013 (spec 2.14): one row per ownership transfer; at most one `pending` per agent
 * (partial unique index). Only the SHA-256 of the acceptance token is stored.
 */
export const agentOwnershipTransfers = pgTable('agent_ownership_transfers', {
  id: uuid('id').primaryKey(),
  agent_id: text('agent_id').notNull().references(() => agents.agent_id),
  from_owner_id: text('from_owner_id').notNull().references(() => owners.owner_id),
  to_owner_id: text('to_owner_id').notNull().references(() => owners.owner_id),
  status: text('status', { enum: TRANSFER_STATUSES }).notNull().default('pending'),
  reason: text('reason').notNull(),
  initiated_by: text('initiated_by').notNull(),
  initiated_at: timestamptz3('initiated_at').notNull().defaultNow(),
  effective_at: timestamptz3('effective_at').notNull(),
  expires_at: timestamptz3('expires_at').notNull(),
  resolved_at: timestamptz3('resolved_at'),
  resolved_by: text('resolved_by'),
  acceptance_token_hash: text('acceptance_token_hash').notNull(),
  audit_hash: text('audit_hash'),
});
