/**
 * The integrator's own canonical JSON of an audit record (auditRecordJson) against the
 * `canonicalize` package (RFC 8785) on records holding every kind of value a record can.
 */
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../shared/canonical-json.js';
import type { AuditRecord } from '../audit/read.js';
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
