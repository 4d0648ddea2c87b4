/**
 * The Merkle math against the RFC's recursive definitions, computed naively over the list of
 * leaf hashes in this file: tiles built by appendLeaves (one leaf at a time and in random
 * batches) give the naive MTH at every size 0..600, proofs equal the naive PATH / PROOF and
 * verify, and tampered proofs, roots, indices and sizes do not.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  EMPTY_ROOT,
  appendLeaves,
  consistencyProof,
  inclusionProof,
  leafHash,
  nodeHash,
  rangeSubtrees,
  rootHash,
  subtreeFromTile,
  subtreeHash,
  subtreeTile,
  tileInnerNodes,
  fullTileNodes,
  tileNodeOffset,
  verifyConsistency,
  verifyInclusion,
  type ReadTile,
} from './merkle.js';

const sha = (...parts: Uint8Array[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};

// --- naive RFC 9162 2.1.1 / 2.1.3.1 / 2.1.4.1 over leaf hashes ---------------------------
function k(n: number): number {
  let x = 1;
  while (x * 2 < n) x *= 2;
  return x;
}
// MTH(D[lo:hi]) over the leaf hashes, memoized per list and range so the exhaustive loops stay fast.
const memo = new WeakMap<Buffer[], Map<string, Buffer>>();
function mthRange(h: Buffer[], lo: number, hi: number): Buffer {
  let m = memo.get(h);
  if (!m) memo.set(h, (m = new Map()));
  const key = `${lo},${hi}`;
  let r = m.get(key);
  if (!r) {
    const n = hi - lo;
    r = n === 0 ? sha() : n === 1 ? h[lo] : sha(Buffer.from([1]), mthRange(h, lo, lo + k(n)), mthRange(h, lo + k(n), hi));
    m.set(key, r);
  }
  return r;
}
const mth = (h: Buffer[], n = h.length) => mthRange(h, 0, n);
// Unmemoized, for the large trees.
function mthPlain(h: Buffer[], lo = 0, hi = h.length): Buffer {
  const n = hi - lo;
  if (n === 1) return h[lo];
  return sha(Buffer.from([1]), mthPlain(h, lo, lo + k(n)), mthPlain(h, lo + k(n), hi));
}
const hex = (bs: Buffer[]) => bs.map((b) => b.toString('hex'));
// PATH(m, D[lo:hi]) and SUBPROOF(m, D[lo:hi], b), as RFC 9162 writes them.
function path(m: number, h: Buffer[], lo = 0, hi = h.length): Buffer[] {
  const n = hi - lo;
  if (n <= 1) return [];
  const s = lo + k(n);
  return m < k(n) ? [...path(m, h, lo, s), mthRange(h, s, hi)] : [...path(m - k(n), h, s, hi), mthRange(h, lo, s)];
}
function subproof(m: number, h: Buffer[], b: boolean, lo = 0, hi = h.length): Buffer[] {
  const n = hi - lo;
  if (m === n) return b ? [] : [mthRange(h, lo, hi)];
  const s = lo + k(n);
  return m <= k(n) ? [...subproof(m, h, b, lo, s), mthRange(h, s, hi)] : [...subproof(m - k(n), h, false, s, hi), mthRange(h, lo, s)];
}

// --- an in-memory tile store --------------------------------------------------------------
class Store {
  tiles = new Map<string, Buffer>();
  size = 0;
  reads: string[] = [];
  read: ReadTile = async (level, index) => {
    this.reads.push(`${level}/${index}`);
    const t = this.tiles.get(`${level}/${index}`);
    if (!t) throw new Error(`no tile ${level}/${index}`);
    return t;
  };
  lastTiles(): Map<number, Uint8Array> {
    const m = new Map<number, Uint8Array>();
    for (let level = 0; 256 ** level <= this.size; level++) {
      const t = this.tiles.get(`${level}/${Math.floor(this.size / 256 ** (level + 1))}`);
      if (t) m.set(level, t);
    }
    return m;
  }
  append(hashes: Buffer[]): ReturnType<typeof appendLeaves> {
    const r = appendLeaves(this.size, this.lastTiles(), hashes);
    for (const t of r.tiles) this.tiles.set(`${t.level}/${t.index}`, t.data);
    this.size = r.size;
    return r;
  }
}

const leaves = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => leafHash(Buffer.from(`entry ${from + i}`)));

// Deterministic PRNG for batch splits.
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('hashing', () => {
  it('leafHash and nodeHash carry the RFC 6962 prefixes', () => {
    const a = Buffer.from('abc');
    expect(leafHash(a)).toEqual(sha(Buffer.from([0]), a));
    const l = sha(Buffer.from('l'));
    const r = sha(Buffer.from('r'));
    expect(nodeHash(l, r)).toEqual(sha(Buffer.from([1]), l, r));
    expect(EMPTY_ROOT.toString('hex')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('the leaf hash of the empty string is the RFC 6962 test vector', () => {
    expect(leafHash(new Uint8Array()).toString('hex')).toBe('6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d');
  });
});

describe('appendLeaves + rootHash', () => {
  const all = leaves(0, 600);

  it('one leaf at a time: rootHash equals the naive MTH at every size 0..600', async () => {
    const s = new Store();
    expect(await rootHash(s.read, 0)).toEqual(EMPTY_ROOT);
    for (let n = 1; n <= 600; n++) {
      s.append([all[n - 1]]);
      expect(await rootHash(s.read, n)).toEqual(mth(all, n));
    }
    // Tiles as the spec describes them for size 600: level 0 tiles 0,1 full and 2 partial (88), level 1 partial (2).
    expect([...s.tiles.keys()].sort()).toEqual(['0/0', '0/1', '0/2', '1/0']);
    expect(s.tiles.get('0/2')!.length).toBe(88 * 32);
    expect(s.tiles.get('1/0')!.length).toBe(2 * 32);
    expect(s.tiles.get('1/0')!.subarray(0, 32)).toEqual(mth(all, 256));
  });

  it('random batch splits give the same tiles and roots at every size', async () => {
    const ref = new Store();
    ref.append(all);
    for (let seed = 1; seed <= 12; seed++) {
      const rand = rng(seed);
      const s = new Store();
      while (s.size < 600) {
        const n = Math.min(600 - s.size, Math.floor(rand() * (rand() < 0.3 ? 400 : 40)));
        s.append(all.slice(s.size, s.size + n));
        expect(await rootHash(s.read, s.size)).toEqual(mth(all, s.size));
      }
      expect(s.tiles).toEqual(ref.tiles);
    }
  });

  it('reports exactly the tiles that changed, in (level, index) order', () => {
    const s = new Store();
    s.append(leaves(0, 250));
    const r = s.append(leaves(250, 520));
    expect(r.size).toBe(520);
    expect(r.tiles.map((t) => [t.level, t.index, t.data.length / 32])).toEqual([
      [0, 0, 256],
      [0, 1, 256],
      [0, 2, 8],
      [1, 0, 2],
    ]);
    expect(s.append([]).tiles).toEqual([]);
    // A batch that stays inside level 0's partial tile changes only that tile.
    expect(s.append(leaves(520, 521)).tiles.map((t) => [t.level, t.index])).toEqual([[0, 2]]);
  });

  it('higher tile levels: 65,536 + 300 leaves fill a level-1 tile into level 2', async () => {
    const s = new Store();
    const hs = leaves(0, 65_836);
    for (let i = 0; i < hs.length; i += 4_000) s.append(hs.slice(i, i + 4_000));
    expect(s.size).toBe(65_836);
    expect(s.tiles.get('1/0')!.length).toBe(8192);
    expect(s.tiles.get('1/1')!.length).toBe(32);
    expect(s.tiles.get('2/0')!.length).toBe(32);
    expect(s.tiles.get('2/0')).toEqual(mthPlain(hs, 0, 65_536));
    expect(await rootHash(s.read, s.size)).toEqual(mthPlain(hs));
    expect(await subtreeHash(s.read, 16, 0)).toEqual(mthPlain(hs, 0, 65_536));
    expect(await subtreeHash(s.read, 9, 3)).toEqual(mthPlain(hs, 3 * 512, 4 * 512));
  });

  it("the spec's examples: sizes 70,000 and 256", () => {
    const s = new Store();
    s.append(leaves(0, 70_000));
    const widths = (level: number) =>
      [...s.tiles.entries()].filter(([k]) => k.startsWith(`${level}/`)).map(([, t]) => t.length / 32);
    const l0 = widths(0);
    expect(l0.filter((w) => w === 256)).toHaveLength(273);
    expect(l0.filter((w) => w !== 256)).toEqual([112]);
    expect(widths(1)).toEqual([256, 17]);
    expect(widths(2)).toEqual([1]);
    expect(widths(3)).toEqual([]);
    const t = new Store();
    t.append(leaves(0, 256));
    expect([...t.tiles.entries()].map(([k, v]) => [k, v.length / 32])).toEqual([
      ['0/0', 256],
      ['1/0', 1],
    ]);
  });

  it("a full level-0 tile's inner nodes: every subtree of levels 1-7 within it, as the RFC's MTH; written with the tile when it fills", () => {
    const hs = leaves(0, 512);
    const tile = Buffer.concat(hs.slice(256, 512));
    const { nodes, root } = tileInnerNodes(tile);
    expect(nodes.length).toBe(254 * 32);
    expect(root).toEqual(mthPlain(hs, 256, 512));
    for (let level = 1; level < 8; level++) {
      for (let i = 0; i < 256 >> level; i++) {
        const at = tileNodeOffset(level, i);
        expect(nodes.subarray(at, at + 32), `level ${level} node ${i}`).toEqual(mthPlain(hs, 256 + i * 2 ** level, 256 + (i + 1) * 2 ** level));
      }
    }
    expect(() => tileInnerNodes(tile.subarray(32))).toThrow(RangeError);
    // fullTileNodes: the same 254 nodes and then the root, from a tile anywhere in a buffer (a Uint8Array too).
    const within = Buffer.concat([Buffer.alloc(96, 7), tile, Buffer.alloc(5)]);
    const out = fullTileNodes(new Uint8Array(within.buffer, within.byteOffset, within.length), 96, Buffer.alloc(255 * 32, 0xff));
    expect(out.subarray(0, 254 * 32)).toEqual(nodes);
    expect(out.subarray(254 * 32)).toEqual(root);
    expect(() => fullTileNodes(within, 97 + 32, Buffer.alloc(255 * 32))).toThrow(RangeError);
    expect(() => fullTileNodes(within, 96, Buffer.alloc(254 * 32))).toThrow(RangeError);
    // appendLeaves: the nodes come with a level-0 tile as it fills, and only then; not above level 0.
    const grown = appendLeaves(0, new Map(), leaves(0, 65_536 + 300)).tiles;
    const withNodes = grown.filter((t) => t.nodes);
    expect(withNodes.map((t) => t.level)).toEqual(Array(257).fill(0)); // 65,836 leaves: 257 full level-0 tiles
    expect(grown.filter((t) => t.level === 0 && t.data.length === 8192 && !t.nodes)).toEqual([]);
    expect(withNodes[1]!.nodes).toEqual(nodes);
    const partial = appendLeaves(0, new Map(), leaves(0, 255)).tiles;
    expect(partial.map((t) => [t.level, t.data.length / 32, !!t.nodes])).toEqual([[0, 255, false]]);
  });

  it('rejects a wrong rightmost tile and malformed leaf hashes', () => {
    const s = new Store();
    s.append(leaves(0, 10));
    expect(() => appendLeaves(10, new Map(), leaves(10, 11))).toThrow(/level 0 .* must hold 10 hashes/);
    expect(() => appendLeaves(10, new Map([[0, Buffer.alloc(9 * 32)]]), leaves(10, 11))).toThrow(RangeError);
    expect(() => appendLeaves(0, new Map(), [Buffer.alloc(31)])).toThrow(/32-byte/);
    expect(() => appendLeaves(-1, new Map(), [])).toThrow(RangeError);
    // At size 256 the stored full tile 0/0 is not the tile the next leaf goes to.
    const t = new Store();
    t.append(leaves(0, 256));
    expect(appendLeaves(256, t.lastTiles(), leaves(256, 257)).tiles.map((x) => [x.level, x.index, x.data.length])).toEqual([
      [0, 1, 32],
    ]);
  });
});

describe('proofs', () => {
  const N = 300;
  const all = leaves(0, N);
  const s = new Store();
  s.append(all);

  // Every size up to 70, then every 13th (test/tlog/rfc9162.test.ts sweeps every size 1..300).
  const sizes = Array.from({ length: N }, (_, i) => i + 1).filter((n) => n <= 70 || n % 13 === 0 || n === N);

  it('inclusionProof equals the RFC PATH and verifies, for every index', async () => {
    for (const n of sizes) {
      const root = mth(all, n);
      for (let i = 0; i < n; i++) {
        const p = await inclusionProof(s.read, i, n);
        expect(hex(p)).toEqual(hex(path(i, all, 0, n)));
        expect(verifyInclusion(all[i], i, n, p, root)).toBe(true);
      }
    }
  });

  it('consistencyProof equals the RFC PROOF and verifies, for every 0 <= m <= n', async () => {
    const roots = Array.from({ length: N + 1 }, (_, n) => mth(all, n));
    for (const n of sizes) {
      for (let m = 0; m <= n; m++) {
        const p = await consistencyProof(s.read, m, n);
        expect(hex(p)).toEqual(hex(m === 0 || m === n ? [] : subproof(m, all, true, 0, n)));
        expect(verifyConsistency(m, n, p, roots[m], roots[n])).toBe(true);
      }
    }
  });

  it('negative cases fail verification', async () => {
    const n = 77;
    const root = mth(all, n);
    for (const i of [0, 1, 31, 64, 76]) {
      const p = await inclusionProof(s.read, i, n);
      expect(verifyInclusion(all[i], i, n, p, root)).toBe(true);
      expect(verifyInclusion(all[i + 1], i, n, p, root)).toBe(false); // wrong leaf
      expect(verifyInclusion(all[i], i ^ 1, n, p, root)).toBe(false); // wrong index
      expect(verifyInclusion(all[i], i, 2 * n, p, root)).toBe(false); // wrong size
      expect(verifyInclusion(all[i], i, n, p, all[0])).toBe(false); // wrong root
      expect(verifyInclusion(all[i], i, n, p.slice(0, -1), root)).toBe(false); // short
      expect(verifyInclusion(all[i], i, n, [...p, all[0]], root)).toBe(false); // long
      for (let j = 0; j < p.length; j++) {
        const bad = p.map((x) => Buffer.from(x));
        bad[j][j % 32] ^= 0x01;
        expect(verifyInclusion(all[i], i, n, bad, root)).toBe(false);
      }
    }
    expect(verifyInclusion(all[0], 5, 5, [], root)).toBe(false);
    expect(verifyInclusion(all[0], -1, 5, [], root)).toBe(false);

    const old = mth(all, 13);
    const p = await consistencyProof(s.read, 13, n);
    expect(verifyConsistency(13, n, p, old, root)).toBe(true);
    expect(verifyConsistency(12, n, p, old, root)).toBe(false);
    expect(verifyConsistency(13, 2 * n, p, old, root)).toBe(false);
    expect(verifyConsistency(13, n, p, root, root)).toBe(false);
    expect(verifyConsistency(13, n, p, old, old)).toBe(false);
    expect(verifyConsistency(13, n, [], old, root)).toBe(false);
    expect(verifyConsistency(13, n, p.slice(1), old, root)).toBe(false);
    for (let j = 0; j < p.length; j++) {
      const bad = p.map((x) => Buffer.from(x));
      bad[j][31] ^= 0x80;
      expect(verifyConsistency(13, n, bad, old, root)).toBe(false);
    }
    expect(verifyConsistency(n, n, [], root, root)).toBe(true);
    expect(verifyConsistency(n, n, [], old, root)).toBe(false);
    expect(verifyConsistency(n, n, [root], root, root)).toBe(false);
    expect(verifyConsistency(0, n, [], EMPTY_ROOT, root)).toBe(true);
    expect(verifyConsistency(0, n, [], old, root)).toBe(false);
    expect(verifyConsistency(n, 13, p, root, old)).toBe(false);
  });

  it('validates arguments with RangeErrors', async () => {
    await expect(inclusionProof(s.read, 5, 5)).rejects.toThrow(/index 5 is not below tree size 5/);
    await expect(inclusionProof(s.read, 0, 0)).rejects.toThrow(RangeError);
    await expect(inclusionProof(s.read, -1, 5)).rejects.toThrow(/non-negative/);
    await expect(inclusionProof(s.read, 1.5, 5)).rejects.toThrow(RangeError);
    await expect(consistencyProof(s.read, 6, 5)).rejects.toThrow(/old size 6 is larger than new size 5/);
    await expect(consistencyProof(s.read, 0.5, 5)).rejects.toThrow(RangeError);
    await expect(rootHash(s.read, -3)).rejects.toThrow(RangeError);
    await expect(rootHash(s.read, Number.NaN)).rejects.toThrow(RangeError);
    expect(await consistencyProof(s.read, 5, 5)).toEqual([]);
    expect(await consistencyProof(s.read, 0, 5)).toEqual([]);
  });

  it('a tile shorter than the subtree needs is an error, not a wrong hash', async () => {
    const short: ReadTile = async () => Buffer.alloc(64);
    await expect(rootHash(short, 10)).rejects.toThrow(/holds 64 bytes, need/);
  });
});

describe('reads at 10,000,000 leaves', () => {
  // Deterministic fabricated tiles: enough to count reads (the hashes are not a consistent tree).
  const size = 10_000_000;
  const fake = () => {
    const reads: string[] = [];
    const read: ReadTile = async (level, index) => {
      reads.push(`${level}/${index}`);
      const width = Math.min(256, Math.floor(size / 256 ** level) - index * 256);
      return Buffer.alloc(width * 32, (level * 31 + index) & 0xff);
    };
    return { reads, read };
  };

  it('each tile is read at most once per call, a handful of reads in all', async () => {
    for (const run of [
      (r: ReadTile) => rootHash(r, size),
      (r: ReadTile) => inclusionProof(r, 1_234_567, size),
      (r: ReadTile) => inclusionProof(r, size - 1, size),
      (r: ReadTile) => consistencyProof(r, 3_333_333, size),
      (r: ReadTile) => consistencyProof(r, size - 1, size),
    ]) {
      const f = fake();
      await run(f.read);
      expect(new Set(f.reads).size).toBe(f.reads.length);
      expect(f.reads.length).toBeLessThanOrEqual(12);
    }
  });
});

describe('a reader that holds some subtrees already (cachedNode)', () => {
  it('gives the same roots and proofs, and reads only the subtrees it does not hold', async () => {
    const s = new Store();
    s.append(Array.from({ length: 70_000 }, (_, i) => leafHash(Buffer.from(`leaf ${i}`))));
    const held = new Set<string>();
    const asked = new Set<string>();
    const read: ReadTile = async (level, index) => s.read(level, index);
    read.node = async (level, index) => {
      asked.add(`${level}/${index}`);
      return subtreeHash(s.read, level, index);
    };
    // Holds every other subtree (by level and index), answered from its tile without waiting.
    read.cachedNode = (level, index) => {
      if ((level + index) % 2 === 1) return undefined;
      held.add(`${level}/${index}`);
      const { tileLevel, tileIndex } = subtreeTile(level, index);
      return subtreeFromTile(s.tiles.get(`${tileLevel}/${tileIndex}`)!, level, index);
    };
    for (const n of [1, 2, 255, 256, 257, 65_535, 65_536, 65_537, 70_000]) {
      expect(await rootHash(read, n)).toEqual(await rootHash(s.read, n));
      for (const i of [0, 1, Math.floor(n / 3), n - 2, n - 1].filter((i) => i >= 0 && i < n)) {
        expect(await inclusionProof(read, i, n)).toEqual(await inclusionProof(s.read, i, n));
      }
      for (const m of [1, 2, Math.floor(n / 2), n - 1].filter((m) => m > 0 && m < n)) {
        expect(await consistencyProof(read, m, n)).toEqual(await consistencyProof(s.read, m, n));
      }
    }
    expect(held.size).toBeGreaterThan(50);
    expect(asked.size).toBeGreaterThan(50);
    expect([...asked].filter((k) => held.has(k))).toEqual([]);
  });
});

describe('appendLeaves speed', () => {
  it('100,000 leaves in batches of 1,000 (past the first level-2 tile; its speed is a benchmark, bench/tlog.bench.ts)', async () => {
    const hs = Array.from({ length: 100_000 }, (_, i) => {
      const b = Buffer.alloc(32);
      b.writeUInt32BE(i, 0);
      b.writeUInt32BE((i * 2654435761) >>> 0, 28);
      return b;
    });
    const s = new Store();
    for (let i = 0; i < hs.length; i += 1_000) s.append(hs.slice(i, i + 1_000));
    expect(s.size).toBe(100_000);
    expect(await rootHash(s.read, s.size)).toEqual(mthPlain(hs));
  });
});

describe('rangeSubtrees', () => {
  /** The definition, level by level on doubles: the largest 2^level dividing `at` that fits before `hi`. */
  const plain = (lo: number, hi: number): number[] => {
    const out: number[] = [];
    for (let at = lo; at < hi; ) {
      let level = 0;
      while (at % 2 ** (level + 1) === 0 && at + 2 ** (level + 1) <= hi) level++;
      out.push(level, at / 2 ** level);
      at += 2 ** level;
    }
    return out;
  };
  const check = (lo: number, hi: number) => {
    const out: number[] = [];
    const count = rangeSubtrees(lo, hi, out);
    expect(out, `[${lo}, ${hi})`).toEqual(plain(lo, hi));
    expect(count).toBe(out.length / 2);
  };

  it('matches the definition on every range within [0, 300)', () => {
    for (let lo = 0; lo < 300; lo++) for (let hi = lo; hi <= 300; hi++) check(lo, hi);
  });

  it('matches it on ranges across 2^31, 2^32 and up to 2^53 (the halves of the numbers)', () => {
    const edges = [2 ** 31, 2 ** 32, 2 ** 40, 2 ** 52, Number.MAX_SAFE_INTEGER - 1000];
    for (const e of edges) {
      for (const d of [-3, -1, 0, 1, 5]) {
        const lo = e + d;
        for (const len of [1, 2, 3, 7, 255, 256, 257, 65_536, 1_000_003]) if (lo + len <= Number.MAX_SAFE_INTEGER) check(lo, lo + len);
      }
      // Aligned starts, as the proofs ask: a multiple of a power of two at least the length.
      for (const k of [0, 8, 16, 31, 32, 33, 40]) if (e + 2 ** k <= Number.MAX_SAFE_INTEGER) check(e, e + 2 ** k - 1);
    }
    let seed = 9;
    const next = () => (seed = (seed * 16_807) % 2_147_483_647) / 2_147_483_647;
    for (let i = 0; i < 2_000; i++) {
      const lo = Math.floor(next() * 2 ** 52) * (next() < 0.5 ? 2 ** Math.floor(next() * 20) : 1);
      const hi = Math.min(Number.MAX_SAFE_INTEGER, lo + 1 + Math.floor(next() * 2 ** Math.floor(next() * 40)));
      if (Number.isSafeInteger(lo) && lo < hi) check(lo, hi);
    }
  });
});
