/**
 * The byte-level checker of verify (chain-check.ts) against the database's own rendering
 * (PGlite, and PostgreSQL with SVC_TEST_REAL=1): jsonb text compacts to canonical JSON or
 * is sent to the general path, and records whose fields need every general path (escapes,
 * unsorted keys, long numbers, NULL array elements' neighbours, far timestamps) verify.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../../../test/harness.js';
import { ensureGenesis, systemClock } from '../../shared/app-context.js';
import { canonicalJson, computeContentHash, computeRecordHash, type ChainFields } from './hash.js';
import { compactJsonb } from './chain-check.js';
import { verifyAuditChain } from './verify.js';

let t: TestDb;
beforeAll(async () => {
  t = await createTestDb();
});
afterAll(async () => {
  await t?.close();
});

/** jsonb's text output for a JSON text, as the database renders it. */
async function jsonbText(json: string): Promise<string> {
  const [r] = await t.db.query<{ t: string }>('SELECT $1::jsonb::text AS t', [json]);
  return r!.t;
}

function compact(text: string): string | null {
  const src = Buffer.from(text, 'utf8');
  const out = Buffer.alloc(src.length);
  const end = compactJsonb(src, 0, src.length, out, 0);
  return end < 0 ? null : out.toString('utf8', 0, end);
}

describe('jsonb text to canonical JSON', () => {
  const fast = [
    'null',
    'true',
    '0',
    '-17',
    '123456789012345',
    '"plain"',
    '"esc \\" \\\\ \\n \\t \\u0001 \\u001f é ☃ 𝄞 \u2028"',
    '{}',
    '[]',
    '{"ticket": "T-1"}',
    '{"error_code": "INTENT_NOT_ALLOWED", "error_message": "Task type \\"x\\" is not allowed"}',
    '{"a": {"b": [1, 2, {"c": null}]}, "d": [[], {}, [true, false]]}',
    '{"é": 1}',
    '[{"b": 1, "a": 2}]',
  ];
  const general = [
    '{"b": 1, "aa": 2}', // jsonb orders keys by length first
    '{"z": 1, "é": 2, "\\uffff": 3, "𝄞": 4}',
    '{"a\\"": 1, "a": 2}',
    '1.5',
    '1.0',
    '1e3',
    '-0',
    '1234567890123456',
    '12345678901234567890',
    '[0.1, 2]',
  ];

  it('compacts what JSON.parse + canonicalJson would print the same', async () => {
    for (const json of fast) {
      const text = await jsonbText(json);
      expect(compact(text), `${json} -> ${text}`).toBe(canonicalJson(JSON.parse(text)));
    }
  });

  it('leaves to the general path what it cannot prove canonical, and is never wrong', async () => {
    for (const json of general) {
      const text = await jsonbText(json);
      const c = compact(text);
      if (c !== null) expect(c, `${json} -> ${text}`).toBe(canonicalJson(JSON.parse(text)));
    }
    expect(compact(await jsonbText('{"b": 1, "aa": 2}'))).toBeNull();
    expect(compact(await jsonbText('1.5'))).toBeNull();
    expect(compact('-0')).toBeNull();
    expect(compact('1234567890123456')).toBeNull();
    expect(compact('{"a": 1')).toBeNull();
    expect(compact('"open')).toBeNull();
    expect(compact('"raw \u0001 control"')).toBeNull();
  });
});

