/**
 * The transparency log's part of `GET /api/audit/verify`: the stored tree against the records
 * and the latest checkpoint.
 *
 * - Each context request record's stored leaf hash is checked against the record by the chain
 *   checker (src/core/audit/chain-check.ts), in the same pass as its chains: the caller passes
 *   its first failure here.
 * - Here every leaf, in order, in pages of PAGE leaves: its hash is the stored one (a chained
 *   context request) or is recomputed from its record (an output, a management event, a legacy record, a record
 *   stored before the leaf_hash column); each must equal the leaf hash in the level-0 tiles,
 *   no leaf index may be missing or held twice, a full level-0 tile's stored inner nodes must
 *   be the hashes of its leaves' subtrees, and the root of the leaves at the latest
 *   checkpoint's size must be its root; the checkpoint's signature is checked with the log's key.
 *
 * A page is two queries (the leaves' indexes and hashes, as base64 rows; the digests of the
 * page's tiles, TILE_DIGESTS_QUERY), READ_AHEAD pages are asked ahead, and memory is constant:
 * those pages and a compact range of at most 64 subtree hashes.
 */
import type { AppContext } from '../../shared/app-context.js';
import type { components } from '../../../gen/openapi/control-plane.js';
import type { Db } from '../db/index.js';
import type { LeafFailure } from '../audit/chain-check.js';
import { LEGACY_SENTINEL } from '../audit/hash.js';
import { leafCount, readLeaves } from './leaves.js';
import { EMPTY_ROOT, FULL_TILE_NODES_BYTES, fullTileNodes, HASH_SIZE, leafHash, nodeHash, TILE_HEIGHT, TILE_NODES_BYTES, TILE_WIDTH, tileNodeOffset } from './merkle.js';
import { asBuffer, treeState } from './tiles.js';
import { latestCheckpoint, transparencyLog } from './log.js';
import { openNote } from './note.js';
import { sha256Is } from '../../shared/sha256.js';

export type TreeVerifyResult = components['schemas']['TransparencyLogVerifyResult'];

/** Leaves per page: 64 tiles. */
const PAGE = 64 * TILE_WIDTH;
/** Pages asked of the database before they are checked (see walkTree). */
const READ_AHEAD = 2;

/** RFC 9162 MTH of a growing list, from the hashes of its perfect subtrees (left to right). */
class CompactRange {
  private peaks: Buffer[] = [];
  size = 0;
  /**
   * Appends a leaf hash, or (`height`) the hash of a perfect subtree of 2^height leaves when
   * the size is a multiple of 2^height (copied when kept: the caller may reuse its bytes);
   * `onNode` sees each subtree hash this completes (its height, index at that height and hash).
   */
  push(h: Buffer, onNode?: (height: number, index: number, hash: Buffer) => void, height = 0): void {
    const span = 2 ** height;
    let k = this.size / span;
    if (!Number.isInteger(k)) throw new RangeError(`a subtree of ${span} leaves cannot follow ${this.size} leaves`);
    if (k % 2 === 0) h = Buffer.from(h);
    while (k % 2 === 1) {
      h = nodeHash(this.peaks.pop()!, h);
      k = (k - 1) / 2;
      height++;
      onNode?.(height, k, h);
    }
    this.peaks.push(h);
    this.size += span;
  }
  root(): Buffer {
    if (!this.peaks.length) return EMPTY_ROOT;
    let r = this.peaks[this.peaks.length - 1]!;
    for (let i = this.peaks.length - 2; i >= 0; i--) r = nodeHash(this.peaks[i]!, r);
    return r;
  }
}

/**
 * `storedMismatch`: the chain checker's first context request record whose stored leaf hash is
 * not its record's (null: none). `page` and `rowLeaves`: leaves per page and per row of a
 * page's answer (tests make them small).
 */
