/** Small factories for the telemetry tests: a context over a test database, a settable clock, rows to count. */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { loadConfig } from '../../src/shared/config.js';
import { createAppContext, type AppContext, type Clock } from '../../src/shared/app-context.js';
import { createMemoryBroker } from '../../src/shared/broker.js';
import { memoryLogger } from '../../src/shared/logger.js';
import type { Db } from '../../src/core/db/index.js';
import { testEnv } from '../harness.js';

export interface SettableClock extends Clock {
  set(iso: string | Date): void;
  advance(ms: number): void;
}

export function settableClock(start: string | Date): SettableClock {
  let t = new Date(start).getTime();
  return {
    now: () => new Date(t),
    set: (d) => void (t = new Date(d).getTime()),
    advance: (ms) => void (t += ms),
  };
}

/** An AppContext over `db` (already migrated) with the telemetry settings of `env`. */
export async function makeCtx(db: Db, env: Record<string, string | undefined>, clock: Clock): Promise<AppContext & { lines: string[] }> {
  const e = testEnv(env);
  const config = loadConfig(e);
  const logger = memoryLogger('debug');
  const broker = createMemoryBroker();
  const ctx = await createAppContext(config, { logger, db, broker, clock, skipMigrations: true });
  ctx.onClose(() => broker.close());
  ctx.onClose(() => fs.rmSync(e.SVC_DATA_DIR!, { recursive: true, force: true }));
  return Object.assign(ctx, { lines: logger.lines });
}

export async function insertAgent(db: Db, status: 'active' | 'suspended' | 'revoked' = 'active'): Promise<string> {
  const id = `agent:t-${randomUUID()}`;
  await db.query(`INSERT INTO agents (agent_id, name, role_id, status, created_by) VALUES ($1, 'test agent', 'role:tester', $2, 'test')`, [id, status]);
  return id;
}

export async function insertContextRequest(db: Db, agentId: string): Promise<void> {
  await db.query(
    `INSERT INTO agent_context_requests (request_id, agent_id, task_type, intent_valid, previous_hash, record_hash, content_hash) VALUES ($1, $2, 'summarize', true, 'test', 'test', 'test')`,
    [randomUUID(), agentId],
  );
}

export async function insertBundle(db: Db): Promise<void> {
  await db.query(`INSERT INTO bundles (bundle_id, version, bundle_type, created_by, manifest) VALUES ($1, '1.0.0', 'concern', 'test', '{}'::jsonb)`, [
    `bundle:t-${randomUUID()}`,
  ]);
}
