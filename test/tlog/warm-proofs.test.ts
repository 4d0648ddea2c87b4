/**
 * The proof path's warm-up at start (TransparencyLog.warmProofs): on a tree of synthetic leaf
 * hashes stored as the integrator stores them, it makes `calls` proofs of each kind below the
 * latest checkpoint, none for a tree under its least size, and stops when aborted.
 */
import { hash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, testEnv, TLOG_KEY, type TestDb } from '../harness.js';
import { loadConfig } from '../../src/shared/config.js';
import { memoryLogger } from '../../src/shared/logger.js';
import { TransparencyLog } from '../../src/core/tlog/log.js';
import { appendLeaves, rootHash } from '../../src/core/tlog/merkle.js';
import { newTileCache, tileReader, treeState, writeTiles } from '../../src/core/tlog/tiles.js';
import { formatCheckpoint } from '../../src/core/tlog/checkpoint.js';
import { signNote } from '../../src/core/tlog/note.js';

const N = 700;
let t: TestDb;
let log: TransparencyLog;
beforeAll(async () => {
  t = await createTestDb();
  const hashes = Array.from({ length: N }, (_, i) => hash('sha256', `leaf ${i}`, 'buffer'));
  const state = await treeState(t.db);
  await writeTiles(t.db, appendLeaves(state.size, state.lastTiles, hashes).tiles);
  const root = await rootHash(tileReader(t.db, newTileCache()), N);
  const note = signNote(formatCheckpoint({ origin: 'svc.test/audit-log', size: N, root }), TLOG_KEY.signerKey);
  await t.db.query('INSERT INTO audit_tlog_checkpoints (tree_size, root_hash, note) VALUES ($1, $2, $3)', [N, root, note]);
  log = new TransparencyLog({ db: t.db, config: loadConfig(testEnv()), logger: memoryLogger('warn') });
});
afterAll(async () => {
  await t?.close();
});

/** Counts the queries made through the log's database while `fn` runs. */
async function counting<T>(fn: () => Promise<T>): Promise<{ value: T; queries: number }> {
  const query = t.db.query.bind(t.db);
  let queries = 0;
  t.db.query = ((...args: Parameters<typeof query>) => {
    queries++;
    return query(...args);
  }) as typeof t.db.query;
  try {
    return { value: await fn(), queries };
  } finally {
    t.db.query = query;
  }
}

describe('warmProofs', () => {
  it('makes `calls` inclusion and consistency proofs, reading the tree', async () => {
    const { value, queries } = await counting(() => log.warmProofs({ calls: 40, minLeaves: 2 }));
    expect(value).toEqual({ proofs: 80 });
    expect(queries).toBeGreaterThan(0);
  });

  it('makes none under its least tree size (65,536 leaves by default)', async () => {
    const { value, queries } = await counting(() => log.warmProofs({ calls: 40 }));
    expect(value).toEqual({ proofs: 0 });
    // The checkpoint's size (cached for 200 ms by the log) at most.
    expect(queries).toBeLessThanOrEqual(1);
    expect(await log.warmProofs({ calls: 40, minLeaves: N + 1 })).toEqual({ proofs: 0 });
  });

  it('stops when its signal aborts', async () => {
    const stop = new AbortController();
    const running = log.warmProofs({ calls: 100_000, minLeaves: 2, signal: stop.signal });
    await new Promise((r) => setTimeout(r, 50));
    stop.abort();
    const { proofs } = await running;
    expect(proofs).toBeGreaterThan(0);
    expect(proofs).toBeLessThan(200_000);
  });
});