export async function verifyTree(ctx: AppContext, storedMismatch: LeafFailure | null, page = PAGE, rowLeaves = BLOB_LEAVES): Promise<TreeVerifyResult> {
  const log = transparencyLog(ctx);
  // In this order: the integrator may add leaves and a checkpoint meanwhile, and read the
  // other way round a tree grown since the records were counted would look larger than them.
  const checkpoint = await latestCheckpoint(ctx.db);
  const state = await treeState(ctx.db);
  const count = await leafCount(ctx.db);
  const result = (tamperedAt: number | null, error: string | null): TreeVerifyResult => ({
    status: error ? 'tampered' : 'ok',
    leaf_count: count,
    tree_size: state.size,
    checkpoint_tree_size: checkpoint ? checkpoint.treeSize : null,
    tampered_at_leaf: tamperedAt,
    error,
  });
  if (checkpoint) {
    try {
      openNote(checkpoint.note, [log.verifierKey]);
    } catch (e) {
      return result(null, `the latest checkpoint (tree size ${checkpoint.treeSize}) does not verify with the log's key: ${(e as Error).message}`);
    }
  }
  const treeFailure = await walkTree(ctx.db, count, state.size, checkpoint, page, rowLeaves);
  if (storedMismatch && (treeFailure === null || treeFailure.leaf === null || storedMismatch.leaf <= treeFailure.leaf)) {
    return result(storedMismatch.leaf, storedMismatch.error);
  }
  if (treeFailure) return result(treeFailure.leaf, treeFailure.error);
  if (state.size > count) return result(count, `the tree has ${state.size} leaves but only ${count} records exist: records were removed`);
  if (checkpoint && checkpoint.treeSize > count) return result(count, `the latest checkpoint covers ${checkpoint.treeSize} leaves but only ${count} records exist: records were removed`);
  return result(null, null);
}

/** Bytes per leaf in a page's blob: its index (int8), 1 when a hash is stored, the hash. */
const ENTRY = 8 + 1 + HASH_SIZE;
const NO_HASH = `'\\x${'00'.repeat(HASH_SIZE)}'::bytea`;

/**
 * Leaves per row of a page's answer, sent as base64 text (56 KB for 1,024 leaves; as a bytea's
 * hex text they were 84 KB, and decoding and collecting them was a fifth of the API's thread's
 * time during the tree check, second to the tiles' bytes before TILE_DIGESTS_QUERY). Below V8's
 * large-object size (128 KB). A page in one row was a 1.3 MB string, garbage that only a full
 * collection frees: in one benchmark run the server's resident memory grew by 48 MB during the
 * tree check (to 309 MB); in rows of 1,024 it stayed within 7 MB of where the call began
 * (3 runs, sampled every 10 ms).
 */
const BLOB_LEAVES = 1024;

/**
 * The leaves `$1` .. `$2 - 1` that exist, as rows of ENTRY bytes per leaf in base64 (each for up to `$3` leaves: BLOB_LEAVES) in leaf order:
 * a chained context request's stored leaf hash (checked against its record by the chain
 * checker); no hash for the others (their records are read and hashed here), legacy records
 * included, whose stored hash nothing else checks.
 * One row per range of `$3` leaves (null when none exists), each aggregated from its own
 * index scans: grouping the page's leaves instead (`GROUP BY leaf_index / $3`) sorted all of
 * them for the groups before each group's own sort, and cost PostgreSQL 1.23-1.31 µs a leaf
 * against 0.85-0.92 (1,000,000 leaves, a page's query after another, CPU of its backend).
 */
const PAGE_QUERY = `SELECT (SELECT encode(string_agg(int8send(i) || CASE WHEN h IS NULL THEN '\\x00'::bytea || ${NO_HASH} ELSE '\\x01'::bytea || h END, ''::bytea ORDER BY i), 'base64')
    FROM (SELECT leaf_index AS i, CASE WHEN record_hash = '${LEGACY_SENTINEL}' OR length(leaf_hash) <> ${HASH_SIZE} THEN NULL ELSE leaf_hash END AS h
            FROM agent_context_requests WHERE leaf_index >= s AND leaf_index < e
          UNION ALL
          SELECT leaf_index, NULL FROM agent_output_logs WHERE leaf_index >= s AND leaf_index < e
          UNION ALL
          SELECT leaf_index, NULL FROM audit_management_events WHERE leaf_index >= s AND leaf_index < e) x) AS b
  FROM generate_series($1::int8, $2::int8 - 1, $3::int8) s CROSS JOIN LATERAL (VALUES (least(s + $3::int8, $2::int8))) r(e) ORDER BY s`;

/**
 * A page's level-0 tiles, each as the lengths and SHA-256 digests of its leaf hashes and of its
 * stored inner nodes (null when it has none): a tile whose digests are those of the hashes the
 * records give is the same bytes, and PostgreSQL sends some 100 bytes of it instead of 16 KiB
 * as 32 KiB of hex text. The bytes are read (readTile) only for a tile that differs, is
 * partial, or holds the checkpoint's size, to name the leaf or node that differs. Before, at
 * 1,000,000 leaves, the tree check took about 1.8 s of a 6.1 s verify on the API's thread,
 * most of it decoding and collecting that text (README, "The tree check: tile digests, pages
 * read ahead").
 */
const TILE_DIGESTS_QUERY = `SELECT idx, length(data) AS data_length, sha256(data) AS data_digest, length(nodes) AS nodes_length, sha256(nodes) AS nodes_digest
  FROM audit_tlog_tiles WHERE level = 0 AND idx >= $1 AND idx < $2 ORDER BY idx`;

