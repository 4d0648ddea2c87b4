/**
 * The product's Merkle code (src/core/tlog/merkle.ts) against the independent RFC 9162
 * verifier in ./rfc9162.ts: for every size 1..300, the root built through appendLeaves and
 * an in-memory ReadTile equals the RFC's MTH over the leaf data, every inclusion and
 * consistency proof verifies, and a flipped bit in any proof hash (or a wrong root, index or
 * size) does not. Both verifiers also accept real proofs from Google's Argon 2020 CT log.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { appendLeaves, consistencyProof, inclusionProof, leafHash, rootHash, verifyConsistency, verifyInclusion, type ReadTile } from '../../src/core/tlog/merkle.js';
import { rfcLeafHash, rfcMth, rfcVerifyConsistency, rfcVerifyInclusion } from './rfc9162.js';

const N = 300;
const data = Array.from({ length: N }, (_, i) => Buffer.from(`audit record ${i} \u2603`.repeat((i % 3) + 1)));

// The product's tiles for the whole tree, in memory.
const tiles = new Map<string, Buffer>();
{
  let size = 0;
  // Uneven batches, so the tiles are built across boundaries.
  for (const batch of [1, 2, 5, 100, 148, 1, 43]) {
    const last = new Map<number, Uint8Array>();
    for (let level = 0; 256 ** level <= size; level++) {
      const t = tiles.get(`${level}/${Math.floor(size / 256 ** (level + 1))}`);
      if (t) last.set(level, t);
    }
    const r = appendLeaves(size, last, data.slice(size, size + batch).map((d) => leafHash(d)));
    for (const t of r.tiles) tiles.set(`${t.level}/${t.index}`, t.data);
    size = r.size;
  }
  if (size !== N) throw new Error(`built ${size} leaves, want ${N}`);
}
const read: ReadTile = async (level, index) => {
  const t = tiles.get(`${level}/${index}`);
  if (!t) throw new Error(`no tile ${level}/${index}`);
  return t;
};

// The RFC's roots for every size.
const roots: Buffer[] = Array.from({ length: N + 1 }, (_, n) => rfcMth(data.slice(0, n)));

function flipped(proof: Buffer[], j: number, bit: number): Buffer[] {
  const p = proof.map((h) => Buffer.from(h));
  p[j][bit >> 3] ^= 1 << (bit & 7);
  return p;
}

describe('roots', () => {
  it('rootHash equals the RFC MTH at every size 0..300', async () => {
    for (let n = 0; n <= N; n++) expect((await rootHash(read, n)).equals(roots[n]), `size ${n}`).toBe(true);
  });
});

// Every size 1..300, in chunks so each test stays well inside the timeout.
const chunks = [
  [1, 100],
  [101, 200],
  [201, 250],
  [251, 300],
];

describe.each(chunks)('inclusion proofs, sizes %i..%i', (from, to) => {
  it('verify with the RFC verifier and the product verifier; a flipped bit, another index or root does not', async () => {
    // Every wrong answer is collected and asserted once: an expect() per check made this file take minutes.
    const bad: string[] = [];
    for (let n = from; n <= to; n++) {
      for (let i = 0; i < n; i++) {
        const p = await inclusionProof(read, i, n);
        const lh = rfcLeafHash(data[i]);
        if (!rfcVerifyInclusion(lh, i, n, p, roots[n])) bad.push(`RFC rejects index ${i} size ${n}`);
        if (!verifyInclusion(lh, i, n, p, roots[n])) bad.push(`product rejects index ${i} size ${n}`);
        for (let j = 0; j < p.length; j++) {
          const bit = (i * 7 + j * 13 + n) % 256;
          if (rfcVerifyInclusion(lh, i, n, flipped(p, j, bit), roots[n])) bad.push(`flip ${j}/${bit} index ${i} size ${n} verifies`);
        }
        if (n > 1 && rfcVerifyInclusion(lh, (i + 1) % n, n, p, roots[n])) bad.push(`index ${(i + 1) % n} size ${n} verifies`);
        if (rfcVerifyInclusion(lh, i, n, p, roots[n - 1])) bad.push(`root ${n - 1} verifies index ${i} size ${n}`);
      }
    }
    expect(bad).toEqual([]);
  });
});

describe.each(chunks)('consistency proofs, sizes %i..%i', (from, to) => {
  it('verify with the RFC verifier and the product verifier; a flipped bit, another size or root does not', async () => {
    const bad: string[] = [];
    for (let n = from; n <= to; n++) {
      for (let m = 1; m <= n; m++) {
        const p = await consistencyProof(read, m, n);
        if (!rfcVerifyConsistency(m, n, p, roots[m], roots[n])) bad.push(`RFC rejects ${m} -> ${n}`);
        if (!verifyConsistency(m, n, p, roots[m], roots[n])) bad.push(`product rejects ${m} -> ${n}`);
        for (let j = 0; j < p.length; j++) {
          const bit = (m * 5 + j * 11 + n) % 256;
          if (rfcVerifyConsistency(m, n, flipped(p, j, bit), roots[m], roots[n])) bad.push(`flip ${j}/${bit} ${m} -> ${n} verifies`);
        }
        if (m < n) {
          if (rfcVerifyConsistency(m, n, p, roots[m], roots[n - 1])) bad.push(`new root ${n - 1} verifies ${m} -> ${n}`);
          if (rfcVerifyConsistency(m, n, p, roots[m - 1], roots[n])) bad.push(`old root ${m - 1} verifies ${m} -> ${n}`);
        }
      }
    }
    expect(bad).toEqual([]);
  });
});

describe('every bit of a proof matters', () => {
  it('flipping each of the bits of a few proofs fails both verifiers', async () => {
    for (const [i, n] of [
      [0, 300],
      [255, 300],
      [299, 300],
      [137, 200],
    ]) {
      const p = await inclusionProof(read, i, n);
      const lh = rfcLeafHash(data[i]);
      for (let j = 0; j < p.length; j++) {
        for (let bit = 0; bit < 256; bit++) {
          const bad = flipped(p, j, bit);
          expect(rfcVerifyInclusion(lh, i, n, bad, roots[n])).toBe(false);
          expect(verifyInclusion(lh, i, n, bad, roots[n])).toBe(false);
        }
      }
    }
    for (const [m, n] of [
      [7, 300],
      [256, 300],
      [128, 129],
    ]) {
      const p = await consistencyProof(read, m, n);
      for (let j = 0; j < p.length; j++) {
        for (let bit = 0; bit < 256; bit++) {
          const bad = flipped(p, j, bit);
          expect(rfcVerifyConsistency(m, n, bad, roots[m], roots[n])).toBe(false);
          expect(verifyConsistency(m, n, bad, roots[m], roots[n])).toBe(false);
        }
      }
    }
  });
});

describe('real Certificate Transparency proofs (Google Argon 2020, via golang.org/x/mod sumdb/tlog testdata)', () => {
  const f = JSON.parse(readFileSync(new URL('./fixtures/argon2020.json', import.meta.url), 'utf8')) as {
    tree_size: number;
    sha256_root_hash: string;
    leaf_index: number;
    leaf_input: string;
    audit_path: string[];
    first: number;
    first_root: string;
    consistency: string[];
  };
  const b = (s: string) => Buffer.from(s, 'base64');
  const root = b(f.sha256_root_hash);
  const lh = rfcLeafHash(b(f.leaf_input));
  const audit = f.audit_path.map(b);
  const cons = f.consistency.map(b);

  it('inclusion of entry 10000 in the tree of 961,984,013', () => {
    expect(leafHash(b(f.leaf_input)).equals(lh)).toBe(true);
    expect(rfcVerifyInclusion(lh, f.leaf_index, f.tree_size, audit, root)).toBe(true);
    expect(verifyInclusion(lh, f.leaf_index, f.tree_size, audit, root)).toBe(true);
    expect(verifyInclusion(lh, f.leaf_index + 1, f.tree_size, audit, root)).toBe(false);
    for (let j = 0; j < audit.length; j++) expect(verifyInclusion(lh, f.leaf_index, f.tree_size, flipped(audit, j, j), root)).toBe(false);
  });

  it('consistency from 3,654,490 to 961,984,013', () => {
    expect(rfcVerifyConsistency(f.first, f.tree_size, cons, b(f.first_root), root)).toBe(true);
    expect(verifyConsistency(f.first, f.tree_size, cons, b(f.first_root), root)).toBe(true);
    expect(verifyConsistency(f.first + 1, f.tree_size, cons, b(f.first_root), root)).toBe(false);
    for (let j = 0; j < cons.length; j++) expect(verifyConsistency(f.first, f.tree_size, flipped(cons, j, 255 - j), b(f.first_root), root)).toBe(false);
  });
});
