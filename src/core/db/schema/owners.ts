import { pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';

/** migration 0013: the owners agents can be held by; a deactivated owner receives no agent. */
export const owners = pgTable('owners', {
  owner_id: text('owner_id').primaryKey(),
  status: text('status', { enum: ['active', 'deactivated'] }).notNull().default('active'),
  created_at: timestamptz3('created_at').notNull().defaultNow(),
  deactivated_at: timestamptz3('deactivated_at'),
  deactivated_by: text('deactivated_by'),
});
