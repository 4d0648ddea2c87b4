/**
 * The database layer: one small interface over PGlite (embedded default) and postgres.js
 * (DATABASE_URL), both real PostgreSQL. Two ways to query the same connection:
 * - `orm`, a drizzle query builder over the tables of `./schema` (the CRUD paths);
 * - `query`, SQL with $1..$n parameters (hot paths and what drizzle cannot say); JSON values
 *   are passed as text and cast (`$1::jsonb`), text arrays as JS arrays (`$1::text[]`).
 *
 * `tx` runs a function in a transaction and reuses an outer one when called inside it; the
 * `Db` it hands over has an `orm` bound to the transaction's client, so drizzle and raw
 * queries commit or roll back together. PostgreSQL error codes are mapped to domain errors
 * in one place, `mapDbError`, for both (drizzle's `DrizzleQueryError` is unwrapped first).
 */
// Types only: PGlite (a large module) is loaded when the embedded default is opened, never on PostgreSQL.
import type { PGlite } from '@electric-sql/pglite';
import postgres from 'postgres';
import fs from 'node:fs';
import { DrizzleQueryError } from 'drizzle-orm/errors';
import { PgDatabase, PgDialect, type PgQueryResultHKT, type PgSession } from 'drizzle-orm/pg-core';
import { PostgresJsSession } from 'drizzle-orm/postgres-js/session';
import { AppError } from '../../shared/errors.js';

/** A raw query's row: its columns are known only to the SQL text; callers name them with `query<T>`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- raw SQL rows from postgres.js/PGlite are untyped; `unknown` would make every existing `query<T>` row type incompatible
type Row = Record<string, any>;

/** The drizzle query builder of a `Db` (no relational schema: tables are imported from ./schema). */
type Orm = PgDatabase<PgQueryResultHKT>;

