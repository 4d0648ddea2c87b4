/**
 * The transparency log's Merkle math: RFC 9162 (RFC 6962) hashing, inclusion and
 * consistency proofs, and the C2SP tlog-tiles storage layout (tiles of height 8).
 *
 * Storage-independent: every function that needs stored hashes reads them through a
 * `ReadTile` callback, and `appendLeaves` is a pure function from the rightmost stored tiles
 * and a batch of new leaf hashes to the tiles to write.
 *
 * Layout (c2sp.org/tlog-tiles): the tile at tile level L and index N holds the Merkle Tree
 * Hashes of Merkle level 8L, nodes N*256 .. N*256+255 (level 0 = leaf hashes), 32 bytes each,
 * concatenated. The rightmost tile of a level may be partial: for a tree of size s it holds
 * floor(s / 256^L) mod 256 hashes. A level-L tile contributes its subtree root to the tile
 * level above only once it is full.
 *
 * Tree sizes and indices are JavaScript numbers and must be safe integers.
 */
import { hash as oneShotHash } from 'node:crypto';
import { sha256Into } from '../../shared/sha256.js';

/** Hashes per full tile (tile height 8). */
export const TILE_WIDTH = 256;
/** Bytes per hash. */
export const HASH_SIZE = 32;
export const TILE_HEIGHT = 8;
const FULL_TILE_BYTES = TILE_WIDTH * HASH_SIZE;

/**
 * The stored bytes of tile (level, index): 8192 bytes for a full tile, a shorter prefix for a
 * partial one. A reader may also answer for one complete subtree directly (`node`: its hash at
 * Merkle level `level`, index `index`, as subtreeHash): the proofs then ask it for each
 * subtree instead of reading the tile and hashing up to it (tileReader: the stored inner nodes
 * of full level-0 tiles, see tileInnerNodes).
 */
export type ReadTile = ((level: number, index: number) => Promise<Uint8Array>) & {
  node?: (level: number, index: number) => Promise<Buffer>;
  /**
   * The subtree's hash when the reader holds it already (a cache), else undefined: the proofs
   * take these without a promise each and ask `node` (or the tile) only for the others.
   */
  cachedNode?: (level: number, index: number) => Buffer | undefined;
};

/** MTH of the empty tree: SHA-256 of the empty string. */
export const EMPTY_ROOT: Buffer = oneShotHash('sha256', Buffer.alloc(0), 'buffer');

/** SHA-256(0x00 || data). */
export function leafHash(data: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(HASH_SIZE);
  sha256Into(out, 0, data, 0, data.length, 0x00);
  return out;
}

const nodeScratch = Buffer.alloc(2 * HASH_SIZE);

/** SHA-256(0x01 || left || right). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(HASH_SIZE);
  if (left.length === HASH_SIZE && right.length === HASH_SIZE) {
    nodeScratch.set(left, 0);
    nodeScratch.set(right, HASH_SIZE);
    sha256Into(out, 0, nodeScratch, 0, 2 * HASH_SIZE, 0x01);
  } else {
    const both = Buffer.concat([left, right]);
    sha256Into(out, 0, both, 0, both.length, 0x01);
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Argument checks

function checkCount(name: string, v: number): void {
  if (!Number.isSafeInteger(v) || v < 0) {
    throw new RangeError(`${name} must be a non-negative safe integer, got ${String(v)}`);
  }
}

function checkHash(name: string, h: Uint8Array): void {
  if (!(h instanceof Uint8Array) || h.length !== HASH_SIZE) {
    throw new RangeError(`${name} must be a ${HASH_SIZE}-byte hash`);
  }
}

/** Largest power of two strictly smaller than n (n >= 2). */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

// ---------------------------------------------------------------------------------------
// Reading hashes from tiles