describe('records that need the general paths', () => {
  it('verify accepts them all, and still catches a change among them', async () => {
    const deploymentId = randomUUID();
    await ensureGenesis(t.db, deploymentId, systemClock);
    const [g] = await t.db.query<{ genesis_hash: string }>('SELECT genesis_hash FROM audit_chain_genesis');
    const agent = `agent:cc-${randomUUID().slice(0, 8)}`;
    await t.db.query(`INSERT INTO agents (agent_id, name, role_id, created_by) VALUES ($1, $1, 'role:test', 'test')`, [agent]);
    const times = [
      '2026-11-21T23:25:25.123Z',
      '1969-12-31T23:59:59.999Z',
      '1999-12-31T23:59:59.999Z',
      '2000-01-01T00:00:00.000Z',
      '2300-06-15T12:34:56.789Z',
      '0001-01-01T00:00:00.000Z',
      '+010000-01-01T00:00:00.001Z',
      '2026-11-22T00:00:00.000Z',
    ];
    const variants: Array<Partial<ChainFields>> = [
      {},
      { task_type: 'task\nwith "newline" \\ \u0001 é 𝄞' },
      { request_params: { b: 1, aa: 2, 'é': { z: [1.5, -0, 12345678901234567168, null] }, q: 'a"b\\c\n\u0007' } },
      { validation_errors: { z: 1, é: 2, '\uffff': 3, '𝄞': 4, list: [1, 2.5, true, null, 'x\u2028y'] } },
      { context_bundle_ids: [], context_scd_ids: ['a"b', 'c\\d', 'NULL', '', 'x y', 'é', '{}', 'a,b', 'bell\u0007'] },
      { context_bundle_ids: null, context_scd_ids: ['scd:only'], processing_time_ms: -5 },
      { processing_time_ms: 2147483647, chain_id: 'chain é', parent_request_id: 'parent "p"' },
      { agent_id: null, processing_time_ms: 0 },
    ];
    let prevRh = g!.genesis_hash;
    let prevCh = g!.genesis_hash;
    const fieldsOf: ChainFields[] = [];
    for (let i = 0; i < 40; i++) {
      const f: ChainFields = {
        chain_sequence: i + 1,
        request_id: i % 3 ? `req-${i}-${randomUUID()}` : `req "${i}" \\ back\tslash \u0001 é 𝄞 ${randomUUID()}`,
        agent_id: agent,
        task_type: 'code_review',
        request_params: { ticket: `T-${i}` },
        intent_valid: i % 2 === 0,
        validation_errors: null,
        context_bundle_ids: ['bundle:meta:0.2.0'],
        context_scd_ids: ['scd:meta:a', 'scd:meta:b'],
        processing_time_ms: i,
        requested_at: new Date(times[i % times.length]!),
        chain_id: null,
        parent_request_id: null,
        ...variants[i % variants.length],
      };
      const rh = computeRecordHash(f, prevRh);
      const ch = computeContentHash(f, prevCh);
      await t.owner.query(
        `INSERT INTO agent_context_requests (request_id, agent_id, task_type, request_params, intent_valid, validation_errors, context_bundle_ids,
           context_scd_ids, processing_time_ms, requested_at, chain_sequence, previous_hash, record_hash, content_hash, chain_id, parent_request_id)
         VALUES ($1, $2, $3, $4::jsonb, $5, $6::jsonb, $7::text[], $8::text[], $9, 'epoch'::timestamptz + $10::int8 * interval '1 millisecond',
           $11, $12, $13, $14, $15, $16)`,
        [
          f.request_id,
          f.agent_id,
          f.task_type,
          f.request_params && JSON.stringify(f.request_params),
          f.intent_valid,
          f.validation_errors && JSON.stringify(f.validation_errors),
          f.context_bundle_ids,
          f.context_scd_ids,
          f.processing_time_ms,
          f.requested_at.getTime(),
          f.chain_sequence,
          prevRh,
          rh,
          ch,
          f.chain_id,
          f.parent_request_id,
        ],
      );
      fieldsOf.push(f);
      prevRh = rh;
      prevCh = ch;
    }
    const ok = await verifyAuditChain({ db: t.db, clock: systemClock });
    expect(ok).toMatchObject({ status: 'ok', record_count: 40, tampered_at_sequence: null, first_chained_sequence: 1 });

    // A change only the content chain sees (an element's quote moved), at sequence 13.
    await t.owner.exec('ALTER TABLE agent_context_requests DISABLE TRIGGER USER');
    try {
      await t.owner.query(`UPDATE agent_context_requests SET context_scd_ids = $1::text[] WHERE chain_sequence = 13`, [['a"b', 'c\\d', 'NULL', '', 'x y', 'é', '{}', 'a', 'b', 'bell\u0007']]);
      const v = await verifyAuditChain({ db: t.db, clock: systemClock });
      expect(v).toMatchObject({ status: 'tampered', tampered_at_sequence: 13, tampered_field_chain: 'content_hash' });
      await t.owner.query(`UPDATE agent_context_requests SET context_scd_ids = $1::text[] WHERE chain_sequence = 13`, [fieldsOf[12]!.context_scd_ids]);
      // The far timestamp of record 7, a millisecond later: the spec's chain sees it.
      await t.owner.query(`UPDATE agent_context_requests SET requested_at = requested_at + interval '1 millisecond' WHERE chain_sequence = 7`);
      const w = await verifyAuditChain({ db: t.db, clock: systemClock });
      expect(w).toMatchObject({ status: 'tampered', tampered_at_sequence: 7, tampered_field_chain: 'record_hash' });
    } finally {
      await t.owner.exec('ALTER TABLE agent_context_requests ENABLE TRIGGER USER');
    }
  });
});
