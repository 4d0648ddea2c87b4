/**
 * The batched tile reads (tileReader, warmUpperTiles) on a stored tree: a proof
 * costs one query at most, and what it reads equals the per-tile path (one query per tile, as
 * the reader did before batching); the proofs verify with the independent RFC 9162 verifier
 * (test/tlog/rfc9162.ts) against the RFC's MTH over the leaf data.
 */
import { describe, expect, it } from 'vitest';
import { createTestDb } from '../../../test/harness.js';
import { rfcLeafHash, rfcMth, rfcVerifyConsistency, rfcVerifyInclusion } from '../../../test/tlog/rfc9162.js';
import type { Db } from '../db/index.js';
import { appendLeaves, consistencyProof, inclusionProof, leafHash, rootHash, subtreeHash, tileInnerNodes, type ReadTile } from './merkle.js';
import { asBuffer, fillTileNodes, newTileCache, NodeCache, tileReader, treeState, warmUpperTiles, writeTiles } from './tiles.js';
import { rng } from '../../../test/rng.js';

const data = (i: number) => Buffer.from(`leaf ${i}`);

/** Appends leaves from..to-1 as the integrator does (treeState, appendLeaves, writeTiles). */
async function grow(db: Pick<Db, 'query'>, to: number): Promise<void> {
  const state = await treeState(db);
  const hashes = [];
  for (let i = state.size; i < to; i++) hashes.push(leafHash(data(i)));
  await writeTiles(db, appendLeaves(state.size, state.lastTiles, hashes).tiles);
}

/** A db that counts its queries. */
function counting(db: Pick<Db, 'query'>) {
  const c = {
    queries: 0,
    query: ((text: string, params?: unknown[]) => {
      c.queries++;
      return db.query(text, params);
    }) as Db['query'],
  };
  return c;
}

/** The per-tile path: one query per tile, no cache (the reader before batching, less its cache). */
const perTile =
  (db: Pick<Db, 'query'>): ReadTile =>
  async (level, index) => {
    const [row] = await db.query<{ data: Uint8Array | string }>('SELECT data FROM audit_tlog_tiles WHERE level = $1 AND idx = $2', [level, index]);
    return row ? asBuffer(row.data) : Buffer.alloc(0);
  };


const hex = (hs: Buffer[]) => hs.map((h) => h.toString('hex'));

