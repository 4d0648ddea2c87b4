/**
 * Test harness: a migrated database (PGlite in memory, or a fresh PostgreSQL database when
 * SVC_TEST_REAL=1 and DATABASE_URL are set) and the real services on port 0.
 *
 * Teardown fails on leaks (./leak-check.ts): `close()` rejects, after releasing everything,
 * when a service still has an open connection or stream, when a timer of the product is
 * still pending, or (PostgreSQL) when a client is still connected to the test database.
 * The harness's own `call` asks for `Connection: close`, so it never holds a connection.
 *
 * On PostgreSQL the migrations run as the owner connection (DATABASE_MIGRATION_URL, else
 * DATABASE_URL) and the service connects as `svc_app`, as in production: it cannot update,
 * delete or truncate audit records.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { loadConfig, type Config } from '../src/shared/config.js';
import { openDb, type Db } from '../src/core/db/index.js';
import { runMigrations } from '../src/core/db/migrate.js';
import { createAppContext, type AppContext, type Clock } from '../src/shared/app-context.js';
import { createMemoryBroker, createRedisBroker, type Broker } from '../src/shared/broker.js';
import { memoryLogger } from '../src/shared/logger.js';
import { startStack, type RunningStack } from '../src/launcher.js';
import { generateNoteKey } from '../src/core/tlog/note.js';
import { SERVICE_NAMES, type ServiceName } from '../src/shared/service.js';
import { connectionLeaks, LEAK_WAIT_MS, openTimerWindow, trackServer } from './leak-check.js';

export const REAL = process.env.SVC_TEST_REAL === '1' && !!process.env.DATABASE_URL;
export const REAL_REDIS = process.env.SVC_TEST_REAL === '1' && !!process.env.REDIS_URL;
/** Who acts in a test that calls a verb directly (management events' actor). */
export const TEST_WHO = { actor: 'test', request_id: null } as const;
export const ADMIN_KEY = `admin_${randomBytes(24).toString('base64url')}`;
export const JWT_SECRET = randomBytes(48).toString('base64url');
/** The transparency log's signing key for every test server (required in production mode). */
export const TLOG_KEY = generateNoteKey('svc.test/audit-log');
// One password for every test file: svc_app is cluster-wide, and files run in parallel.
export const DB_PASSWORD = "svc-test-only-password-0000";

export interface TestDb {
  db: Db;
  /** Owner connection (PostgreSQL superuser; on PGlite the same as db): for tampering tests. */
  owner: Db;
  /** Connection string of the fresh database as svc_app (PostgreSQL only). */
  appUrl: string | null;
  ownerUrl: string | null;
  close(): Promise<void>;
}

function withDatabase(url: string, dbName: string, user?: string): string {
  const u = new URL(url);
  u.pathname = `/${dbName}`;
  if (user) {
    u.username = user;
    u.password = '';
  }
  return u.toString();
}

