/**
 * verifyAppend against a log built here the way the server builds one: real audit records
 * (hashes from core/audit/hash.ts, canonical JSON leaves), tiles from appendLeaves, entry
 * bundles from entryBundle, roots from rootHash, inclusion proofs from inclusionProof.
 */
import { describe, expect, it } from 'vitest';
import { canonicalJson, computeContentHash, computeRecordHash, LEGACY_SENTINEL, sha256Hex, type ChainFields } from '../audit/hash.js';
import { appendLeaves, inclusionProof, leafHash, rootHash, TILE_WIDTH, type ReadTile } from './merkle.js';
import { entryBundle } from './tile-path.js';
import { LeafRecordChecker } from './record-check.js';
import { rightmostTiles, TreeExtender } from './tree-extender.js';
import { verifyAppend, type TlogSource } from './verify-append.js';

const GENESIS = sha256Hex('genesis');

/** An in-memory log: records appended as the server appends them. */
class MemLog {
  leaves: Buffer[] = [];
  tiles = new Map<string, Buffer>();
  private tip: { seq: number; rh: string; ch: string } | null = null;
  private legacySeq = 0;
  private pending: Buffer[] = [];
  private size = 0;
  fetches = 0;

  legacy(): void {
    this.legacySeq++;
    this.push({ request_id: `legacy-${this.legacySeq}`, agent_id: null, task_type: 'old', request_params: null, intent_valid: true, validation_errors: null,
      context_bundle_ids: null, context_scd_ids: null, processing_time_ms: null, requested_at: '2024-01-01T00:00:00.000Z', chain_sequence: this.legacySeq,
      previous_hash: LEGACY_SENTINEL, record_hash: LEGACY_SENTINEL, content_hash: null, chain_id: null, parent_request_id: null });
  }

  request(i: number): void {
    const seq = (this.tip?.seq ?? this.legacySeq) + 1;
    const f: ChainFields = {
      chain_sequence: seq, request_id: `req-${i}`, agent_id: i % 3 ? `agent-${i % 7}` : null, task_type: 'code_review',
      request_params: { n: i, s: 'x'.repeat(i % 40) }, intent_valid: i % 5 !== 0, validation_errors: i % 5 ? null : { why: 'no' },
      context_bundle_ids: ['bundle:a:1.0.0'], context_scd_ids: ['scd:project:a'], processing_time_ms: i % 9,
      requested_at: new Date(1_700_000_000_000 + i * 1000), chain_id: null, parent_request_id: null,
    };
    const prevRh = this.tip?.rh ?? GENESIS;
    const prevCh = this.tip?.ch ?? GENESIS;
    const rh = computeRecordHash(f, prevRh);
    const ch = computeContentHash(f, prevCh);
    this.tip = { seq, rh, ch };
    this.push({ ...f, requested_at: f.requested_at.toISOString(), previous_hash: prevRh, record_hash: rh, content_hash: ch });
  }

  output(i: number): void {
    const output = { text: `out ${i}`, k: [1, 2, i] };
    this.push({ output_id: `out-${i}`, request_id: `req-${i}`, agent_id: 'agent-1', output, output_type: null, output_hash: sha256Hex(canonicalJson(output)), created_at: new Date(1_700_000_000_000).toISOString() });
  }

  push(rec: Record<string, unknown>): void {
    this.pending.push(Buffer.from(canonicalJson({ ...rec, leaf_index: this.leaves.length + this.pending.length })));
  }

  /** Commits the pending records to the tree (like the server's sequencer). */
  flush(): void {
    const last = new Map<number, Uint8Array>();
    for (const t of rightmostTiles(this.size)) last.set(t.level, this.tiles.get(`${t.level}/${t.index}`)!.subarray(0, t.width * 32));
    const { size, tiles } = appendLeaves(this.size, last, this.pending.map((d) => leafHash(d)));
    for (const t of tiles) this.tiles.set(`${t.level}/${t.index}`, t.data);
    for (const d of this.pending) this.leaves.push(d);
    this.pending = [];
    this.size = size;
  }

  read: ReadTile = async (level, index) => this.tiles.get(`${level}/${index}`)!;

  async headAsync(): Promise<{ size: number; root: Buffer }> {
    return { size: this.size, root: await rootHash(this.read, this.size) };
  }

