/**
 * Verify's tree check (src/core/tlog/verify-tree.ts and the chain checker's leaf check) against
 * whoever runs the database: as the owner with the triggers off, change one thing at a time (a
 * legacy record, an output, a chained record's stored leaf hash, a tile, a leaf index, a
 * record removed from the middle) and GET /api/audit/verify, and the tree check in pages of a
 * few leaves (so that every failure is also seen across a page's edge), name the leaf. Runs
 * on PGlite and, with DATABASE_URL, on PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, startTestStack, type TestDb, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { TLOG_LOCK, transparencyLog } from '../../src/core/tlog/log.js';
import { verifyAuditChain } from '../../src/core/audit/verify.js';
import { verifyTree } from '../../src/core/tlog/verify-tree.js';
import { readLeaves } from '../../src/core/tlog/leaves.js';
import { leafHash, tileInnerNodes } from '../../src/core/tlog/merkle.js';
import { asBuffer } from '../../src/core/tlog/tiles.js';

const cleanups: Array<() => Promise<void> | void> = [];
let db: TestDb;
let t: TestStack;
beforeAll(async () => {
  ({ db, t } = await log());
  for (const tb of TABLES) await db.owner.exec(`CREATE TABLE saved_${tb} AS SELECT * FROM ${tb}`);
});
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const TABLES = ['agent_context_requests', 'agent_output_logs', 'audit_management_events', 'audit_tlog_tiles'];

/**
 * `fn` as `owner` in one transaction holding the integrator's lock (TLOG_LOCK), with `tables`'
 * triggers off: the stack's own integrator never sees a change half made (on PostgreSQL it
 * once integrated during restore(), between the tiles' DELETE and the records', and wrote back
 * a tile over fewer leaves than the records held).
 */
async function ownerTx<T>(owner: TestDb['owner'], tables: string[], fn: (tx: TestDb['owner']) => Promise<T>): Promise<T> {
  return owner.tx(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [TLOG_LOCK]);
    for (const tb of tables) await tx.exec(`ALTER TABLE ${tb} DISABLE TRIGGER USER`);
    const out = await fn(tx);
    for (const tb of tables) await tx.exec(`ALTER TABLE ${tb} ENABLE TRIGGER USER`);
    return out;
  });
}

/** As `owner` with `table`'s triggers off: one statement, with its parameters. */
const withTriggersOff = (owner: TestDb['owner'], table: string, sql: string, params: unknown[] = []) => ownerTx(owner, [table], (tx) => tx.query(sql, params));

/** As the owner with the triggers off. */
const asOwner = (sql: string[]) =>
  ownerTx(db.owner, TABLES, async (tx) => {
    for (const s of sql) await tx.exec(s);
  });

/** Puts the log back as it was made (the cases share it). */
const restore = () =>
  asOwner([...[...TABLES].reverse().map((tb) => `DELETE FROM ${tb}`), ...TABLES.map((tb) => `INSERT INTO ${tb} SELECT * FROM saved_${tb}`)]);

/**
 * The management events of making the agent and its key (E of them) are leaves 1..E; `at(n)`
 * is the leaf of the layout's leaf n below.
 */
let E = 0;
const at = (n: number) => (n === 0 ? 0 : n + E);

/**
 * A log of 12 leaves and the E events, integrated with a checkpoint: leaf 0 a legacy record,
 * then the events, then (in layout numbers, see at()) leaves 1-3 and 5-9 context requests, 4
 * and 10 outputs, 11 a context request.
 */
