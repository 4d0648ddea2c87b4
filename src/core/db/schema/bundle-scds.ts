import { foreignKey, integer, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { bundles } from './bundles.js';

/** migration 0006: each SCD as published in one bundle version (immutable with it). */
export const bundleScds = pgTable(
  'bundle_scds',
  {
    bundle_id: text('bundle_id').notNull(),
    bundle_version: text('bundle_version').notNull(),
    scd_id: text('scd_id').notNull(),
    position: integer('position').notNull(),
    document: jsonb('document').$type<Record<string, unknown>>().notNull(),
    content_yaml: text('content_yaml').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.bundle_id, t.bundle_version, t.scd_id] }),
    foreignKey({ columns: [t.bundle_id, t.bundle_version], foreignColumns: [bundles.bundle_id, bundles.version] }),
  ],
);
