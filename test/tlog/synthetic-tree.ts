/**
 * A tree of synthetic leaf hashes (no records behind them), stored as the integrator stores
 * it, with a signed checkpoint: for the proof benchmark and the warm-up test.
 */
import type { Db } from '../../src/core/db/index.js';
import { appendLeaves, rootHash } from '../../src/core/tlog/merkle.js';
import { newTileCache, tileReader, treeState, writeTiles } from '../../src/core/tlog/tiles.js';
import { formatCheckpoint } from '../../src/core/tlog/checkpoint.js';
import { signNote } from '../../src/core/tlog/note.js';
import { TLOG_KEY } from '../harness.js';

/** Appends `hashes` to the stored tree (appendLeaves + writeTiles), checking that it held `from` leaves. */
export async function appendSynthetic(db: Pick<Db, 'query'>, from: number, hashes: Buffer[]): Promise<void> {
  const state = await treeState(db);
  if (state.size !== from) throw new Error(`tree size ${state.size}, expected ${from}`);
  await writeTiles(db, appendLeaves(state.size, state.lastTiles, hashes).tiles);
}

/** Signs (with the tests' TLOG_KEY) and stores the checkpoint of the first `size` leaves; answers its root. */
export async function storeCheckpoint(db: Pick<Db, 'query'>, origin: string, size: number): Promise<Buffer> {
  const root = await rootHash(tileReader(db, newTileCache()), size);
  const note = signNote(formatCheckpoint({ origin, size, root }), TLOG_KEY.signerKey);
  await db.query('INSERT INTO audit_tlog_checkpoints (tree_size, root_hash, note) VALUES ($1, $2, $3)', [size, root, note]);
  return root;
}
