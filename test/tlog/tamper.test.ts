/**
 * The transparency log against whoever runs the database (issue 21): as the database owner
 * with the immutability triggers off, remove the last records (and the tree and the stored
 * checkpoints with them), or rewrite a suffix with both hash chains recomputed. The chains
 * alone cannot tell; the published checkpoint can: the next start refuses, naming it. Runs on
 * PGlite and, with DATABASE_URL, on PostgreSQL as a superuser.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDb, startTestStack, type TestDb, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { transparencyLog } from '../../src/core/tlog/log.js';
import { leafCount } from '../../src/core/tlog/leaves.js';
import { verifyAuditChain } from '../../src/core/audit/verify.js';
import { computeContentHash, computeRecordHash, type ChainFields } from '../../src/core/audit/hash.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * A stack on `db` that made `n` audited requests, integrated and published a checkpoint;
 * returns the tree's size (the requests and the management events of the agent and its key).
 */
async function audited(db: TestDb, exportDir: string | undefined, n: number): Promise<number> {
  const t = await startTestStack({ services: ['api'], testDb: db, env: { TLOG_EXPORT_DIR: exportDir } });
  try {
    const agent = await makeAgent(t, { allowed_intents: ['triage'] });
    const key = (await issueKey(t, agent.agent_id)).api_key;
    for (let i = 0; i < n; i++) expect((await t.call('api', 'POST', '/api/context', { apiKey: key, body: { task_type: 'triage' } })).status).toBe(200);
    expect(await transparencyLog(t.ctx).integrate()).not.toBeNull();
    return await leafCount(t.ctx.db);
  } finally {
    await t.close();
  }
}

/** As the owner with the triggers off. */
async function asOwner(db: TestDb, sql: string[]): Promise<void> {
  const tables = ['agent_context_requests', 'agent_output_logs', 'audit_tlog_tiles', 'audit_tlog_checkpoints', 'audit_tlog_cosignatures'];
  for (const tb of tables) await db.owner.exec(`ALTER TABLE ${tb} DISABLE TRIGGER USER`);
  for (const s of sql) await db.owner.exec(s);
  for (const tb of tables) await db.owner.exec(`ALTER TABLE ${tb} ENABLE TRIGGER USER`);
}

const EMPTY_TREE = ['DELETE FROM audit_tlog_cosignatures', 'DELETE FROM audit_tlog_checkpoints', 'DELETE FROM audit_tlog_tiles'];

async function fresh(): Promise<{ db: TestDb; dir: string }> {
  const db = await createTestDb();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-tlog-export-'));
  cleanups.push(async () => {
    await db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { db, dir };
}

/** Starts a stack that must refuse; returns the refusal's message. */
async function refusal(db: TestDb, exportDir: string | undefined): Promise<string> {
  let t: TestStack | undefined;
  try {
    t = await startTestStack({ services: ['api'], testDb: db, env: { TLOG_EXPORT_DIR: exportDir } });
  } catch (e) {
    return (e as Error).message;
  }
  await t.close();
  return 'it started';
}

describe('a truncated log', () => {
  it('deleting the last records and emptying the tree: the chains still verify, the start refuses naming the exported checkpoint', async () => {
    const { db, dir } = await fresh();
    const size = await audited(db, dir, 30);
    await asOwner(db, ['DELETE FROM agent_context_requests WHERE chain_sequence > (SELECT max(chain_sequence) - 5 FROM agent_context_requests)', ...EMPTY_TREE]);
    expect((await verifyAuditChain({ db: db.db, clock: { now: () => new Date() } })).status).toBe('ok');
    const msg = await refusal(db, dir);
    expect(msg).toMatch(new RegExp(`fewer than the published checkpoint svc\\.test/audit-log tree_size ${size} root \\S+ \\(from .*checkpoints\\.jsonl\\)`));
  });

  it('with the tree and checkpoints kept in the database, the start refuses naming the stored checkpoint', async () => {
    const { db } = await fresh();
    const size = await audited(db, undefined, 12);
    await asOwner(db, ['DELETE FROM agent_context_requests WHERE chain_sequence > (SELECT max(chain_sequence) - 2 FROM agent_context_requests)']);
    expect(await refusal(db, undefined)).toMatch(new RegExp(`tree_size ${size} .*from the database`));
  });
});

describe('a rewritten suffix', () => {
  it('rewriting the last records with both chains recomputed: the chains verify, the start refuses (another root)', async () => {
    const { db, dir } = await fresh();
    const size = await audited(db, dir, 20);
    const rows = await db.owner.query<Record<string, any>>('SELECT * FROM agent_context_requests ORDER BY chain_sequence');
    const statements: string[] = [...EMPTY_TREE];
    let prevRh = rows[14]!.record_hash as string;
    let prevCh = rows[14]!.content_hash as string;
    for (const r of rows.slice(15)) {
      const f: ChainFields = { ...(r as ChainFields), chain_sequence: Number(r.chain_sequence), task_type: 'rewritten', requested_at: new Date(r.requested_at) };
      prevRh = computeRecordHash(f, prevRh);
      prevCh = computeContentHash(f, prevCh);
      statements.push(`UPDATE agent_context_requests SET task_type = 'rewritten', record_hash = '${prevRh}', content_hash = '${prevCh}',
        previous_hash = (SELECT record_hash FROM agent_context_requests WHERE chain_sequence = ${Number(r.chain_sequence) - 1}) WHERE request_id = '${r.request_id}'`);
    }
    await asOwner(db, statements);
    expect((await verifyAuditChain({ db: db.db, clock: { now: () => new Date() } })).status).toBe('ok');
    expect(await refusal(db, dir)).toMatch(new RegExp(`the tree at size ${size} has root \\S+, not the published checkpoint svc\\.test/audit-log tree_size ${size}`));
  });

  it('rewriting one record but keeping the tree: GET /api/audit/verify reports the leaf', async () => {
    const { db } = await fresh();
    await audited(db, undefined, 6);
    await asOwner(db, [`UPDATE agent_context_requests SET processing_time_ms = 424242 WHERE chain_sequence = 3`]);
    const [{ leaf_index: leaf }] = await db.owner.query<{ leaf_index: number }>('SELECT leaf_index::int AS leaf_index FROM agent_context_requests WHERE chain_sequence = 3');
    const t = await startTestStack({ services: ['api'], testDb: db }).catch((e: Error) => e);
    // The start check compares roots from the stored tiles, which were not touched: it starts,
    // and verify finds the record that no longer hashes to its leaf.
    expect(t).not.toBeInstanceOf(Error);
    const s = t as TestStack;
    cleanups.push(() => s.close());
    const v = await s.call('api', 'GET', '/api/audit/verify', { admin: true });
    expect(v.body.status).toBe('tampered');
    expect(v.body.transparency_log).toMatchObject({ status: 'tampered', tampered_at_leaf: leaf });
  });
});