interface TileDigestRow {
  idx: number | string;
  data_length: number | string;
  data_digest: Uint8Array | string;
  nodes_length: number | string | null;
  nodes_digest: Uint8Array | string | null;
}

const tileDigests = (r: TileDigestRow) => ({
  dataLength: Number(r.data_length),
  dataDigest: asBuffer(r.data_digest),
  nodesLength: r.nodes_length == null ? null : Number(r.nodes_length),
  nodesDigest: r.nodes_digest == null ? null : asBuffer(r.nodes_digest),
});

/** A level-0 tile's bytes: its leaf hashes and its stored inner nodes (null when none); null when it is not stored. */
async function readTile(db: Pick<Db, 'query'>, index: number): Promise<{ data: Buffer; nodes: Buffer | null } | null> {
  const [r] = await db.query<{ data: Uint8Array | string; nodes: Uint8Array | string | null }>('SELECT data, nodes FROM audit_tlog_tiles WHERE level = 0 AND idx = $1', [index]);
  return r ? { data: asBuffer(r.data), nodes: r.nodes == null ? null : asBuffer(r.nodes) } : null;
}

/** The leaf hashes in order against the stored tiles and the checkpoint's root: the first failure, or null. */
async function walkTree(
  db: Pick<Db, 'query'>,
  count: number,
  treeSize: number,
  checkpoint: Awaited<ReturnType<typeof latestCheckpoint>>,
  page: number,
  rowLeaves: number,
): Promise<{ leaf: number | null; error: string } | null> {
  const range = new CompactRange();
  const rootMismatch = () => ({ leaf: null, error: `the records' root at the checkpoint's tree size ${checkpoint!.treeSize} is not the checkpoint's root: a record before it was changed` });
  const hashes = Buffer.alloc(page * HASH_SIZE);
  const tileNodes = Buffer.alloc(FULL_TILE_NODES_BYTES);
  // The next READ_AHEAD pages' queries are sent before this page is checked, so that
  // PostgreSQL reads them while this process hashes the one before, on as many connections
  // (the pool's): a page's leaves cost PostgreSQL about 22 ms (an index scan of 16,384
  // records, a sort, the aggregate), and with one page ahead this thread waited for it
  // most of the tree check's 1.5 s at 1,000,000 leaves, the other core idle.
  const readPage = (from: number) => {
    const to = Math.min(from + page, count);
    const p = Promise.all([
      db.query<{ b: string | null }>(PAGE_QUERY, [from, to, rowLeaves]),
      db.query<TileDigestRow>(TILE_DIGESTS_QUERY, [Math.floor(from / TILE_WIDTH), Math.ceil(Math.min(to, treeSize) / TILE_WIDTH)]),
    ]);
    p.catch(() => {}); // awaited in turn; not an unhandled rejection when an earlier page fails
    return p;
  };
  const ahead: Array<ReturnType<typeof readPage>> = [];
  let asked = 0;
  const askMore = () => {
    for (; ahead.length < READ_AHEAD && asked < count; asked += page) ahead.push(readPage(asked));
  };
  askMore();
  for (let from = 0; from < count; from += page) {
    const to = Math.min(from + page, count);
    const [rows, tiles] = await ahead.shift()!;
    askMore();
    const blob = Buffer.concat(rows.filter((r) => r.b != null).map((r) => Buffer.from(r.b!, 'base64')));
    const n = blob.length / ENTRY;
    // Indexes in order, each once; the leaves with no stored hash, in runs.
    const runs: Array<[number, number]> = [];
    for (let k = 0; k < n; k++) {
      const o = k * ENTRY;
      const index = blob.readUInt32BE(o) * 2 ** 32 + blob.readUInt32BE(o + 4);
      if (index !== from + k) {
        return index > from + k
          ? { leaf: from + k, error: `leaf ${from + k} is missing: no record has this leaf_index` }
          : { leaf: index, error: `leaf ${index} is held by two records` };
      }
      if (blob[o + 8] === 1) blob.copy(hashes, k * HASH_SIZE, o + 9, o + ENTRY);
      else if (runs.length && runs[runs.length - 1]![1] === k) runs[runs.length - 1]![1]++;
      else runs.push([k, k + 1]);
    }
    if (n < to - from) return { leaf: from + n, error: `leaf ${from + n} is missing: no record has this leaf_index` };
    for (const [s, e] of runs) {
      const leaves = await readLeaves(db, from + s, e - s);
      if (leaves.length !== e - s) return { leaf: from + s + leaves.length, error: `leaf ${from + s + leaves.length} changed while it was checked` };
      for (const l of leaves) leafHash(l.data).copy(hashes, (l.index - from) * HASH_SIZE);
    }
    // Against the stored tree, tile by tile: a tile's digest first (TILE_DIGESTS_QUERY), its
    // bytes only when that does not settle it.
    const digests = new Map(tiles.map((t) => [Number(t.idx), tileDigests(t)]));
    const end = Math.min(to, treeSize);
    // Each tile's leaves of this page inside the tree: none when the tree ends before the page's first leaf (its integration lags).
    for (let t = Math.floor(from / TILE_WIDTH); Math.max(t * TILE_WIDTH, from) < end; t++) {
      const lo = Math.max(t * TILE_WIDTH, from);
      const hi = Math.min(t * TILE_WIDTH + TILE_WIDTH, end);
      const at = (i: number) => (i - t * TILE_WIDTH) * HASH_SIZE; // leaf i in the tile
      const mine = (i: number) => (i - from) * HASH_SIZE; // leaf i in this page's hashes
      const d = digests.get(t);
      if (d && lo === t * TILE_WIDTH && d.dataLength === at(hi) && sha256Is(hashes, mine(lo), mine(hi), d.dataDigest, 0)) continue;
      const tile = (d && (await readTile(db, t))?.data) || Buffer.alloc(0);
      if (tile.length >= at(hi) && tile.compare(hashes, mine(lo), mine(hi), at(lo), at(hi)) === 0) continue;
      for (let i = lo; i < hi; i++) {
        if (tile.length < at(i + 1) || tile.compare(hashes, mine(i), mine(i + 1), at(i), at(i + 1)) !== 0) {
          return { leaf: i, error: `leaf ${i}: the record's hash is not the tree's leaf hash (the record or the tree was changed)` };
        }
      }
    }
    // The root at the checkpoint's size; on the way, the full tiles' stored inner nodes
    // (migration 0017: what proofs read) against the subtrees of the leaves.
    // The stored inner nodes of the tiles checked leaf by leaf (read where such a tile's leaves
    // begin in this page).
    const nodes = new Map<number, Buffer>();
    let badNode: { leaf: number; error: string } | null = null;
    const checkNode = (height: number, index: number, h: Buffer) => {
      if (badNode || height >= TILE_HEIGHT) return;
      const tile = Math.floor(index / (TILE_WIDTH >> height));
      const stored = nodes.get(tile);
      if (!stored) return;
      const at = tileNodeOffset(height, index % (TILE_WIDTH >> height));
      if (stored.compare(h, 0, HASH_SIZE, at, at + HASH_SIZE) !== 0) {
        const first = index * 2 ** height;
        badNode = { leaf: first, error: `tile ${tile}: the stored inner node over leaves ${first}-${first + 2 ** height - 1} is not their hash (the tree was changed)` };
      }
    };
    for (let k = 0; k < to - from; ) {
      if (checkpoint && range.size === checkpoint.treeSize && !range.root().equals(checkpoint.root)) return rootMismatch();
      // A whole level-0 tile in the page, the checkpoint's size not inside it: its inner nodes
      // hashed at once (fullTileNodes), compared with the stored ones in one go, and its root
      // appended. Else, or when they differ (to name the first node that does), leaf by leaf.
      const i = from + k;
      if (i % TILE_WIDTH === 0 && k + TILE_WIDTH <= to - from && !(checkpoint && checkpoint.treeSize > i && checkpoint.treeSize < i + TILE_WIDTH)) {
        fullTileNodes(hashes, k * HASH_SIZE, tileNodes);
        const d = digests.get(i / TILE_WIDTH);
        if (!d?.nodesDigest || (d.nodesLength === TILE_NODES_BYTES && sha256Is(tileNodes, 0, TILE_NODES_BYTES, d.nodesDigest, 0))) {
          range.push(tileNodes.subarray(TILE_NODES_BYTES), undefined, TILE_HEIGHT);
          k += TILE_WIDTH;
          continue;
        }
      }
      if (k === 0 || i % TILE_WIDTH === 0) {
        const t = Math.floor(i / TILE_WIDTH);
        const stored = digests.get(t)?.nodesDigest && (await readTile(db, t))?.nodes;
        if (stored) nodes.set(t, stored);
      }
      range.push(hashes.subarray(k * HASH_SIZE, (k + 1) * HASH_SIZE), nodes.size ? checkNode : undefined);
      if (badNode) return badNode;
      k++;
    }
  }
  if (checkpoint && range.size === checkpoint.treeSize && !range.root().equals(checkpoint.root)) return rootMismatch();
  return null;
}
