import { bigint, boolean, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';

/** The columns of both rollups (migration 0016): one row per bucket and group. */
const rollupColumns = () => ({
  bucket: timestamptz3('bucket').notNull(),
  /** '' for a record without an agent (unknown or missing key). */
  agent_id: text('agent_id').notNull(),
  /** The agent's role when the record was rolled up ('' without an agent). */
  role_id: text('role_id').notNull(),
  task_type: text('task_type').notNull(),
  outcome: text('outcome', { enum: ['accepted', 'refused'] }).notNull(),
  /** '' when accepted; see src/core/analytics/rollup.ts. */
  reason: text('reason').notNull(),
  count: bigint('count', { mode: 'number' }).notNull(),
  last_at: timestamptz3('last_at').notNull(),
});

/** migration 0016: context requests by UTC hour. */
export const analyticsHourly = pgTable('analytics_hourly', rollupColumns(), (t) => [
  primaryKey({ columns: [t.bucket, t.agent_id, t.role_id, t.task_type, t.outcome, t.reason] }),
]);
/** migration 0016: context requests by UTC day. */
export const analyticsDaily = pgTable('analytics_daily', rollupColumns(), (t) => [
  primaryKey({ columns: [t.bucket, t.agent_id, t.role_id, t.task_type, t.outcome, t.reason] }),
]);
/** migration 0016: context requests by UTC hour and agent alone (what usage by hour and agent reads). */
export const analyticsHourlyAgents = pgTable(
  'analytics_hourly_agents',
  {
    bucket: timestamptz3('bucket').notNull(),
    agent_id: text('agent_id').notNull(),
    outcome: text('outcome', { enum: ['accepted', 'refused'] }).notNull(),
    count: bigint('count', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.bucket, t.agent_id, t.outcome] })],
);
/** migration 0016: the last chain_sequence rolled up (one row). */
export const analyticsWatermark = pgTable('analytics_watermark', {
  singleton: boolean('singleton').primaryKey().default(true),
  last_sequence: bigint('last_sequence', { mode: 'number' }).notNull().default(0),
  updated_at: timestamptz3('updated_at'),
});
