/**
 * The transparency log's part of `GET /api/audit/verify`: the stored tree against the records
 * and the latest checkpoint. Every leaf is recomputed from its record (leaves.ts), in order,
 * with constant memory (a compact range of at most 64 subtree hashes), and compared with the
 * leaf hash stored in the level-0 tiles; the latest checkpoint's signature is checked with
 * the log's key and its root with the root recomputed from the records at its size.
 */
import type { AppContext } from '../../shared/app-context.js';
import type { components } from '../../../gen/openapi/control-plane.js';
import { firstStoredHashMismatch, leafCount, readLeafHashes } from './leaves.js';
import { EMPTY_ROOT, nodeHash } from './merkle.js';
import { treeState } from './tiles.js';
import { latestCheckpoint, transparencyLog, type TransparencyLog } from './log.js';
import { openNote } from './note.js';

export type TreeVerifyResult = components['schemas']['TransparencyLogVerifyResult'];

const CHUNK = 1000;

/** RFC 9162 MTH of a growing list, from the hashes of its perfect subtrees (left to right). */
class CompactRange {
  private peaks: Buffer[] = [];
  size = 0;
  push(h: Buffer): void {
    let k = this.size;
    while (k & 1) {
      h = nodeHash(this.peaks.pop()!, h);
      k >>= 1;
    }
    this.peaks.push(h);
    this.size++;
  }
  root(): Buffer {
    if (!this.peaks.length) return EMPTY_ROOT;
    let r = this.peaks[this.peaks.length - 1]!;
    for (let i = this.peaks.length - 2; i >= 0; i--) r = nodeHash(this.peaks[i]!, r);
    return r;
  }
}

export async function verifyTree(ctx: AppContext): Promise<TreeVerifyResult> {
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
  // Every stored leaf hash against its record (in the database, concurrently), then the
  // stored hashes (recomputed where none is stored) against the tree and the checkpoint.
  const storedP = firstStoredHashMismatch(ctx.db);
  storedP.catch(() => {}); // awaited below
  const treeFailure = await walkTree(ctx, count, state.size, checkpoint, log.reader());
  const stored = await storedP;
  if (stored !== null && (treeFailure === null || treeFailure.leaf === null || stored <= treeFailure.leaf)) {
    return result(stored, `leaf ${stored}: the record is not what its leaf hash was computed from (the record or its leaf hash was changed)`);
  }
  if (treeFailure) return result(treeFailure.leaf, treeFailure.error);
  if (state.size > count) return result(count, `the tree has ${state.size} leaves but only ${count} records exist: records were removed`);
  if (checkpoint && checkpoint.treeSize > count) return result(count, `the latest checkpoint covers ${checkpoint.treeSize} leaves but only ${count} records exist: records were removed`);
  return result(null, null);
}

/** The leaf hashes in order against the stored tiles and the checkpoint's root: the first failure, or null. */
async function walkTree(
  ctx: AppContext,
  count: number,
  treeSize: number,
  checkpoint: Awaited<ReturnType<typeof latestCheckpoint>>,
  read: ReturnType<TransparencyLog['reader']>,
): Promise<{ leaf: number | null; error: string } | null> {
  const rootMismatch = () => ({ leaf: null, error: `the records' root at the checkpoint's tree size ${checkpoint!.treeSize} is not the checkpoint's root: a record before it was changed` });
  const range = new CompactRange();
  let tile: Uint8Array | null = null;
  let tileIndex = -1;
  for (let from = 0; from < count; from += CHUNK) {
    const hashes = await readLeafHashes(ctx.db, from, Math.min(CHUNK, count - from));
    for (let k = 0; k < hashes.length; k++) {
      const index = from + k;
      if (checkpoint && range.size === checkpoint.treeSize && !range.root().equals(checkpoint.root)) return rootMismatch();
      const h = hashes[k]!;
      if (index < treeSize) {
        if (index >> 8 !== tileIndex) {
          tileIndex = Math.floor(index / 256);
          tile = await read(0, tileIndex);
        }
        const off = (index % 256) * 32;
        if (!tile || tile.length < off + 32 || !Buffer.from(tile.subarray(off, off + 32)).equals(h)) {
          return { leaf: index, error: `leaf ${index}: the record's hash is not the tree's leaf hash (the record or the tree was changed)` };
        }
      }
      range.push(h);
    }
    if (hashes.length < Math.min(CHUNK, count - from)) return { leaf: from + hashes.length, error: `leaf ${from + hashes.length} is missing: no record has this leaf_index` };
  }
  if (checkpoint && range.size === checkpoint.treeSize && !range.root().equals(checkpoint.root)) return rootMismatch();
  return null;
}
