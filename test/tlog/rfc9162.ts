/**
 * An independent RFC 9162 verifier for the tests, written from the RFC's text and sharing
 * no code with src/core/tlog (do not import it here): the Merkle Tree Hash over a list of
 * leaf data (2.1.1), and the inclusion (2.1.3.2) and consistency (2.1.4.2) proof
 * verification algorithms, step by step as the RFC numbers them. Sizes and indices are
 * BigInts so the shifts are exact at any size.
 */
import { createHash } from 'node:crypto';

const HASH = (...parts: Uint8Array[]): Buffer => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};
const ZERO = Buffer.from([0x00]);
const ONE = Buffer.from([0x01]);

/** HASH(0x00 || d), the hash of a leaf. */
export function rfcLeafHash(d: Uint8Array): Buffer {
  return HASH(ZERO, d);
}

/**
 * 2.1.1: MTH({}) = HASH(); MTH({d(0)}) = HASH(0x00 || d(0)); for n > 1, with k the largest
 * power of two smaller than n, MTH(D[n]) = HASH(0x01 || MTH(D[0:k]) || MTH(D[k:n])).
 */
export function rfcMth(d: Uint8Array[]): Buffer {
  const n = d.length;
  if (n === 0) return HASH();
  if (n === 1) return rfcLeafHash(d[0]);
  let k = 1;
  while (k * 2 < n) k *= 2;
  return HASH(ONE, rfcMth(d.slice(0, k)), rfcMth(d.slice(k)));
}

const lsb = (x: bigint) => (x & 1n) === 1n;
const eq = (a: Uint8Array, b: Uint8Array) => a.length === b.length && Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;

/** 2.1.3.2: verify an inclusion proof `inclusion_path` of the leaf with `hash` at `leaf_index` in a tree of `tree_size` with `root_hash`. */
export function rfcVerifyInclusion(
  hash: Uint8Array,
  leafIndex: number | bigint,
  treeSize: number | bigint,
  inclusionPath: Uint8Array[],
  rootHash: Uint8Array,
): boolean {
  const leaf_index = BigInt(leafIndex);
  const tree_size = BigInt(treeSize);
  // 1. Compare leaf_index from the inclusion_proof against tree_size. If leaf_index is greater than or equal to tree_size, then fail the proof verification.
  if (leaf_index < 0n || leaf_index >= tree_size) return false;
  // 2. Set fn to leaf_index and sn to tree_size - 1.
  let fn = leaf_index;
  let sn = tree_size - 1n;
  // 3. Set r to hash.
  let r: Uint8Array = hash;
  // 4. For each value p in the inclusion_path array:
  for (const p of inclusionPath) {
    // a. If sn is 0, then stop the iteration and fail the proof verification.
    if (sn === 0n) return false;
    // b. If LSB(fn) is set, or if fn is equal to sn, then:
    if (lsb(fn) || fn === sn) {
      // 1. Set r to HASH(0x01 || p || r).
      r = HASH(ONE, p, r);
      // 2. If LSB(fn) is not set, then right-shift both fn and sn equally until either LSB(fn) is set or fn is 0.
      if (!lsb(fn)) {
        while (!lsb(fn) && fn !== 0n) {
          fn >>= 1n;
          sn >>= 1n;
        }
      }
    } else {
      // Otherwise: set r to HASH(0x01 || r || p).
      r = HASH(ONE, r, p);
    }
    // c. Finally, right-shift both fn and sn one time.
    fn >>= 1n;
    sn >>= 1n;
  }
  // 5. Compare sn to 0. Compare r against the root_hash. If sn is equal to 0 and r and the root_hash are equal, then the log has proven the inclusion of hash.
  return sn === 0n && eq(r, rootHash);
}

/**
 * 2.1.4.2: verify a consistency proof `consistency_path` from the tree of size `first` with
 * `first_hash` to the tree of size `second` with `second_hash`. (The RFC's algorithm is for
 * 0 < first < second; equal sizes are consistent when the hashes are equal and the path is
 * empty, as 2.1.4.1 gives no proof for them.)
 */
export function rfcVerifyConsistency(
  firstSize: number | bigint,
  secondSize: number | bigint,
  consistencyPath: Uint8Array[],
  firstHash: Uint8Array,
  secondHash: Uint8Array,
): boolean {
  const first = BigInt(firstSize);
  const second = BigInt(secondSize);
  if (first <= 0n || first > second) return false;
  if (first === second) return consistencyPath.length === 0 && eq(firstHash, secondHash);
  // 1. If consistency_path is an empty array, stop and fail the proof verification.
  if (consistencyPath.length === 0) return false;
  // 2. If first is an exact power of 2, then prepend first_hash to the consistency_path array.
  const path = (first & (first - 1n)) === 0n ? [firstHash, ...consistencyPath] : [...consistencyPath];
  // 3. Set fn to first - 1 and sn to second - 1.
  let fn = first - 1n;
  let sn = second - 1n;
  // 4. If LSB(fn) is set, then right-shift both fn and sn equally until LSB(fn) is not set.
  while (lsb(fn)) {
    fn >>= 1n;
    sn >>= 1n;
  }
  // 5. Set both fr and sr to the first value in the consistency_path array.
  let fr: Uint8Array = path[0];
  let sr: Uint8Array = path[0];
  // 6. For each subsequent value c in the consistency_path array:
  for (const c of path.slice(1)) {
    // a. If sn is 0, then stop the iteration and fail the proof verification.
    if (sn === 0n) return false;
    // b. If LSB(fn) is set, or if fn is equal to sn, then:
    if (lsb(fn) || fn === sn) {
      // 1. Set fr to HASH(0x01 || c || fr). 2. Set sr to HASH(0x01 || c || sr).
      fr = HASH(ONE, c, fr);
      sr = HASH(ONE, c, sr);
      // 3. If LSB(fn) is not set, then right-shift both fn and sn equally until either LSB(fn) is set or fn is 0.
      if (!lsb(fn)) {
        while (!lsb(fn) && fn !== 0n) {
          fn >>= 1n;
          sn >>= 1n;
        }
      }
    } else {
      // Otherwise: set sr to HASH(0x01 || sr || c).
      sr = HASH(ONE, sr, c);
    }
    // c. Finally, right-shift both fn and sn one time.
    fn >>= 1n;
    sn >>= 1n;
  }
  // 7. Verify that fr equals first_hash, sr equals second_hash, and sn is 0.
  return eq(fr, firstHash) && eq(sr, secondHash) && sn === 0n;
}
