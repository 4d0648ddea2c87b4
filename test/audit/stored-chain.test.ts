/**
 * Stored records keep verifying (PGlite, and PostgreSQL with SVC_TEST_REAL=1): the records
 * of test/fixtures/audit/chain-v1.json were written by the writer of an earlier version
 * (before canonical JSON came from the `canonicalize` package), with tricky values. They are
 * loaded as stored, hashes included, into a fresh database; verify must say ok, the hash
 * code of today must recompute every stored record_hash and content_hash, and today's writer
 * must store the same records with the same hashes from the same inputs.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../harness.js';
import { systemClock } from '../../src/shared/app-context.js';
import { genesisHash } from '../../src/shared/app-context.js';
import { canonicalJson, computeContentHash, computeRecordHash, netstring, type ChainFields } from '../../src/core/audit/hash.js';
import { verifyAuditChain, type VerifyPass } from '../../src/core/audit/verify.js';
import { CHAIN_V1_PATH, writeChainV1, type ChainFixture, type StoredRecord } from '../fixtures/audit/generate-chain-v1.js';

const fixture = JSON.parse(fs.readFileSync(CHAIN_V1_PATH, 'utf8')) as ChainFixture;
let t: TestDb;

function fieldsOf(r: StoredRecord): ChainFields {
  return {
    chain_sequence: r.chain_sequence,
    request_id: r.request_id,
    agent_id: r.agent_id,
    task_type: r.task_type,
    request_params: r.request_params === null ? null : JSON.parse(r.request_params),
    intent_valid: r.intent_valid,
    validation_errors: r.validation_errors === null ? null : JSON.parse(r.validation_errors),
    context_bundle_ids: r.context_bundle_ids,
    context_scd_ids: r.context_scd_ids,
    processing_time_ms: r.processing_time_ms,
    requested_at: new Date(r.requested_at),
    chain_id: r.chain_id,
    parent_request_id: r.parent_request_id,
  };
}

/** Loads the fixture as the owner in one statement, stored hashes and all (no writer involved). */
async function load(): Promise<void> {
  const g = fixture.genesis;
  await t.owner.query('INSERT INTO audit_chain_genesis (deployment_id, genesis_hash, initialized_at) VALUES ($1, $2, $3)', [g.deployment_id, g.genesis_hash, g.initialized_at]);
  for (const a of fixture.agents) await t.owner.query(`INSERT INTO agents (agent_id, name, role_id, created_by) VALUES ($1, 'fixture', 'role:fixture', 'fixture')`, [a]);
  await t.owner.query(
    `INSERT INTO agent_context_requests (chain_sequence, request_id, agent_id, task_type, request_params, intent_valid, validation_errors,
       context_bundle_ids, context_scd_ids, processing_time_ms, requested_at, chain_id, parent_request_id, previous_hash, record_hash, content_hash)
     SELECT x.chain_sequence, x.request_id, x.agent_id, x.task_type, x.request_params::jsonb, x.intent_valid, x.validation_errors::jsonb,
            x.context_bundle_ids, x.context_scd_ids, x.processing_time_ms, x.requested_at, x.chain_id, x.parent_request_id, x.previous_hash, x.record_hash, x.content_hash
       FROM jsonb_to_recordset($1::jsonb) AS x(chain_sequence int8, request_id text, agent_id text, task_type text, request_params text, intent_valid bool,
            validation_errors text, context_bundle_ids text[], context_scd_ids text[], processing_time_ms int4, requested_at timestamptz, chain_id text,
            parent_request_id text, previous_hash text, record_hash text, content_hash text)`,
    [JSON.stringify(fixture.records)],
  );
}

beforeAll(async () => {
  t = await createTestDb();
  await load();
});
afterAll(async () => {
  await t?.close();
});

describe('records stored by an earlier version (test/fixtures/audit/chain-v1.json)', () => {
  it('are what the fixture says: 52 records after a genesis, tricky values stored', async () => {
    expect(fixture.records).toHaveLength(52);
    expect(genesisHash(fixture.genesis.deployment_id, new Date(fixture.genesis.initialized_at))).toBe(fixture.genesis.genesis_hash);
    const [n] = await t.db.query<{ n: number }>('SELECT count(*)::int8 AS n FROM agent_context_requests');
    expect(Number(n!.n)).toBe(52);
    // Values that take the general canonical-JSON path (exponents, long numbers, escapes) are there.
    expect(fixture.records.some((r) => r.validation_errors?.includes('1000000000000000000000'))).toBe(true);
    expect(fixture.records.some((r) => r.request_params?.includes('\\u0001'))).toBe(true);
  });

  it('verify says ok', async () => {
    const passes: VerifyPass[] = [];
    const v = await verifyAuditChain({ db: t.db, clock: systemClock }, { onPass: (p) => passes.push(p) });
    expect(v).toMatchObject({ status: 'ok', record_count: 52, legacy_record_count: 0, first_chained_sequence: 1, genesis_hash: fixture.genesis.genesis_hash, tampered_at_sequence: null });
    if (t.db.kind === 'postgres') expect(passes).toEqual(['storage order']);
  });

  it('today\'s hash code recomputes every stored record_hash and content_hash', () => {
    let rh = fixture.genesis.genesis_hash;
    let ch = fixture.genesis.genesis_hash;
    const wrong: string[] = [];
    for (const r of fixture.records) {
      const f = fieldsOf(r);
      if (r.previous_hash !== rh) wrong.push(`${r.chain_sequence} previous_hash`);
      if (computeRecordHash(f, rh) !== r.record_hash) wrong.push(`${r.chain_sequence} record_hash`);
      if (computeContentHash(f, ch) !== r.content_hash) wrong.push(`${r.chain_sequence} content_hash`);
      rh = r.record_hash;
      ch = r.content_hash;
    }
    expect(wrong).toEqual([]);
  });

  it('canonicalJson gives the stored values\' canonical text (spot checks)', () => {
    // An independent spot check of canonicalJson itself on the stored values: keys sorted by
    // UTF-16 code units (the astral key before U+FFFF), numbers as JavaScript writes them.
    const byKey = fixture.records.find((r) => r.request_params?.includes('bmp last'))!;
    expect(canonicalJson(JSON.parse(byKey.request_params!))).toBe('{"e":"e","é":"e acute","𝄞":"astral (UTF-16 D834 sorts first)","\uffff":"bmp last"}');
    const numbers = fixture.records.find((r) => r.validation_errors?.includes('negZero'))!;
    expect(canonicalJson(JSON.parse(numbers.validation_errors!))).toBe('{"big":1e+21,"negZero":0,"small":1e-7,"sum":0.30000000000000004,"tenth":0.1}');
    const nested = fixture.records.find((r) => r.request_params?.includes('deep'))!;
    expect(netstring(canonicalJson(JSON.parse(nested.request_params!)))).toBe(
      '99:{"empty":{"a":[],"o":{}},"nested":{"a":[],"z":{"y":{"x":[1,[2,[3,{"alpha":null,"deep":"yes"}]]]}}}},',
    );
  });

  it('today\'s writer stores the same records with the same hashes from the same inputs', async () => {
    expect(await writeChainV1()).toEqual(fixture);
  });
});
