import { bigint, pgTable, primaryKey, smallint, text } from 'drizzle-orm/pg-core';
import { bytea, timestamptz3 } from './columns.js';


/**
 * migration 0011: the transparency log's tiles (C2SP tlog-tiles, height 8). A tile only
 * grows (trigger); written only by the integrator (src/core/tlog/integrate.ts).
 */
export const auditTlogTiles = pgTable(
  'audit_tlog_tiles',
  {
    level: smallint('level').notNull(),
    idx: bigint('idx', { mode: 'number' }).notNull(),
    data: bytea('data').notNull(),
    /** migration 0017: a full level-0 tile's inner nodes (merkle.ts tileInnerNodes); null before it fills, or stored before 0017. */
    nodes: bytea('nodes'),
  },
  (t) => [primaryKey({ columns: [t.level, t.idx] })],
);

/** migration 0011: every checkpoint the log signed. Immutable (trigger). */
export const auditTlogCheckpoints = pgTable('audit_tlog_checkpoints', {
  tree_size: bigint('tree_size', { mode: 'number' }).primaryKey(),
  root_hash: bytea('root_hash').notNull(),
  note: text('note').notNull(),
  created_at: timestamptz3('created_at').notNull().defaultNow(),
});

/** migration 0011: witnesses' cosignatures of checkpoints. Immutable (trigger). */
export const auditTlogCosignatures = pgTable(
  'audit_tlog_cosignatures',
  {
    tree_size: bigint('tree_size', { mode: 'number' })
      .notNull()
      .references(() => auditTlogCheckpoints.tree_size),
    key_name: text('key_name').notNull(),
    line: text('line').notNull(),
    received_at: timestamptz3('received_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.tree_size, t.key_name] })],
);