  source(tamper: { leaf?: number; data?: Buffer } = {}): TlogSource {
    return {
      hashTile: async (level, index, width) => {
        const t = this.tiles.get(`${level}/${index}`);
        if (!t) throw new Error(`no tile ${level}/${index}`);
        const w = width ?? TILE_WIDTH;
        if (t.length < w * 32) throw new Error(`tile ${level}/${index} has no width ${w}`);
        return t.subarray(0, w * 32);
      },
      entryBundle: async (index, width) => {
        this.fetches++;
        const w = width ?? TILE_WIDTH;
        const entries = this.leaves.slice(index * TILE_WIDTH, index * TILE_WIDTH + w).map((d, k) => (index * TILE_WIDTH + k === tamper.leaf ? tamper.data! : d));
        if (entries.length !== w) throw new Error(`no bundle ${index} of width ${w}`);
        return entryBundle(entries);
      },
      inclusionProof: async ({ leafIndex, treeSize }) => ({ hashes: await inclusionProof(this.read, leafIndex, treeSize) }),
    };
  }
}

function build(steps: Array<(log: MemLog, i: number) => void>, count: number, log = new MemLog(), start = 0): MemLog {
  for (let i = start; i < start + count; i++) steps[i % steps.length](log, i);
  return log;
}
const req = (l: MemLog, i: number) => l.request(i);
const out = (l: MemLog, i: number) => l.output(i);

describe('TreeExtender', () => {
  it('gives the root of every size from the rightmost tiles only', async () => {
    const log = build([req, out], 700);
    log.flush();
    for (const m of [0, 1, 255, 256, 257, 511, 513, 600]) {
      const seed = new Map<number, Uint8Array>();
      for (const t of rightmostTiles(m)) seed.set(t.level, log.tiles.get(`${t.level}/${t.index}`)!.subarray(0, t.width * 32));
      const ext = new TreeExtender(m, seed);
      expect(await ext.root()).toEqual(await rootHash(log.read, m));
      for (let at = m; at < 700; at += 37) {
        ext.append(log.leaves.slice(at, Math.min(at + 37, 700)).map((d) => leafHash(d)));
        expect(await ext.root()).toEqual(await rootHash(log.read, Math.min(at + 37, 700)));
      }
    }
  });
});

describe('LeafRecordChecker', () => {
  it('accepts the chain and outputs, refuses an edited field, a broken link and a wrong leaf index', () => {
    const log = build([req, req, out], 30);
    log.flush();
    const ok = new LeafRecordChecker(null);
    log.leaves.forEach((d, i) => expect(ok.check(i, d)).toBeNull());
    expect([ok.requests, ok.outputs]).toEqual([20, 10]);

    const edit = (i: number, f: (r: Record<string, unknown>) => void) => {
      const c = new LeafRecordChecker(null);
      for (let k = 0; k < i; k++) expect(c.check(k, log.leaves[k])).toBeNull();
      const r = JSON.parse(log.leaves[i].toString()) as Record<string, unknown>;
      f(r);
      return c.check(i, Buffer.from(JSON.stringify(r)));
    };
    expect(edit(4, (r) => (r.context_scd_ids = ['scd:project:b']))).toMatch(/content_hash .* not the recomputed/);
    expect(edit(4, (r) => (r.task_type = 'other'))).toMatch(/record_hash .* not the recomputed/);
    expect(edit(4, (r) => (r.previous_hash = 'a'.repeat(64)))).toMatch(/previous_hash is not the record_hash of chain_sequence 3/);
    expect(edit(4, (r) => (r.leaf_index = 5))).toMatch(/leaf_index 5/);
    expect(edit(5, (r) => ((r.output as { text: string }).text = 'changed'))).toMatch(/output_hash/);
    expect(edit(5, (r) => delete r.output_id)).toMatch(/neither/);
  });

  it('takes legacy records first, then the genesis; refuses a legacy record after the chain', () => {
    const log = new MemLog();
    log.legacy();
    log.legacy();
    build([req, out], 6, log);
    log.flush();
    const c = new LeafRecordChecker(null);
    log.leaves.forEach((d, i) => expect(c.check(i, d)).toBeNull());
    const legacy = JSON.parse(log.leaves[0].toString()) as Record<string, unknown>;
    expect(c.check(log.leaves.length, Buffer.from(JSON.stringify({ ...legacy, leaf_index: log.leaves.length })))).toMatch(/legacy record .* after a chained record/);
  });
});

const LEAVES = Number(process.env.TLOG_BENCH_LEAVES ?? 100_000);

