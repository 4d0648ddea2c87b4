/**
 * The telemetry service end to end (port 0): the real server, a receiver on loopback that
 * checks every beacon (signature over the raw body, exactly six fields) and answers failures
 * to exercise the retries; /stats and /log must agree with what the receiver saw; a restart
 * must not send the day's report again. Every response is validated against the contract.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDb, startTestStack, type TestDb, type TestStack } from '../harness.js';
import { loadOperations, type LoadedOp } from '../contract/operations.js';
import { settableClock } from './fixtures.js';
import { makeLicense, sha256Hex, SIX_FIELDS, startReceiver, type Receiver } from './receiver.js';

const SECRET = `tsig_${randomUUID()}`;
const DEPLOYMENT_ID = randomUUID();
// 05:00 UTC with the report hour at 02:00: the day's report is due when the service starts.
const clock = settableClock('2030-01-02T05:00:00.000Z');

let ops: Map<string, LoadedOp>;
let rx: Receiver;
let tdb: TestDb;
let t: TestStack;
let env: Record<string, string>;
let licenseKey: string;

/** Calls the service and checks the response against the operation's declared responses. */
async function call(stack: TestStack, opId: string, method: string, p: string, admin = true) {
  const r = await stack.call('telemetry', method, p, { admin });
  const op = ops.get(opId)!;
  const v = op.api.validateResponse(r.body, op.op, r.status);
  expect(v.errors ?? null, `${opId} ${r.status} ${JSON.stringify(r.body)}`).toBeNull();
  expect(Object.keys((op.op.responses ?? {}) as object)).toContain(String(r.status));
  return r;
}

async function logEntry(stack: TestStack, id: number) {
  const r = await call(stack, 'listTelemetryLog', 'GET', '/log?limit=500');
  return (r.body as any[]).find((e) => e.id === id);
}

beforeAll(async () => {
  ops = new Map((await loadOperations()).filter((o) => o.service === 'telemetry').map((o) => [o.id, o]));
  rx = await startReceiver({ secret: SECRET });
  tdb = await createTestDb();
  const lic = await makeLicense(DEPLOYMENT_ID, clock.now());
  licenseKey = lic.licenseKey;
  env = {
    DEPLOYMENT_ID,
    LICENSE_KEY: lic.licenseKey,
    LICENSE_PUBLIC_KEY: lic.publicKeyPem,
    TELEMETRY_ENDPOINT: rx.url,
    TELEMETRY_SIGNING_SECRET: SECRET,
    TELEMETRY_RETRY_BACKOFF_BASE: '0',
    TELEMETRY_DAILY_REPORT_HOUR: '2',
  };
  t = await startTestStack({ services: ['telemetry'], env, clock, testDb: tdb });
});
afterAll(async () => {
  await t?.close();
  await tdb?.close();
  await rx?.close();
});


/** Every admin-gated telemetry route (opId, method, path), shared by the auth tests below. */
const ADMIN_ROUTES = [
  ['getTelemetryConfig', 'GET', '/config'],
  ['getTelemetryStats', 'GET', '/stats'],
  ['listTelemetryLog', 'GET', '/log'],
  ['listTelemetryInspectionLog', 'GET', '/telemetry/log'],
  ['triggerTelemetryReport', 'POST', '/trigger'],
] as const;

