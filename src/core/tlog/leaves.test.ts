/**
 * The integrator's own canonical JSON of an audit record (auditRecordJson) against the
 * `canonicalize` package (RFC 8785) on records holding every kind of value a record can.
 */
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../shared/canonical-json.js';
import type { AuditRecord, AuditRow } from '../audit/read.js';
import type { OutputRow } from '../audit/output.js';
import { auditRecordJson } from './leaves.js';

const tricky = ['', 'plain', 'ünïcode ✓', '"quoted" \\ back', 'line\nbreak\ttab', '\u0001\u001f\u007f', '\u2028\u2029', '😀 surrogate pair', '\uFFFD', '</script>'];

function record(i: number): AuditRecord {
  const t = (k: number) => tricky[(i + k) % tricky.length]!;
  return {
    request_id: `r-${t(0)}`,
    agent_id: i % 3 ? `agent:${t(1)}` : null,
    task_type: t(2),
    request_params: i % 2 ? { [t(3)]: t(4), b: 'x', a: t(5), 'é': '1', A: '2' } : null,
    intent_valid: i % 4 !== 0,
    validation_errors: i % 5 ? null : { error_code: 'VALIDATION_ERROR', errors: [{ path: t(6), rule: 'x', message: t(7) }], n: 1.5, z: [3, 2e21, -0.25] },
    context_bundle_ids: i % 3 ? [`bundle:${t(8)}:1.0.0`, 'bundle:b:2.0.0'] : null,
    context_scd_ids: i % 3 ? [] : null,
    processing_time_ms: i % 7 ? i * 13 : null,
    requested_at: new Date(1_790_000_000_000 + i * 997).toISOString(),
    chain_sequence: i + 1,
    previous_hash: i ? 'a'.repeat(64) : 'LEGACY_PRE_AUDIT',
    record_hash: i ? 'b'.repeat(64) : 'LEGACY_PRE_AUDIT',
    content_hash: i ? 'c'.repeat(64) : null,
    chain_id: i % 2 ? t(9) : null,
    parent_request_id: i % 6 ? null : t(1),
    leaf_index: i * 1_000_003,
  };
}

describe('auditRecordJson', () => {
  it('is the RFC 8785 canonical JSON of the record, for every kind of value', () => {
    for (let i = 0; i < 500; i++) expect(auditRecordJson(record(i)), `record ${i}`).toBe(canonicalJson(record(i)));
  });
});

describe('readLeaves', () => {
  it('gives each record as the read endpoint returns it, in canonical JSON, whatever its ids hold', async () => {
    const { createTestDb } = await import('../../../test/harness.js');
    const { ensureGenesis, systemClock } = await import('../../shared/app-context.js');
    const { memoryLogger } = await import('../../shared/logger.js');
    const { AuditWriter } = await import('../audit/writer.js');
    const { listAuditRequests } = await import('../audit/read.js');
    const { readLeaves } = await import('./leaves.js');
    const { randomUUID } = await import('node:crypto');
    const t = await createTestDb();
    try {
      await ensureGenesis(t.db, randomUUID(), systemClock);
      const w = new AuditWriter({ db: t.db, clock: systemClock, logger: memoryLogger() });
      for (let i = 0; i < tricky.length; i++) {
        const ids = [tricky[i]!, tricky[(i + 1) % tricky.length]!, `scd:${i}`];
        await w.append({
          requestId: randomUUID(), agentId: null, taskType: tricky[i]!, requestParams: i % 2 ? { [tricky[i]!]: 'v' } : null, intentValid: true,
          validationErrors: i % 4 ? null : { n: 1.5, z: [2e21, -0.25], [tricky[i]!]: { b: 1, a: [] } }, contextBundleIds: ids, contextScdIds: i % 3 ? ids.slice(1) : null, processingTimeMs: i, chainId: null, parentRequestId: null,
        });
      }
      const records = (await listAuditRequests({ db: t.db } as never, { limit: 100 })).records;
      const leaves = await readLeaves(t.db, 0, 100);
      expect(leaves.map((l) => l.index)).toEqual(records.map((r) => r.leaf_index));
      for (let i = 0; i < records.length; i++) expect(leaves[i]!.data.toString('utf8')).toBe(canonicalJson(records[i]));
      // The leaf hash the database computed as it stored each record (migration 0011) is the
      // hash of that same JSON, and is what the integrator reads.
      const { leafHash } = await import('./merkle.js');
      const { readLeafHashes } = await import('./leaves.js');
      const stored = await readLeafHashes(t.db, 0, 100);
      expect(stored.map((h) => h.toString('hex'))).toEqual(leaves.map((l) => leafHash(l.data).toString('hex')));
      const nulls = await t.db.query('SELECT 1 FROM agent_context_requests WHERE leaf_hash IS NULL');
      expect(nulls).toEqual([]);
      // Verify's check of every stored leaf hash against its record (the chain checker writes
      // each record's canonical JSON from the bytes it reads) agrees on every kind of text, and
      // finds a changed hash.
      const { verifyAuditChain } = await import('../audit/verify.js');
      const ok = await verifyAuditChain({ db: t.db, clock: systemClock });
      expect(ok).toMatchObject({ status: 'ok', leafFailure: null });
      const flip = async (leaf: number) => {
        await t.owner.exec('ALTER TABLE agent_context_requests DISABLE TRIGGER USER');
        await t.owner.query('UPDATE agent_context_requests SET leaf_hash = sha256(leaf_hash) WHERE leaf_index = $1', [leaf]);
        await t.owner.exec('ALTER TABLE agent_context_requests ENABLE TRIGGER USER');
      };
      const original = await t.db.query<{ h: unknown }>('SELECT leaf_hash AS h FROM agent_context_requests WHERE leaf_index = 4');
      await flip(4);
      await flip(7);
      expect((await verifyAuditChain({ db: t.db, clock: systemClock })).leafFailure?.leaf).toBe(4);
      await t.owner.exec('ALTER TABLE agent_context_requests DISABLE TRIGGER USER');
      await t.owner.query('UPDATE agent_context_requests SET leaf_hash = $1 WHERE leaf_index = 4', [original[0]!.h]);
      await t.owner.exec('ALTER TABLE agent_context_requests ENABLE TRIGGER USER');
      expect((await verifyAuditChain({ db: t.db, clock: systemClock })).leafFailure?.leaf).toBe(7);
    } finally {
      await t.close();
    }
  });
});