describe('batched tile reads', () => {
  it('one query per proof, the per-tile path\'s hashes, proofs the RFC verifier accepts', { timeout: 120_000 }, async () => {
    const t = await createTestDb();
    try {
      // Past a full level-1 tile (65,536 leaves), so level 2 has a partial tile; grown in
      // uneven steps so that tiles are stored partial, then grown.
      const sizes = [1, 300, 65_535, 65_536, 65_537, 70_001];
      for (const s of sizes) await grow(t.db, s);
      const N = sizes[sizes.length - 1]!;
      const leaves = Array.from({ length: N }, (_, i) => data(i));
      const roots = new Map<number, Buffer>();
      const root = (n: number) => roots.get(n) ?? roots.set(n, rfcMth(leaves.slice(0, n))).get(n)!;

      // Sizes at and around the tiles' edges (the RFC's MTH is recomputed for each: a few only).
      const at = [...sizes, 256, 257, 65_792, 69_999];
      const r = rng(7);
      const pick = () => at[Math.floor(r() * at.length)]!;
      const cases: Array<{ kind: 'inclusion'; index: number; size: number } | { kind: 'consistency'; m: number; n: number }> = [];
      for (const n of at) {
        cases.push({ kind: 'inclusion', index: n - 1, size: n }, { kind: 'inclusion', index: 0, size: n }, { kind: 'inclusion', index: Math.floor(r() * n), size: n });
        cases.push({ kind: 'consistency', m: Math.max(1, n - 1), n });
      }
      for (let k = 0; k < 60; k++) {
        const n = pick();
        const m = pick();
        cases.push({ kind: 'inclusion', index: Math.floor(r() * n), size: n }, { kind: 'consistency', m: Math.min(m, n), n: Math.max(m, n) });
      }
      const shared = newTileCache();
      for (const c of cases) {
        const size = c.kind === 'inclusion' ? c.size : c.n;
        const run = (read: ReadTile) => (c.kind === 'inclusion' ? inclusionProof(read, c.index, c.size) : consistencyProof(read, c.m, c.n));
        const want = await run(perTile(t.db));
        // A cold reader (new cache), and readers sharing one cache (as a log's proofs do).
        for (const cache of [newTileCache(), shared]) {
          const db = counting(t.db);
          const got = await run(tileReader(db, cache, size));
          expect(hex(got), JSON.stringify(c)).toEqual(hex(want));
          expect(db.queries, JSON.stringify(c)).toBeLessThanOrEqual(1);
        }
        if (c.kind === 'inclusion') expect(rfcVerifyInclusion(rfcLeafHash(leaves[c.index]!), c.index, c.size, want, root(c.size)), JSON.stringify(c)).toBe(true);
        else expect(rfcVerifyConsistency(c.m, c.n, want, root(c.m), root(c.n)), JSON.stringify(c)).toBe(true);
      }
      // A cold proof deep in the tree needs several tiles, all read in the one query.
      const db = counting(t.db);
      const reads: string[] = [];
      const cold = tileReader(db, newTileCache(), N);
      const seen: ReadTile = (level, index) => (reads.push(`${level}/${index}`), cold(level, index));
      expect(hex(await inclusionProof(seen, 1000, N))).toEqual(hex(await inclusionProof(perTile(t.db), 1000, N)));
      expect(new Set(reads).size).toBeGreaterThanOrEqual(3);
      expect(db.queries).toBe(1);
      expect(hex([await rootHash(tileReader(t.db, newTileCache()), N)])).toEqual(hex([root(N)]));
    } finally {
      await t.close();
    }
  });

  it('warmed full tiles of level >= 1 need no query; partial tiles are read fresh unless the cached copy covers the size', { timeout: 60_000 }, async () => {
    const t = await createTestDb();
    try {
      await grow(t.db, 65_536 + 300);
      const cache = newTileCache();
      expect(await warmUpperTiles(t.db, cache)).toBe(1); // level 1, tile 0 (level 1's tile 1 and level 2's are partial)
      const db = counting(t.db);
      // A leaf of the first 65,536: its level-0 tile and the partial tiles above (level-1 tile 0 is cached).
      const read = tileReader(db, cache, 65_836);
      expect((await read(1, 0)).length).toBe(8192);
      expect(db.queries).toBe(0);
      expect((await read(0, 257)).length).toBe(44 * 32);
      expect(db.queries).toBe(1);
      // The partial tile grows: a reader within the old size may use the cached copy, one past it reads again.
      await grow(t.db, 65_536 + 400);
      expect((await tileReader(db, cache, 65_836)(0, 257)).length).toBe(44 * 32);
      expect(db.queries).toBe(1);
      expect((await tileReader(db, cache, 65_936)(0, 257)).length).toBe(144 * 32);
      expect(db.queries).toBe(2);
      expect((await tileReader(db, cache)(0, 257)).length).toBe(144 * 32);
      expect(db.queries).toBe(3);
      // Tiles asked together: absent tiles are absent (empty), the others are the per-tile path's bytes.
      const together = tileReader(t.db, newTileCache());
      const keys = [[0, 0], [0, 257], [0, 258], [1, 0], [2, 0], [5, 5]] as const;
      const got = await Promise.all(keys.map(([level, index]) => together(level, index)));
      expect(keys.filter((_, k) => got[k]!.length > 0).map(([l, i]) => `${l}/${i}`)).toEqual(['0/0', '0/257', '1/0', '2/0']);
      for (const [k, [level, index]] of keys.entries()) {
        expect(Buffer.from(got[k]!).equals(Buffer.from(await perTile(t.db)(level, index))), `${level}/${index}`).toBe(true);
      }
      // A missing tile reads as empty (the proof code then says which tile fell short).
      expect((await tileReader(t.db, newTileCache())(3, 0)).length).toBe(0);
    } finally {
      await t.close();
    }
  });

  it("a proof reads a full level-0 tile's stored inner nodes, not the tile; a tile stored without them (before 0017) is read whole", { timeout: 60_000 }, async () => {
    const t = await createTestDb();
    try {
      const N = 65_536 + 300;
      await grow(t.db, N);
      const [row] = await t.db.query<{ full: number; with_nodes: number }>(
        'SELECT count(*) FILTER (WHERE length(data) = 8192)::int AS full, count(nodes)::int AS with_nodes FROM audit_tlog_tiles WHERE level = 0',
      );
      expect(row).toEqual({ full: 257, with_nodes: 257 });
      const cache = newTileCache();
      await warmUpperTiles(t.db, cache);
      const db = counting(t.db);
      const proofs = [await inclusionProof(tileReader(db, cache, N), 1000, N), await consistencyProof(tileReader(db, cache, N), 1000, 40_000)];
      expect(db.queries).toBe(2);
      // Leaf 1000's tile (0/3) and 40,000's (0/156) came as nodes; the partial tiles at the right edge whole.
      expect(cache.tiles.has('0/3')).toBe(false);
      expect(cache.tiles.has('0/156')).toBe(false);
      expect(cache.tiles.has('0/257')).toBe(true);
      expect(cache.nodes.size).toBeGreaterThanOrEqual(8); // leaf 1000: its sibling and 7 subtrees within tile 0/3
      // The same proofs again: from the nodes kept, no query.
      expect(hex(await inclusionProof(tileReader(db, cache, N), 1000, N))).toEqual(hex(proofs[0]!));
      expect(hex(await consistencyProof(tileReader(db, cache, N), 1000, 40_000))).toEqual(hex(proofs[1]!));
      expect(db.queries).toBe(2);
      expect(hex(proofs[0]!)).toEqual(hex(await inclusionProof(perTile(t.db), 1000, N)));
      expect(hex(proofs[1]!)).toEqual(hex(await consistencyProof(perTile(t.db), 1000, 40_000)));

      // One of a tile's nodes, then the tile, asked in the same turn: the node as a part, the tile whole.
      const both = tileReader(db, newTileCache(), N);
      const [node, whole] = await Promise.all([both.node!(3, 5 * 32 + 7), both(0, 5)]);
      expect(whole.length).toBe(8192);
      expect(hex([node])).toEqual(hex([await subtreeHash(perTile(t.db), 3, 5 * 32 + 7)]));
      expect(db.queries).toBe(3);

      // Tiles without stored nodes (as before migration 0017): the same proofs, one query, the tiles read whole.
      await t.owner.exec('ALTER TABLE audit_tlog_tiles DISABLE TRIGGER USER');
      await t.owner.exec('UPDATE audit_tlog_tiles SET nodes = NULL WHERE level = 0 AND idx IN (3, 156)');
      await t.owner.exec('ALTER TABLE audit_tlog_tiles ENABLE TRIGGER USER');
      const cold = newTileCache();
      const db2 = counting(t.db);
      expect(hex(await inclusionProof(tileReader(db2, cold, N), 1000, N))).toEqual(hex(proofs[0]!));
      expect(hex(await consistencyProof(tileReader(db2, cold, N), 1000, 40_000))).toEqual(hex(proofs[1]!));
      expect(db2.queries).toBe(2);
      expect(cold.tiles.has('0/3') && cold.tiles.has('0/156')).toBe(true);

      // The inner nodes never change once written (the trigger), and only a full level-0 tile has them (the check).
      await expect(t.db.query("UPDATE audit_tlog_tiles SET nodes = overlay(nodes PLACING sha256('x'::bytea) FROM 1) WHERE level = 0 AND idx = 4")).rejects.toThrow(/only grows/);
      await expect(t.db.query('UPDATE audit_tlog_tiles SET nodes = NULL WHERE level = 0 AND idx = 4')).rejects.toThrow(/only grows/);
      await expect(t.db.query("UPDATE audit_tlog_tiles SET nodes = decode(repeat('00', 8128), 'hex') WHERE level = 0 AND idx = 257")).rejects.toThrow(/not allowed/); // the CHECK (23514), as mapDbError words it
      await expect(t.db.query("UPDATE audit_tlog_tiles SET nodes = decode(repeat('00', 8128), 'hex') WHERE level = 1 AND idx = 0")).rejects.toThrow(/not allowed/); // the CHECK (23514), as mapDbError words it
      // A tile stored without them may be given its nodes (NULL to a value) once.
      const [tile3] = await t.db.query<{ data: Uint8Array | string }>('SELECT data FROM audit_tlog_tiles WHERE level = 0 AND idx = 3');
      const nodes3 = tileInnerNodes(asBuffer(tile3!.data)).nodes;
      await writeTiles(t.db, [{ level: 0, index: 3, data: asBuffer(tile3!.data), nodes: nodes3 }]);
      const [back] = await t.db.query<{ nodes: Uint8Array | string }>('SELECT nodes FROM audit_tlog_tiles WHERE level = 0 AND idx = 3');
      expect(asBuffer(back!.nodes).equals(nodes3)).toBe(true);

      // After an upgrade: fillTileNodes gives every full level-0 tile without nodes its own, a few at a time, as the app's role.
      await t.owner.exec('ALTER TABLE audit_tlog_tiles DISABLE TRIGGER USER');
      await t.owner.exec('UPDATE audit_tlog_tiles SET nodes = NULL WHERE level = 0 AND idx % 3 = 0');
      await t.owner.exec('ALTER TABLE audit_tlog_tiles ENABLE TRIGGER USER');
      const turns: Array<number | null> = [];
      for (let at: number | null = -1; at !== null; ) turns.push((at = await fillTileNodes(t.db, at, 40)));
      expect(turns).toEqual([117, 237, 255, null]); // 86 tiles (0, 3 ... 255), 40 at a time
      const all = await t.db.query<{ idx: number | string; data: Uint8Array | string; nodes: Uint8Array | string | null }>('SELECT idx, data, nodes FROM audit_tlog_tiles WHERE level = 0 ORDER BY idx');
      for (const r of all) {
        if (asBuffer(r.data).length === 8192) expect(r.nodes && asBuffer(r.nodes).equals(tileInnerNodes(asBuffer(r.data)).nodes), `tile ${r.idx}`).toBe(true);
        else expect(r.nodes).toBeNull();
      }
    } finally {
      await t.close();
    }
  });
});

