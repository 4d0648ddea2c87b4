import { pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';
import { ruleSchemas } from './rule-schemas.js';

/** migration 0007: versioned rule sets, each bound to a schema. */
export const ruleSets = pgTable(
  'rule_sets',
  {
    id: text('id').notNull(),
    version: text('version').notNull(),
    schema_id: text('schema_id').notNull().references(() => ruleSchemas.id),
    created_at: timestamptz3('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.id, t.version] })],
);