/** A freshly migrated database for one test file. */
export async function createTestDb(): Promise<TestDb> {
  if (!REAL) {
    const db = await openDb({});
    await runMigrations(db);
    return { db, owner: db, appUrl: null, ownerUrl: null, close: () => db.close() };
  }
  const adminUrl = process.env.DATABASE_MIGRATION_URL || process.env.DATABASE_URL!;
  const name = `svc_t_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  const ownerUrl = withDatabase(adminUrl, name);
  let owner: Db;
  // Roles are cluster-wide: two test files creating them or altering svc_app at once fail
  // with "tuple concurrently updated". Set-up is serialized on an advisory lock taken in
  // the admin database (advisory locks are per database, and every file shares that one).
  await admin`SELECT pg_advisory_lock(7340002)`;
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
    owner = await openDb({ url: ownerUrl, max: 2 });
    await runMigrations(owner);
    await owner.exec(`ALTER ROLE svc_app WITH LOGIN PASSWORD '${DB_PASSWORD}'`);
  } finally {
    await admin`SELECT pg_advisory_unlock(7340002)`;
  }
  const appUrl = withDatabase(adminUrl, name, 'svc_app');
  const db = await openDb({ url: appUrl, password: DB_PASSWORD, max: 10 });
  return {
    db,
    owner,
    appUrl,
    ownerUrl,
    async close() {
      await db.close();
      await owner.close();
      // A client the test left connected (an extra pool, a COPY connection, a second process)
      // is a leak: DROP ... WITH (FORCE) would end it silently. Backends leave
      // pg_stat_activity shortly after their client disconnects: wait a bounded time.
      const left = await clientsOf(admin, name);
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await admin.end({ timeout: 5 });
      if (left.length) throw new Error(`test database leaked:\n - ${left.join('\n - ')}`);
    },
  };
}

async function clientsOf(admin: postgres.Sql, dbName: string): Promise<string[]> {
  const deadline = Date.now() + LEAK_WAIT_MS;
  for (;;) {
    const rows = await admin<Array<{ usename: string; application_name: string; state: string | null; client_port: number | null }>>`
      SELECT usename, application_name, state, client_port FROM pg_stat_activity WHERE datname = ${dbName} AND pid <> pg_backend_pid()`;
    if (rows.length === 0) return [];
    if (Date.now() >= deadline) return rows.map((r) => `a client (${r.usename}${r.application_name ? `, ${r.application_name}` : ''}, port ${r.client_port}, ${r.state}) is still connected to the test database`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export function testEnv(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-test-'));
  return {
    SVC_DATA_DIR: dataDir,
    ADMIN_API_KEY: ADMIN_KEY,
    JWT_SECRET,
    TLOG_SIGNING_KEY: TLOG_KEY.signerKey,
    DEPLOYMENT_ID: randomUUID(),
    COLLECTOR_HMAC_SECRET: randomBytes(32).toString('base64url'),
    LOG_LEVEL: 'debug',
    ...extra,
  };
}

export interface TestStack {
  ctx: AppContext;
  stack: RunningStack;
  config: Config;
  testDb: TestDb;
  broker: Broker;
  logs: string[];
  url(name: ServiceName): string;
  /**
   * fetch against a service with JSON helpers; `admin: true` adds the admin key. Each call
   * closes its connection (`Connection: close`), so the harness holds none at teardown.
   */
  call(name: ServiceName, method: string, p: string, opts?: { body?: unknown; admin?: boolean; headers?: Record<string, string>; apiKey?: string }): Promise<{ status: number; body: any; headers: Headers }>;
  /**
   * Stops everything, then rejects if the test leaked: a connection or stream still open on
   * a service (checked before the services close, which would end them), a timer of the
   * product still pending, a client still connected to the test database.
   */
  close(): Promise<void>;
}

export interface StartOptions {
  services?: ServiceName[];
  env?: Record<string, string | undefined>;
  clock?: Clock;
  /** Reuse a database (e.g. a second process against the same PostgreSQL database). */
  testDb?: TestDb;
  /** Make the broker (e.g. Redis on a private server the test controls); closed with the stack. */
  broker?: () => Promise<Broker>;
  /**
   * Services whose connections left open at teardown are reported (console) instead of
   * failing the test, each with the reason: only for a known defect of the product that the
   * test cannot avoid, to be removed with the defect.
   */
  allowOpenConnections?: Partial<Record<ServiceName, string>>;
}

/** Boots the real services on ephemeral ports. */
export async function startTestStack(opts: StartOptions = {}): Promise<TestStack> {
  const timers = openTimerWindow();
  try {
    return await bootTestStack(opts, timers);
  } catch (e) {
    await timers.leaks(0); // ends the window; a failed start is its own error
    throw e;
  }
}

async function bootTestStack(opts: StartOptions, timers: ReturnType<typeof openTimerWindow>): Promise<TestStack> {
  const env = testEnv(opts.env);
  const config = loadConfig(env);
  config.ports = { api: 0, rules: 0, contextGrpc: 0, contextWebhook: 0, telemetry: 0, collector: 0 };
  const ownDb = !opts.testDb;
  const testDb = opts.testDb ?? (await createTestDb());
  const broker = opts.broker ? await opts.broker() : REAL_REDIS ? await createRedisBroker(process.env.REDIS_URL!, memoryLogger()) : createMemoryBroker();
  const logger = memoryLogger('debug');
  const ctx = await createAppContext(config, { logger, db: testDb.db, broker, clock: opts.clock, skipMigrations: true });
  const stack = await startStack(ctx, opts.services ?? SERVICE_NAMES);
  const trackers = Object.values(stack.services).map((s) => trackServer(s!.name, s!.server));
  const url = (n: ServiceName) => stack.url(n);
  return {
    ctx,
    stack,
    config,
    testDb,
    broker,
    logs: logger.lines,
    url,
    async call(name, method, p, o = {}) {
      const headers: Record<string, string> = { connection: 'close', ...(o.headers ?? {}) };
      if (o.admin) headers['x-admin-key'] = ADMIN_KEY;
      if (o.apiKey) headers['x-api-key'] = o.apiKey;
      let body: string | undefined;
      if (o.body !== undefined) {
        headers['content-type'] ??= 'application/json';
        body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
      }
      const res = await fetch(url(name) + p, { method, headers, body });
      const text = await res.text();
      let parsed: any = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        /* not JSON */
      }
      return { status: res.status, body: parsed, headers: res.headers };
    },
    async close() {
      const leaks = await connectionLeaks(trackers, LEAK_WAIT_MS, opts.allowOpenConnections);
      await stack.close();
      await ctx.close();
      await broker.close();
      if (ownDb) await testDb.close().catch((e: Error) => leaks.push(e.message));
      fs.rmSync(env.SVC_DATA_DIR!, { recursive: true, force: true });
      leaks.push(...(await timers.leaks()));
      if (leaks.length) throw new Error(`the test leaked (teardown check, test/leak-check.ts):\n - ${leaks.join('\n - ')}`);
    },
  };
}

/**
 * A free loopback port, for a process or tool that must be told its port before it starts
 * (a spawned server with several ports, caddy, redis-server); servers in this process use 0.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Starts `server` on a free loopback port; resolves to its base URL. */
export function listenLoopback(server: net.Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as net.AddressInfo).port}`));
  });
}

/** Closes HTTP servers started for a test, their open connections first. */
export async function closeServers(servers: Array<{ closeAllConnections(): void; close(cb: () => void): unknown }>): Promise<void> {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
}