export interface Db {
  readonly kind: 'pglite' | 'postgres';
  /** True inside `tx`. */
  readonly inTransaction: boolean;
  /**
   * drizzle over this connection (inside `tx`: over the transaction). Its errors pass through
   * `mapDbError`. Use `tx`, never `orm.transaction`, to open a transaction.
   */
  readonly orm: Orm;
  query<T extends Row = Row>(text: string, params?: unknown[]): Promise<T[]>;
  /** Runs several statements with no parameters (migrations). */
  exec(text: string): Promise<void>;
  tx<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` once the transaction this handle belongs to has committed (never when it rolls
   * back); outside a transaction, at once. For what must leave the process only once the change
   * is durable (notifications); `fn` must not throw.
   */
  afterCommit(fn: () => void): void;
  close(): Promise<void>;
  /** postgres.js only: the raw client, for COPY streams and LISTEN (null on PGlite). */
  readonly raw: postgres.Sql | null;
  /** PGlite only: the raw instance (null on PostgreSQL). */
  readonly pglite: PGlite | null;
}

export interface OpenDbOptions {
  url?: string | null;
  /** Directory for PGlite; null or 'memory://' for an in-memory database. */
  dataDir?: string | null;
  password?: string | null;
  ssl?: boolean;
  max?: number;
}

/** Opens PostgreSQL (when `url` is set) or PGlite. */
export async function openDb(opts: OpenDbOptions): Promise<Db> {
  if (opts.url) return openPostgres(opts);
  const dir = opts.dataDir && opts.dataDir !== 'memory://' ? opts.dataDir : undefined;
  if (dir) fs.mkdirSync(dir, { recursive: true });
  const { PGlite } = await import('@electric-sql/pglite');
  // Loaded here, never on PostgreSQL: drizzle's PGlite session imports PGlite itself.
  const { PgliteSession } = await import('drizzle-orm/pglite/session');
  const pg = dir ? new PGlite(dir) : new PGlite();
  await pg.waitReady;
  return pgliteDb(pg, pg, false, (client) => new PgliteSession(client as PGlite, dialect, undefined));
}

type PgliteClient = { query: PGlite['query']; exec: PGlite['exec'] };

function pgliteDb(root: PGlite, q: PgliteClient, inTx: boolean, session: (client: PgliteClient) => PgSession, committed: Array<() => void> | null = null): Db {
  // Built on first use: the audit writer's transactions (one per batch) never use drizzle.
  let orm: Orm | undefined;
  const db: Db = {
    kind: 'pglite',
    inTransaction: inTx,
    get orm() {
      return (orm ??= ormOver(session(q)));
    },
    raw: null,
    pglite: root,
    async query<T extends Row>(text: string, params: unknown[] = []) {
      try {
        const res = await q.query<T>(text, params.map(normalizeParam));
        return res.rows;
      } catch (e) {
        throw mapDbError(e);
      }
    },
    async exec(text) {
      try {
        await q.exec(text);
      } catch (e) {
        throw mapDbError(e);
      }
    },
    async tx(fn) {
      if (inTx) return fn(db);
      const hooks: Array<() => void> = [];
      let out;
      try {
        out = await root.transaction((t) => fn(pgliteDb(root, t, true, session, hooks)));
      } catch (e) {
        throw mapDbError(e);
      }
      runHooks(hooks);
      return out;
    },
    afterCommit(fn) {
      if (committed) committed.push(fn);
      else fn();
    },
    async close() {
      if (!inTx) await root.close();
    },
  };
  return db;
}

/** A committed transaction's afterCommit hooks, in order; one that throws does not stop the others. */
function runHooks(hooks: Array<() => void>): void {
  for (const h of hooks) {
    try {
      h();
    } catch {
      // afterCommit's contract: hooks do not throw; a bug in one must not turn a commit into an error.
    }
  }
}

/** PGlite serializes JS arrays of strings itself; plain objects must be sent as JSON text. */
function normalizeParam(v: unknown): unknown {
  return v === undefined ? null : v;
}

/**
 * Seconds a pooled connection waits before it connects again after a failed attempt, given
 * the pool's count of failures in a row: 10 ms, 30, 90, 270, 810, then at most 1 s, each
 * 50-100% of that (spread). postgres.js's own backoff grows to 20 s, and its count is the
 * pool's: with the database away for a few seconds every query that came in meanwhile (the
 * transparency log's integrator's turns too) added a failure, so a request waited up to 20 s
 * behind the next attempt, also once the database was back. In the readiness test (a pool of
 * two through a proxy that is cut): with the integrator appending five times a second, a
 * context request during the cut took 40 s; after eight requests during the cut, the service
 * was not back a minute after the database was (with this: 1.5 s and 0.6 s). A failed connect
 * to a database that is down costs it nothing worth sparing once a second per connection.
 */
function reconnectDelaySeconds(failures: number): number {
  return (0.5 + Math.random() / 2) * Math.min(3 ** failures / 100, 1);
}

async function openPostgres(opts: OpenDbOptions): Promise<Db> {
  const sql = postgres(opts.url!, {
    max: opts.max ?? 10,
    ssl: opts.ssl ? 'require' : false,
    password: opts.password ?? undefined,
    onnotice: () => {},
    // int8 (count(*), bigserial chain_sequence) comes back as a number: they stay far below 2^53.
    types: {
      int8: { to: 20, from: [20], parse: (x: string) => Number(x), serialize: (x: number) => String(x) },
      // `$n::jsonb` takes JSON text, as on PGlite: postgres.js would JSON.stringify a string
      // again and store a JSON string scalar. Objects are still serialized.
      json: { to: 114, from: [114, 3802], parse: (x: string) => JSON.parse(x), serialize: (x: unknown) => (typeof x === 'string' ? x : JSON.stringify(x)) },
    },
    prepare: true,
    connection: { application_name: 'svc' },
    backoff: reconnectDelaySeconds,
  });
  await sql`select 1`;
  return postgresDb(sql, sql, false);
}

/**
 * Parameterized statements are prepared once a connection (postgres.js keeps them by text):
 * `unsafe` does not prepare unless asked, and an unprepared statement with parameters costs a
 * round trip more each time (Parse and Describe, an answer, then Bind and Execute), which
 * under load waits on this process's event loop. The audit writer's statement spent a third of
 * its time in that wait (pg_stat_activity sampled every 5 ms during W1: 0.34 of a backend in
 * ClientRead mid-statement); prepared, REST W1 went from 6,728-7,960 to 7,664-10,182 req/s
 * (+17% on the means of four alternated pairs, 2026-11-29) and gRPC W1 from 5,524-7,370 to
 * 5,483-7,894 calls/s (+11%). A text built per call would leave a statement per call on every
 * connection, in this process and in its backend: after MAX_PREPARED_TEXTS distinct texts,
 * new ones run unprepared.
 */
const MAX_PREPARED_TEXTS = 500;
const preparedTexts = new Set<string>();
const PREPARED = { prepare: true } as const;

function preparable(text: string): boolean {
  if (preparedTexts.has(text)) return true;
  if (preparedTexts.size >= MAX_PREPARED_TEXTS) return false;
  preparedTexts.add(text);
  return true;
}

function postgresDb(root: postgres.Sql, q: postgres.Sql | postgres.TransactionSql, inTx: boolean, committed: Array<() => void> | null = null): Db {
  // Built on first use (see pgliteDb).
  let orm: Orm | undefined;
  const db: Db = {
    kind: 'postgres',
    inTransaction: inTx,
    // The session is built directly, not with drizzle-orm/postgres-js's `drizzle(client)`:
    // that one rewrites the client's shared type parsers (timestamptz, date and json come
    // back as strings, json is sent unserialized) for every raw query on the pool too. With
    // the client's own parsers drizzle's columns still map: a timestamptz arrives as a Date,
    // which drizzle's Date columns pass through; jsonb values drizzle sends are JSON text,
    // which the json serializer above passes as they are. (orm.test.ts checks both.)
    get orm() {
      return (orm ??= ormOver(new PostgresJsSession(q as postgres.Sql, dialect, undefined)));
    },
    raw: root,
    pglite: null,
    async query<T extends Row>(text: string, params: unknown[] = []) {
      try {
        return (await q.unsafe(text, params.map(normalizeParam) as postgres.ParameterOrJSON<never>[], params.length && preparable(text) ? PREPARED : undefined)) as unknown as T[];
      } catch (e) {
        throw mapDbError(e);
      }
    },
    async exec(text) {
      try {
        await q.unsafe(text);
      } catch (e) {
        throw mapDbError(e);
      }
    },
    async tx<T>(fn: (db: Db) => Promise<T>) {
      if (inTx) return fn(db);
      const hooks: Array<() => void> = [];
      let out: T;
      try {
        out = (await root.begin((t) => fn(postgresDb(root, t, true, hooks)))) as T;
      } catch (e) {
        throw mapDbError(e);
      }
      runHooks(hooks);
      return out;
    },
    afterCommit(fn) {
      if (committed) committed.push(fn);
      else fn();
    },
    async close() {
      if (!inTx) await root.end({ timeout: 5 });
    },
  };
  return db;
}

const dialect = new PgDialect();

/** A drizzle database over `session` whose query errors pass through `mapDbError`. */
function ormOver(session: PgSession): Orm {
  const prepare = session.prepareQuery.bind(session);
  // Every drizzle query (builders, `execute`) is prepared here; its errors are mapped as a
  // raw query's are, so a duplicate key is `conflict` whichever way it was written.
  session.prepareQuery = ((...args: Parameters<typeof prepare>) => {
    // `all` is drizzle-internal (not in the types); both drivers' sessions define it.
    const pq = prepare(...args) as ReturnType<typeof prepare> & { all: (values?: Record<string, unknown>) => Promise<unknown> };
    const execute = pq.execute.bind(pq);
    const all = pq.all.bind(pq);
    pq.execute = (values) => execute(values).catch((e: unknown) => Promise.reject(mapDbError(e)));
    pq.all = (values) => all(values).catch((e: unknown) => Promise.reject(mapDbError(e)));
    return pq;
  }) as typeof session.prepareQuery;
  const orm = new PgDatabase(dialect, session, undefined) as Orm;
  // A drizzle transaction would bypass `tx` (and its reuse of an outer transaction).
  orm.transaction = () => Promise.reject(new Error('use Db.tx, not orm.transaction'));
  return orm;
}

/** The immutability trigger's message (migration 0001). */
const AUDIT_IMMUTABLE_MESSAGE = 'Audit records are immutable';

/**
 * The connection to the database was lost or could not be made (postgres.js's own codes, the
 * socket's, PostgreSQL's class 08 and its shutdown codes): the request may be retried, so it is
 * 503 `unavailable`, not a 500.
 */
const CONNECTION_LOSS = new Set(['CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', '57P01', '57P02', '57P03']);
function isConnectionLoss(err: { code?: string }): boolean {
  return typeof err.code === 'string' && (CONNECTION_LOSS.has(err.code) || /^08[0-9A-Z]{3}$/.test(err.code));
}

/**
 * Maps PostgreSQL errors to domain errors, in this one place. Unknown errors pass through
 * untouched (the edge answers an opaque 500 and logs them).
 */
function mapDbError(e: unknown): unknown {
  // drizzle wraps the driver's error with the query text and parameters: map the driver's
  // own, and pass that one on when unmapped (parameters may carry key hashes).
  if (e instanceof DrizzleQueryError && e.cause) e = e.cause;
  if (e instanceof AppError) return e;
  const err = e as { code?: string; message?: string; detail?: string; constraint?: string; constraint_name?: string };
  if (!err || typeof err !== 'object') return e;
  const constraint = err.constraint ?? err.constraint_name;
  switch (err.code) {
    case '23505':
      return new AppError('conflict', 'The resource already exists', { details: constraint ? { constraint } : undefined, cause: e });
    case '23503':
      return new AppError('not_found', 'A referenced resource does not exist', { details: constraint ? { constraint } : undefined, cause: e });
    case '23514':
      return new AppError('validation_error', 'A value is not allowed', { details: constraint ? { constraint } : undefined, cause: e });
    case '22P02':
    case '22007':
    case '22008':
      return new AppError('validation_error', 'A value has the wrong form', { cause: e });
    // A deadlock or serialization failure: PostgreSQL rolled this transaction back, so nothing
    // changed; the client may retry. The verbs take their locks in one order (ownership's
    // transfer-store.ts), so this is not expected, but it is never a 500.
    case '40P01':
    case '40001':
      return new AppError('conflict', 'A concurrent change conflicted with this one; nothing was changed, retry the request', { cause: e });
    // PostgreSQL text and jsonb cannot hold U+0000: a request carrying it is bad input, not a failure.
    case '22021':
    case '22P05':
      return new AppError('validation_error', 'A text value contains a character that cannot be stored (U+0000)', {
        details: { errors: [{ path: '/body', rule: 'nul_character', message: 'text must not contain U+0000' }] },
        cause: e,
      });
  }
  if (isConnectionLoss(err)) {
    return new AppError('unavailable', 'The database could not be reached; retry the request', { cause: e });
  }
  if (err.message && err.message.includes(AUDIT_IMMUTABLE_MESSAGE)) {
    return new AppError('immutable', AUDIT_IMMUTABLE_MESSAGE, { cause: e });
  }
  return e;
}
