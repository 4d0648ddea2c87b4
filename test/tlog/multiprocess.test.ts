/**
 * The transparency log across OS processes, on PostgreSQL only (PGlite is one process): two
 * spawned API servers on one database, each integrating every TLOG_CHECKPOINT_INTERVAL_MS=50
 * with the same log key, under concurrent context load to both. Afterwards:
 * - every stored checkpoint verifies with the log key and states its row's size and root;
 * - each consecutive pair is consistent (the served consistency proof, checked with the
 *   independent RFC 9162 verifier of ./rfc9162.ts);
 * - the final checkpoint covers every record, and its root is the RFC 9162 root of the
 *   records' leaf hashes; the level-0 tiles hold exactly those hashes, one row per (level, idx);
 * - GET /api/audit/verify says ok, transparency log included.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, REAL, startTestStack, TLOG_KEY, type TestDb, ADMIN_KEY } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { loadContext, spawnApi, type ServerProcess } from '../audit/server-process.js';
import { rfcLeafHash, rfcMth, rfcVerifyConsistency } from './rfc9162.js';
import { openNote, parseSignerKey } from '../../src/core/tlog/note.js';
import { parseCheckpoint } from '../../src/core/tlog/checkpoint.js';
import { leafCount, readLeaves } from '../../src/core/tlog/leaves.js';

const PER_PROCESS = Number(process.env.TLOG_MP_REQUESTS ?? 300);
const ORIGIN = parseSignerKey(TLOG_KEY.signerKey).name;

if (!REAL) console.log('[skipped] test/tlog/multiprocess.test.ts: PostgreSQL only (set SVC_TEST_REAL=1 and DATABASE_URL)');

const bytes = (v: Uint8Array | string): Buffer => (typeof v === 'string' ? Buffer.from(v.replace(/^\\x/, ''), 'hex') : Buffer.from(v));

describe.runIf(REAL)('transparency log across processes (PostgreSQL)', () => {
  let testDb: TestDb;
  let deploymentId: string;
  let keys: string[];
  const procs: ServerProcess[] = [];

  beforeAll(async () => {
    testDb = await createTestDb();
    // In-process stack for set-up only (agents and keys through the API), closed before the two processes start.
    const t = await startTestStack({ services: ['api'], testDb });
    try {
      deploymentId = t.config.deploymentId;
      keys = [];
      for (let i = 0; i < 2; i++) {
        const a = await makeAgent(t, { allowed_intents: ['triage', 'medication_review'] });
        keys.push((await issueKey(t, a.agent_id)).api_key);
      }
    } finally {
      await t.close();
    }
  }, 180_000);
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await testDb?.close();
  });

  const request = (i: number) =>
    i % 10 === 9
      ? { apiKey: keys[i % keys.length], body: { task_type: 'not_allowed' } }
      : { apiKey: keys[i % keys.length], body: { task_type: i % 2 ? 'triage' : 'medication_review', params: { i: String(i) } } };

  it('two integrating processes sign one append-only sequence of checkpoints covering every record', async () => {
    const env = { DATABASE_MIGRATION_URL: testDb.ownerUrl!, TLOG_CHECKPOINT_INTERVAL_MS: '50', TLOG_SIGNING_KEY: TLOG_KEY.signerKey };
    const [p1, p2] = await Promise.all([spawnApi(testDb.appUrl!, deploymentId, env), spawnApi(testDb.appUrl!, deploymentId, env)]);
    procs.push(p1!, p2!);
    const [l1, l2] = await Promise.all([p1!.url, p2!.url].map((url) => loadContext(url, { clients: 16, total: PER_PROCESS, request })));
    const answers = [...l1!.answers, ...l2!.answers];
    expect(l1!.failed + l2!.failed).toBe(0);
    expect(answers).toHaveLength(2 * PER_PROCESS);
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([200, 403]));

    const [{ n: records }] = (await testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM agent_context_requests')) as [{ n: number }];
    expect(records).toBe(2 * PER_PROCESS);
    // Every leaf: the context requests and the management events (each process's admin_keys.loaded at start, the set-up's agents and keys).
    const total = await leafCount(testDb.db);
    expect(total).toBeGreaterThan(records);
    // The loops sign a checkpoint covering every record within a few intervals.
    const deadline = Date.now() + 30_000;
    let latest = 0;
    while (Date.now() < deadline) {
      const [r] = await testDb.db.query<{ s: number | string | null }>('SELECT max(tree_size) AS s FROM audit_tlog_checkpoints');
      latest = Number(r!.s ?? 0);
      if (latest >= total) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(latest).toBe(total);

    const rows = await testDb.db.query<{ tree_size: number | string; root_hash: Uint8Array | string; note: string }>('SELECT tree_size, root_hash, note FROM audit_tlog_checkpoints ORDER BY tree_size');
    const cps = rows.map((r) => ({ size: Number(r.tree_size), root: bytes(r.root_hash), note: r.note }));
    // Signed while the load ran, not only at the end.
    expect(cps.length).toBeGreaterThan(2);
    for (const c of cps) {
      const opened = openNote(c.note, [TLOG_KEY.verifierKey]);
      const body = parseCheckpoint(opened.text);
      expect({ origin: body.origin, size: body.size, root: Buffer.from(body.root).toString('base64') }).toEqual({ origin: ORIGIN, size: c.size, root: c.root.toString('base64') });
    }
    // Each consecutive pair, proved by one process or the other.
    for (let i = 1; i < cps.length; i++) {
      const a = cps[i - 1]!;
      const b = cps[i]!;
      const p = i % 2 ? p1! : p2!;
      const r = await fetch(`${p.url}/api/audit/proof/consistency?from=${a.size}&to=${b.size}`);
      expect(r.status).toBe(200);
      const proof = (await r.json()) as { from: number; to: number; hashes: string[] };
      expect({ from: proof.from, to: proof.to }).toEqual({ from: a.size, to: b.size });
      if (a.size === 0) {
        // The empty tree (the set-up stack's first checkpoint) is a prefix of every tree: no proof (RFC 9162 2.1.4 needs 0 < first).
        expect(proof.hashes).toEqual([]);
        expect(a.root.equals(createHash('sha256').digest())).toBe(true);
        continue;
      }
      const ok = rfcVerifyConsistency(a.size, b.size, proof.hashes.map((h) => Buffer.from(h, 'base64')), a.root, b.root);
      expect(ok, `checkpoints ${a.size} -> ${b.size}`).toBe(true);
    }

    // The final tree: the records' leaves, hashed here, give its root and fill its level-0 tiles.
    const leaves = await readLeaves(testDb.db, 0, total + 1);
    expect(leaves.map((l) => l.index)).toEqual(Array.from({ length: total }, (_, i) => i));
    const hashes = leaves.map((l) => rfcLeafHash(l.data));
    expect(rfcMth(leaves.map((l) => l.data)).toString('base64')).toBe(cps[cps.length - 1]!.root.toString('base64'));
    const dup = await testDb.db.query('SELECT level, idx FROM audit_tlog_tiles GROUP BY level, idx HAVING count(*) > 1');
    expect(dup).toEqual([]);
    const level0 = await testDb.db.query<{ idx: number | string; data: Uint8Array | string }>('SELECT idx, data FROM audit_tlog_tiles WHERE level = 0 ORDER BY idx');
    expect(level0.map((t) => Number(t.idx))).toEqual(Array.from({ length: Math.ceil(total / 256) }, (_, i) => i));
    expect(Buffer.concat(level0.map((t) => bytes(t.data))).equals(Buffer.concat(hashes))).toBe(true);

    const v = await fetch(`${p1!.url}/api/audit/verify`, { headers: { 'x-admin-key': ADMIN_KEY } });
    expect(v.status).toBe(200);
    const body = (await v.json()) as { status: string; record_count: number; transparency_log: { status: string; leaf_count: number; tree_size: number } };
    expect(body).toMatchObject({ status: 'ok', record_count: total, transparency_log: { status: 'ok', leaf_count: total, tree_size: total } });
    await Promise.all([p1!.stop(), p2!.stop()]);
  }, 300_000);
});