describe('the writer\'s batches (svc_audit_append_lists, migration 0019)', () => {
  it('stores a batch whose records share some id lists, hold others of their own or none, as the read endpoint and verify expect', async () => {
    const { createTestDb } = await import('../../../test/harness.js');
    const { ensureGenesis, systemClock } = await import('../../shared/app-context.js');
    const { memoryLogger } = await import('../../shared/logger.js');
    const { AuditWriter } = await import('../audit/writer.js');
    const { listAuditRequests } = await import('../audit/read.js');
    const { readLeaves, readLeafHashes } = await import('./leaves.js');
    const { leafHash } = await import('./merkle.js');
    const { verifyAuditChain } = await import('../audit/verify.js');
    const { randomUUID } = await import('node:crypto');
    const t = await createTestDb();
    try {
      await ensureGenesis(t.db, randomUUID(), systemClock);
      let statements = 0;
      const db = Object.assign(Object.create(t.db) as typeof t.db, {
        query: (...a: Parameters<typeof t.db.query>) => {
          statements++;
          return t.db.query(...a);
        },
      });
      const w = new AuditWriter({ db, clock: systemClock, logger: memoryLogger() });
      const shared = Object.freeze(['bundle:meta:0.2.0', 'bundle:security:1.0.0']);
      const sharedScds = Object.freeze(['scd:meta:a', 'scd:security:b', 'scd:security:c']);
      const lists: Array<readonly string[] | null> = [shared, sharedScds, null, [], [...tricky], ['"quoted" \\ back', 'scd:x'], shared, null];
      const entries = Array.from({ length: 24 }, (_, i) => ({
        requestId: randomUUID(), agentId: null, taskType: tricky[i % tricky.length]!, requestParams: i % 2 ? { k: tricky[i % tricky.length]! } : null, intentValid: i % 5 !== 0,
        validationErrors: null, contextBundleIds: lists[i % lists.length] as string[] | null, contextScdIds: lists[(i * 3 + 1) % lists.length] as string[] | null,
        processingTimeMs: i, chainId: null, parentRequestId: null,
      }));
      // Appended in one turn: one batch, one statement.
      const committed = await Promise.all(entries.map((e) => w.append(e)));
      expect(statements).toBe(1);
      expect(committed.map((c) => c.chainSequence)).toEqual(committed.map((_, i) => committed[0]!.chainSequence + i));
      const records = (await listAuditRequests({ db: t.db } as never, { limit: 100 })).records;
      const byId = new Map(records.map((r) => [r.request_id, r]));
      for (const e of entries) {
        const r = byId.get(e.requestId)!;
        expect(r.context_bundle_ids).toEqual(e.contextBundleIds);
        expect(r.context_scd_ids).toEqual(e.contextScdIds);
      }
      const leaves = await readLeaves(t.db, 0, 100);
      for (let i = 0; i < records.length; i++) expect(leaves[i]!.data.toString('utf8')).toBe(canonicalJson(records[i]));
      const stored = await readLeafHashes(t.db, 0, 100);
      expect(stored.map((h) => h.toString('hex'))).toEqual(leaves.map((l) => leafHash(l.data).toString('hex')));
      expect(await verifyAuditChain({ db: t.db, clock: systemClock })).toMatchObject({ status: 'ok', leafFailure: null });
    } finally {
      await t.close();
    }
  });
});

