import { bigserial, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';

/** migration 0006: every move of every tag, in order. */
export const tagHistory = pgTable('tag_history', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  tag_name: text('tag_name').notNull(),
  bundle_id: text('bundle_id').notNull(),
  bundle_version: text('bundle_version').notNull(),
  moved_at: timestamptz3('moved_at').notNull().defaultNow(),
});