/** A ReadTile that reads each tile (and node) at most once (the memo lives as long as the returned function). */
function memoized(read: ReadTile): ReadTile {
  const once = <T>(get: (level: number, index: number) => Promise<T>) => {
    const memo = new Map<string, Promise<T>>();
    return (level: number, index: number) => {
      const key = `${level}/${index}`;
      let p = memo.get(key);
      if (!p) {
        p = get(level, index);
        memo.set(key, p);
      }
      return p;
    };
  };
  const r: ReadTile = once(read);
  if (read.node) r.node = once(read.node);
  return r;
}

/**
 * The inner nodes of a full tile as stored beside its level-0 tiles (migration 0017,
 * `audit_tlog_tiles.nodes`): Merkle levels 1 to 7 within the tile, level 1's 128 hashes first,
 * then level 2's 64 ... level 7's 2 (254 hashes, 8,128 bytes); the tile's root (level 8) is in
 * the tile above. A proof then reads the 32 bytes of each subtree it needs (tileNodeOffset)
 * instead of the tile and the 255 hashes up from it.
 */
export const TILE_NODES_BYTES = (TILE_WIDTH - 2) * HASH_SIZE;
/** Byte offset in a tile's stored inner nodes of node `index` (0-based within the tile) at level `level` (1..7) within it. */
export const tileNodeOffset = (level: number, index: number): number => (TILE_WIDTH - 2 ** (TILE_HEIGHT + 1 - level) + index) * HASH_SIZE;

/** A full tile's inner nodes (TILE_NODES_BYTES, see above) and its root. */
export function tileInnerNodes(tile: Uint8Array): { nodes: Buffer; root: Buffer } {
  if (tile.length !== FULL_TILE_BYTES) throw new RangeError(`tileInnerNodes: a full tile is ${FULL_TILE_BYTES} bytes, got ${tile.length}`);
  const out = fullTileNodes(tile, 0, Buffer.allocUnsafe(FULL_TILE_NODES_BYTES));
  return { nodes: out.subarray(0, TILE_NODES_BYTES), root: out.subarray(TILE_NODES_BYTES) };
}

/** Bytes of fullTileNodes' answer: Merkle levels 1 to 8 within a full tile (255 hashes). */
export const FULL_TILE_NODES_BYTES = (TILE_WIDTH - 1) * HASH_SIZE;

/**
 * Merkle levels 1 to 8 over the 256 hashes at `src[at, at + 8192)` (a full tile), written
 * into `out[0, FULL_TILE_NODES_BYTES)` and returned: level 1's 128 hashes first, then level
 * 2's 64 ... level 8's one, the tile's root. Its first TILE_NODES_BYTES are the stored inner
 * nodes (see above), its last 32 the root. Each digest is taken as a latin1 ('binary') string
 * and written byte by byte: a Buffer digest, allocated for each node, cost twice as much (1.42-1.44
 * against 0.67-0.72 µs a node, measured alone), and verify's tree check, which took one for
 * each node, spent a seventh of its time collecting garbage.
 */
export function fullTileNodes(src: Uint8Array, at: number, out: Buffer): Buffer {
  if (at < 0 || src.length - at < FULL_TILE_BYTES || out.length < FULL_TILE_NODES_BYTES) throw new RangeError('fullTileNodes: a full tile and room for its 255 nodes are needed');
  // Each node is SHA-256(0x01 || its two children), which lie side by side below it.
  let below: Uint8Array = src;
  let from = at;
  let o = 0;
  for (let width = TILE_WIDTH >> 1; width >= 1; width >>= 1) {
    const start = o;
    for (let i = 0; i < width; i++, from += 2 * HASH_SIZE, o += HASH_SIZE) sha256Into(out, o, below, from, from + 2 * HASH_SIZE, 0x01);
    below = out;
    from = start;
  }
  return out;
}

async function subtreeHashFrom(read: ReadTile, level: number, index: number): Promise<Buffer> {
  if (read.node) return read.node(level, index);
  const { tileLevel, tileIndex } = subtreeTile(level, index);
  return subtreeFromTile(await read(tileLevel, tileIndex), level, index);
}

