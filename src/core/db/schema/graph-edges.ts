import { bigserial, jsonb, pgTable, text, unique } from 'drizzle-orm/pg-core';

const EDGE_TYPES = [
  'CONTAINS', 'IMPORTS', 'APPLIES_TO', 'GOVERNED_BY', 'REFERENCES',
  'ON_FORMULARY', 'IN_NETWORK', 'REQUIRES_PRIOR_AUTH',
  'HAS_ROLE', 'HAS_OVERRIDE', 'HAS_RESTRICTION',
] as const;

/** migration 0006: typed edges; `source` names what produced the edge. */
export const graphEdges = pgTable(
  'graph_edges',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    edge_type: text('edge_type', { enum: EDGE_TYPES }).notNull(),
    from_id: text('from_id').notNull(),
    to_id: text('to_id').notNull(),
    source: text('source').notNull(),
    props: jsonb('props').$type<Record<string, unknown>>(),
  },
  (t) => [unique().on(t.edge_type, t.from_id, t.to_id, t.source)],
);
