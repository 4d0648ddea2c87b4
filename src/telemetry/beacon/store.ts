/**
 * The local telemetry log (table telemetry_log, migration 0008): one row per report, updated
 * by its send attempts. Updates made while sending are guarded by the delivery lease
 * (`claimed_by`), so a process that lost its lease never overwrites another's progress.
 */
import { and, asc, desc, eq, inArray, isNull, lt, or, sql } from 'drizzle-orm';
import type { Db } from '../../core/db/index.js';
import { telemetryLog } from '../../core/db/schema/index.js';
import type { components } from '../../../gen/openapi/telemetry.js';
import { pickPayload, type BeaconPayload, type ReportCounts } from './payload.js';

export type ReportStatus = 'pending' | 'retrying' | 'sent' | 'failed';
type ReportTrigger = 'schedule' | 'manual';

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

/** A report still to be sent (the only ones a sender may change). */
const unfinished = inArray(telemetryLog.status, ['pending', 'retrying']);
/** Nobody holds the delivery lease, or it ran out. */
const leaseFree = (now: Date) => or(isNull(telemetryLog.claimed_until), lt(telemetryLog.claimed_until, now));

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
  const rows = await db.orm
    .insert(telemetryLog)
    .values({
      report_date: e.reportDate,
      trigger: e.trigger,
      reported_at: new Date(e.payload.reported_at),
      status: e.status,
      attempts: 0,
      payload: e.payload as unknown as Record<string, unknown>,
      signed: e.signed,
      error_message: e.errorMessage ?? null,
      endpoint: e.endpoint,
      agent_count: e.counts.agent_count,
      context_request_count: e.counts.context_request_count,
      bundle_count: e.counts.bundle_count,
      claimed_by: e.claimedBy,
      claimed_until: e.claimedUntil,
      next_attempt_at: e.now,
      created_at: e.now,
      updated_at: e.now,
    })
    // The partial unique index's predicate, written as a literal: PostgreSQL infers the
    // arbiter index from it, which a parameter would not allow.
    .onConflictDoNothing({ target: telemetryLog.report_date, where: sql`trigger = 'schedule'` })
    .returning({ id: telemetryLog.id });
  return rows[0] ? rows[0].id : null;
}

export async function scheduledExists(db: Db, reportDate: string): Promise<boolean> {
  const rows = await db.orm
    .select({ id: telemetryLog.id })
    .from(telemetryLog)
    .where(and(eq(telemetryLog.trigger, 'schedule'), eq(telemetryLog.report_date, reportDate)));
  return rows.length > 0;
}

/** Renews the lease before an attempt; false when the lease is no longer ours. */
export async function beginAttempt(db: Db, id: number, owner: string, leaseUntil: Date, signed: boolean, endpoint: string, now: Date): Promise<boolean> {
  const rows = await db.orm
    .update(telemetryLog)
    .set({ claimed_until: leaseUntil, signed, endpoint, updated_at: now })
    .where(and(eq(telemetryLog.id, id), eq(telemetryLog.claimed_by, owner), unfinished))
    .returning({ id: telemetryLog.id });
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
  const rows = await db.orm
    .update(telemetryLog)
    .set({
      status: o.status,
      attempts: o.attempts,
      error_message: o.errorMessage,
      next_attempt_at: o.nextAttemptAt,
      claimed_until: final ? null : o.leaseUntil,
      // The guard below already requires claimed_by = owner: a final outcome releases it.
      ...(final && { claimed_by: null }),
      updated_at: o.now,
    })
    .where(and(eq(telemetryLog.id, id), eq(telemetryLog.claimed_by, owner), unfinished))
    .returning({ id: telemetryLog.id });
  return rows.length > 0;
}

/** Gives up the lease on this owner's unfinished entries (clean shutdown: resumed at next start). */
export async function releaseLeases(db: Db, owner: string, now: Date): Promise<void> {
  await db.orm
    .update(telemetryLog)
    .set({ claimed_by: null, claimed_until: null, updated_at: now })
    .where(and(eq(telemetryLog.claimed_by, owner), unfinished));
}

/** Unfinished entries whose lease is free or ran out (their sender stopped or crashed). */
export async function orphanIds(db: Db, now: Date, limit = 100): Promise<number[]> {
  const rows = await db.orm
    .select({ id: telemetryLog.id })
    .from(telemetryLog)
    .where(and(unfinished, leaseFree(now)))
    .orderBy(asc(telemetryLog.id))
    .limit(limit);
  return rows.map((r) => r.id);
}

/**
 * Takes the lease on an orphaned entry; null when another process holds it or it ended. The
 * lease covers the wait until the entry's next attempt is due plus `leaseMs`.
 */
export async function claimOrphan(db: Db, id: number, owner: string, leaseMs: number, now: Date): Promise<QueuedEntry | null> {
  const rows = await db.orm
    .update(telemetryLog)
    .set({
      claimed_by: owner,
      claimed_until: sql`GREATEST(COALESCE(${telemetryLog.next_attempt_at}, ${now}), ${now}) + ${leaseMs}::float8 * interval '1 millisecond'`,
      updated_at: now,
    })
    .where(and(eq(telemetryLog.id, id), unfinished, leaseFree(now)))
    .returning({
      id: telemetryLog.id,
      attempts: telemetryLog.attempts,
      payload: telemetryLog.payload,
      next_attempt_at: telemetryLog.next_attempt_at,
      error_message: telemetryLog.error_message,
    });
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

const ENTRY_COLUMNS = {
  id: telemetryLog.id,
  reported_at: telemetryLog.reported_at,
  status: telemetryLog.status,
  attempts: telemetryLog.attempts,
  agent_count: telemetryLog.agent_count,
  context_request_count: telemetryLog.context_request_count,
  bundle_count: telemetryLog.bundle_count,
  payload: telemetryLog.payload,
  signed: telemetryLog.signed,
  error_message: telemetryLog.error_message,
  endpoint: telemetryLog.endpoint,
};

function toEntry(r: Pick<typeof telemetryLog.$inferSelect, keyof typeof ENTRY_COLUMNS>): LogEntry {
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
  const rows = await db.orm.select(ENTRY_COLUMNS).from(telemetryLog).orderBy(desc(telemetryLog.reported_at), desc(telemetryLog.id)).limit(limit).offset(offset);
  return rows.map(toEntry);
}

export async function getEntry(db: Db, id: number): Promise<LogEntry | null> {
  const rows = await db.orm.select(ENTRY_COLUMNS).from(telemetryLog).where(eq(telemetryLog.id, id));
  return rows[0] ? toEntry(rows[0]) : null;
}

export async function readStats(db: Db): Promise<Stats> {
  const [r] = await db.orm
    .select({
      sent: sql<number>`count(*) FILTER (WHERE ${telemetryLog.status} = 'sent')`.mapWith(Number),
      failed: sql<number>`count(*) FILTER (WHERE ${telemetryLog.status} = 'failed')`.mapWith(Number),
      queued: sql<number>`count(*) FILTER (WHERE ${unfinished})`.mapWith(Number),
      last_sent: sql<Date | null>`max(${telemetryLog.reported_at}) FILTER (WHERE ${telemetryLog.status} = 'sent')`.mapWith(telemetryLog.reported_at),
    })
    .from(telemetryLog);
  return {
    total_reports_sent: Number(r!.sent),
    total_reports_failed: Number(r!.failed),
    last_report_at: r!.last_sent ? iso(r!.last_sent) : null,
    queue_depth: Number(r!.queued),
  };
}