describe('verifyAppend', () => {
  it('verifies an extension from every kind of old size (empty, partial, tile boundary), with outputs between requests', async () => {
    const log = new MemLog();
    log.legacy();
    const heads = [await log.headAsync()];
    let i = 0;
    for (const count of [1, 254, 1, 300, 3, 512, 100]) {
      build([req, out, out, req], count, log, i);
      i += count;
      log.flush();
      heads.push(await log.headAsync());
    }
    const last = heads[heads.length - 1];
    for (const from of heads) {
      const r = await verifyAppend(log.source(), from, last, { concurrency: 3 });
      expect(r, `from ${from.size}`).toMatchObject({ ok: true, leaves: last.size - from.size });
    }
    // Consecutive checkpoints too.
    for (let k = 1; k < heads.length; k++) expect((await verifyAppend(log.source(), heads[k - 1], heads[k])).ok).toBe(true);
  });

  it('gives each streamed bundle back once, after its last read (release() wipes it here)', async () => {
    const log = build([req, out, req], 1000);
    log.flush();
    const from = { size: 300, root: await rootHash(log.read, 300) };
    const to = await log.headAsync();
    const src = log.source();
    const released: Uint8Array[] = [];
    const wiping = { ...src, release: (d: Uint8Array) => { released.push(d); d.fill(0); } };
    const r = await verifyAppend(wiping, from, to, { concurrency: 3 });
    expect(r).toMatchObject({ ok: true, leaves: 700 });
    // Bundles 1, 2 and 3 (300 is inside bundle 1): each released once.
    expect(released.length).toBe(3);
    expect(new Set(released.map((d) => d.buffer)).size).toBe(3);
  });

  it('walks back over outputs to the last request before the old size, authenticating what it reads', async () => {
    const log = build([req], 10);
    build([out], 600, log, 10); // 600 outputs: the last request is 2 bundles back
    log.flush();
    const from = await log.headAsync();
    build([req, out], 20, log, 610);
    log.flush();
    const to = await log.headAsync();
    expect(await verifyAppend(log.source(), from, to)).toMatchObject({ ok: true, leaves: 20, requests: 10, outputs: 10 });
    // The old request at leaf 9 served edited: its inclusion proof in the old tree fails.
    const r = JSON.parse(log.leaves[9].toString()) as Record<string, unknown>;
    const bad = await verifyAppend(log.source({ leaf: 9, data: Buffer.from(canonicalJson({ ...r, record_hash: 'f'.repeat(64) })) }), from, to);
    expect(bad).toMatchObject({ ok: false, leafIndex: 9, reason: 'the leaf data is not included in the old tree' });
  });

  it('names the first failing leaf: an edited record, a record the root does not cover, a forked chain', async () => {
    const log = build([req, out], 300);
    log.flush();
    const from = await log.headAsync();
    build([req, out], 400, log, 300);
    log.flush();
    const to = await log.headAsync();

    // A record whose hashes were recomputed consistently (the chain checks pass) but whose leaf is not the logged one.
    const forged = (idx: number, change: (f: Record<string, unknown>) => void) => {
      const rec = JSON.parse(log.leaves[idx].toString()) as Record<string, unknown>;
      change(rec);
      return Buffer.from(canonicalJson(rec));
    };
    const edited = await verifyAppend(log.source({ leaf: 450, data: forged(450, (r) => (r.task_type = 'x')) }), from, to);
    expect(edited).toMatchObject({ ok: false, leafIndex: 450 });
    expect(edited.reason).toMatch(/record_hash/);

    const out451 = forged(451, (r) => { r.output = { text: 'other' }; r.output_hash = sha256Hex(canonicalJson(r.output)); });
    const swapped = await verifyAppend(log.source({ leaf: 451, data: out451 }), from, to);
    expect(swapped).toMatchObject({ ok: false });
    expect(swapped.reason).toMatch(/not the checkpoint's root/);

    const wrongRoot = await verifyAppend(log.source(), from, { size: to.size, root: from.root });
    expect(wrongRoot.reason).toMatch(/not the checkpoint's root/);
    expect((await verifyAppend(log.source(), to, from)).reason).toMatch(/shrank/);
    expect((await verifyAppend(log.source(), { size: from.size, root: to.root }, to)).reason).toMatch(/do not give the old root/);
  });

  it('streams a million leaves in constant memory and reports the rate', async () => {
    const log = build([req, out, req, req], LEAVES);
    log.flush();
    const to = await log.headAsync();
    const before = process.memoryUsage().heapUsed;
    let peak = 0;
    const t0 = performance.now();
    const r = await verifyAppend(log.source(), { size: 0, root: await rootHash(log.read, 0) }, to, {
      onBundle: (n) => { if (n % 65536 === 0) peak = Math.max(peak, process.memoryUsage().heapUsed - before); },
    });
    const secs = (performance.now() - t0) / 1000;
    expect(r).toMatchObject({ ok: true, leaves: LEAVES });
    console.log(`verifyAppend: ${LEAVES} leaves in ${secs.toFixed(2)} s (${Math.round(LEAVES / secs).toLocaleString('en-US')} leaves/s), heap growth peak ${(peak / 2 ** 20).toFixed(0)} MB`);
    expect(peak).toBeLessThan(64 * 2 ** 20);
  }, 120_000);
});