describe('NodeCache', () => {
  const h = (level: number, index: number) => Buffer.alloc(32, (index * 8 + level) % 251);
  it('keeps the most recently used hashes up to its bound, each under its own (level, index)', () => {
    const c = new NodeCache(4);
    for (let i = 0; i < 4; i++) c.set(i % 8, i, h(i % 8, i));
    expect(c.get(0, 0)).toEqual(h(0, 0)); // 0 is now the most recently used; 1 the least
    c.set(5, 10, h(5, 10)); // evicts (1, 1), reusing its slot
    c.set(6, 11, h(6, 11)); // evicts (2, 2)
    expect(c.size).toBe(4);
    expect(c.get(1, 1)).toBeUndefined();
    expect(c.get(2, 2)).toBeUndefined();
    expect(c.get(1, 10)).toBeUndefined(); // another level of the same index is another node
    for (const [l, i] of [[0, 0], [3, 3], [5, 10], [6, 11]] as const) expect(c.get(l, i)).toEqual(h(l, i));
  });
  it('answers copies: a slot reused later does not change a hash already handed out', () => {
    const c = new NodeCache(1);
    c.set(0, 1, h(0, 1));
    const got = c.get(0, 1)!;
    c.set(0, 2, h(0, 2));
    expect(got).toEqual(h(0, 1));
    expect(c.get(0, 2)).toEqual(h(0, 2));
    expect(c.get(0, 1)).toBeUndefined();
    expect(() => c.set(0, 3, Buffer.alloc(31))).toThrow(RangeError);
  });
});