/** The tile holding the subtree at Merkle level `level`, index `index` (its hashes at level 8 * tileLevel). */
export function subtreeTile(level: number, index: number): { tileLevel: number; tileIndex: number; end: number } {
  const tileLevel = Math.floor(level / TILE_HEIGHT);
  const count = 2 ** (level % TILE_HEIGHT);
  const first = index * count; // node index at Merkle level 8 * tileLevel
  return { tileLevel, tileIndex: Math.floor(first / TILE_WIDTH), end: ((first % TILE_WIDTH) + count) * HASH_SIZE };
}

/** The subtree's hash from the bytes of its tile (subtreeTile): copied, or computed (memoized per tile, see tileNode). */
export function subtreeFromTile(data: Uint8Array, level: number, index: number): Buffer {
  const { tileLevel, tileIndex, end } = subtreeTile(level, index);
  if (!(data instanceof Uint8Array) || data.length < end) {
    throw new Error(`tile ${tileLevel}/${tileIndex} holds ${data?.length ?? 0} bytes, need ${end} for the subtree at level ${level} index ${index}`);
  }
  const l = level % TILE_HEIGHT;
  if (l > 0) return tileNode(data, l, index % (TILE_WIDTH >> l));
  return Buffer.from(data.subarray(end - HASH_SIZE, end));
}

/**
 * The inner nodes of a tile, computed once per tile's bytes (stored hashes never change, a
 * partial tile only grows, into a new copy; callers keep the same bytes in their cache):
 * levels 1..8 over the tile's hashes, every complete subtree of them (255 hashes for a full
 * tile). Without it a proof at 10,000,000 leaves rehashed up to 255 hashes per tile level,
 * about a millisecond of CPU per proof; partial tiles were still rehashed on every proof (the
 * rightmost tile of each level, which most proofs need), until they were memoized too.
 */
const tileNodes = new WeakMap<Uint8Array, Buffer[]>();
function tileNode(data: Uint8Array, level: number, index: number): Buffer {
  let levels = tileNodes.get(data);
  if (!levels) tileNodes.set(data, (levels = tileLevels(data)));
  return levels[level]!.subarray(index * HASH_SIZE, (index + 1) * HASH_SIZE);
}

/** Levels 1..8 over a tile's hashes (full or partial), each level's complete subtrees concatenated; `[l]` for level l. */
function tileLevels(data: Uint8Array): Buffer[] {
  const levels: Buffer[] = [];
  const width = Math.floor(data.length / HASH_SIZE);
  let below: Buffer[] = [];
  for (let i = 0; i < width; i++) below.push(Buffer.from(data.buffer, data.byteOffset + i * HASH_SIZE, HASH_SIZE));
  for (let l = 1; l <= TILE_HEIGHT && below.length >= 2; l++) {
    const up: Buffer[] = [];
    for (let i = 0; i + 1 < below.length; i += 2) up.push(nodeHash(below[i]!, below[i + 1]!));
    levels[l] = Buffer.concat(up);
    below = up;
  }
  return levels;
}

/**
 * The hash of the complete subtree of 2^level leaves starting at leaf index * 2^level,
 * from one tile (tile level floor(level/8), 2^(level%8) stored hashes).
 */
export async function subtreeHash(read: ReadTile, level: number, index: number): Promise<Buffer> {
  checkCount('level', level);
  checkCount('index', index);
  if (!Number.isSafeInteger(index * 2 ** level)) throw new RangeError(`subtree at level ${level} index ${index} is out of range`);
  return subtreeHashFrom(read, level, index);
}

/**
 * The complete subtrees whose hashes make MTH(D[lo:hi]), for a range whose start is a multiple
 * of a power of two at least as large as its length (every range the RFC's recursions
 * produce), largest first: pushed onto `out` as (level, index) pairs; returns their count.
 */
