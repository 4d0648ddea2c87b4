/**
 * The analytics rollups (migration 0016): context requests counted by UTC hour and UTC day,
 * per agent, role, task type, outcome and reason, kept up to date from the audit log by a
 * background job of the API service, never by the writer (the hot path is untouched).
 *
 * Invariants:
 * - Records with chain_sequence <= the watermark are counted in every rollup (hourly, daily,
 *   and hourly by agent alone) exactly once;
 *   those above it are not counted at all. A run adds the next records above the watermark
 *   (at most `maxRecords`) and moves the watermark past them in ONE statement (data-modifying
 *   CTEs), in one transaction holding a transaction-level advisory lock: runs of several
 *   processes serialize, and each sees the watermark the previous one committed.
 * - A watermark on chain_sequence is safe: svc_audit_append assigns sequences under the
 *   chain's transaction-level lock, so once a sequence is visible every lower one is too.
 * - The role is not in the record: it is the agent's role when the record is rolled up (or,
 *   for records above the watermark, when the query runs).
 */
import type { AppContext } from '../../shared/app-context.js';
import type { Db } from '../db/index.js';

/** The advisory lock key that serializes rollup runs (the chain's is 7340100). */
const ROLLUP_LOCK = 7340240;
/** Most records one run rolls up (one transaction). */
const MAX_RECORDS_PER_RUN = 200_000;
/** Longest task type kept in a rollup row (the contract's TaskType). */
const TASK_TYPE_MAX = 128;

/**
 * The AUTH_FAILED messages of src/core/keys/verify-key.ts (KEY_REASONS) and their reason.
 * Matched in SQL, so that the rollup needs no code of its own per record.
 */
const AUTH_REASONS_SQL = `CASE
      WHEN r.validation_errors->>'error_message' = 'API key missing' THEN 'missing_key'
      WHEN r.validation_errors->>'error_message' = 'Invalid API key' THEN 'unknown_key'
      WHEN r.validation_errors->>'error_message' = 'API key revoked' THEN 'revoked_key'
      WHEN r.validation_errors->>'error_message' = 'API key expired' THEN 'expired_key'
      WHEN r.validation_errors->>'error_message' = 'Agent revoked' THEN 'agent_revoked'
      WHEN r.validation_errors->>'error_message' LIKE 'Agent suspended%' THEN 'agent_suspended'
      ELSE 'auth_other' END`;

/**
 * The classified records of `agent_context_requests r` matching `where` (SQL over `r`): the
 * columns of a rollup row before grouping. An accepted record has no validation_errors.
 */
export function classifiedRecords(where: string): string {
  return `SELECT r.chain_sequence, r.requested_at,
         coalesce(r.agent_id, '') AS agent_id,
         coalesce(a.role_id, '') AS role_id,
         left(r.task_type, ${TASK_TYPE_MAX}) AS task_type,
         CASE WHEN r.validation_errors IS NULL OR jsonb_typeof(r.validation_errors) = 'null' THEN 'accepted' ELSE 'refused' END AS outcome,
         CASE WHEN r.validation_errors IS NULL OR jsonb_typeof(r.validation_errors) = 'null' THEN ''
              WHEN r.validation_errors->>'error_code' = 'AUTH_FAILED' THEN ${AUTH_REASONS_SQL}
              ELSE left(lower(coalesce(r.validation_errors->>'error_code', 'unknown')), 64) END AS reason
    FROM agent_context_requests r LEFT JOIN agents a ON a.agent_id = r.agent_id
   WHERE ${where}`;
}

const upsert = (table: string, unit: 'hour' | 'day') => `INSERT INTO ${table} (bucket, agent_id, role_id, task_type, outcome, reason, count, last_at)
    SELECT date_trunc('${unit}', requested_at, 'UTC'), agent_id, role_id, task_type, outcome, reason, count(*), max(requested_at)
      FROM src GROUP BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (bucket, agent_id, role_id, task_type, outcome, reason)
    DO UPDATE SET count = ${table}.count + EXCLUDED.count, last_at = greatest(${table}.last_at, EXCLUDED.last_at)`;

