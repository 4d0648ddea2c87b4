/**
 * The dependencies every service is built from (config, db, broker, clock, logger), and the
 * start-up sequence that makes them: open the database, migrate, refuse a superuser in
 * production, create the audit genesis once, connect the broker, check the license.
 * `createAppContext` has no listeners; only the launcher listens on ports.
 */
import { createHash, randomUUID } from 'node:crypto';
import path from 'node:path';
import { urlPassword, type Config } from './config.js';
import { openDb, type Db } from '../core/db/index.js';
import { runMigrations } from '../core/db/migrate.js';
import { createMemoryBroker, createRedisBroker, type Broker } from './broker.js';
import type { Logger } from './logger.js';
import { loadLicense, type LicenseClaims } from './license.js';

export interface Clock {
  now(): Date;
}
export const systemClock: Clock = { now: () => new Date() };

export interface AppContext {
  config: Config;
  db: Db;
  broker: Broker;
  logger: Logger;
  clock: Clock;
  license: LicenseClaims | null;
  /**
   * True once the process has begun to shut down (the launcher sets it before it stops the
   * services): readiness answers not ready, gRPC health NOT_SERVING.
   */
  draining: boolean;
  /** Identifies this process (subscriptions, cache invalidation messages). */
  processId: string;
  /** One instance per context of a stateful component (caches, writers, schedulers). */
  singleton<T>(key: string, make: () => T): T;
  /** Registers a clean-up run at close, in reverse order. */
  onClose(fn: () => Promise<void> | void): void;
  close(): Promise<void>;
}

export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}

export interface CreateContextOptions {
  logger: Logger;
  clock?: Clock;
  /** Use this database instead of opening one (tests). */
  db?: Db;
  broker?: Broker;
  /** Skip migrations (tests that migrated already). */
  skipMigrations?: boolean;
}

const GENESIS_PREFIX = 'svc-audit-genesis:';

/** genesis_hash = hex SHA-256 of `svc-audit-genesis:` + deployment_id + initialized_at (ISO). */
export function genesisHash(deploymentId: string, initializedAt: Date): string {
  return createHash('sha256').update(`${GENESIS_PREFIX}${deploymentId}${initializedAt.toISOString()}`, 'utf8').digest('hex');
}

/** Creates the deployment's genesis row once; concurrent first starts agree on one row. */
export async function ensureGenesis(db: Db, deploymentId: string, clock: Clock): Promise<void> {
  const existing = await db.query('SELECT id FROM audit_chain_genesis LIMIT 1');
  if (existing.length) return;
  const at = new Date(clock.now().getTime()); // millisecond precision, as stored
  await db.query(
    `INSERT INTO audit_chain_genesis (deployment_id, genesis_hash, initialized_at) VALUES ($1, $2, $3)
     ON CONFLICT (singleton) DO NOTHING`,
    [deploymentId, genesisHash(deploymentId, at), at],
  );
}

/** DB_PASSWORD is a connection's password only when its URL carries none (a URL's own password wins). */
function passwordFor(url: string, config: Config): string | null {
  return urlPassword(url) ? null : config.dbPassword;
}

export async function openConfiguredDb(config: Config, logger: Logger): Promise<Db> {
  const ssl = config.dbSslMode === 'require';
  if (config.databaseUrl) {
    if (config.databaseMigrationUrl) {
      const owner = await openDb({ url: config.databaseMigrationUrl, password: passwordFor(config.databaseMigrationUrl, config), ssl, max: 1 });
      try {
        const applied = await runMigrations(owner);
        if (applied.length) logger.info('migrations applied', { versions: applied });
      } finally {
        await owner.close();
      }
    }
    const db = await openDb({ url: config.databaseUrl, password: passwordFor(config.databaseUrl, config), ssl, max: 20 });
    const [role] = await db.query<{ rolsuper: boolean; current_user: string }>('SELECT rolsuper, current_user FROM pg_roles WHERE rolname = current_user');
    if (role?.rolsuper) {
      await db.close();
      throw new StartupError(`DATABASE_URL connects as the PostgreSQL superuser "${role.current_user}": the service must connect as a role without superuser rights (svc_app; see README), so that it cannot disable the audit trigger`);
    }
    if (!config.databaseMigrationUrl) {
      const applied = await runMigrations(db);
      if (applied.length) logger.info('migrations applied', { versions: applied });
    }
    return db;
  }
  const db = await openDb({ dataDir: path.join(config.dataDir, 'pg') });
  const applied = await runMigrations(db);
  if (applied.length) logger.info('migrations applied', { versions: applied });
  return db;
}

export async function createAppContext(config: Config, opts: CreateContextOptions): Promise<AppContext> {
  const { logger } = opts;
  const clock = opts.clock ?? systemClock;
  const closers: Array<() => Promise<void> | void> = [];
  const license = await loadLicense(config, logger, clock);
  const db = opts.db ?? (await openConfiguredDb(config, logger));
  if (!opts.db) closers.push(() => db.close());
  if (opts.db && !opts.skipMigrations) await runMigrations(db);
  await ensureGenesis(db, config.deploymentId, clock);
  const broker = opts.broker ?? (config.redisUrl ? await createRedisBroker(config.redisUrl, logger) : createMemoryBroker());
  if (!opts.broker) closers.push(() => broker.close());
  const singletons = new Map<string, unknown>();
  let closed = false;
  return {
    config,
    db,
    broker,
    logger,
    clock,
    license,
    draining: false,
    processId: randomUUID(),
    singleton<T>(key: string, make: () => T): T {
      if (!singletons.has(key)) singletons.set(key, make());
      return singletons.get(key) as T;
    },
    onClose(fn) {
      closers.push(fn);
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const fn of closers.reverse()) {
        try {
          await fn();
        } catch (e) {
          logger.error('error while closing', { error: e as Error });
        }
      }
    },
  };
}