export function rangeSubtrees(lo: number, hi: number, out: number[]): number {
  let count = 0;
  let at = lo;
  while (at < hi) {
    // The largest subtree starting at `at` that fits: 2^level leaves, with 2^level dividing
    // `at` and at + 2^level <= hi. Found with 32-bit integer operations on the halves of the
    // numbers (safe integers, below 2^53): testing level by level with `%` and `**` on
    // doubles cost about 12 µs of a cold inclusion proof at 10,000,000 leaves in the server
    // (a CPU profile of 10,800 gRPC proofs, 2026-12-05), up to 23 tests a subtree.
    const level = Math.min(trailingZeros(at), floorLog2(hi - at));
    const size = 2 ** level;
    out.push(level, at / size);
    at += size;
    count++;
  }
  return count;
}

const TWO_32 = 2 ** 32;

/** The exponent of the largest power of two dividing the safe integer `n` (53 for 0, larger than any level here). */
function trailingZeros(n: number): number {
  if (n === 0) return 53;
  const low = n >>> 0; // n mod 2^32, exact for a safe integer
  if (low !== 0) return 31 - Math.clz32(low & -low);
  const high = Math.floor(n / TWO_32);
  return 32 + 31 - Math.clz32(high & -high);
}

/** floor(log2(n)) for a safe integer n >= 1. */
function floorLog2(n: number): number {
  return n < TWO_32 ? 31 - Math.clz32(n) : 32 + 31 - Math.clz32(Math.floor(n / TWO_32));
}

/**
 * The hashes of the subtrees `wants` ((level, index) pairs), in order: those the reader holds
 * (cachedNode) at once, the others read together (a tileReader sends what one turn asks in one
 * query), each tile and subtree read once (memoized).
 */
async function subtreeHashes(read: ReadTile, wants: readonly number[]): Promise<Buffer[]> {
  const out = new Array<Buffer>(wants.length / 2);
  let once: ReadTile | null = null;
  let waits: Array<Promise<void>> | null = null;
  for (let k = 0; k < out.length; k++) {
    const level = wants[2 * k]!;
    const index = wants[2 * k + 1]!;
    const hit = read.cachedNode?.(level, index);
    if (hit) {
      out[k] = hit;
      continue;
    }
    once ??= memoized(read);
    (waits ??= []).push(subtreeHashFrom(once, level, index).then((h) => void (out[k] = h)));
  }
  if (waits) await Promise.all(waits);
  return out;
}

/**
 * MTH of each range of `ranges` ((lo, hi) pairs, see rangeSubtrees): every subtree they need
 * asked at once, then each range's folded right to left. A proof's walk is synchronous but for
 * the reads of what the reader does not hold: a promise for each subtree and range made about
 * 60 KB of a cold inclusion proof's 156 KB of garbage over HTTP at 10,000,000 leaves (heap
 * sampling of the server), and the server collects its young garbage every 100 proofs or so,
 * for 1-4 ms, which is much of their p99.
 */
async function rangeHashes(read: ReadTile, ranges: readonly number[]): Promise<Buffer[]> {
  const wants: number[] = [];
  const counts: number[] = [];
  for (let i = 0; i < ranges.length; i += 2) counts.push(rangeSubtrees(ranges[i]!, ranges[i + 1]!, wants));
  const hashes = await subtreeHashes(read, wants);
  const out = new Array<Buffer>(counts.length);
  let at = 0;
  for (let r = 0; r < counts.length; r++) {
    const c = counts[r]!;
    let h = c === 0 ? EMPTY_ROOT : hashes[at + c - 1]!;
    for (let i = at + c - 2; i >= at; i--) h = nodeHash(hashes[i]!, h);
    out[r] = h;
    at += c;
  }
  return out;
}

/** MTH of the first `size` leaves (size 0: SHA-256 of the empty string). */
export async function rootHash(read: ReadTile, size: number): Promise<Buffer> {
  checkCount('size', size);
  return (await rangeHashes(read, [0, size]))[0]!;
}

