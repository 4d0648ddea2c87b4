/**
 * Verifies, from a log's public tiles and entry bundles, that the tree of `to.size` leaves is
 * the tree of `from.size` leaves plus new leaves that are all well-formed audit records:
 *
 * 1. seeds a TreeExtender with the rightmost hash tiles at the old size (read as prefixes of
 *    the tiles at the new size, which every log serves) and checks they give the old root;
 * 2. finds the last context request record before the new leaves (walking back from leaf
 *    from.size - 1; each leaf read is authenticated, by the seed's leaf hashes or by an
 *    inclusion proof in the old tree), where the chains continue from;
 * 3. streams the entry bundles covering the new leaves, a few in flight, in order: each leaf
 *    is hashed into the extender and its record rechecked (LeafRecordChecker);
 * 4. checks the extender's root against the new root.
 *
 * Memory is constant in the number of leaves: one tile per level and the bundles in flight.
 * The consistency proof between the two checkpoints is the caller's (it needs no leaves).
 */
import { sha256Into } from '../../shared/sha256.js';
import { HASH_SIZE, leafHash, TILE_WIDTH, verifyInclusion } from './merkle.js';
import { LeafRecordChecker, parseLeafRecord, recordKind, tipOf, type ChainTip } from './record-check.js';
import { entrySpans } from './tile-path.js';
import { rightmostTiles, TreeExtender } from './tree-extender.js';

export interface TlogSource {
  hashTile(level: number, index: number, width?: number): Promise<Uint8Array>;
  entryBundle(index: number, width?: number): Promise<Uint8Array>;
  /** Takes back an entry bundle's bytes once they are checked (nothing holds a view of them any more): a source may read the next one into them. */
  release?(data: Uint8Array): void;
  inclusionProof(q: { leafIndex: number; treeSize: number }): Promise<{ hashes: Uint8Array[] }>;
}

export interface TreeHead { size: number; root: Uint8Array }

export interface AppendReport {
  ok: boolean;
  /** The first failing leaf, when a leaf failed. */
  leafIndex?: number;
  reason?: string;
  /** New leaves checked, of them context request records, output records and management events. */
  leaves: number;
  requests: number;
  outputs: number;
  events: number;
}

/** Width of tile/bundle `index` (at level `level`) in a tree of `size`: undefined when full. */
function widthAt(level: number, index: number, size: number): number | undefined {
  const per = TILE_WIDTH ** level;
  const stored = Math.floor(size / per);
  if (stored >= (index + 1) * TILE_WIDTH) return undefined;
  return stored - index * TILE_WIDTH;
}

