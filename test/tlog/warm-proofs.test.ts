/**
 * The proof path's warm-up as the API starts (the tlog module's warmUp, run by the launcher
 * through HttpServiceDef.warmUp): on a tree of 65,536 synthetic leaf hashes stored as the
 * integrator stores them, the api service makes 1,500 inclusion and 1,500 consistency
 * requests to its own app, each a proof that verifies (RFC 9162 verifier of the tests),
 * neither logged nor measured; none for a tree under 65,536 leaves; stopped by its signal.
 */
import { hash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, testEnv, type TestDb } from '../harness.js';
import { createAppContext, type AppContext } from '../../src/shared/app-context.js';
import { loadConfig } from '../../src/shared/config.js';
import { memoryLogger } from '../../src/shared/logger.js';
import { metricsText } from '../../src/shared/metrics.js';
import { apiService } from '../../src/api/index.js';
import { routes as tlogRoutes } from '../../src/api/audit/tlog-routes.js';
import { TransparencyLog } from '../../src/core/tlog/log.js';
import { rootHash } from '../../src/core/tlog/merkle.js';
import { newTileCache, tileReader } from '../../src/core/tlog/tiles.js';
import { appendSynthetic, storeCheckpoint } from './synthetic-tree.js';
import { rfcVerifyConsistency, rfcVerifyInclusion } from './rfc9162.js';
import type { Hono } from 'hono';

const N = 65_536;
const leafHashes = Array.from({ length: N }, (_, i) => hash('sha256', `leaf ${i}`, 'buffer'));
let t: TestDb;
let ctx: AppContext;
let logger: ReturnType<typeof memoryLogger>;
let app: Hono;
const roots = new Map<number, Buffer>();
beforeAll(async () => {
  t = await createTestDb();
  await appendSynthetic(t.db, 0, leafHashes);
  roots.set(N, await storeCheckpoint(t.db, 'svc.test/audit-log', N));
  logger = memoryLogger('info');
  ctx = await createAppContext(loadConfig(testEnv({ LOG_LEVEL: 'info' })), { logger, db: t.db, skipMigrations: true });
  app = await apiService.createApp(ctx);
}, 120_000);
afterAll(async () => {
  await ctx?.close();
  await t?.close();
});

/** The count of the proof routes' observations in the metrics. */
async function observed(): Promise<number> {
  const { body } = await metricsText();
  let n = 0;
  for (const line of body.split('\n')) {
    if (line.startsWith('svc_http_request_duration_seconds_count{') && line.includes('route="/api/audit/proof/')) n += Number(line.split(' ').pop());
  }
  return n;
}

describe('the proofs warm-up', () => {
  it('asks 1,500 inclusion and 1,500 consistency proofs below the latest checkpoint, each one that verifies', async () => {
    const paths = await tlogRoutes.warmUp(ctx);
    expect(paths.length).toBe(3000);
    expect(paths.filter((p) => p.startsWith('/api/audit/proof/inclusion?')).length).toBe(1500);
    // A sample through the app, checked with the tests' own RFC 9162 verifier.
    for (const p of paths.slice(0, 40)) {
      const res = await app.fetch(new Request(`http://x${p}`));
      expect(res.status).toBe(200);
      const body = (await res.json()) as { leaf_index?: number; tree_size?: number; from?: number; to?: number; hashes: string[] };
      const proof = body.hashes.map((h) => Buffer.from(h, 'base64'));
      if (body.leaf_index !== undefined) {
        expect(body.tree_size).toBe(N);
        expect(rfcVerifyInclusion(leafHashes[body.leaf_index]!, body.leaf_index, N, proof, roots.get(N)!)).toBe(true);
      } else {
        expect(body.to).toBe(N);
        const from = await rootHash(tileReader(t.db, newTileCache()), body.from!);
        expect(rfcVerifyConsistency(body.from!, N, proof, from, roots.get(N)!)).toBe(true);
      }
    }
  });

  it('makes them through the app, neither logged nor measured', { timeout: 60_000 }, async () => {
    const before = await observed();
    const lines = logger.lines.length;
    const made = await apiService.warmUp!(ctx, app, new AbortController().signal);
    expect(made).toBe(3000);
    expect(await observed()).toBe(before);
    expect(logger.lines.slice(lines).filter((l) => l.includes('"request"'))).toEqual([]);
    // A caller's request is both.
    expect((await app.fetch(new Request(`http://x/api/audit/proof/inclusion?leaf_index=5&tree_size=${N}`))).status).toBe(200);
    expect(await observed()).toBe(before + 1);
    expect(logger.lines.slice(lines).filter((l) => l.includes('"request"')).length).toBe(1);
  });

  it('stops when its signal aborts', async () => {
    const stop = new AbortController();
    const running = apiService.warmUp!(ctx, app, stop.signal);
    await new Promise((r) => setTimeout(r, 50));
    stop.abort();
    const made = await running;
    expect(made).toBeGreaterThan(0);
    expect(made).toBeLessThan(3000);
  });

  it('asks none under 65,536 leaves', async () => {
    const log = new TransparencyLog(ctx);
    expect(await log.warmUpDraws({ minLeaves: N + 1 })).toEqual({ size: N, leaves: [], froms: [] });
    const few = await log.warmUpDraws({ minLeaves: 2, calls: 3 });
    expect(few.leaves.length).toBe(3);
    expect(few.froms.every((f) => f >= 1 && f < N)).toBe(true);
  });
});
