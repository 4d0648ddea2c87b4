/**
 * Analytics figures (issue 24): GET /api/analytics/usage and /adherence answer from rollups,
 * p95 under 200 ms at 10,000,000 audit records.
 *
 * - Fill: 10,000,000 records (BENCH_ANALYTICS_RECORDS; 200,000 on PGlite, labelled) of 200
 *   agents in 5 roles, 6 task types, 75% accepted, the rest intent refused, revoked key,
 *   unknown key (no agent) and validation error, evenly over the last 30 days, generated
 *   with generate_series straight into agent_context_requests as the table's owner (the
 *   immutability triggers forbid UPDATE, DELETE and TRUNCATE, not INSERT). The hash columns
 *   hold placeholders: analytics never reads them, and nothing here verifies the chain.
 * - Rollup: every record rolled up by the job's verb (as the app role), records/s.
 * - Queries, through the verbs the routes call (in process: a server would first integrate
 *   the 10M leaves into the transparency log): p50/p95 of usage by hour over 2 days and by
 *   day over 30 days for each group_by, and adherence over 30 days; then the same with
 *   50,000 records above the watermark (counted from the log on each query).
 */
import type { Bench } from './run.js';
import { fmt } from './load-gen.js';
import { createTestDb, testEnv } from '../test/harness.js';
import { createAppContext } from '../src/shared/app-context.js';
import { loadConfig } from '../src/shared/config.js';
import { createMemoryBroker } from '../src/shared/broker.js';
import { memoryLogger } from '../src/shared/logger.js';
import { rollUp } from '../src/core/analytics/rollup.js';
import { usageAnalytics } from '../src/core/analytics/usage.js';
import { adherenceAnalytics } from '../src/core/analytics/adherence.js';

const DAY = 86_400_000;
/** Timed calls per figure (after one warm-up call). */
const BENCH_RUNS = Number(process.env.BENCH_ANALYTICS_RUNS ?? 20);
const TASKS = ['triage', 'medication_review', 'code_review', 'summarize', 'deploy_prod', 'lookup'];

/** Inserts records (first..last] with requested_at spread evenly over [t0, t0 + spanMs). */
function fillSql(first: number, last: number, total: number, t0: number, spanMs: number): string {
  return `INSERT INTO agent_context_requests (request_id, agent_id, task_type, intent_valid, validation_errors, requested_at, chain_sequence, previous_hash, record_hash, content_hash, leaf_index)
    SELECT 'bench-' || g,
           CASE WHEN g % 20 = 18 THEN NULL ELSE 'agent:an-' || ((g * 7919) % 200) END,
           (ARRAY['${TASKS.join("','")}'])[1 + (g / 7) % ${TASKS.length}],
           g % 20 < 15 OR g % 20 = 19,
           CASE g % 20
             WHEN 15 THEN '{"error_code":"INTENT_NOT_ALLOWED","error_message":"Task type is not among the agent''s allowed intents"}'::jsonb
             WHEN 16 THEN '{"error_code":"INTENT_NOT_ALLOWED","error_message":"Task type is not among the agent''s allowed intents"}'::jsonb
             WHEN 17 THEN '{"error_code":"AUTH_FAILED","error_message":"API key revoked"}'::jsonb
             WHEN 18 THEN '{"error_code":"AUTH_FAILED","error_message":"Invalid API key"}'::jsonb
             WHEN 19 THEN '{"error_code":"VALIDATION_ERROR","error_message":"The request body is invalid"}'::jsonb
           END,
           to_timestamp(${t0 / 1000}) + ((g - 1)::float8 * ${spanMs} / ${total}) * interval '1 millisecond',
           g, 'bench', 'bench', 'bench', g - 1
      FROM generate_series(${first + 1}::bigint, ${last}::bigint) g`;
}

type Timed = { p50: number; p95: number };
async function timed(n: number, f: () => Promise<unknown>): Promise<Timed> {
  await f(); // warm
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await f();
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  return { p50: ms[Math.floor(ms.length / 2)]!, p95: ms[Math.min(ms.length - 1, Math.floor(0.95 * ms.length))]! };
}