async function log(): Promise<{ db: TestDb; t: TestStack }> {
  const db = await createTestDb();
  cleanups.push(() => db.close());
  await db.owner.query(
    `INSERT INTO agent_context_requests (request_id, task_type, intent_valid, requested_at, chain_sequence, previous_hash, record_hash)
     VALUES ('legacy-1', 'old', true, '2024-01-01T00:00:00Z', 1, 'LEGACY_PRE_AUDIT', 'LEGACY_PRE_AUDIT')`,
  );
  const t = await startTestStack({ services: ['api'], testDb: db });
  cleanups.push(() => t.close());
  const agent = await makeAgent(t, { allowed_intents: ['triage'] });
  const key = (await issueKey(t, agent.agent_id)).api_key;
  const ask = async () => (await t.call('api', 'POST', '/api/context', { apiKey: key, body: { task_type: 'triage', request_params: { n: 1.5, s: 'é"\\' } } })).body;
  const output = async (requestId: string) =>
    expect((await t.call('api', 'POST', '/api/audit/output', { apiKey: key, body: { request_id: requestId, output: { text: 'done', z: [1, 2e21] } } })).status).toBe(201);
  const first = await ask();
  E = first.audit_leaf_index - 1;
  for (let i = 0; i < 2; i++) await ask();
  await output(first.request_id);
  for (let i = 0; i < 5; i++) await ask();
  await output(first.request_id);
  await ask();
  expect(await transparencyLog(t.ctx).integrate()).not.toBeNull();
  return { db, t };
}

/** The tree check as GET /api/audit/verify makes it, in pages of 3 leaves, and in one page answered in rows of 5 leaves. */
async function check(t: TestStack): Promise<Array<{ status: string; tampered_at_leaf: number | null; error: string | null }>> {
  const v = await t.call('api', 'GET', '/api/audit/verify', { admin: true });
  expect(v.status).toBe(200);
  const { leafFailure } = await verifyAuditChain(t.ctx);
  return [v.body.transparency_log, await verifyTree(t.ctx, leafFailure, 3), await verifyTree(t.ctx, leafFailure, undefined, 5)];
}

