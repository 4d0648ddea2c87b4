/**
 * Verify's answers on chains loaded row by row as the owner, in whatever storage order a
 * case needs, with hashes from the product's rules: tampering at the first, a middle and
 * the last chained record, legacy records lying anywhere (and one numbered after the
 * chain), and records not stored in chain order. Verify reads in chain_sequence order, so
 * storage order must never change an answer.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../../../test/harness.js';
import { ensureGenesis, systemClock } from '../../shared/app-context.js';
import { computeContentHash, computeRecordHash, type ChainFields } from './hash.js';
import { verifyAuditChain, type VerifyPass } from './verify.js';

let t: TestDb;
let genesis: string;
const LEGACY = 3;
const N = 60; // chained records: sequences 4..63

type Row = ChainFields & { previous_hash: string; record_hash: string; content_hash: string | null };

/** The legacy records, then a valid chain after them. */
function chain(): Row[] {
  const rows: Row[] = [];
  const base = Date.parse('2026-01-02T03:04:05.000Z');
  for (let s = 1; s <= LEGACY; s++) {
    rows.push({ ...fields(s, base), previous_hash: 'LEGACY_PRE_AUDIT', record_hash: 'LEGACY_PRE_AUDIT', content_hash: null });
  }
  let rh = genesis;
  let ch = genesis;
  for (let s = LEGACY + 1; s <= LEGACY + N; s++) {
    const f = fields(s, base + s * 1000);
    const row = { ...f, previous_hash: rh, record_hash: computeRecordHash(f, rh), content_hash: computeContentHash(f, ch) };
    rh = row.record_hash;
    ch = row.content_hash;
    rows.push(row);
  }
  return rows;
}

function fields(s: number, at: number): ChainFields {
  return {
    chain_sequence: s,
    request_id: randomUUID(),
    agent_id: null,
    task_type: s % 3 ? 'code_review' : 'deploy',
    request_params: s % 2 ? { ticket: `T-${s}` } : null,
    intent_valid: s % 3 !== 0,
    validation_errors: s % 3 ? null : { error_code: 'INTENT_NOT_ALLOWED' },
    context_bundle_ids: s % 3 ? ['bundle:a:1.0.0'] : null,
    context_scd_ids: s % 3 ? ['scd:a:x', `scd:a:y${s}`] : null,
    processing_time_ms: s % 7,
    requested_at: new Date(at),
    chain_id: null,
    parent_request_id: null,
  };
}

/** Empties the table and inserts `rows` one at a time, in this order (a fresh, append-only heap). */
async function load(rows: Row[]): Promise<void> {
  const tables = ['agent_context_requests', 'agent_output_logs'];
  for (const tb of tables) await t.owner.exec(`ALTER TABLE ${tb} DISABLE TRIGGER USER`);
  try {
    await t.owner.exec(`TRUNCATE ${tables.join(', ')}`);
  } finally {
    for (const tb of tables) await t.owner.exec(`ALTER TABLE ${tb} ENABLE TRIGGER USER`);
  }
  for (const r of rows) {
    await t.owner.query(
      `INSERT INTO agent_context_requests (chain_sequence, request_id, agent_id, task_type, request_params, intent_valid, validation_errors,
         context_bundle_ids, context_scd_ids, processing_time_ms, requested_at, chain_id, parent_request_id, previous_hash, record_hash, content_hash)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7::jsonb, $8::text[], $9::text[], $10, $11, $12, $13, $14, $15, $16)`,
      [
        r.chain_sequence, r.request_id, r.agent_id, r.task_type, r.request_params && JSON.stringify(r.request_params), r.intent_valid,
        r.validation_errors && JSON.stringify(r.validation_errors), r.context_bundle_ids, r.context_scd_ids, r.processing_time_ms,
        r.requested_at.toISOString(), r.chain_id, r.parent_request_id, r.previous_hash, r.record_hash, r.content_hash,
      ],
    );
  }
}

async function verify(): Promise<{ v: Awaited<ReturnType<typeof verifyAuditChain>>; passes: VerifyPass[] }> {
  const passes: VerifyPass[] = [];
  const v = await verifyAuditChain({ db: t.db, clock: systemClock }, { onPass: (p) => passes.push(p) });
  // The same answer as a read in chain order alone, whichever reads were made.
  if (passes.length === 1 && passes[0] === 'storage order') expect(v).toEqual({ ...(await chainOrderOnly()), last_verified_at: v.last_verified_at });
  // And the same when two threads take the rest over (verify-thread.ts; 7 rows each in turn)
  // after the first row, or midway, or when none do.
  if (t.db.kind === 'postgres') {
    for (const handOverAfter of [1, 30, Infinity]) {
      const p2: VerifyPass[] = [];
      const handOvers: number[] = [];
      const v2 = await verifyAuditChain({ db: t.db, clock: systemClock }, { handOverAfter, threadBlock: 7, onPass: (p) => p2.push(p), onHandOver: (n) => handOvers.push(n) });
      expect({ ...v2, last_verified_at: v.last_verified_at }).toEqual(v);
      expect(p2).toEqual(passes);
      // Each read of more rows than handOverAfter was handed over, at least that far in (a
      // tampered chain is read again on one thread: its answer is the one-thread checker's).
      const rows = v.record_count - v.legacy_record_count;
      if (handOverAfter < rows && passes.length && v.status === 'ok') expect(handOvers.length).toBe(passes.length);
      if (handOverAfter === Infinity) expect(handOvers).toEqual([]);
      for (const n of handOvers) expect(n).toBeGreaterThanOrEqual(handOverAfter);
    }
  }
  return { v, passes };
}

