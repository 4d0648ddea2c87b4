/**
 * The audit chain at the verb level (PGlite, and PostgreSQL with SVC_TEST_REAL=1): the
 * writer's hashes match an independent recomputation, verify finds every kind of tampering
 * at the right sequence, and the store refuses UPDATE and DELETE.
 */
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, REAL, type TestDb } from '../../../test/harness.js';
import { recomputeChain } from '../../../test/audit/recompute.js';
import { ensureGenesis, systemClock, type AppContext } from '../../shared/app-context.js';
import { memoryLogger } from '../../shared/logger.js';
import type { Db } from '../db/index.js';
import { AuditWriter, type AuditEntry } from './writer.js';
import { verifyAuditChain, type VerifyPass } from './verify.js';
import { canonicalJson, computeContentHash, computeRecordHash, netstring, storableText } from './hash.js';

let t: TestDb;
let writer: AuditWriter;
const uid = randomUUID().slice(0, 8);
const agentA = `agent:chain-${uid}x`;
const agentB = `agent:chain-${uid}`;
const ctx = () => ({ db: t.db, clock: systemClock }) as Pick<AppContext, 'db' | 'clock'>;

function entry(i: number, over: Partial<AuditEntry> = {}): AuditEntry {
  return {
    requestId: randomUUID(),
    agentId: i % 5 === 0 ? null : i % 2 ? agentA : agentB,
    taskType: `task_${i % 7}`,
    requestParams: i % 3 ? { patient: `p${i}`, 'ü-key': 'välue ☃ 𝄞', quote: 'a"b\\c\n' } : null,
    intentValid: i % 4 !== 0,
    validationErrors: i % 4 === 0 ? { code: 'INTENT_NOT_ALLOWED', message: 'not allowed', list: [1, 2.5, true, null] } : null,
    contextBundleIds: i % 4 ? ['bundle:meta:0.2.0', 'bundle:security:0.1.0'] : null,
    contextScdIds: i % 4 ? ['scd:meta:a', `scd:security:b${i}`] : null,
    processingTimeMs: i % 6 === 0 ? null : i,
    chainId: i % 8 === 0 ? `chain-${uid}` : null,
    parentRequestId: i % 8 === 0 ? `parent-${i}` : null,
    ...over,
  };
}

async function exec(db: Db, sql: string) {
  await db.exec(sql);
}

/** Runs `fn` with the user triggers of the audit table disabled (owner connection). */
async function asTamperer(fn: (owner: Db) => Promise<void>) {
  await exec(t.owner, 'ALTER TABLE agent_context_requests DISABLE TRIGGER USER');
  try {
    await fn(t.owner);
  } finally {
    await exec(t.owner, 'ALTER TABLE agent_context_requests ENABLE TRIGGER USER');
  }
}

async function seqOf(n: number): Promise<Record<string, any>> {
  // leaf_hash as bytea's hex text, so the row survives JSON and jsonb_populate_record.
  const [r] = await t.owner.query(`SELECT *, '\\x' || encode(leaf_hash, 'hex') AS leaf_hash FROM agent_context_requests WHERE chain_sequence = $1`, [n]);
  return r!;
}

beforeAll(async () => {
  t = await createTestDb();
  for (const a of [agentA, agentB]) {
    await t.db.query(`INSERT INTO agents (agent_id, name, role_id, created_by) VALUES ($1, $1, 'role:test', 'test')`, [a]);
  }
  // Records that predate the chain: counted, not chained.
  for (let i = 0; i < 3; i++) {
    await t.owner.query(
      `INSERT INTO agent_context_requests (request_id, agent_id, task_type, intent_valid, previous_hash, record_hash)
       VALUES ($1, $2, 'legacy', true, 'LEGACY_PRE_AUDIT', 'LEGACY_PRE_AUDIT')`,
      [randomUUID(), agentA],
    );
  }
  await ensureGenesis(t.db, randomUUID(), systemClock);
  writer = new AuditWriter({ db: t.db, clock: systemClock, logger: memoryLogger() });
});
afterAll(async () => {
  await writer?.drain();
  await t?.close();
});