/** The bytes of tile (level, index) at size `at`, read from the log whose tree has `size` leaves. */
async function tilePrefix(src: TlogSource, level: number, index: number, width: number, size: number): Promise<Uint8Array> {
  const data = await src.hashTile(level, index, widthAt(level, index, size));
  if (data.length < width * HASH_SIZE) throw new Error(`hash tile ${level}/${index} holds ${data.length} bytes, need ${width * HASH_SIZE}`);
  return data.subarray(0, width * HASH_SIZE);
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && Buffer.compare(a, b) === 0;

/** An entry bundle's bytes and where its entries lie in them (entry k: buf[at[k], at[k] + len[k])). */
interface Bundle {
  buf: Buffer;
  at: number[];
  len: number[];
}

/**
 * Leaf hashes of one bundle's entries, with nothing allocated per leaf: each hashed where it
 * lies in the bundle (sha256Into takes a range and the 0x00 prefix) into a tile-sized buffer,
 * whose per-leaf views TreeExtender.append copies from.
 */
class LeafHasher {
  private readonly out = Buffer.alloc(TILE_WIDTH * HASH_SIZE);
  readonly hashes: Uint8Array[] = Array.from({ length: TILE_WIDTH }, (_, k) => this.out.subarray(k * HASH_SIZE, (k + 1) * HASH_SIZE));

  /** hashes[k] = SHA-256(0x00 || buf[s, s + n)). */
  hash(k: number, buf: Buffer, s: number, n: number): void {
    sha256Into(this.out, k * HASH_SIZE, buf, s, s + n, 0x00);
  }
}

export async function verifyAppend(src: TlogSource, from: TreeHead, to: TreeHead, opts: { concurrency?: number; onBundle?: (leavesDone: number) => void } = {}): Promise<AppendReport> {
  const report: AppendReport = { ok: false, leaves: 0, requests: 0, outputs: 0, events: 0 };
  const fail = (reason: string, leafIndex?: number): AppendReport => Object.assign(report, { ok: false, reason, leafIndex });
  const m = from.size;
  const n = to.size;
  if (n < m) return fail(`the tree shrank from ${m} to ${n} leaves`);

  // 1. Seed.
  const seed = new Map<number, Uint8Array>();
  await Promise.all(rightmostTiles(m).map(async (t) => seed.set(t.level, await tilePrefix(src, t.level, t.index, t.width, n))));
  const ext = new TreeExtender(m, seed);
  if (!sameBytes(await ext.root(), from.root)) return fail(`the hash tiles at size ${m} do not give the old root`);
  if (m === n) return sameBytes(from.root, to.root) ? Object.assign(report, { ok: true }) : fail(`same size ${n}, different roots`);

  // 2. The chain tip before the new leaves.
  const firstBundle = Math.floor(m / TILE_WIDTH);
  const lastBundle = Math.ceil(n / TILE_WIDTH) - 1;
  const fetchBundle = async (b: number): Promise<Bundle> => {
    const want = widthAt(0, b, n) ?? TILE_WIDTH;
    const data = await src.entryBundle(b, want === TILE_WIDTH ? undefined : want);
    const buf = Buffer.from(data.buffer, data.byteOffset, data.length);
    const { at, len } = entrySpans(buf);
    if (at.length !== want) throw new Error(`entry bundle ${b} holds ${at.length} entries, want ${want}`);
    return { buf, at, len };
  };
  const seedLeaves = ext.lastLeafHashes();
  let head: Bundle | null = m % TILE_WIDTH && firstBundle <= lastBundle ? await fetchBundle(firstBundle) : null;
  let tip: ChainTip | null = null;
  let chained = false;
  for (let i = m - 1, bundle: Bundle | null = head, bundleIndex = firstBundle; i >= 0; i--) {
    const b = Math.floor(i / TILE_WIDTH);
    if (b !== bundleIndex || !bundle) {
      bundle = await fetchBundle(b);
      bundleIndex = b;
    }
    const k = i % TILE_WIDTH;
    const data = bundle.buf.subarray(bundle.at[k], bundle.at[k]! + bundle.len[k]!);
    if (b === firstBundle) {
      if (!sameBytes(leafHash(data), seedLeaves.subarray(k * HASH_SIZE, (k + 1) * HASH_SIZE))) return fail('the leaf data does not hash to the leaf hash in the old tree', i);
    } else {
      const proof = await src.inclusionProof({ leafIndex: i, treeSize: m });
      if (!verifyInclusion(leafHash(data), i, m, proof.hashes, from.root)) return fail('the leaf data is not included in the old tree', i);
    }
    const r = parseLeafRecord(data);
    if (typeof r === 'string') return fail(r, i);
    if (recordKind(r) === 'request') {
      tip = tipOf(r);
      chained = tip !== null;
      break;
    }
  }
  const checker = new LeafRecordChecker(tip, chained);

  // 3. Stream the new leaves.
  const concurrency = Math.max(1, opts.concurrency ?? 8);
  const window: Array<Promise<Bundle>> = [];
  let next = firstBundle;
  const launch = () => {
    while (window.length < concurrency && next <= lastBundle) {
      const b = next++;
      const p = b === firstBundle && head ? Promise.resolve(head) : fetchBundle(b);
      p.catch(() => {}); // awaited in order below; not an unhandled rejection meanwhile
      window.push(p);
    }
  };
  launch();
  head = null; // the window holds it now
  const hasher = new LeafHasher();
  for (let b = firstBundle; b <= lastBundle; b++) {
    const { buf, at, len } = await window.shift()!;
    launch();
    const from = Math.max(0, m - b * TILE_WIDTH); // the entries before are old leaves (the old root covers them)
    for (let k = from; k < at.length; k++) {
      const i = b * TILE_WIDTH + k;
      const problem = checker.checkAt(i, buf, at[k]!, at[k]! + len[k]!);
      if (problem) return fail(problem, i);
      hasher.hash(k, buf, at[k]!, len[k]!);
    }
    src.release?.(buf);
    const count = Math.max(0, at.length - from);
    ext.append(hasher.hashes.slice(from, from + count));
    report.leaves += count;
    opts.onBundle?.(report.leaves);
  }
  report.requests = checker.requests;
  report.outputs = checker.outputs;
  report.events = checker.events;

  // 4. The new root.
  if (ext.size !== n) return fail(`the entry bundles hold ${ext.size} leaves, the checkpoint ${n}`);
  if (!sameBytes(await ext.root(), to.root)) return fail(`the root of the ${n} leaves recomputed from the old tiles and the new entries is not the checkpoint's root`);
  report.ok = true;
  return report;
}
