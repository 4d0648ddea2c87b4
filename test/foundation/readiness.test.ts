/**
 * `GET /ready` on every HTTP service: ready on a healthy stack, 503 naming the migrations
 * when the recorded ones are behind, 503 naming draining once the process shuts down, and
 * (PostgreSQL only) 503 naming the database while its connections are refused (and the
 * requests that need it: 503 unavailable over REST, UNAVAILABLE over gRPC, the context
 * request's own 500 INTERNAL_ERROR), then 200 again when it is back.
 */
import http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, DB_PASSWORD, REAL, REAL_REDIS, startTestStack, type TestStack } from '../harness.js';
import { openDb } from '../../src/core/db/index.js';
import { readMigrations } from '../../src/core/db/migrate.js';
import { createRedisBroker } from '../../src/shared/broker.js';
import { memoryLogger } from '../../src/shared/logger.js';
import type { ServiceName } from '../../src/shared/service.js';
import { proxyFor } from './tcp-proxy.js';
import { agentWithKey, grpcClient } from '../context/fixtures.js';

const HTTP: ServiceName[] = ['api', 'rules', 'context-webhook', 'telemetry', 'collector'];

/** Asks until `want` answers (readiness is reused for a second), at most ~6 s. */
async function readyUntil(t: TestStack, svc: ServiceName, want: number): Promise<{ status: number; body: any }> {
  let r = await t.call(svc, 'GET', '/ready');
  for (let i = 0; i < 60 && r.status !== want; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    r = await t.call(svc, 'GET', '/ready');
  }
  return r;
}

describe('/ready on the embedded stack', () => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack();
  });
  afterAll(async () => {
    await t?.close();
  });

  it.each(HTTP)('%s is ready', async (svc) => {
    const r = await t.call(svc, 'GET', '/ready');
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('ready');
    expect(r.body.checks.database.ok).toBe(true);
    expect(typeof r.body.checks.database.ms).toBe('number');
    expect(r.body.checks.migrations).toEqual({ ok: true });
    expect(r.body.checks.draining).toEqual({ ok: true });
    // Redis is checked only when the broker is Redis.
    if (REAL_REDIS) expect(r.body.checks.redis.ok).toBe(true);
    else expect(r.body.checks.redis).toBeUndefined();
    // /health stays the liveness answer.
    expect((await t.call(svc, 'GET', '/health')).body.status).toBe('ok');
  });

  it('8002 answers /ready the same over HTTP/1.1 and HTTP/2 (h2c)', async () => {
    const r = await t.call('context-grpc', 'GET', '/ready');
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('ready');
    expect(r.body.checks.migrations).toEqual({ ok: true });
    const session = http2.connect(t.stack.url('context-grpc'));
    try {
      const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = session.request({ ':method': 'GET', ':path': '/ready' });
        let status = 0;
        let body = '';
        req.on('response', (h) => (status = Number(h[':status'])));
        req.setEncoding('utf8');
        req.on('data', (d: string) => (body += d));
        req.on('end', () => resolve({ status, body }));
        req.on('error', reject);
      });
      expect(status).toBe(200);
      expect(JSON.parse(body).status).toBe('ready');
    } finally {
      await new Promise<void>((resolve) => session.close(() => resolve()));
    }
  });

  it('is 503 naming the migrations when the recorded ones are behind, and ready again when they are back', async () => {
    const last = readMigrations().at(-1)!;
    const [row] = await t.testDb.owner.query('SELECT version, name, checksum, applied_at FROM schema_migrations WHERE version = $1', [last.version]);
    await t.testDb.owner.query('DELETE FROM schema_migrations WHERE version = $1', [last.version]);
    try {
      const r = await readyUntil(t, 'api', 503);
      expect(r.status).toBe(503);
      expect(r.body.status).toBe('not_ready');
      expect(r.body.checks.migrations).toEqual({ ok: false, error: `not applied: ${last.version}` });
      expect(r.body.checks.database.ok).toBe(true);
    } finally {
      await t.testDb.owner.query('INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)', [row!.version, row!.name, row!.checksum, row!.applied_at]);
    }
    expect((await readyUntil(t, 'api', 200)).status).toBe(200);
  });

  it('is 503 naming a migration this build does not know', async () => {
    await t.testDb.owner.query("INSERT INTO schema_migrations (version, name, checksum) VALUES (9999, 'from_a_newer_build', 'x')");
    try {
      const r = await readyUntil(t, 'rules', 503);
      expect(r.status).toBe(503);
      expect(r.body.checks.migrations).toEqual({ ok: false, error: 'unknown to this build: 9999' });
    } finally {
      await t.testDb.owner.query('DELETE FROM schema_migrations WHERE version = 9999');
    }
    expect((await readyUntil(t, 'rules', 200)).status).toBe(200);
  });

  it('is 503 naming draining once the process shuts down (seen at once, not after the cache)', async () => {
    t.ctx.draining = true;
    try {
      for (const svc of HTTP) {
        const r = await t.call(svc, 'GET', '/ready');
        expect(r.status).toBe(503);
        expect(r.body.checks.draining).toEqual({ ok: false, error: 'the process is shutting down' });
        expect(r.body.checks.database.ok).toBe(true);
      }
    } finally {
      t.ctx.draining = false;
    }
    expect((await t.call('collector', 'GET', '/ready')).status).toBe(200);
  });
});

