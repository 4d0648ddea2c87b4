/**
 * The local telemetry log (table telemetry_log, migration 0008): one row per report, updated
 * by its send attempts. Updates made while sending are guarded by the delivery lease
 * (`claimed_by`), so a process that lost its lease never overwrites another's progress.
 */
import type { Db } from '../../core/db/index.js';
import type { components } from '../../../gen/openapi/telemetry.js';
import { pickPayload, type BeaconPayload, type ReportCounts } from './payload.js';

export type ReportStatus = 'pending' | 'retrying' | 'sent' | 'failed';
export type ReportTrigger = 'schedule' | 'manual';

/** A log entry as the contract shows it. */
export type LogEntry = components['schemas']['TelemetryLogEntry'];

/** What the sender needs of an unfinished entry. */
export interface QueuedEntry {
  id: number;
  attempts: number;
  payload: BeaconPayload;
  next_attempt_at: Date | null;
  error_message: string | null;
}

export type Stats = components['schemas']['TelemetryStats'];

const iso = (d: Date | string) => (d instanceof Date ? d : new Date(d)).toISOString();
const payloadOf = (p: unknown) => pickPayload((typeof p === 'string' ? JSON.parse(p) : p) as Record<string, unknown>);

export interface NewEntry {
  reportDate: string;
  trigger: ReportTrigger;
  payload: BeaconPayload;
  counts: ReportCounts;
  status: 'pending' | 'failed';
  signed: boolean;
  endpoint: string | null;
  errorMessage?: string | null;
  /** Lease holder and expiry (null for an entry nobody sends). */
  claimedBy: string | null;
  claimedUntil: Date | null;
  now: Date;
}

/**
 * Writes a report. A scheduled report for a day that already has one writes nothing and
 * returns null (the partial unique index is the guard, across processes).
 */
export async function insertEntry(db: Db, e: NewEntry): Promise<number | null> {
  const rows = await db.query<{ id: number }>(
    `INSERT INTO telemetry_log (report_date, trigger, reported_at, status, attempts, payload, signed, error_message, endpoint,
                                agent_count, context_request_count, bundle_count, claimed_by, claimed_until, next_attempt_at, created_at, updated_at)
     VALUES ($1::text::date, $2, $3, $4, 0, $5::text::jsonb, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14, $14)
     ON CONFLICT (report_date) WHERE trigger = 'schedule' DO NOTHING
     RETURNING id`,
    [
      e.reportDate,
      e.trigger,
      new Date(e.payload.reported_at),
      e.status,
      JSON.stringify(e.payload),
      e.signed,
      e.errorMessage ?? null,
      e.endpoint,
      e.counts.agent_count,
      e.counts.context_request_count,
      e.counts.bundle_count,
      e.claimedBy,
      e.claimedUntil,
      e.now,
    ],
  );
  return rows[0] ? Number(rows[0].id) : null;
}

export async function scheduledExists(db: Db, reportDate: string): Promise<boolean> {
  const rows = await db.query(`SELECT 1 FROM telemetry_log WHERE trigger = 'schedule' AND report_date = $1::date`, [reportDate]);
  return rows.length > 0;
}

/** Renews the lease before an attempt; false when the lease is no longer ours. */
export async function beginAttempt(db: Db, id: number, owner: string, leaseUntil: Date, signed: boolean, endpoint: string, now: Date): Promise<boolean> {
  const rows = await db.query(
    `UPDATE telemetry_log SET claimed_until = $3, signed = $4, endpoint = $5, updated_at = $6
     WHERE id = $1 AND claimed_by = $2 AND status IN ('pending', 'retrying') RETURNING id`,
    [id, owner, leaseUntil, signed, endpoint, now],
  );
  return rows.length > 0;
}

/** Records an attempt's outcome. `sent` and `failed` end the report and release the lease. */
export async function recordOutcome(
  db: Db,
  id: number,
  owner: string,
  o: { status: ReportStatus; attempts: number; errorMessage: string | null; nextAttemptAt: Date | null; leaseUntil: Date | null; now: Date },
): Promise<boolean> {
  const final = o.status === 'sent' || o.status === 'failed';
  const rows = await db.query(
    `UPDATE telemetry_log
        SET status = $3, attempts = $4, error_message = $5, next_attempt_at = $6,
            claimed_until = $7, claimed_by = CASE WHEN $8::boolean THEN NULL ELSE claimed_by END, updated_at = $9
      WHERE id = $1 AND claimed_by = $2 AND status IN ('pending', 'retrying') RETURNING id`,
    [id, owner, o.status, o.attempts, o.errorMessage, o.nextAttemptAt, final ? null : o.leaseUntil, final, o.now],
  );
  return rows.length > 0;
}