/** RFC 9162 2.1.3.1 PATH(index, D[0:size]), leaf sibling first. */
export async function inclusionProof(read: ReadTile, index: number, size: number): Promise<Buffer[]> {
  checkCount('index', index);
  checkCount('size', size);
  if (index >= size) throw new RangeError(`inclusion proof: index ${index} is not below tree size ${size}`);
  const ranges: number[] = [];
  // Walk from the root down; PATH lists the deepest sibling first, so collect and reverse.
  let lo = 0;
  let n = size;
  let m = index;
  while (n > 1) {
    const k = splitPoint(n);
    if (m < k) {
      ranges.push(lo + k, lo + n);
      n = k;
    } else {
      ranges.push(lo, lo + k);
      lo += k;
      m -= k;
      n -= k;
    }
  }
  return (await rangeHashes(read, ranges)).reverse();
}

/** RFC 9162 2.1.4.1 PROOF(m, D[0:n]); [] when m == n or m == 0. */
export async function consistencyProof(read: ReadTile, m: number, n: number): Promise<Buffer[]> {
  checkCount('m', m);
  checkCount('n', n);
  if (m > n) throw new RangeError(`consistency proof: old size ${m} is larger than new size ${n}`);
  if (m === 0 || m === n) return [];
  const ranges: number[] = [];
  // SUBPROOF(m, D[lo:lo+len], b), iteratively; hashes appended after the recursive part, so reverse at the end.
  let lo = 0;
  let len = n;
  let mm = m;
  let b = true;
  for (;;) {
    if (mm === len) {
      if (!b) ranges.push(lo, lo + len);
      break;
    }
    const k = splitPoint(len);
    if (mm <= k) {
      ranges.push(lo + k, lo + len);
      len = k;
    } else {
      ranges.push(lo, lo + k);
      lo += k;
      mm -= k;
      len -= k;
      b = false;
    }
  }
  return (await rangeHashes(read, ranges)).reverse();
}

// ---------------------------------------------------------------------------------------
// Verification (RFC 9162 2.1.3.2 and 2.1.4.2)

const isOdd = (x: number) => x % 2 === 1;
const half = (x: number) => Math.floor(x / 2);

function sameHash(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === HASH_SIZE && b.length === HASH_SIZE && Buffer.compare(a, b) === 0;
}

