/**
 * The beacon runtime against a migrated database and a receiver on loopback: payload,
 * signature, retries with backoff, the daily schedule across restarts and processes,
 * resumption of unfinished reports, the disabled mode, and a clean stop.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Beacon, NO_ENDPOINT_MESSAGE } from '../../src/telemetry/beacon/beacon.js';
import { canonicalJson, readCounts } from '../../src/telemetry/beacon/payload.js';
import * as store from '../../src/telemetry/beacon/store.js';
import { openDb, type Db } from '../../src/core/db/index.js';
import type { AppContext } from '../../src/shared/app-context.js';
import { createTestDb, REAL, type TestDb } from '../harness.js';
import { insertAgent, insertBundle, insertContextRequest, makeCtx, settableClock } from './fixtures.js';
import { sha256Hex, startReceiver, type Receiver } from './receiver.js';

const SECRET = 'beacon-signing-secret-for-tests';
const cleanups: Array<() => Promise<void>> = [];
// One database for the file (creating one per test is slow); each test starts with an
// empty telemetry log (emptied through the owner connection: svc_app may not delete) and
// measures registry counts against a baseline.
let tdb: TestDb;
beforeAll(async () => {
  tdb = await createTestDb();
});
afterAll(async () => {
  await tdb?.close();
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await tdb.owner.query('DELETE FROM telemetry_log');
});

interface Setup {
  tdb: TestDb;
  rx: Receiver;
  ctx: AppContext & { lines: string[] };
  clock: ReturnType<typeof settableClock>;
  waits: number[];
  beacon(opts?: ConstructorParameters<typeof Beacon>[1], ctx?: AppContext): Beacon;
}

async function setup(env: Record<string, string | undefined> = {}, start = '2030-01-02T01:00:00.000Z', rxSecret: string | null = SECRET): Promise<Setup> {
  const rx = await startReceiver({ secret: rxSecret });
  cleanups.push(() => rx.close());
  const clock = settableClock(start);
  const ctx = await makeCtx(tdb.db, { TELEMETRY_ENDPOINT: rx.url, TELEMETRY_SIGNING_SECRET: SECRET, TELEMETRY_DAILY_REPORT_HOUR: '2', ...env }, clock);
  cleanups.push(() => ctx.close());
  const waits: number[] = [];
  const sleepImpl = async (ms: number) => void waits.push(ms);
  return {
    tdb,
    rx,
    ctx,
    clock,
    waits,
    beacon(opts = {}, c = ctx) {
      const b = new Beacon(c, { sleepImpl, ...opts });
      cleanups.push(() => b.stop());
      return b;
    },
  };
}

describe('a manual report', () => {
  it('sends exactly the six fields, signed over the canonical body, with counts from the tables', async () => {
    const s = await setup();
    const license = 'eyJhbGciOiJSUzI1NiJ9.not-a-real-license.sig';
    s.ctx.config.licenseKey = license; // verified at start-up elsewhere; here only its hash matters
    const base = await readCounts(s.ctx);
    const a1 = await insertAgent(s.tdb.db);
    await insertAgent(s.tdb.db);
    await insertAgent(s.tdb.db, 'suspended');
    await insertAgent(s.tdb.db, 'revoked');
    await insertContextRequest(s.tdb.db, a1);
    await insertContextRequest(s.tdb.db, a1);
    await insertBundle(s.tdb.db);

    const b = s.beacon();
    const id = await b.trigger();
    await b.idle();
    const [got] = await s.rx.waitFor(1);
    expect(s.rx.received).toHaveLength(1);
    expect(got!.method).toBe('POST');
    expect(got!.headers['content-type']).toBe('application/json');
    expect(got!.signatureValid).toBe(true);
    expect(got!.sixFields).toBe(true);
    expect(got!.json).toEqual({
      deployment_id: s.ctx.config.deploymentId,
      license_key_hash: sha256Hex(license),
      agent_count: base.agent_count + 4,
      active_agent_count: base.active_agent_count + 2,
      reported_at: '2030-01-02T01:00:00.000Z',
      scp_version: '0.3.0',
    });
    // The body is the canonical text itself, and the license key never leaves.
    expect(got!.raw).toBe(canonicalJson(got!.json));
    expect(got!.raw).not.toContain(license);

    const entry = (await store.getEntry(s.tdb.db, id))!;
    expect(entry).toMatchObject({ id, status: 'sent', attempts: 1, signed: true, error_message: null, endpoint: s.rx.url, agent_count: base.agent_count + 4,
      context_request_count: base.context_request_count + 2,
      bundle_count: base.bundle_count + 1,
    });
    expect(entry.reported_at).toBe(got!.json.reported_at);
    // The log keeps the exact payload: same text once serialized.
    expect(JSON.stringify(entry.payload)).toBe(got!.raw);
    expect(await store.readStats(s.tdb.db)).toEqual({ total_reports_sent: 1, total_reports_failed: 0, last_report_at: '2030-01-02T01:00:00.000Z', queue_depth: 0 });
    expect(s.ctx.lines.join('\n')).not.toContain(license);
    expect(s.ctx.lines.join('\n')).not.toContain(SECRET);
  });

  it('is unsigned without a secret', async () => {
    const s = await setup({ TELEMETRY_SIGNING_SECRET: undefined }, undefined, null);
    const b = s.beacon();
    const id = await b.trigger();
    await b.idle();
    const [got] = await s.rx.waitFor(1);
    expect(got!.headers['x-svc-signature']).toBeUndefined();
    expect(got!.sixFields).toBe(true);
    expect(got!.json.license_key_hash).toBeNull();
    expect((await store.getEntry(s.tdb.db, id))!.signed).toBe(false);
  });
});

describe('retries', () => {
  it('retries failures with exponential backoff from the base, then records the success', async () => {
    const s = await setup({ TELEMETRY_RETRY_BACKOFF_BASE: '60', TELEMETRY_RETRY_MAX_ATTEMPTS: '5' });
    s.rx.script.push(503, 500, 429);
    const b = s.beacon();
    const id = await b.trigger();
    await b.idle();
    expect(s.rx.received.map((r) => r.answered)).toEqual([503, 500, 429, 200]);
    expect(s.waits).toEqual([60_000, 120_000, 240_000]);
    // Every attempt carries the same signed body.
    expect(new Set(s.rx.received.map((r) => r.raw)).size).toBe(1);
    expect(s.rx.received.every((r) => r.signatureValid && r.sixFields)).toBe(true);
    expect(await store.getEntry(s.tdb.db, id)).toMatchObject({ status: 'sent', attempts: 4, error_message: null });
  });

  it('gives up after retry_max_attempts and keeps the last error', async () => {
    const s = await setup({ TELEMETRY_RETRY_BACKOFF_BASE: '2', TELEMETRY_RETRY_MAX_ATTEMPTS: '3' });
    s.rx.script.push(500, 500, 502, 500);
    const b = s.beacon();
    const id = await b.trigger();
    await b.idle();
    expect(s.rx.received).toHaveLength(3);
    expect(s.waits).toEqual([2000, 4000]);
    expect(await store.getEntry(s.tdb.db, id)).toMatchObject({ status: 'failed', attempts: 3, error_message: 'HTTP 502 Bad Gateway' });
    expect(await store.readStats(s.tdb.db)).toMatchObject({ total_reports_sent: 0, total_reports_failed: 1, last_report_at: null, queue_depth: 0 });
  });

  it('records a refused connection and a timeout as errors', async () => {
    const s = await setup({ TELEMETRY_RETRY_MAX_ATTEMPTS: '1' });
    const closedUrl = s.rx.url;
    await s.rx.close();
    const b = s.beacon();
    const id = await b.trigger();
    await b.idle();
    expect((await store.getEntry(s.tdb.db, id))!.error_message).toMatch(/^Network error: ECONNREFUSED/);

    const rx2 = await startReceiver({ secret: SECRET });
    cleanups.push(() => rx2.close());
    rx2.hang = true;
    s.ctx.config.telemetry.endpoint = rx2.url;
    const b2 = s.beacon({ requestTimeoutMs: 200 });
    const id2 = await b2.trigger();
    await b2.idle();
    expect(rx2.received).toHaveLength(1);
    expect(await store.getEntry(s.tdb.db, id2)).toMatchObject({ status: 'failed', attempts: 1, error_message: 'Timed out after 200 ms', endpoint: rx2.url });
    expect(closedUrl).not.toBe(rx2.url);
  });

  it('does not follow redirects', async () => {
    const s = await setup({ TELEMETRY_RETRY_MAX_ATTEMPTS: '1' });
    s.rx.script.push(307);
    const b = s.beacon();
    const id = await b.trigger();
    await b.idle();
    expect(s.rx.received).toHaveLength(1);
    expect(await store.getEntry(s.tdb.db, id)).toMatchObject({ status: 'failed', error_message: 'HTTP 307: redirects are not followed' });
  });
});

describe('the daily schedule', () => {
  it('sends one report a day at daily_report_hour, and a restart does not send it again', async () => {
    const s = await setup();
    const b = s.beacon();
    await b.start(); // 01:00, report hour 02:00: nothing yet
    expect(await b.tick()).toBeNull();
    s.clock.set('2030-01-02T02:00:00.000Z');
    const id = await b.tick();
    expect(id).not.toBeNull();
    await b.idle();
    expect(s.rx.received).toHaveLength(1);
    expect(s.rx.received[0]!.json.reported_at).toBe('2030-01-02T02:00:00.000Z');
    s.clock.set('2030-01-02T09:30:00.000Z');
    expect(await b.tick()).toBeNull();
    await b.stop();

    // A restart the same day (a new process: another lease owner) sends nothing.
    const again = s.beacon();
    await again.start();
    await again.idle();
    expect(s.rx.received).toHaveLength(1);
    // The next day at the hour, exactly one more.
    s.clock.set('2030-01-03T02:00:01.000Z');
    expect(await again.tick()).not.toBeNull();
    await again.idle();
    expect(s.rx.received).toHaveLength(2);
    const log = await store.listEntries(s.tdb.db, 50, 0);
    expect(log.map((e) => e.reported_at)).toEqual(['2030-01-03T02:00:01.000Z', '2030-01-02T02:00:00.000Z']);
  });

  it('catches up a missed report when started after the hour', async () => {
    const s = await setup({}, '2030-01-02T17:45:00.000Z');
    const b = s.beacon();
    await b.start();
    await b.idle();
    expect(s.rx.received).toHaveLength(1);
    expect(s.rx.received[0]!.json.reported_at).toBe('2030-01-02T17:45:00.000Z');
  });

  it('several processes at once send the day’s report exactly once (the unique index decides)', async () => {
    const s = await setup({}, '2030-01-02T03:00:00.000Z');
    // On PostgreSQL each "process" gets its own connection pool and context.
    const dbs: Db[] = [s.tdb.db];
    if (REAL) {
      for (let i = 0; i < 3; i++) {
        const db = await openDb({ url: s.tdb.ownerUrl!, max: 2 });
        dbs.push(db);
        cleanups.push(() => db.close());
      }
    }
    const beacons: Beacon[] = [];
    for (let i = 0; i < 4; i++) {
      const db = dbs[i % dbs.length]!;
      beacons.push(s.beacon({}, { ...s.ctx, db }));
    }
    const ids = await Promise.all(beacons.map((b) => b.tick()));
    await Promise.all(beacons.map((b) => b.idle()));
    expect(ids.filter((x) => x !== null)).toHaveLength(1);
    expect(s.rx.received).toHaveLength(1);
    const rows = await s.tdb.db.query(`SELECT count(*)::int AS n FROM telemetry_log WHERE trigger = 'schedule'`);
    expect(rows[0]!.n).toBe(1);
  });

  it('manual triggers are not limited to one a day and do not consume the scheduled report', async () => {
    const s = await setup({}, '2030-01-02T05:00:00.000Z');
    const b = s.beacon();
    await b.trigger();
    await b.trigger();
    expect(await b.tick()).not.toBeNull();
    await b.idle();
    expect(s.rx.received).toHaveLength(3);
  });
});

describe('unfinished reports', () => {
  it('a clean stop mid-retry leaves no timer; the next start resumes the report where it stopped', async () => {
    const s = await setup({ TELEMETRY_RETRY_BACKOFF_BASE: '60' });
    s.rx.script.push(503);
    // Real waits here: the 60 s backoff is still running when the process stops.
    const a = new Beacon(s.ctx, { owner: 'process-a' });
    cleanups.push(() => a.stop());
    const id = await a.trigger();
    await s.rx.waitFor(1);
    await vi.waitUntil(async () => (await store.getEntry(s.tdb.db, id))!.status === 'retrying', { timeout: 10_000 });
    await a.stop();
    await a.idle();
    const stopped = (await s.tdb.db.query(`SELECT claimed_by, claimed_until, attempts, next_attempt_at FROM telemetry_log WHERE id = $1`, [id]))[0]!;
    expect(stopped).toMatchObject({ claimed_by: null, claimed_until: null, attempts: 1 });
    expect(new Date(stopped.next_attempt_at).toISOString()).toBe('2030-01-02T01:01:00.000Z');
    expect(await store.readStats(s.tdb.db)).toMatchObject({ queue_depth: 1 });

    // The next process starts once the backoff has elapsed and sends attempt 2.
    s.clock.set('2030-01-02T01:01:00.000Z');
    const b = s.beacon();
    await b.start();
    await b.idle();
    expect(s.rx.received).toHaveLength(2);
    expect(s.rx.received[1]!.raw).toBe(s.rx.received[0]!.raw);
    expect(await store.getEntry(s.tdb.db, id)).toMatchObject({ status: 'sent', attempts: 2 });
    expect(await store.readStats(s.tdb.db)).toMatchObject({ queue_depth: 0, total_reports_sent: 1 });
  });

  it('a crashed process’s report is resumed only after its lease ran out', async () => {
    const s = await setup({}, '2030-01-02T01:00:00.000Z');
    // Its send never answers (until the test ends and aborts it).
    const hangingFetch = (_u: unknown, init?: RequestInit) =>
      new Promise<Response>((_, reject) => init!.signal!.addEventListener('abort', () => reject(new Error('aborted'))));
    const crashed = new Beacon(s.ctx, { owner: 'crashed', fetchImpl: hangingFetch as typeof fetch });
    // Written, claimed, and never finished: the process "dies" during the send.
    const id = await crashed.trigger();
    const b = s.beacon();
    await b.start();
    expect(s.rx.received).toHaveLength(0); // lease still held
    s.clock.advance(10 * 60_000);
    await b.tick();
    await b.idle();
    expect(s.rx.received).toHaveLength(1);
    expect(await store.getEntry(s.tdb.db, id)).toMatchObject({ status: 'sent', attempts: 1 });
    // The dead process's late write cannot overwrite the result: it no longer holds the lease.
    expect(await store.recordOutcome(s.tdb.db, id, 'crashed', { status: 'failed', attempts: 9, errorMessage: 'late', nextAttemptAt: null, leaseUntil: null, now: s.clock.now() })).toBe(false);
    await crashed.stop();
  });
});

describe('disabled (no endpoint)', () => {
  it('schedules nothing, says so, and a trigger still logs what would have been sent', async () => {
    const s = await setup({ TELEMETRY_ENDPOINT: undefined }, '2030-01-02T12:00:00.000Z');
    const b = s.beacon();
    await b.start();
    expect(b.configView()).toMatchObject({ enabled: false, endpoint: null, signing_enabled: true, daily_report_hour: 2, retry_max_attempts: 5, retry_backoff_base: 60 });
    expect((b as any).timer).toBeNull();
    const id = await b.trigger();
    await b.idle();
    expect(s.rx.received).toHaveLength(0);
    const entry = (await store.getEntry(s.tdb.db, id))!;
    expect(entry).toMatchObject({ status: 'failed', attempts: 0, signed: false, endpoint: null, error_message: NO_ENDPOINT_MESSAGE });
    expect(Object.keys(entry.payload).sort()).toEqual(['active_agent_count', 'agent_count', 'deployment_id', 'license_key_hash', 'reported_at', 'scp_version']);
    expect(s.ctx.lines.some((l) => l.includes('telemetry disabled'))).toBe(true);
  });
});

describe('stop', () => {
  it('clears the schedule timer and is idempotent', async () => {
    const s = await setup();
    const b = s.beacon();
    await b.start();
    expect((b as any).timer).not.toBeNull();
    await Promise.all([b.stop(), b.stop()]);
    expect((b as any).timer).toBeNull();
    expect(await b.tick()).toBeNull();
    expect((b as any).timer).toBeNull();
  });
});