describe('telemetry service', () => {
  it('answers health without a key', async () => {
    const r = await call(t, 'getTelemetryHealth', 'GET', '/health', false);
    expect(r.body).toEqual({ status: 'ok', service: 'telemetry', version: '0.3.0' });
  });

  it('shows its configuration, never the secret', async () => {
    const r = await call(t, 'getTelemetryConfig', 'GET', '/config');
    expect(r.body).toEqual({
      enabled: true,
      endpoint: rx.url,
      deployment_id: DEPLOYMENT_ID,
      daily_report_hour: 2,
      retry_max_attempts: 5,
      retry_backoff_base: 0,
      signing_enabled: true,
    });
    expect(JSON.stringify(r.body)).not.toContain(SECRET);
  });

  it('sent the day’s scheduled report at start: six fields, signed, hash of the license key', async () => {
    const [got] = await rx.waitFor(1);
    expect(got!.signatureValid).toBe(true);
    expect(got!.sixFields).toBe(true);
    expect(Object.keys(got!.json).sort()).toEqual(SIX_FIELDS);
    expect(got!.json).toMatchObject({ deployment_id: DEPLOYMENT_ID, license_key_hash: sha256Hex(licenseKey), reported_at: '2030-01-02T05:00:00.000Z', scp_version: '0.3.0' });
    expect(got!.raw).not.toContain(licenseKey);
    await vi.waitUntil(async () => (await call(t, 'getTelemetryStats', 'GET', '/stats')).body.total_reports_sent === 1, { timeout: 10_000 });
    const log = (await call(t, 'listTelemetryLog', 'GET', '/log')).body as any[];
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ status: 'sent', attempts: 1, signed: true, error_message: null, endpoint: rx.url, agent_count: 0, context_request_count: 0, bundle_count: 0 });
    expect(JSON.stringify(log[0].payload)).toBe(got!.raw);
  });

  it('POST /trigger forces a report, and failures are retried until it is sent', async () => {
    const before = rx.received.length;
    rx.script.push(500, 503);
    const r = await call(t, 'triggerTelemetryReport', 'POST', '/trigger');
    expect(r.body).toEqual({ status: 'triggered', log_id: expect.any(Number) });
    const id = r.body.log_id as number;
    await vi.waitUntil(async () => (await logEntry(t, id))?.status === 'sent', { timeout: 10_000 });
    const attempts = rx.received.slice(before);
    expect(attempts.map((a) => a.answered)).toEqual([500, 503, 200]);
    expect(new Set(attempts.map((a) => a.raw)).size).toBe(1);
    expect(attempts.every((a) => a.signatureValid && a.sixFields)).toBe(true);
    expect(await logEntry(t, id)).toMatchObject({ status: 'sent', attempts: 3, error_message: null });
  });

  it('a report whose every attempt fails ends failed with the last error', async () => {
    const before = rx.received.length;
    rx.script.push(500, 500, 500, 500, 502);
    const id = (await call(t, 'triggerTelemetryReport', 'POST', '/trigger')).body.log_id as number;
    await vi.waitUntil(async () => (await logEntry(t, id))?.status === 'failed', { timeout: 10_000 });
    expect(rx.received.length - before).toBe(5);
    expect(await logEntry(t, id)).toMatchObject({ status: 'failed', attempts: 5, error_message: 'HTTP 502 Bad Gateway' });
  });

  it('stats and log agree with what the receiver saw', async () => {
    const stats = (await call(t, 'getTelemetryStats', 'GET', '/stats')).body;
    const log = (await call(t, 'listTelemetryLog', 'GET', '/log?limit=500')).body as any[];
    const accepted = rx.received.filter((r) => r.answered === 200);
    expect(stats).toEqual({ total_reports_sent: accepted.length, total_reports_failed: 1, last_report_at: '2030-01-02T05:00:00.000Z', queue_depth: 0 });
    expect(log.filter((e) => e.status === 'sent')).toHaveLength(accepted.length);
    // Every attempt the receiver saw is counted in some entry, and carried that entry's payload.
    expect(log.reduce((n, e) => n + e.attempts, 0)).toBe(rx.received.length);
    const bodies = new Set(log.map((e) => JSON.stringify(e.payload)));
    expect(rx.received.every((r) => bodies.has(r.raw))).toBe(true);
    // Newest first: same reported_at here, so by id descending.
    expect(log.map((e) => e.id)).toEqual([...log.map((e) => e.id)].sort((a, b) => b - a));
  });

  it('serves the log at /log and /telemetry/log, paged by limit and offset', async () => {
    const a = (await call(t, 'listTelemetryLog', 'GET', '/log')).body as any[];
    const b = (await call(t, 'listTelemetryInspectionLog', 'GET', '/telemetry/log')).body as any[];
    expect(b).toEqual(a);
    expect(a.length).toBe(3);
    const page = (await call(t, 'listTelemetryInspectionLog', 'GET', '/telemetry/log?limit=1&offset=1')).body as any[];
    expect(page).toEqual([a[1]]);
    expect((await call(t, 'listTelemetryLog', 'GET', '/log?offset=3')).body).toEqual([]);
    for (const q of ['limit=0', 'limit=501', 'offset=-1', 'limit=abc', 'limit=1.5']) {
      const r = await call(t, 'listTelemetryLog', 'GET', `/log?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error).toBe('validation_error');
    }
  });

  it('answers 400 for an unknown query parameter or a body that is not JSON, as the contract declares', async () => {
    const before = (await call(t, 'listTelemetryLog', 'GET', '/log?limit=500')).body.length;
    for (const [opId, method, p] of [
      ['getTelemetryHealth', 'GET', '/health?x=1'],
      ['getTelemetryConfig', 'GET', '/config?x=1'],
      ['getTelemetryStats', 'GET', '/stats?x=1'],
      ['triggerTelemetryReport', 'POST', '/trigger?x=1'],
    ] as const) {
      const r = await call(t, opId, method, p);
      expect(r.status, p).toBe(400);
    }
    const bad = await t.call('telemetry', 'POST', '/trigger', { admin: true, body: '{not json' });
    expect(bad.status).toBe(400);
    expect(ops.get('triggerTelemetryReport')!.api.validateResponse(bad.body, ops.get('triggerTelemetryReport')!.op, 400).errors ?? null).toBeNull();
    // Nothing was written by the refused requests.
    expect((await call(t, 'listTelemetryLog', 'GET', '/log?limit=500')).body.length).toBe(before);
  });

  it('refuses a missing or wrong admin key', async () => {
    for (const [opId, method, p] of ADMIN_ROUTES) {
      const none = await call(t, opId, method, p, false);
      expect(none.status).toBe(401);
      const wrong = await t.call('telemetry', method, p, { headers: { 'x-admin-key': 'admin_wrong_000000000000000000' } });
      expect(wrong.status).toBe(401);
      expect(wrong.body).toEqual({ error: 'auth_failed', message: 'Invalid admin API key' });
    }
  });

  it('never logs the license key or the signing secret', () => {
    const all = t.logs.join('\n');
    expect(all).not.toContain(licenseKey);
    expect(all).not.toContain(SECRET);
  });

  it('a restart the same day does not send the day’s report again', async () => {
    const before = rx.received.length;
    const stats = (await call(t, 'getTelemetryStats', 'GET', '/stats')).body;
    await t.close();
    clock.set('2030-01-02T23:59:00.000Z');
    t = await startTestStack({ services: ['telemetry'], env, clock, testDb: tdb });
    await new Promise((r) => setTimeout(r, 300));
    expect(rx.received.length).toBe(before);
    expect((await call(t, 'getTelemetryStats', 'GET', '/stats')).body).toEqual(stats);
    const rows = await tdb.db.query(`SELECT count(*)::int AS n FROM telemetry_log WHERE trigger = 'schedule'`);
    expect(rows[0]!.n).toBe(1);
  });

  it('the next day, after a restart, exactly one new scheduled report', async () => {
    const before = rx.received.length;
    await t.close();
    clock.set('2030-01-03T02:00:00.000Z');
    t = await startTestStack({ services: ['telemetry'], env, clock, testDb: tdb });
    await rx.waitFor(before + 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(rx.received.length).toBe(before + 1);
    expect(rx.received.at(-1)!.json.reported_at).toBe('2030-01-03T02:00:00.000Z');
    await vi.waitUntil(async () => (await call(t, 'getTelemetryStats', 'GET', '/stats')).body.last_report_at === '2030-01-03T02:00:00.000Z', { timeout: 10_000 });
  });
});

describe('telemetry service without an endpoint', () => {
  let d: TestStack;
  beforeAll(async () => {
    d = await startTestStack({ services: ['telemetry'], env: { TELEMETRY_SIGNING_SECRET: SECRET } });
  });
  afterAll(async () => {
    await d?.close();
  });

  it('is disabled and says so; a trigger logs what would have been sent, as failed', async () => {
    const cfg = (await call(d, 'getTelemetryConfig', 'GET', '/config')).body;
    expect(cfg).toMatchObject({ enabled: false, endpoint: null, signing_enabled: true });
    const id = (await call(d, 'triggerTelemetryReport', 'POST', '/trigger')).body.log_id as number;
    const entry = await logEntry(d, id);
    expect(entry).toMatchObject({ status: 'failed', attempts: 0, signed: false, endpoint: null, error_message: 'No telemetry endpoint configured' });
    expect(Object.keys(entry.payload).sort()).toEqual(SIX_FIELDS);
    expect((await call(d, 'getTelemetryStats', 'GET', '/stats')).body).toEqual({ total_reports_sent: 0, total_reports_failed: 1, last_report_at: null, queue_depth: 0 });
    expect(d.logs.some((l) => l.includes('telemetry disabled'))).toBe(true);
  });

  it('answers 503 on every admin route', async () => {
    // Same database as the disabled stack (creating one is the slow part).
    const u = await startTestStack({ services: ['telemetry'], env: { ADMIN_API_KEY: '' }, testDb: d.testDb });
    try {
      for (const [opId, method, p] of ADMIN_ROUTES) {
        const r = await call(u, opId, method, p, true);
        expect(r.status).toBe(503);
        expect(r.body).toEqual({ error: 'unavailable', message: 'Admin API not configured' });
      }
      expect((await call(u, 'getTelemetryHealth', 'GET', '/health', false)).status).toBe(200);
    } finally {
      await u.close();
    }
  });
});