/** Gives up the lease on this owner's unfinished entries (clean shutdown: resumed at next start). */
export async function releaseLeases(db: Db, owner: string, now: Date): Promise<void> {
  await db.query(
    `UPDATE telemetry_log SET claimed_by = NULL, claimed_until = NULL, updated_at = $2
      WHERE claimed_by = $1 AND status IN ('pending', 'retrying')`,
    [owner, now],
  );
}

/** Unfinished entries whose lease is free or ran out (their sender stopped or crashed). */
export async function orphanIds(db: Db, now: Date, limit = 100): Promise<number[]> {
  const rows = await db.query<{ id: number }>(
    `SELECT id FROM telemetry_log
      WHERE status IN ('pending', 'retrying') AND (claimed_until IS NULL OR claimed_until < $1)
      ORDER BY id LIMIT $2`,
    [now, limit],
  );
  return rows.map((r) => Number(r.id));
}

/**
 * Takes the lease on an orphaned entry; null when another process holds it or it ended. The
 * lease covers the wait until the entry's next attempt is due plus `leaseMs`.
 */
export async function claimOrphan(db: Db, id: number, owner: string, leaseMs: number, now: Date): Promise<QueuedEntry | null> {
  const rows = await db.query<{ id: number; attempts: number; payload: unknown; next_attempt_at: Date | null; error_message: string | null }>(
    `UPDATE telemetry_log
        SET claimed_by = $2, claimed_until = GREATEST(COALESCE(next_attempt_at, $4), $4) + $3::float8 * interval '1 millisecond', updated_at = $4
      WHERE id = $1 AND status IN ('pending', 'retrying') AND (claimed_until IS NULL OR claimed_until < $4)
      RETURNING id, attempts, payload, next_attempt_at, error_message`,
    [id, owner, leaseMs, now],
  );
  const r = rows[0];
  if (!r) return null;
  return {
    id: Number(r.id),
    attempts: Number(r.attempts),
    payload: payloadOf(r.payload),
    next_attempt_at: r.next_attempt_at ? new Date(r.next_attempt_at) : null,
    error_message: r.error_message ?? null,
  };
}

const ENTRY_COLUMNS = 'id, reported_at, status, attempts, agent_count, context_request_count, bundle_count, payload, signed, error_message, endpoint';

function toEntry(r: Record<string, any>): LogEntry {
  return {
  id: Number(r.id),
  reported_at: iso(r.reported_at),
  status: r.status,
  attempts: Number(r.attempts),
  agent_count: Number(r.agent_count),
  context_request_count: Number(r.context_request_count),
  bundle_count: Number(r.bundle_count),
  payload: payloadOf(r.payload),
  signed: r.signed,
  error_message: r.error_message ?? null,
  endpoint: r.endpoint ?? null,
};
}

export async function listEntries(db: Db, limit: number, offset: number): Promise<LogEntry[]> {
  const rows = await db.query(
    `SELECT ${ENTRY_COLUMNS} FROM telemetry_log ORDER BY reported_at DESC, id DESC LIMIT $1 OFFSET $2`,
    [limit, offset],
  );
  return rows.map(toEntry);
}

export async function getEntry(db: Db, id: number): Promise<LogEntry | null> {
  const rows = await db.query(
    `SELECT ${ENTRY_COLUMNS} FROM telemetry_log WHERE id = $1`,
    [id],
  );
  return rows[0] ? toEntry(rows[0]) : null;
}

export async function readStats(db: Db): Promise<Stats> {
  const [r] = await db.query(
    `SELECT count(*) FILTER (WHERE status = 'sent')::int8 AS sent,
            count(*) FILTER (WHERE status = 'failed')::int8 AS failed,
            count(*) FILTER (WHERE status IN ('pending', 'retrying'))::int8 AS queued,
            max(reported_at) FILTER (WHERE status = 'sent') AS last_sent
       FROM telemetry_log`,
  );
  return {
    total_reports_sent: Number(r!.sent),
    total_reports_failed: Number(r!.failed),
    last_report_at: r!.last_sent ? iso(r!.last_sent) : null,
    queue_depth: Number(r!.queued),
  };
}