describe('hash rules', () => {
  it('canonical JSON sorts keys and is compact', () => {
    expect(canonicalJson({ b: 1, a: [true, null, 'x'], c: { z: 'é', y: 2 } })).toBe('{"a":[true,null,"x"],"b":1,"c":{"y":2,"z":"é"}}');
    expect(netstring('"é"')).toBe('4:"é",');
  });
  it('record_hash follows the spec rule with an empty agent_id for null', () => {
    const f = {
      chain_sequence: 12,
      request_id: 'r',
      agent_id: null,
      task_type: 't',
      request_params: null,
      intent_valid: false,
      validation_errors: null,
      context_bundle_ids: null,
      context_scd_ids: null,
      processing_time_ms: null,
      requested_at: new Date('2026-11-21T23:25:25.123Z'),
      chain_id: null,
      parent_request_id: null,
    };
    const sha = (s: string) => createHash('sha256').update(s).digest('hex');
    expect(computeRecordHash(f, 'p'.repeat(64))).toBe(sha(`12rtfalse2026-11-21T23:25:25.123Z${'p'.repeat(64)}`));
    const ns = ['12', '"r"', 'null', '"t"', 'null', 'false', 'null', 'null', 'null', 'null', '"2026-11-21T23:25:25.123Z"', 'null', 'null']
      .map((s) => `${Buffer.byteLength(s)}:${s},`)
      .join('');
    expect(computeContentHash(f, 'g'.repeat(64))).toBe(sha('g'.repeat(64) + ns));
  });
  it('storable text replaces NUL and lone surrogates', () => {
    expect(storableText('a\u0000b\ud800c')).toBe('a\uFFFDb\uFFFDc');
    expect(storableText('𝄞')).toBe('𝄞');
  });
});