describe.skipIf(!REAL)('/ready while PostgreSQL refuses connections', () => {
  if (!REAL) console.log('skipped: the database check is taken away through a TCP proxy in front of PostgreSQL (SVC_TEST_REAL=1 and DATABASE_URL); PGlite runs in process and cannot be cut off');

  it('answers 503 naming the database while its connections are refused, and 200 again when it is back', async () => {
    const base = await createTestDb();
    const { proxy, target, url: viaProxy } = await proxyFor(base.appUrl!, 5432);
    const db = await openDb({ url: viaProxy, password: DB_PASSWORD, max: 2 });
    let t: TestStack | undefined;
    try {
      t = await startTestStack({ services: ['api', 'collector', 'context-grpc'], testDb: { ...base, db } });
      expect((await t.call('api', 'GET', '/ready')).status).toBe(200);
      const { apiKey } = await agentWithKey(t);

      await proxy.stop();
      const down = await readyUntil(t, 'api', 503);
      expect(down.status).toBe(503);
      expect(down.body.status).toBe('not_ready');
      expect(down.body.checks.database.ok).toBe(false);
      expect(down.body.checks.database.error).toMatch(/^database (unreachable: [A-Za-z0-9_]+|did not answer within 2000 ms)$/);
      expect(down.body.checks.database.ms).toBeLessThanOrEqual(2000 + 500);
      expect(down.body.checks.migrations).toEqual({ ok: false, error: 'not checked: the database is unreachable' });
      // No host, port, user or database name in what the probe shows.
      const text = JSON.stringify(down.body);
      for (const secret of [String(proxy.port), target.hostname, 'svc_app', target.pathname.slice(1)]) expect(text).not.toContain(secret);
      expect((await t.call('collector', 'GET', '/ready')).status).toBe(503);
      // Liveness does not depend on the database.
      expect((await t.call('api', 'GET', '/health')).status).toBe(200);
      // A request that needs the database is 503 unavailable (retry), never a 500.
      const list = await t.call('api', 'GET', '/api/agents', { admin: true });
      expect(list.status).toBe(503);
      expect(list.body.error).toBe('unavailable');
      // A context request over gRPC is UNAVAILABLE (the proto's code for an unreachable store),
      // and over REST 500 INTERNAL_ERROR, failing closed as its contract says.
      const client = grpcClient(t);
      try {
        const err = await new Promise<{ code?: number }>((resolve) => client.RequestContext({ api_key: apiKey, task_type: 'code_review' }, (e: (Error & { code?: number }) | null) => resolve(e ?? {})));
        expect(err.code).toBe(14);
      } finally {
        client.close();
      }
      const rest = await t.call('api', 'POST', '/api/context', { apiKey, body: { task_type: 'code_review' } });
      expect(rest.status).toBe(500);
      expect(rest.body.error_code).toBe('INTERNAL_ERROR');

      // More requests while it is away, each a failed connection attempt of the pool: the
      // pool's wait before its next attempt stays short (reconnectDelaySeconds; postgres.js's
      // own grows to 20 s), so the service is back within readyUntil's few seconds.
      for (let i = 0; i < 8; i++) expect((await t.call('api', 'GET', '/api/agents', { admin: true })).status).toBe(503);

      await proxy.start();
      const up = await readyUntil(t, 'api', 200);
      expect(up.status).toBe(200);
      expect(up.body.checks.database.ok).toBe(true);
      expect((await t.call('api', 'GET', '/api/agents', { admin: true })).status).toBe(200);
    } finally {
      await t?.close();
      await db.close();
      await proxy.stop();
      await base.close();
    }
  });
});

describe.skipIf(!REAL_REDIS)('/ready while Redis is unreachable', () => {
  if (!REAL_REDIS) console.log('skipped: Redis is taken away through a TCP proxy in front of REDIS_URL (SVC_TEST_REAL=1 and REDIS_URL); the in-process broker is always ready');

  it('answers 503 naming Redis while its connections are refused, and 200 again when it is back', async () => {
    const { proxy, url: viaProxy } = await proxyFor(process.env.REDIS_URL!, 6379);
    let t: TestStack | undefined;
    try {
      t = await startTestStack({ services: ['telemetry'], broker: () => createRedisBroker(viaProxy, memoryLogger()) });
      const up = await t.call('telemetry', 'GET', '/ready');
      expect(up.status).toBe(200);
      expect(up.body.checks.redis.ok).toBe(true);

      await proxy.stop();
      const down = await readyUntil(t, 'telemetry', 503);
      expect(down.status).toBe(503);
      expect(down.body.checks.redis).toMatchObject({ ok: false });
      expect(down.body.checks.redis.error).toMatch(/^redis (unreachable: [A-Za-z0-9_]+|did not answer within 2000 ms)$/);
      expect(down.body.checks.database.ok).toBe(true);
      expect(JSON.stringify(down.body)).not.toContain(String(proxy.port));

      await proxy.start();
      const back = await readyUntil(t, 'telemetry', 200);
      expect(back.status).toBe(200);
      expect(back.body.checks.redis.ok).toBe(true);
    } finally {
      await t?.close();
      await proxy.stop();
    }
  });
});
