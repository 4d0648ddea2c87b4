import { jsonb, pgTable, text } from 'drizzle-orm/pg-core';

/** migration 0006: Bundle, SCD, Role, Agent and Entity nodes. */
export const graphNodes = pgTable('graph_nodes', {
  node_id: text('node_id').primaryKey(),
  label: text('label', { enum: ['Bundle', 'SCD', 'Role', 'Agent', 'Entity'] }).notNull(),
  props: jsonb('props').$type<Record<string, unknown>>(),
});