/** The one statement of a run: $1 = most records, $2 = now. */
const ROLLUP_SQL = `WITH src AS MATERIALIZED (
    ${classifiedRecords(`r.chain_sequence > (SELECT last_sequence FROM analytics_watermark) ORDER BY r.chain_sequence LIMIT $1`)}
  ),
  h AS (${upsert('analytics_hourly', 'hour')}),
  d AS (${upsert('analytics_daily', 'day')}),
  ha AS (INSERT INTO analytics_hourly_agents (bucket, agent_id, outcome, count)
    SELECT date_trunc('hour', requested_at, 'UTC'), agent_id, outcome, count(*) FROM src GROUP BY 1, 2, 3
    ON CONFLICT (bucket, agent_id, outcome) DO UPDATE SET count = analytics_hourly_agents.count + EXCLUDED.count)
  UPDATE analytics_watermark SET last_sequence = s.last, updated_at = $2
    FROM (SELECT max(chain_sequence) AS last, count(*) AS n FROM src) s
   WHERE s.n > 0
  RETURNING s.n AS rolled, s.last AS watermark`;

export interface RollupRun {
  /** Records rolled up by this run. */
  rolled: number;
  /** The watermark after the run. */
  watermark: number;
}

/** One run: rolls up at most `maxRecords` records above the watermark. */
export async function rollUpOnce(ctx: Pick<AppContext, 'db' | 'clock'>, maxRecords = MAX_RECORDS_PER_RUN): Promise<RollupRun> {
  return ctx.db.tx(async (t: Db) => {
    await t.query('SELECT pg_advisory_xact_lock($1)', [ROLLUP_LOCK]);
    const [row] = await t.query<{ rolled: number | string; watermark: number | string }>(ROLLUP_SQL, [maxRecords, ctx.clock.now()]);
    if (row) return { rolled: Number(row.rolled), watermark: Number(row.watermark) };
    const [w] = await t.query<{ last_sequence: number | string }>('SELECT last_sequence FROM analytics_watermark');
    return { rolled: 0, watermark: Number(w?.last_sequence ?? 0) };
  });
}

/** Runs until the records above the watermark are at most `upTo`; returns the records rolled up. */
export async function rollUp(ctx: Pick<AppContext, 'db' | 'clock'>, upTo = 0, maxRecords = MAX_RECORDS_PER_RUN): Promise<number> {
  let total = 0;
  for (;;) {
    const r = await rollUpOnce(ctx, maxRecords);
    total += r.rolled;
    if (r.rolled < maxRecords) return total;
    if ((await pendingRecords(ctx.db)) <= upTo) return total;
  }
}

/** The watermark and the records above it (from the chain's tip: no scan). */
export async function watermarkState(db: Db): Promise<{ watermark: number; pending: number }> {
  const [row] = await db.query<{ w: number | string; n: number | string | null }>(
    `SELECT w.last_sequence AS w, greatest(0, coalesce((SELECT max(chain_sequence) FROM agent_context_requests), 0) - w.last_sequence) AS n FROM analytics_watermark w`,
  );
  return { watermark: Number(row?.w ?? 0), pending: Number(row?.n ?? 0) };
}

/** Records above the watermark. */
export async function pendingRecords(db: Db): Promise<number> {
  return (await watermarkState(db)).pending;
}

/**
 * Starts the periodic rollup (every ANALYTICS_ROLLUP_INTERVAL_SECONDS, default 1, and once at
 * start); the returned function stops it and waits for a run in flight. Every second rather
 * than every 5: under W1 a run for 5 s of records held one of two cores for 87-156 ms at once
 * (PostgreSQL's log), and in three alternated pairs of the context benchmark (2026-11-28) W1's
 * p99 was lower with 1 s in five of six (REST 32.5, 31.8, 41.4 ms against 38.4, 37.8, 37.9;
 * gRPC 33.9, 29.5, 29.7 against 37.6, 33.0, 35.4), W2's in two of three. A run with nothing to
 * add is one index probe.
 */
export function startRollupJob(ctx: AppContext): () => Promise<void> {
  const intervalMs = ctx.config.analyticsRollupIntervalSeconds * 1000;
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  let busy = false;
  const run = () => {
    if (stopped || busy) return;
    busy = true;
    running = rollUp(ctx)
      .then((n) => {
        if (n) ctx.logger.debug('analytics rollup', { rolled: n });
      })
      .catch((e) => ctx.logger.warn('analytics rollup failed; the next run retries', { error: e as Error }))
      .finally(() => {
        busy = false;
      });
  };
  run();
  const timer = setInterval(run, intervalMs);
  timer.unref();
  return async () => {
    stopped = true;
    clearInterval(timer);
    await running;
  };
}
