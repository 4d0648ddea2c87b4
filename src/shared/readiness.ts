/**
 * Readiness: whether this process can do its work now, as opposed to liveness (`/health`,
 * the process is up). Four checks:
 * - database: a trivial query answers within READY_TIMEOUT_MS;
 * - redis (only when the broker is Redis): PING answers within READY_TIMEOUT_MS;
 * - migrations: the versions recorded in `schema_migrations` are exactly those of this build;
 * - draining: the process has not begun to shut down (the launcher marks it, see launcher.ts).
 *
 * Served as `GET /ready` on every HTTP service and as gRPC `grpc.health.v1.Health` on 8002.
 * Error texts are generic (a driver's message can carry the host or the user): only an
 * error code such as ECONNREFUSED is passed on.
 */
import type { AppContext } from './app-context.js';
import { readMigrations } from '../core/db/migrate.js';
import type { components } from '../../gen/openapi/control-plane.js';

export type Readiness = components['schemas']['Readiness'];
type Check = components['schemas']['ReadinessCheck'];

/** How long the database or Redis may take to answer before the check fails. */
const READY_TIMEOUT_MS = 2000;
/** How long one readiness result is reused (a probe storm queries the database once a second). */
const CACHE_MS = 1000;

class CheckTimeout extends Error {}

/** Resolves with `p`, or rejects with CheckTimeout after `ms`; the timer never outlives the call. */
async function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  p.catch(() => {}); // a late rejection after the timeout is expected, not unhandled
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new CheckTimeout()), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** A failure as a short text with no host, user or connection string: the error's code only. */
function describe(what: string, e: unknown): string {
  if (e instanceof CheckTimeout) return `${what} did not answer within ${READY_TIMEOUT_MS} ms`;
  let err = e as { code?: unknown; errno?: unknown; cause?: unknown } | null;
  // postgres.js and node report the socket's code; drizzle or AggregateError may wrap it.
  for (let i = 0; i < 3 && err && typeof err === 'object' && typeof err.code !== 'string' && err.cause; i++) err = err.cause as typeof err;
  const code = err && typeof err === 'object' && typeof err.code === 'string' && /^[A-Za-z0-9_]{1,40}$/.test(err.code) ? err.code : 'error';
  return `${what} unreachable: ${code}`;
}

let expectedVersions: number[] | null = null;
function expected(): number[] {
  return (expectedVersions ??= readMigrations().map((m) => m.version));
}

async function timed(what: string, run: () => Promise<void>): Promise<Check> {
  const start = performance.now();
  try {
    await within(run(), READY_TIMEOUT_MS);
    return { ok: true, ms: Math.round(performance.now() - start) };
  } catch (e) {
    return { ok: false, ms: Math.round(performance.now() - start), error: describe(what, e) };
  }
}

/** Runs every check now (no cache). */
async function checkReadiness(ctx: AppContext): Promise<Readiness> {
  const draining: Check = ctx.draining ? { ok: false, error: 'the process is shutting down' } : { ok: true };
  const redis = ctx.broker.kind === 'redis' ? timed('redis', () => ctx.broker.ping()) : undefined;
  let versions: number[] = [];
  const database = await timed('database', async () => {
    // Both in one round trip's time bound: the first answers "is it there", the second the migrations.
    await ctx.db.query('SELECT 1');
    const rows = await ctx.db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    versions = rows.map((r) => Number(r.version));
  });
  let migrations: Check;
  if (!database.ok) migrations = { ok: false, error: 'not checked: the database is unreachable' };
  else {
    const want = expected();
    const missing = want.filter((v) => !versions.includes(v));
    const unknown = versions.filter((v) => !want.includes(v));
    migrations = missing.length || unknown.length
      ? { ok: false, error: [missing.length ? `not applied: ${missing.join(', ')}` : '', unknown.length ? `unknown to this build: ${unknown.join(', ')}` : ''].filter(Boolean).join('; ') }
      : { ok: true };
  }
  const checks: Readiness['checks'] = { database, migrations, draining };
  if (redis) checks.redis = await redis;
  const ok = Object.values(checks).every((c) => c.ok);
  return { status: ok ? 'ready' : 'not_ready', checks };
}

/**
 * The readiness of a context, reused for CACHE_MS (one per context; concurrent callers share
 * one run). A change of `draining` is seen at once.
 */
export function readiness(ctx: AppContext): () => Promise<Readiness> {
  return ctx.singleton('readiness', () => {
    let last: { at: number; draining: boolean; result: Promise<Readiness> } | null = null;
    return () => {
      const now = performance.now();
      if (!last || now - last.at >= CACHE_MS || last.draining !== ctx.draining) {
        last = { at: now, draining: ctx.draining, result: checkReadiness(ctx) };
      }
      return last.result;
    };
  });
}

/** `GET /ready` on every HTTP service: 200 when ready, 503 otherwise, the same body. */
export function readyHandler(): (req: unknown, ctx: AppContext) => Promise<{ status: 200; body: Readiness } | { status: 503; body: Readiness }> {
  return async (_req, ctx) => {
    const body = await readiness(ctx)();
    return body.status === 'ready' ? { status: 200, body } : { status: 503, body };
  };
}