describe('the tree check of GET /api/audit/verify', () => {
  it('answers ok over legacy records, context requests, outputs and management events', async () => {
    expect(E).toBeGreaterThan(0);
    const n = 12 + E;
    for (const r of await check(t)) expect(r).toMatchObject({ status: 'ok', tampered_at_leaf: null, error: null, leaf_count: n, tree_size: n, checkpoint_tree_size: n });
  });

  const cases: Array<[string, () => string[], () => number | null, RegExp]> = [
    ['a legacy record changed', () => ["UPDATE agent_context_requests SET task_type = 'older' WHERE leaf_index = 0"], () => 0, /record's hash is not the tree's leaf hash/],
    ['a management event changed', () => ["UPDATE audit_management_events SET actor = 'someone' WHERE leaf_index = 1"], () => 1, /record's hash is not the tree's leaf hash/],
    ['an output changed', () => [`UPDATE agent_output_logs SET output = '{"text": "undone"}' WHERE leaf_index = ${at(4)}`], () => at(4), /record's hash is not the tree's leaf hash/],
    ["a chained record's stored leaf hash changed", () => [`UPDATE agent_context_requests SET leaf_hash = sha256(leaf_hash) WHERE leaf_index = ${at(6)}`], () => at(6), /not what its leaf hash was computed from/],
    ['a chained record changed, its chains broken', () => [`UPDATE agent_context_requests SET processing_time_ms = 4242 WHERE leaf_index = ${at(7)}`], () => at(7), /not what its leaf hash was computed from/],
    ['a leaf hash in a tile changed', () => [`UPDATE audit_tlog_tiles SET data = overlay(data PLACING sha256('y'::bytea) FROM 32 * ${at(9)} + 1) WHERE level = 0 AND idx = 0`], () => at(9), /record's hash is not the tree's leaf hash/],
    ['a record removed from the middle', () => [`DELETE FROM agent_context_requests WHERE leaf_index = ${at(5)}`], () => at(5), /leaf \d+ is missing/],
    ["an output moved onto a request's leaf", () => [`UPDATE agent_output_logs SET leaf_index = ${at(3)} WHERE leaf_index = ${at(4)}`], () => at(3), /leaf \d+ is held by two records/],
  ];
  for (const [name, sql, leaf, error] of cases) {
    it(`finds ${name}`, async () => {
      await asOwner(sql());
      try {
        for (const r of await check(t)) {
          expect(r.status).toBe('tampered');
          expect(r.tampered_at_leaf).toBe(leaf());
          expect(r.error).toMatch(error);
        }
      } finally {
        await restore();
      }
    });
  }

  it('finds an output changed with its tile entry rewritten to match: the checkpoint disagrees', async () => {
    await asOwner([`UPDATE agent_output_logs SET output = '{"text": "undone"}' WHERE leaf_index = ${at(10)}`]);
    const [leaf] = await readLeaves(db.owner, at(10), 1);
    await withTriggersOff(db.owner, 'audit_tlog_tiles', `UPDATE audit_tlog_tiles SET data = overlay(data PLACING $1 FROM 32 * ${at(10)} + 1) WHERE level = 0 AND idx = 0`, [leafHash(leaf!.data)]);
    try {
      for (const r of await check(t)) {
        expect(r).toMatchObject({ status: 'tampered', tampered_at_leaf: null });
        expect(r.error).toMatch(new RegExp(`root at the checkpoint's tree size ${12 + E} is not the checkpoint's root`));
      }
    } finally {
      await restore();
    }
  });

  it('answers while the tree lags the records by more than a page, the page not tile-aligned', async () => {
    // The tree cut back to 2 leaves, seen inside the transaction that cuts it (rolled back): no
    // page past the tree's end reads its tiles (this threw a RangeError once).
    const rollback = new Error('rollback');
    const seen = await ownerTx(db.owner, ['audit_tlog_tiles'], async (tx) => {
      await tx.exec('DELETE FROM audit_tlog_tiles WHERE level > 0');
      await tx.exec('UPDATE audit_tlog_tiles SET data = substring(data FROM 1 FOR 64) WHERE level = 0 AND idx = 0');
      const ctx = { ...t.ctx, db: tx } as typeof t.ctx;
      const r = [await verifyTree(ctx, null, 3), await verifyTree(ctx, null, 5, 2)];
      throw Object.assign(rollback, { r });
    }).catch((e: Error & { r?: unknown }) => (e === rollback ? e.r : Promise.reject(e)));
    expect(seen).toEqual([0, 1].map(() => expect.objectContaining({ status: 'ok', tree_size: 2, leaf_count: 12 + E, checkpoint_tree_size: 12 + E })));
  });

  it('answers ok again once the log is put back (the cases above each changed only what they say)', async () => {
    for (const r of await check(t)) expect(r).toMatchObject({ status: 'ok', tampered_at_leaf: null });
  });
});

