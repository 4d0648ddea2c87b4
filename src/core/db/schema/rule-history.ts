import { bigserial, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';

/** migration 0007: every write to a rule, in order. */
export const ruleHistory = pgTable('rule_history', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  rule_set_id: text('rule_set_id').notNull(),
  rule_set_version: text('rule_set_version').notNull(),
  rule_id: text('rule_id').notNull(),
  action: text('action').notNull(),
  rule_data: jsonb('rule_data').$type<Record<string, unknown>>(),
  at: timestamptz3('at').notNull().defaultNow(),
});