describe('readLeaves, PostgreSQL writing the JSON (requestJsonSql)', () => {
  // Values no writer would store but a column can hold, each kind at least once; the leaves are
  // compared with the record as the read endpoint's row mapping gives it (toAuditRecord,
  // toAgentOutput), canonicalized by the `canonicalize` package, and with readLeavesInNode.
  const objects: Array<unknown> = [
    null,
    { b: tricky[1], a: [1, 1.5, -0.25, 2e21, 1e-7, Number('12345678901234567890'), 0, true, false, null], '': { z: {}, y: [] }, 'é': tricky[2], A: tricky[5], '😀': tricky[7] },
    { error_code: 'VALIDATION_ERROR', errors: [{ path: tricky[4], message: tricky[6] }], n: -1 },
    { nested: { deeper: { deepest: [[], [[]], { k: '\u0000'.length }] } } },
    [1, 2, 3],
    'a JSON string',
    '{"a JSON string":"holding an object"}',
    42,
  ];
  const times = ['2026-11-26T04:12:15.123Z', '0100-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '1969-12-31T23:59:59.999Z', '1970-01-01T00:00:00.000Z', '2000-02-29T12:00:00.5Z'];
  const ints = [null, 0, -1, 2_147_483_647, -2_147_483_648, 7];
  const arrays = [null, [], [tricky[0]!, tricky[3]!], tricky, ['x', 'NULL']];

  it('is byte for byte the record as read and canonicalized in Node, for every kind of value', { timeout: 120_000 }, async () => {
    const { createTestDb } = await import('../../../test/harness.js');
    const { textArrayLiteral } = await import('../audit/writer.js');
    const { AUDIT_COLUMNS, toAuditRecord } = await import('../audit/read.js');
    const { OUTPUT_COLUMNS, toAgentOutput } = await import('../audit/output.js');
    const { readEntryBundle, readLeaves, readLeavesInNode } = await import('./leaves.js');
    const { entryBundle } = await import('./tile-path.js');
    const t = await createTestDb();
    try {
      for (const a of ['agent:a', 'agent:b.c_d-e']) {
        await t.owner.query(`INSERT INTO agents (agent_id, name, role_id, created_by) VALUES ($1, $1, 'role:x', 'test')`, [a]);
      }
      const arr = (v: string[] | null) => (v === null ? null : textArrayLiteral(v));
      let seq = 1;
      const request = async (leaf: number, i: number, over: { chain_sequence?: string; requested_at?: string } = {}) => {
        const t2 = (k: number) => tricky[(i + k) % tricky.length]!;
        const json = (v: unknown) => (v === null ? null : JSON.stringify(v));
        await t.owner.query(
          `INSERT INTO agent_context_requests (request_id, agent_id, task_type, request_params, intent_valid, validation_errors, context_bundle_ids,
             context_scd_ids, processing_time_ms, requested_at, chain_sequence, previous_hash, record_hash, content_hash, chain_id, parent_request_id, leaf_index)
           VALUES ($1, $2, $3, $4::jsonb, $5, $6::jsonb, $7::text::text[], $8::text::text[], $9, $10::text::timestamptz, $11::text::bigint, $12, $13, $14, $15, $16, $17)`,
          [
            `r${leaf}-${t2(0)}`, i % 3 === 0 ? null : i % 3 === 1 ? 'agent:a' : 'agent:b.c_d-e', t2(1), json(objects[i % objects.length]), i % 2 === 0,
            json(objects[(i + 3) % objects.length]), arr(arrays[i % arrays.length]!), arr(arrays[(i + 2) % arrays.length]!), ints[i % ints.length],
            over.requested_at ?? times[i % times.length], over.chain_sequence ?? String(seq++), i % 4 ? t2(2) || 'p' : 'LEGACY_PRE_AUDIT', i % 5 ? t2(3) || 'r' : 'LEGACY_PRE_AUDIT',
            i % 5 ? t2(4) || 'c' : null, i % 2 ? t2(5) : null, i % 3 ? null : t2(6), leaf,
          ],
        );
      };
      const output = async (leaf: number, i: number) => {
        const [req] = await t.owner.query<{ request_id: string }>('SELECT request_id FROM agent_context_requests ORDER BY chain_sequence LIMIT 1');
        await t.owner.query(
          `INSERT INTO agent_output_logs (output_id, request_id, agent_id, output_type, output, output_hash, created_at, leaf_index) VALUES ($1, $2, 'agent:a', $3, $4::jsonb, $5, $6::text::timestamptz, $7)`,
          [`o${leaf}`, req!.request_id, i % 2 ? null : tricky[i % tricky.length], JSON.stringify(objects[1 + (i % 3)]), 'h', times[i % times.length], leaf],
        );
      };
      await t.owner.exec('ALTER TABLE agent_context_requests DISABLE TRIGGER USER');
      await t.owner.exec('ALTER TABLE agent_output_logs DISABLE TRIGGER USER');
      // Leaves 0..199 (every seventh an output), a run far up (2^52), and records Node must
      // write itself: a chain_sequence past 2^53 and years outside 100..9999.
      for (let i = 0; i < 200; i++) await (i % 7 === 6 ? output(i, i) : request(i, i));
      const far = 2 ** 52;
      for (let i = 0; i < 20; i++) await (i % 5 === 4 ? output(far + i, i) : request(far + i, i));
      await request(1000, 1, { chain_sequence: '9007199254740991' });
      await request(1001, 2, { chain_sequence: '9007199254740993' });
      await request(1002, 3, { requested_at: '10000-01-01T00:00:00Z' });
      await request(1003, 4, { requested_at: '0001-01-01 00:00:00 BC' });
      await request(1004, 5, { requested_at: '0001-01-01T00:00:00Z' });
      await request(1005, 6, { requested_at: '0099-12-31T23:59:59.999Z' });
      await request(1006, 7);
      await t.owner.exec('ALTER TABLE agent_context_requests ENABLE TRIGGER USER');
      await t.owner.exec('ALTER TABLE agent_output_logs ENABLE TRIGGER USER');

      const reference = async (from: number, count: number) => {
        const [rs, os] = await Promise.all([
          t.db.query<AuditRow>(`SELECT ${AUDIT_COLUMNS} FROM agent_context_requests WHERE leaf_index >= $1 AND leaf_index < $2`, [from, from + count]),
          t.db.query<OutputRow>(`SELECT ${OUTPUT_COLUMNS} FROM agent_output_logs WHERE leaf_index >= $1 AND leaf_index < $2`, [from, from + count]),
        ]);
        const byIndex = new Map<number, string>();
        for (const r of rs) byIndex.set(Number(r.leaf_index), canonicalJson(toAuditRecord(r)));
        for (const o of os) byIndex.set(Number(o.leaf_index), canonicalJson(toAgentOutput(o)));
        return byIndex;
      };
      let compared = 0;
      for (const [from, count, want] of [[0, 200, 200], [0, 256, 200], [37, 50, 50], [far, 20, 20], [far - 1, 5, 0], [1000, 2, 2], [1001, 1, 1], [1002, 1, 1], [1003, 1, 1], [1004, 1, 1], [1005, 1, 1], [1006, 1, 1], [1000, 7, 7]] as const) {
        const node = await readLeavesInNode(t.db, from, count).catch((x: Error) => x);
        if (node instanceof Error) {
          // A date no JavaScript Date holds (a year past 9999, or BC, as the driver parses
          // them): the read fails as it did.
          expect(node, `${from}+${count}`).toBeInstanceOf(RangeError);
          expect(from, 'only the records of the far years may fail').toBeGreaterThanOrEqual(1000);
          await expect(readLeaves(t.db, from, count)).rejects.toThrow(node.message);
          continue;
        }
        const got = await readLeaves(t.db, from, count);
        expect(got.length, `${from}+${count}`).toBe(want);
        // The entry bundle of the range: written straight from the COPY rows or, where a leaf
        // is not a context request the writer writes, from readLeaves; null unless whole.
        const bundle = await readEntryBundle(t.db, from, count);
        if (want === count) expect(bundle?.equals(entryBundle(got.map((l) => l.data))), `bundle ${from}+${count}`).toBe(true);
        else expect(bundle, `bundle ${from}+${count}`).toBeNull();
        const ref = await reference(from, count);
        for (let k = 0; k < got.length; k++) {
          expect(got[k]!.index).toBe(from + k);
          expect(got[k]!.data.toString('utf8'), `leaf ${from + k}`).toBe(ref.get(from + k));
          expect(got[k]!.data.equals(node[k]!.data), `leaf ${from + k}`).toBe(true);
          compared++;
        }
      }
      expect(compared).toBeGreaterThanOrEqual(2 * 200 + 50 + 20 + 4);
      // The records of the first run were written by PostgreSQL, not by the Node fallback.
      const texts: string[] = [];
      await readLeaves({ query: (q: string, p?: unknown[]) => (texts.push(q), t.db.query(q, p)) } as typeof t.db, 0, 256);
      expect(texts.some((q) => q.includes('AS plain'))).toBe(true);
      expect(texts.some((q) => q.includes('bundle_ids_json'))).toBe(false);
    } finally {
      await t.close();
    }
  });
});

describe('entry bundles (TransparencyLog.tile)', () => {
  it('are the bundle of readLeavesInNode; a full one is kept and served again with no query, its prefixes too', { timeout: 120_000 }, async () => {
    const { createTestDb, testEnv } = await import('../../../test/harness.js');
    const { ensureGenesis, systemClock } = await import('../../shared/app-context.js');
    const { memoryLogger } = await import('../../shared/logger.js');
    const { loadConfig } = await import('../../shared/config.js');
    const { AuditWriter } = await import('../audit/writer.js');
    const { TransparencyLog } = await import('./log.js');
    const { entryBundle } = await import('./tile-path.js');
    const { readEntryBundle, readLeavesInNode } = await import('./leaves.js');
    const { randomUUID } = await import('node:crypto');
    const fs = await import('node:fs');
    const t = await createTestDb();
    const env = testEnv();
    try {
      await ensureGenesis(t.db, randomUUID(), systemClock);
      const w = new AuditWriter({ db: t.db, clock: systemClock, logger: memoryLogger() });
      await Promise.all(
        Array.from({ length: 300 }, (_, i) =>
          w.append({
            requestId: randomUUID(), agentId: null, taskType: tricky[i % tricky.length]!, requestParams: i % 3 ? null : { [tricky[i % tricky.length]!]: String(i) },
            intentValid: i % 5 !== 0, validationErrors: i % 5 ? null : { error_code: 'X', n: i }, contextBundleIds: i % 2 ? [tricky[i % tricky.length]!] : null,
            contextScdIds: null, processingTimeMs: i, chainId: null, parentRequestId: null,
          }),
        ),
      );
      let queries = 0;
      // Reads of the records (the checkpoint's size is read again every 200 ms: not counted).
      const db = { ...t.db, query: ((q: string, p?: unknown[]) => (q.includes('agent_context_requests') && queries++, t.db.query(q, p))) as typeof t.db.query };
      const log = new TransparencyLog({ db, config: loadConfig(env), logger: memoryLogger('warn') });
      expect((await log.integrate())?.treeSize).toBe(300);
      const want = entryBundle((await readLeavesInNode(t.db, 0, 256)).map((l) => l.data));
      const partial = await log.tile('entries', 0, 10); // read, not kept
      expect(partial.equals(entryBundle((await readLeavesInNode(t.db, 0, 10)).map((l) => l.data)))).toBe(true);
      expect((await log.tile('entries', 0, undefined)).equals(want)).toBe(true);
      const before = queries;
      expect((await log.tile('entries', 0, undefined)).equals(want)).toBe(true);
      for (const width of [1, 10, 255]) {
        expect((await log.tile('entries', 0, width)).equals(entryBundle((await readLeavesInNode(t.db, 0, width)).map((l) => l.data))), `width ${width}`).toBe(true);
      }
      expect(queries - before).toBe(0);
      // The partial bundle past the full one is read (and not kept), written straight from the
      // COPY rows: no other query of the records.
      expect((await log.tile('entries', 1, 44)).equals(entryBundle((await readLeavesInNode(t.db, 256, 44)).map((l) => l.data)))).toBe(true);
      expect(queries - before).toBe(0);
      // Past the records: none.
      await expect(readEntryBundle(t.db, 290, 11)).resolves.toBeNull();
    } finally {
      await t.close();
      fs.rmSync(env.SVC_DATA_DIR!, { recursive: true, force: true });
    }
  });
});

describe('readLeaves on PostgreSQL: its COPY on a connection of its own', () => {
  // postgres.js queues a query on a busy pooled connection when none is free, and one that
  // reaches a connection streaming a COPY fails (COPY_IN_PROGRESS): the transparency-log
  // benchmark saw entry bundles answer 500 in 4 of about 40 runs of `svc audit verify --since`,
  // and a loop of queries beside four COPY streams on a pool of two met it 47 times in 315.
  // The race needs a query dispatched between two reads of one COPY's stream, which this test
  // cannot bring about at will: it checks that readLeaves sends no COPY through the pool, on
  // a pool of one (the reserved connection must be given back before the other reads need it).
  it('reserves a connection for the COPY and gives it back; reads at once with other queries agree', { timeout: 120_000 }, async () => {
    const { createTestDb, DB_PASSWORD, REAL, testEnv } = await import('../../../test/harness.js');
    if (!REAL) return console.log('skipped: PostgreSQL only (DATABASE_URL with SVC_TEST_REAL=1); PGlite has one connection and no pool');
    const { ensureGenesis, systemClock } = await import('../../shared/app-context.js');
    const { memoryLogger } = await import('../../shared/logger.js');
    const { AuditWriter } = await import('../audit/writer.js');
    const { openDb } = await import('../db/index.js');
    const { readLeaves } = await import('./leaves.js');
    const { TransparencyLog } = await import('./log.js');
    const { loadConfig } = await import('../../shared/config.js');
    const { randomUUID } = await import('node:crypto');
    const t = await createTestDb();
    const small = await openDb({ url: t.appUrl!, password: DB_PASSWORD, max: 1 });
    try {
      await ensureGenesis(t.db, randomUUID(), systemClock);
      const w = new AuditWriter({ db: t.db, clock: systemClock, logger: memoryLogger() });
      await Promise.all(
        Array.from({ length: 512 }, (_, i) =>
          w.append({
            requestId: randomUUID(), agentId: null, taskType: 'code_review', requestParams: i % 3 ? null : { n: String(i) }, intentValid: true,
            validationErrors: null, contextBundleIds: ['bundle:a:1.0.0'], contextScdIds: ['scd:a:b'], processingTimeMs: i, chainId: null, parentRequestId: null,
          }),
        ),
      );
      expect((await new TransparencyLog({ db: t.db, config: loadConfig(testEnv()), logger: memoryLogger('warn') }).integrate())?.treeSize).toBe(512);
      const want = Buffer.concat((await readLeaves(t.db, 0, 512)).map((x) => x.data));

      // The pool's own queries, and the reserved connections taken and released.
      const raw = small.raw!;
      const pooledCopies: string[] = [];
      let reserved = 0;
      let released = 0;
      const watched = new Proxy(raw, {
        get(target, key, receiver) {
          if (key === 'unsafe') {
            return (text: string, ...rest: unknown[]) => {
              if (/^\s*COPY/i.test(text)) pooledCopies.push(text);
              return (target.unsafe as (...a: unknown[]) => unknown)(text, ...rest);
            };
          }
          if (key === 'reserve') {
            return async () => {
              const conn = await target.reserve();
              reserved++;
              const release = conn.release.bind(conn);
              conn.release = () => (released++, release());
              return conn;
            };
          }
          return Reflect.get(target, key, receiver);
        },
      });
      const db = { ...small, raw: watched };

      let reading = true;
      const refused: string[] = [];
      const loop = async () => {
        while (reading) await db.query('SELECT 1').catch((e: unknown) => refused.push(String(e)));
      };
      const loops = Array.from({ length: 4 }, loop);
      const reads = await Promise.allSettled(Array.from({ length: 8 }, () => readLeaves(db, 0, 512)));
      reading = false;
      await Promise.all(loops);
      expect(refused).toEqual([]);
      expect(reads.map((r) => (r.status === 'fulfilled' ? Buffer.concat(r.value.map((x) => x.data)).equals(want) : String(r.reason)))).toEqual(Array(8).fill(true));
      expect(pooledCopies).toEqual([]);
      expect([reserved, released]).toEqual([8, 8]);
    } finally {
      await small.close();
      await t.close();
    }
  });
});
