/**
 * The audit chain across OS processes, on PostgreSQL only (PGlite is one process):
 * - two spawned API servers on one database, 32 concurrent clients each, thousands of
 *   requests: one gapless chain that verifies and matches an independent recomputation;
 * - a server killed with SIGKILL under load loses no acknowledged record (every answered
 *   request_id is in the table) and the chain still verifies.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, REAL, startTestStack, type TestDb, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { recomputeChain } from './recompute.js';
import { loadContext, spawnApi, type ServerProcess } from './server-process.js';
import { verifyAuditChain } from '../../src/core/audit/verify.js';

const PER_PROCESS = Number(process.env.AUDIT_MP_REQUESTS ?? 2500);

describe.runIf(REAL)('audit chain across processes (PostgreSQL)', () => {
  let testDb: TestDb;
  let t: TestStack;
  let keys: string[];
  const procs: ServerProcess[] = [];

  beforeAll(async () => {
    testDb = await createTestDb();
    // In-process stack for set-up only (agents and keys through the API); it shares the database.
    t = await startTestStack({ services: ['api'], testDb });
    keys = [];
    for (let i = 0; i < 4; i++) {
      const a = await makeAgent(t, { allowed_intents: ['triage', 'medication_review'] });
      keys.push((await issueKey(t, a.agent_id)).api_key);
    }
  }, 180_000);
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await t?.close();
    await testDb?.close();
  });

  const request = (i: number) =>
    i % 10 === 9
      ? { apiKey: keys[i % keys.length], body: { task_type: 'not_allowed' } }
      : i % 10 === 8
        ? { body: { task_type: 'triage' } }
        : { apiKey: keys[i % keys.length], body: { task_type: i % 2 ? 'triage' : 'medication_review', params: { i: String(i) } } };

  async function rowsCount(): Promise<number> {
    const [r] = await testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM agent_context_requests');
    return Number(r!.n);
  }

  it('two server processes with 32 clients each keep one gapless chain', async () => {
    const before = await rowsCount();
    const [p1, p2] = await Promise.all([spawnApi(testDb.appUrl!, t.config.deploymentId, { DATABASE_MIGRATION_URL: testDb.ownerUrl! }), spawnApi(testDb.appUrl!, t.config.deploymentId, { DATABASE_MIGRATION_URL: testDb.ownerUrl! })]);
    procs.push(p1!, p2!);
    const [l1, l2] = await Promise.all([p1!.url, p2!.url].map((url) => loadContext(url, { clients: 32, total: PER_PROCESS, request })));
    const answers = [...l1!.answers, ...l2!.answers];
    expect(l1!.failed + l2!.failed).toBe(0);
    expect(answers).toHaveLength(2 * PER_PROCESS);
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([200, 401, 403]));
    expect(await rowsCount()).toBe(before + 2 * PER_PROCESS);
    const seqs = await testDb.db.query<{ min: number; max: number; n: number }>('SELECT min(chain_sequence) AS min, max(chain_sequence) AS max, count(*)::int AS n FROM agent_context_requests');
    expect(Number(seqs[0]!.max) - Number(seqs[0]!.min) + 1).toBe(Number(seqs[0]!.n));
    const ids = answers.map((a) => a.requestId!);
    const found = await testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM agent_context_requests WHERE request_id = ANY($1::text[])', [ids]);
    expect(Number(found[0]!.n)).toBe(ids.length);
    const v = await verifyAuditChain(t.ctx);
    expect(v).toMatchObject({ status: 'ok', record_count: before + 2 * PER_PROCESS });
    expect((await recomputeChain(testDb.db)).mismatches).toEqual([]);
    await Promise.all([p1!.stop(), p2!.stop()]);
  }, 300_000);

  it('SIGKILL under load loses no acknowledged record and the chain still verifies', async () => {
    const [victim, survivor] = await Promise.all([spawnApi(testDb.appUrl!, t.config.deploymentId, { DATABASE_MIGRATION_URL: testDb.ownerUrl! }), spawnApi(testDb.appUrl!, t.config.deploymentId, { DATABASE_MIGRATION_URL: testDb.ownerUrl! })]);
    procs.push(victim!, survivor!);
    let killed = false;
    let victimAnswers = 0;
    const loads = Promise.all([
      loadContext(victim!.url, { clients: 32, stop: () => killed, request, onAnswer: () => victimAnswers++ }),
      loadContext(survivor!.url, { clients: 32, total: 1500, request }),
    ]);
    // Let the victim serve a few hundred requests under load, then kill it without warning.
    const deadline = Date.now() + 60_000;
    while (victimAnswers < 300 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await victim!.kill('SIGKILL');
    killed = true;
    const [lv, ls] = await loads;
    const acknowledged = [...lv!.answers, ...ls!.answers].filter((a) => a.requestId);
    expect(lv!.answers.length).toBeGreaterThanOrEqual(300);
    const ids = acknowledged.map((a) => a.requestId!);
    const found = await testDb.db.query<{ request_id: string }>('SELECT request_id FROM agent_context_requests WHERE request_id = ANY($1::text[])', [ids]);
    const stored = new Set(found.map((r) => r.request_id));
    expect(ids.filter((id) => !stored.has(id))).toEqual([]);
    // The survivor keeps chaining after the crash.
    const after = await loadContext(survivor!.url, { clients: 8, total: 200, request });
    expect(after.failed).toBe(0);
    const v = await verifyAuditChain(t.ctx);
    expect(v.status).toBe('ok');
    expect((await recomputeChain(testDb.db)).mismatches).toEqual([]);
    await survivor!.stop();
  }, 300_000);
});
