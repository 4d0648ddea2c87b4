import { pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';

/** migration 0006: a newer deployment of the same project bundle id supersedes an older one. */
export const deployments = pgTable('deployments', {
  deployment_id: uuid('deployment_id').primaryKey(),
  project_bundles: text('project_bundles').array().notNull(),
  resolved_bundles: text('resolved_bundles').array().notNull(),
  status: text('status', { enum: ['active', 'superseded'] }).notNull().default('active'),
  superseded_by: uuid('superseded_by'),
  superseded_at: timestamptz3('superseded_at'),
  created_by: text('created_by'),
  created_at: timestamptz3('created_at').notNull().defaultNow(),
});