/** RFC 9162 2.1.3.2: does `proof` show the leaf with hash `leaf` at `index` in the tree of `size` with root `root`? */
export function verifyInclusion(leaf: Uint8Array, index: number, size: number, proof: Uint8Array[], root: Uint8Array): boolean {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return false;
  if (leaf.length !== HASH_SIZE || proof.some((p) => p.length !== HASH_SIZE)) return false;
  let fn = index;
  let sn = size - 1;
  let r: Uint8Array = leaf;
  for (const p of proof) {
    if (sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      r = nodeHash(p, r);
      if (!isOdd(fn)) {
        while (!isOdd(fn) && fn !== 0) {
          fn = half(fn);
          sn = half(sn);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && sameHash(r, root);
}

/**
 * RFC 9162 2.1.4.2: does `proof` show the tree of size m with root `oldRoot` is a prefix of
 * the tree of size n with root `newRoot`? m == n needs an empty proof and equal roots; m == 0
 * needs an empty proof and the empty tree's root.
 */
export function verifyConsistency(m: number, n: number, proof: Uint8Array[], oldRoot: Uint8Array, newRoot: Uint8Array): boolean {
  if (!Number.isSafeInteger(m) || !Number.isSafeInteger(n) || m < 0 || m > n) return false;
  if (proof.some((p) => p.length !== HASH_SIZE)) return false;
  if (m === n) return proof.length === 0 && sameHash(oldRoot, newRoot);
  if (m === 0) return proof.length === 0 && sameHash(oldRoot, EMPTY_ROOT) && newRoot.length === HASH_SIZE;
  if (proof.length === 0) return false;
  const path: Uint8Array[] = isPowerOfTwo(m) ? [oldRoot, ...proof] : proof;
  let fn = m - 1;
  let sn = n - 1;
  while (isOdd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr: Uint8Array = path[0];
  let sr: Uint8Array = path[0];
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (!isOdd(fn)) {
        while (!isOdd(fn) && fn !== 0) {
          fn = half(fn);
          sn = half(sn);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && sameHash(fr, oldRoot) && sameHash(sr, newRoot);
}

function isPowerOfTwo(x: number): boolean {
  if (x < 1) return false;
  while (x % 2 === 0) x /= 2;
  return x === 1;
}

// ---------------------------------------------------------------------------------------
// Building tiles

/**
 * One tile to store: its full new content (a full tile is 8192 bytes, a partial one shorter);
 * a full level-0 tile with its inner nodes (tileInnerNodes).
 */
export interface TileWrite {
  level: number;
  index: number;
  data: Buffer;
  nodes?: Buffer;
}

/**
 * Appends `leafHashes` to a tree of `size` leaves. `lastTiles` maps each tile level to the
 * bytes of that level's rightmost stored tile at `size` (absent or empty when the level's
 * rightmost tile is empty; a full tile there is ignored, since the next hash starts a new
 * tile). Returns the new size and every tile whose bytes changed, in (level, index) order:
 * level-0 tiles receiving the leaf hashes, and at every level above, the tiles receiving the
 * roots of tiles that filled.
 */
export function appendLeaves(
  size: number,
  lastTiles: Map<number, Uint8Array>,
  leafHashes: Uint8Array[],
): { size: number; tiles: TileWrite[] } {
  checkCount('size', size);
  const newSize = size + leafHashes.length;
  if (!Number.isSafeInteger(newSize)) throw new RangeError('appendLeaves: the new size is not a safe integer');
  leafHashes.forEach((h, i) => checkHash(`leafHashes[${i}]`, h));

  // Per tile level: the rightmost tile's buffer, how many hashes it holds, its index, and whether it changed.
  interface Open {
    buf: Buffer;
    width: number;
    index: number;
    dirty: boolean;
  }
  const open: Open[] = [];
  const written: TileWrite[] = [];

  const openLevel = (level: number): Open => {
    let o = open[level];
    if (o) return o;
    const perTile = TILE_WIDTH ** (level + 1);
    const width = Math.floor(size / TILE_WIDTH ** level) % TILE_WIDTH;
    const index = Math.floor(size / perTile);
    const buf = Buffer.alloc(FULL_TILE_BYTES);
    if (width > 0) {
      const stored = lastTiles.get(level);
      if (!stored || stored.length !== width * HASH_SIZE) {
        throw new RangeError(
          `appendLeaves: the rightmost tile at level ${level} for size ${size} must hold ${width} hashes ` +
            `(${width * HASH_SIZE} bytes), got ${stored ? stored.length : 'none'}`,
        );
      }
      buf.set(stored, 0);
    }
    o = { buf, width, index, dirty: false };
    open[level] = o;
    return o;
  };

  const push = (level: number, h: Uint8Array): void => {
    const o = openLevel(level);
    o.buf.set(h, o.width * HASH_SIZE);
    o.width++;
    o.dirty = true;
    if (o.width === TILE_WIDTH) {
      // Inner nodes are stored for level-0 tiles only: the tiles above are few, and cached.
      const { nodes, root } = tileInnerNodes(o.buf);
      written.push(level === 0 ? { level, index: o.index, data: o.buf, nodes } : { level, index: o.index, data: o.buf });
      open[level] = { buf: Buffer.alloc(FULL_TILE_BYTES), width: 0, index: o.index + 1, dirty: false };
      push(level + 1, root);
    }
  };

  for (const h of leafHashes) push(0, h);

  for (let level = 0; level < open.length; level++) {
    const o = open[level];
    if (o && o.dirty && o.width > 0) written.push({ level, index: o.index, data: Buffer.from(o.buf.subarray(0, o.width * HASH_SIZE)) });
  }
  written.sort((a, b) => a.level - b.level || a.index - b.index);
  return { size: newSize, tiles: written };
}
