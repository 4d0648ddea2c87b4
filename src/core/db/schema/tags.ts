import { foreignKey, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';
import { bundles } from './bundles.js';

/** migration 0006: a named pointer to one bundle version, imports resolved when set. */
export const tags = pgTable(
  'tags',
  {
    tag_name: text('tag_name').primaryKey(),
    bundle_id: text('bundle_id').notNull(),
    bundle_version: text('bundle_version').notNull(),
    resolved_bundle_ids: text('resolved_bundle_ids').array().notNull().default([]),
    context_yaml: text('context_yaml'),
    description: text('description'),
    created_at: timestamptz3('created_at').notNull().defaultNow(),
    updated_at: timestamptz3('updated_at').notNull().defaultNow(),
  },
  (t) => [foreignKey({ columns: [t.bundle_id, t.bundle_version], foreignColumns: [bundles.bundle_id, bundles.version] })],
);
