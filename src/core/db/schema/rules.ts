import { foreignKey, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';
import { ruleSets } from './rule-sets.js';

/** migration 0007: rules of a rule set version; `rule_data` conforms to the set's schema. */
export const rules = pgTable(
  'rules',
  {
    rule_set_id: text('rule_set_id').notNull(),
    rule_set_version: text('rule_set_version').notNull(),
    rule_id: text('rule_id').notNull(),
    rule_data: jsonb('rule_data').$type<Record<string, unknown>>().notNull(),
    created_at: timestamptz3('created_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.rule_set_id, t.rule_set_version, t.rule_id] }),
    foreignKey({ columns: [t.rule_set_id, t.rule_set_version], foreignColumns: [ruleSets.id, ruleSets.version] }),
  ],
);