export default async function analyticsBench(b: Bench): Promise<void> {
  const n = b.real ? Number(process.env.BENCH_ANALYTICS_RECORDS ?? 10_000_000) : 200_000;
  const db = b.real ? 'PostgreSQL' : 'PGlite';
  const t = await createTestDb();
  const env = testEnv({ LOG_LEVEL: 'error' });
  const ctx = await createAppContext(loadConfig(env), { logger: memoryLogger('error'), db: t.db, broker: createMemoryBroker(), skipMigrations: true });
  try {
    const now = Date.now();
    const t0 = now - 30 * DAY;
    const l0 = performance.now();
    await t.owner.query(
      `INSERT INTO agents (agent_id, name, role_id, created_by, allowed_intents)
       SELECT 'agent:an-' || i, 'bench ' || i, 'role:r' || (i % 5), 'bench', '["triage"]'::jsonb FROM generate_series(0, 199) i`,
    );
    const chunk = 1_000_000;
    for (let first = 0; first < n; first += chunk) await t.owner.query(fillSql(first, Math.min(n, first + chunk), n, t0, 30 * DAY - 60_000));
    await t.owner.query('ANALYZE agent_context_requests');
    b.print(`${fmt(n / ((performance.now() - l0) / 1000))} records/s | fill with generate_series as owner (set-up, not a target) | ${n} records | ${db}`);

    const r0 = performance.now();
    const rolled = await rollUp(ctx);
    const rs = (performance.now() - r0) / 1000;
    b.print(`${fmt(rolled / rs)} records/s (${rs.toFixed(1)} s) | rollup of every record, 200k per transaction | ${n} records | ${db}`);
    await t.owner.query('ANALYZE analytics_hourly');
    await t.owner.query('ANALYZE analytics_daily');
    await t.owner.query('ANALYZE analytics_hourly_agents');
    const [sizes] = await t.db.query<{ h: string; d: string }>('SELECT (SELECT count(*) FROM analytics_hourly) AS h, (SELECT count(*) FROM analytics_daily) AS d');
    b.print(`${sizes!.h} hourly rows, ${sizes!.d} daily rows | rollup size | ${n} records | ${db}`);

    const iso = (ms: number) => new Date(ms).toISOString();
    const measure = async (label: string) => {
      for (const group_by of ['agent', 'role', 'task_type', 'outcome'] as const) {
        const h = await timed(BENCH_RUNS, () => usageAnalytics(ctx, { from: iso(now - 2 * DAY), to: iso(now), bucket: 'hour', group_by }));
        b.print(`p50 ${fmt(h.p50, 1)} ms, p95 ${fmt(h.p95, 1)} ms | usage bucket=hour, 2 days, group_by=${group_by}${label} (target p95 < 200 ms) | ${n} records | ${db}`);
        const d = await timed(BENCH_RUNS, () => usageAnalytics(ctx, { from: iso(now - 30 * DAY), to: iso(now), bucket: 'day', group_by }));
        b.print(`p50 ${fmt(d.p50, 1)} ms, p95 ${fmt(d.p95, 1)} ms | usage bucket=day, 30 days, group_by=${group_by}${label} (target p95 < 200 ms) | ${n} records | ${db}`);
      }
      const a = await timed(BENCH_RUNS, () => adherenceAnalytics(ctx, { from: iso(now - 30 * DAY), to: iso(now) }));
      b.print(`p50 ${fmt(a.p50, 1)} ms, p95 ${fmt(a.p95, 1)} ms | adherence, 30 days${label} (target p95 < 200 ms) | ${n} records | ${db}`);
    };
    await measure('');
    // A tail of 50,000 records above the watermark, in the last hour.
    const tail = 50_000;
    await t.owner.query(fillSql(n, n + tail, tail, now - 3_600_000, 3_000_000));
    await measure(`, ${tail} records above the watermark`);
  } finally {
    await ctx.close();
    await t.close();
  }
}