describe("the tree check and full tiles' stored inner nodes (migration 0017)", () => {
  let db2: TestDb;
  let t2: TestStack;
  beforeAll(async () => {
    db2 = await createTestDb();
    cleanups.push(() => db2.close());
    t2 = await startTestStack({ services: ['api'], testDb: db2 });
    cleanups.push(() => t2.close());
    const agent = await makeAgent(t2, { allowed_intents: ['triage'] });
    const key = (await issueKey(t2, agent.agent_id)).api_key;
    // Past the first full level-0 tile (256 leaves, the management events included).
    for (let i = 0; i < 280; i += 20) {
      await Promise.all(Array.from({ length: 20 }, () => t2.call('api', 'POST', '/api/context', { apiKey: key, body: { task_type: 'triage' } })));
    }
    // Integrated to the last record (the stack's own loop may have made the checkpoint already).
    await transparencyLog(t2.ctx).integrate();
    const [n] = await db2.owner.query<{ n: number; size: number }>(
      `SELECT (SELECT count(nodes)::int FROM audit_tlog_tiles WHERE level = 0) AS n, (SELECT max(tree_size)::int FROM audit_tlog_checkpoints) AS size`,
    );
    expect(n).toEqual({ n: 1, size: 280 + (await db2.owner.query<{ c: number }>('SELECT count(*)::int AS c FROM audit_management_events'))[0]!.c });
  }, 120_000);

  const edit = (sql: string, params: unknown[] = []) => withTriggersOff(db2.owner, 'audit_tlog_tiles', sql, params);

  it('finds a stored inner node changed, at the first leaf under it; a tile without nodes (stored before 0017) is ok', async () => {
    for (const r of await check(t2)) expect(r).toMatchObject({ status: 'ok', tampered_at_leaf: null });
    const [saved] = await db2.owner.query<{ nodes: Uint8Array | string }>('SELECT nodes FROM audit_tlog_tiles WHERE level = 0 AND idx = 0');
    // Level 3 within the tile, node 5: leaves 40-47; its bytes start at (256 - 64 + 5) * 32.
    await edit(`UPDATE audit_tlog_tiles SET nodes = overlay(nodes PLACING sha256('x'::bytea) FROM ${(256 - 64 + 5) * 32} + 1) WHERE level = 0 AND idx = 0`);
    try {
      for (const r of await check(t2)) {
        expect(r).toMatchObject({ status: 'tampered', tampered_at_leaf: 40 });
        expect(r.error).toMatch(/tile 0: the stored inner node over leaves 40-47 is not their hash/);
      }
      await edit('UPDATE audit_tlog_tiles SET nodes = NULL WHERE level = 0 AND idx = 0');
      for (const r of await check(t2)) expect(r).toMatchObject({ status: 'ok', tampered_at_leaf: null });
    } finally {
      await db2.owner.query('UPDATE audit_tlog_tiles SET nodes = $1 WHERE level = 0 AND idx = 0', [saved!.nodes]);
    }
    for (const r of await check(t2)) expect(r).toMatchObject({ status: 'ok', tampered_at_leaf: null });
  });

  it('finds a management event in the full tile changed, with its tile entry and inner nodes rewritten to match: the checkpoint disagrees', async () => {
    // Whole tiles are hashed at once in verify's pages (fullTileNodes), leaf by leaf in pages of 3: each way reaches the root.
    const [ev] = await db2.owner.query<{ i: number; actor: string }>('SELECT leaf_index::int AS i, actor FROM audit_management_events ORDER BY leaf_index LIMIT 1');
    expect(ev!.i).toBeLessThan(256);
    const [saved] = await db2.owner.query<{ data: Uint8Array | string; nodes: Uint8Array | string }>('SELECT data, nodes FROM audit_tlog_tiles WHERE level = 0 AND idx = 0');
    const [size] = await db2.owner.query<{ n: number }>('SELECT max(tree_size)::int AS n FROM audit_tlog_checkpoints');
    const setActor = (actor: string) => withTriggersOff(db2.owner, 'audit_management_events', 'UPDATE audit_management_events SET actor = $1 WHERE leaf_index = $2', [actor, ev!.i]);
    const setTile = (data: unknown, nodes: unknown) => edit('UPDATE audit_tlog_tiles SET data = $1, nodes = $2 WHERE level = 0 AND idx = 0', [data, nodes]);
    await setActor('someone');
    const [leaf] = await readLeaves(db2.owner, ev!.i, 1);
    const tile = Buffer.from(asBuffer(saved!.data));
    leafHash(leaf!.data).copy(tile, 32 * ev!.i);
    await setTile(tile, tileInnerNodes(tile).nodes);
    try {
      for (const r of await check(t2)) {
        expect(r).toMatchObject({ status: 'tampered', tampered_at_leaf: null });
        expect(r.error).toMatch(new RegExp(`root at the checkpoint's tree size ${size!.n} is not the checkpoint's root`));
      }
    } finally {
      await setTile(saved!.data, saved!.nodes);
      await setActor(ev!.actor);
    }
    for (const r of await check(t2)) expect(r).toMatchObject({ status: 'ok', tampered_at_leaf: null });
  });
});