/** Verify's answer from one read in chain order (no storage-order read). */
async function chainOrderOnly(): Promise<Awaited<ReturnType<typeof verifyAuditChain>>> {
  const passes: VerifyPass[] = [];
  const v = await verifyAuditChain({ db: t.db, clock: systemClock }, { chainOrderOnly: true, onPass: (p) => passes.push(p) });
  expect(passes).toEqual(t.db.kind === 'postgres' ? ['chain order'] : []);
  return v;
}

/** On PostgreSQL the first read is in storage order; PGlite reads pages in chain order. */
const firstRead = (): VerifyPass[] => (t.db.kind === 'postgres' ? ['storage order'] : []);

const at = (rows: Row[], s: number) => rows.findIndex((r) => r.chain_sequence === s);

beforeAll(async () => {
  t = await createTestDb();
  await ensureGenesis(t.db, randomUUID(), systemClock);
  [{ genesis_hash: genesis }] = (await t.db.query<{ genesis_hash: string }>('SELECT genesis_hash FROM audit_chain_genesis')) as [{ genesis_hash: string }];
});
afterAll(async () => {
  await t?.close();
});

describe('verify whatever the storage order', () => {
  it('answers ok, legacy records counted', async () => {
    await load(chain());
    const { v, passes } = await verify();
    expect(v).toMatchObject({ status: 'ok', record_count: LEGACY + N, legacy_record_count: LEGACY, first_chained_sequence: LEGACY + 1 });
    expect(passes).toEqual(firstRead()); // stored in chain order: one read
  });

  it('finds a changed field, a missing record (first, middle, last) and a broken link at their sequences', async () => {
    const changed = chain();
    changed[at(changed, 20)]!.processing_time_ms = 99;
    await load(changed);
    let r = await verify();
    expect(r.v).toMatchObject({ status: 'tampered', tampered_at_sequence: 20, tampered_field_chain: 'content_hash', record_count: LEGACY + N });

    for (const s of [LEGACY + 1, 20, LEGACY + N - 1]) {
      const gap = chain();
      gap.splice(at(gap, s), 1);
      await load(gap);
      r = await verify();
      expect(r.v, `record ${s} missing`).toMatchObject({ status: 'tampered', tampered_at_sequence: s, tampered_field_chain: 'record_hash', record_count: LEGACY + N - 1 });
    }

    const link = chain();
    link[at(link, 33)]!.previous_hash = link[at(link, 31)]!.record_hash;
    await load(link);
    r = await verify();
    expect(r.v).toMatchObject({ status: 'tampered', tampered_at_sequence: 33, tampered_field_chain: 'record_hash' });
  });

  it('takes legacy records wherever they lie', async () => {
    const rows = chain();
    const legacy = rows.splice(0, LEGACY);
    rows.splice(10, 0, legacy[1]!);
    rows.push(legacy[0]!, legacy[2]!);
    await load(rows);
    const { v } = await verify();
    expect(v).toMatchObject({ status: 'ok', record_count: LEGACY + N, legacy_record_count: LEGACY, first_chained_sequence: LEGACY + 1 });
    // A legacy record after the first chained one: reported at its own sequence.
    const late = chain();
    late[at(late, 2)]!.chain_sequence = LEGACY + N + 5;
    await load(late);
    expect((await verify()).v).toMatchObject({ status: 'tampered', tampered_at_sequence: LEGACY + N + 5, tampered_field_chain: 'record_hash' });
  });

  it('reports a chained record relabelled as legacy at its own sequence (first chained, middle, last)', async () => {
    for (const s of [LEGACY + 1, 20, LEGACY + N]) {
      const rows = chain();
      Object.assign(rows[at(rows, s)]!, { record_hash: 'LEGACY_PRE_AUDIT', previous_hash: 'LEGACY_PRE_AUDIT', content_hash: null });
      await load(rows);
      const { v } = await verify();
      expect(v, `record ${s} relabelled`).toMatchObject({ status: 'tampered', tampered_at_sequence: s, tampered_field_chain: 'record_hash' });
      expect(v.error).toMatch(/relabelled|missing/);
    }
  });

  it('gives the same answers when records are not stored in chain order', async () => {
    for (const moved of [LEGACY + 1, 30, LEGACY + N - 1]) {
      const rows = chain();
      const [m] = rows.splice(at(rows, moved), 1);
      rows.push(m!); // stored last, as a record deleted and written again would be
      await load(rows);
      const r = await verify();
      expect(r.v, `record ${moved} stored last`).toMatchObject({ status: 'ok', record_count: LEGACY + N, first_chained_sequence: LEGACY + 1 });
      if (t.db.kind === 'postgres') expect(r.passes).toEqual(['storage order', 'chain order']);
    }
    // Out of order, and tampered before and after the displaced record.
    for (const bad of [10, 50]) {
      const rows = chain();
      rows[at(rows, bad)]!.task_type = 'changed';
      const [m] = rows.splice(at(rows, 30), 1);
      rows.push(m!);
      await load(rows);
      const r = await verify();
      expect(r.v).toMatchObject({ status: 'tampered', tampered_at_sequence: bad, tampered_field_chain: 'record_hash' });
    }
  });
});
