import { jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';
import type { components } from '../../../../gen/openapi/rules.js';

type EdgeMapping = components['schemas']['EdgeMapping'];

/** migration 0007: JSON Schemas for rule data, with an optional edge mapping. */
export const ruleSchemas = pgTable('rule_schemas', {
  id: text('id').primaryKey(),
  schema: jsonb('schema').$type<Record<string, unknown>>().notNull(),
  edge: jsonb('edge').$type<EdgeMapping>(),
  created_at: timestamptz3('created_at').notNull().defaultNow(),
});