describe('audit writer and verify', () => {
  it('writes a gapless chain that an independent recomputation accepts', async () => {
    const entries = Array.from({ length: 240 }, (_, i) => entry(i));
    entries.push(entry(999, { taskType: 'nul\u0000and\ud800lone', requestParams: { 'k\u0000': 'v\udc00' } }));
    // Text the database renders as JSON for verify: quotes, backslashes, controls, non-ASCII, astral, U+2028.
    const weird = 'q"b\\s\t\n\r\u0001\u001f\u007fé☃𝄞\u2028';
    entries.push(entry(998, { taskType: weird, chainId: weird, parentRequestId: weird, contextScdIds: [weird, 'scd:x:y'], contextBundleIds: [weird] }));
    const committed = await Promise.all(entries.map((e) => writer.append(e)));
    const seqs = committed.map((c) => c.chainSequence).sort((a, b) => a - b);
    expect(seqs[0]).toBe(4);
    expect(seqs.every((s, i) => s === 4 + i)).toBe(true);
    const re = await recomputeChain(t.db);
    expect(re.mismatches).toEqual([]);
    expect(re.legacy).toBe(3);
    expect(re.chained).toBe(242);
    const [odd] = await t.db.query('SELECT task_type, request_params FROM agent_context_requests WHERE request_id = $1', [entries[240]!.requestId]);
    expect(odd!.task_type).toBe('nul\uFFFDand\uFFFDlone');
    const v = await verifyAuditChain(ctx());
    expect(v).toMatchObject({ status: 'ok', record_count: 245, legacy_record_count: 3, first_chained_sequence: 4, tampered_at_sequence: null, tampered_field_chain: null, error: null });
    expect(v.genesis_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('detects a changed field at its sequence, and recovers when it is restored', async () => {
    const n = 50;
    const before = await seqOf(n);
    await asTamperer((o) => o.query('UPDATE agent_context_requests SET task_type = $1 WHERE chain_sequence = $2', ['forged', n]).then(() => {}));
    expect(await verifyAuditChain(ctx())).toMatchObject({ status: 'tampered', tampered_at_sequence: n, tampered_field_chain: 'record_hash' });
    await asTamperer((o) => o.query('UPDATE agent_context_requests SET task_type = $1 WHERE chain_sequence = $2', [before.task_type, n]).then(() => {}));
    expect((await verifyAuditChain(ctx())).status).toBe('ok');
  });

  it('catches a change of context_scd_ids only through content_hash', async () => {
    const n = 61;
    const before = await seqOf(n);
    await asTamperer((o) => o.query('UPDATE agent_context_requests SET context_scd_ids = $1::text[] WHERE chain_sequence = $2', [['scd:meta:forged'], n]).then(() => {}));
    const re = await recomputeChain(t.db);
    expect(re.mismatches).toEqual([{ seq: n, what: 'content_hash' }]);
    expect(await verifyAuditChain(ctx())).toMatchObject({ status: 'tampered', tampered_at_sequence: n, tampered_field_chain: 'content_hash' });
    await asTamperer((o) => o.query('UPDATE agent_context_requests SET context_scd_ids = $1::text[] WHERE chain_sequence = $2', [before.context_scd_ids, n]).then(() => {}));
    expect((await verifyAuditChain(ctx())).status).toBe('ok');
  });

  it('catches a character moved from agent_id to task_type through content_hash', async () => {
    const [row] = await t.db.query('SELECT * FROM agent_context_requests WHERE agent_id = $1 AND chain_sequence > 10 ORDER BY chain_sequence LIMIT 1', [agentA]);
    const n = Number(row!.chain_sequence);
    // agentA is agentB + 'x': the spec's record_content is unchanged by the move.
    await asTamperer((o) => o.query('UPDATE agent_context_requests SET agent_id = $1, task_type = $2 WHERE chain_sequence = $3', [agentB, `x${row!.task_type}`, n]).then(() => {}));
    const v = await verifyAuditChain(ctx());
    expect(v).toMatchObject({ status: 'tampered', tampered_at_sequence: n, tampered_field_chain: 'content_hash' });
    await asTamperer((o) => o.query('UPDATE agent_context_requests SET agent_id = $1, task_type = $2 WHERE chain_sequence = $3', [agentA, row!.task_type, n]).then(() => {}));
    expect((await verifyAuditChain(ctx())).status).toBe('ok');
  });

  it('detects a deleted record at its sequence (also the first chained one)', async () => {
    for (const n of [77, 4]) {
      const before = await seqOf(n);
      await asTamperer((o) => o.query('DELETE FROM agent_context_requests WHERE chain_sequence = $1', [n]).then(() => {}));
      const v = await verifyAuditChain(ctx());
      expect(v).toMatchObject({ status: 'tampered', tampered_at_sequence: n, tampered_field_chain: 'record_hash' });
      const cols = Object.keys(before);
      await t.owner.query(
        `INSERT INTO agent_context_requests (${cols.join(', ')}) SELECT * FROM jsonb_populate_record(NULL::agent_context_requests, $1::jsonb)`,
        [JSON.stringify(before)],
      );
      expect((await verifyAuditChain(ctx())).status).toBe('ok');
    }
  });

  it('detects a rewritten record_hash and a broken previous_hash link', async () => {
    const n = 90;
    const before = await seqOf(n);
    await asTamperer((o) => o.query(`UPDATE agent_context_requests SET record_hash = $1 WHERE chain_sequence = $2`, ['0'.repeat(64), n]).then(() => {}));
    expect(await verifyAuditChain(ctx())).toMatchObject({ status: 'tampered', tampered_at_sequence: n, tampered_field_chain: 'record_hash' });
    await asTamperer((o) => o.query(`UPDATE agent_context_requests SET record_hash = $1, previous_hash = $1 WHERE chain_sequence = $2`, [before.record_hash, n]).then(() => {}));
    expect(await verifyAuditChain(ctx())).toMatchObject({ status: 'tampered', tampered_at_sequence: n, tampered_field_chain: 'record_hash' });
    await asTamperer((o) => o.query(`UPDATE agent_context_requests SET previous_hash = $1 WHERE chain_sequence = $2`, [before.previous_hash, n]).then(() => {}));
    expect((await verifyAuditChain(ctx())).status).toBe('ok');
  });

  it.skipIf(!REAL)('on PostgreSQL, the storage-order read and a read in chain order alone give the same answers', async () => {
    const same = async () => {
      const passes: VerifyPass[] = [];
      const [a, b] = [await verifyAuditChain(ctx(), { onPass: (p) => passes.push(p) }), await verifyAuditChain(ctx(), { chainOrderOnly: true, onPass: (p) => passes.push(p) })];
      expect({ ...a, last_verified_at: '' }).toEqual({ ...b, last_verified_at: '' });
      // The first read is in storage order (again in chain order when a row rewritten by the
      // tampering lies out of place), the second in chain order alone.
      expect(passes[0]).toBe('storage order');
      expect(passes.at(-1)).toBe('chain order');
      return a;
    };
    expect((await same()).status).toBe('ok');
    const n = 60;
    const before = await seqOf(n);
    await asTamperer((o) => o.query('UPDATE agent_context_requests SET processing_time_ms = 123456 WHERE chain_sequence = $1', [n]).then(() => {}));
    expect(await same()).toMatchObject({ status: 'tampered', tampered_at_sequence: n, tampered_field_chain: 'content_hash' });
    await asTamperer((o) => o.query('UPDATE agent_context_requests SET processing_time_ms = $1 WHERE chain_sequence = $2', [before.processing_time_ms, n]).then(() => {}));
    // The first chained record gone: judged once the legacy records are counted.
    const first = await seqOf(4);
    await asTamperer((o) => o.query('DELETE FROM agent_context_requests WHERE chain_sequence = 4').then(() => {}));
    expect(await same()).toMatchObject({ status: 'tampered', tampered_at_sequence: 4, first_chained_sequence: 5, record_count: (await t.db.query('SELECT count(*)::int8 AS n FROM agent_context_requests'))[0]!.n });
    const cols = Object.keys(first);
    await t.owner.query(`INSERT INTO agent_context_requests (${cols.join(', ')}) SELECT * FROM jsonb_populate_record(NULL::agent_context_requests, $1::jsonb)`, [JSON.stringify(first)]);
    expect((await same()).status).toBe('ok');
  });

  it('verifies records whose leaf data outgrows the checker\'s 8 KB buffers', async () => {
    // The leaf check writes each record's leaf data into a buffer it grows on demand; the
    // hash must be taken over the grown one.
    await Promise.all([20_000, 9_000, 40_000].map((n, i) => writer.append(entry(i, { requestParams: { note: 'x'.repeat(n) } }))));
    expect(await verifyAuditChain(ctx())).toMatchObject({ status: 'ok', tampered_at_sequence: null });
  });

  it('keeps chaining after verify and across writers', async () => {
    const other = new AuditWriter({ db: t.db, clock: systemClock, logger: memoryLogger() }, { maxBatch: 3 });
    await Promise.all([...Array.from({ length: 20 }, (_, i) => writer.append(entry(i))), ...Array.from({ length: 20 }, (_, i) => other.append(entry(i + 1)))]);
    await other.drain();
    expect((await recomputeChain(t.db)).mismatches).toEqual([]);
    expect((await verifyAuditChain(ctx())).status).toBe('ok');
  });
});

describe('immutability', () => {
  it('the store refuses UPDATE and DELETE with "Audit records are immutable"', async () => {
    // As the owner (on PostgreSQL the superuser, who is not stopped by grants): the trigger refuses.
    await expect(t.owner.query(`UPDATE agent_context_requests SET task_type = 'x' WHERE chain_sequence = 5`)).rejects.toThrow('Audit records are immutable');
    await expect(t.owner.query(`DELETE FROM agent_context_requests WHERE chain_sequence = 5`)).rejects.toThrow('Audit records are immutable');
    await expect(t.owner.query(`DELETE FROM audit_chain_genesis`)).rejects.toThrow('Audit records are immutable');
  });
  it.runIf(REAL)('the application role cannot UPDATE, DELETE or TRUNCATE the audit table', async () => {
    for (const sql of [`UPDATE agent_context_requests SET task_type = 'x'`, 'DELETE FROM agent_context_requests', 'TRUNCATE agent_context_requests']) {
      await expect(t.db.query(sql)).rejects.toThrow(/permission denied/);
    }
    await expect(t.db.exec('ALTER TABLE agent_context_requests DISABLE TRIGGER USER')).rejects.toThrow(/must be owner/);
  });
});
