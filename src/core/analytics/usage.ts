/**
 * Usage analytics (GET /api/analytics/usage): context requests per UTC hour or day and per
 * group, accepted and refused, from the rollups (rollup.ts) plus the records above their
 * watermark, counted from the log in the same statement (one snapshot), so the counts are
 * exact whatever the rollup job's progress.
 */
import type { AppContext } from '../../shared/app-context.js';
import type { components, operations } from '../../../gen/openapi/control-plane.js';
import { classifiedRecords, rollUp, watermarkState } from './rollup.js';
import { alignedWindow, DAY_MS } from './window.js';

export type UsageQuery = NonNullable<operations['getUsageAnalytics']['parameters']['query']>;
export type UsageAnalytics = components['schemas']['UsageAnalytics'];

/** Most hour buckets (31 days) and day buckets in one query. */
const MAX_HOURS = 31 * 24;
const MAX_DAYS = 731;
/** Records above the watermark a query counts from the log; beyond, it rolls them up first. */
const MAX_TAIL = 100_000;

const GROUP_COLUMN = { agent: 'agent_id', role: 'role_id', task_type: 'task_type', outcome: 'outcome' } as const;

/**
 * Rolls up first when the records above the watermark are too many to count on the fly;
 * returns the watermark then. It only grows: a query passes it as a lower bound of the
 * records above the watermark it reads in its own statement, so that the planner reads them
 * from the chain_sequence index (not from requested_at's, through the whole window).
 */
export async function catchUp(ctx: AppContext): Promise<number> {
  const s = await watermarkState(ctx.db);
  if (s.pending <= MAX_TAIL) return s.watermark;
  await rollUp(ctx, MAX_TAIL);
  return (await watermarkState(ctx.db)).watermark;
}

/** The tail's condition: above the watermark of this statement's snapshot ($n a lower bound of it) and in the window ($1, $2). */
export const tailWhere = (n: number) =>
  `r.chain_sequence > $${n} AND r.chain_sequence > (SELECT last_sequence FROM analytics_watermark) AND r.requested_at >= $1 AND r.requested_at < $2`;

export async function usageAnalytics(ctx: AppContext, q: UsageQuery = {}): Promise<UsageAnalytics> {
  const bucket = q.bucket ?? 'hour';
  const groupBy = q.group_by ?? 'agent';
  const w = alignedWindow(q, ctx.clock.now(), bucket, bucket === 'hour' ? DAY_MS : 30 * DAY_MS, bucket === 'hour' ? MAX_HOURS : MAX_DAYS);
  const lower = await catchUp(ctx);
  const col = GROUP_COLUMN[groupBy];
  // By hour and agent: the rollup by agent alone (a third of the hourly rows).
  const table = bucket === 'day' ? 'analytics_daily' : groupBy === 'agent' ? 'analytics_hourly_agents' : 'analytics_hourly';
  const rows = await ctx.db.query<{ bucket: Date | string; key: string; accepted: number | string; refused: number | string }>(
    `WITH rolled AS (
       SELECT bucket, ${col} AS key, outcome, sum(count) AS n FROM ${table}
        WHERE bucket >= $1 AND bucket < $2 GROUP BY 1, 2, 3
     ), tail AS (
       SELECT date_trunc('${bucket}', requested_at, 'UTC') AS bucket, ${col} AS key, outcome, count(*) AS n
         FROM (${classifiedRecords(tailWhere(3))}) c
        GROUP BY 1, 2, 3
     )
     SELECT bucket, key,
            coalesce(sum(n) FILTER (WHERE outcome = 'accepted'), 0) AS accepted,
            coalesce(sum(n) FILTER (WHERE outcome = 'refused'), 0) AS refused
       FROM (SELECT * FROM rolled UNION ALL SELECT * FROM tail) x
      GROUP BY 1, 2 ORDER BY 1, 2`,
    [w.from, w.to, lower],
  );
  const totals = { accepted: 0, refused: 0 };
  const series = rows.map((r) => {
    const accepted = Number(r.accepted);
    const refused = Number(r.refused);
    totals.accepted += accepted;
    totals.refused += refused;
    return { bucket_start: new Date(r.bucket).toISOString(), key: r.key === '' ? null : r.key, accepted, refused };
  });
  return { from: w.from.toISOString(), to: w.to.toISOString(), bucket, group_by: groupBy, series, totals };
}
