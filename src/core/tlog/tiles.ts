/**
 * The tree's tiles in the database (migration 0011, `audit_tlog_tiles`): what the integrator
 * writes and what proofs and the tile endpoints read. Full tiles never change, so they are
 * cached (lru-cache); a partial tile is always read from the database.
 */
import { LRUCache } from 'lru-cache';
import type { Db } from '../db/index.js';
import type { ReadTile, TileWrite } from './merkle.js';

const FULL_TILE_BYTES = 256 * 32;

type Query = Pick<Db, 'query'>;

/** A bytea as the drivers return it (a Uint8Array, or `\\x`-hex text) as a Buffer over the same bytes. */
export const asBuffer = (v: Uint8Array | string): Buffer => (typeof v === 'string' ? Buffer.from(v.replace(/^\\x/, ''), 'hex') : Buffer.from(v.buffer, v.byteOffset, v.byteLength));

/** Full tiles of one database by `level/index`: 8 KiB each, 4,096 of them at most (32 MiB). */
export type TileCache = LRUCache<string, Buffer>;
export const newTileCache = (): TileCache => new LRUCache<string, Buffer>({ max: 4096 });

/**
 * Reads tiles through `db`; full ones come from (and go to) `cache`, the cache of that
 * database. With `size` (a tree size the caller reads no further than: a checkpoint's), a
 * partial tile is served from the cache too when the copy there already holds every hash of
 * that tree (a tile only grows, so an older copy is a prefix of the current one).
 */
export function tileReader(db: Query, cache: TileCache, size?: number): ReadTile {
  return async (level, index) => {
    const key = `${level}/${index}`;
    const cached = cache.get(key);
    if (cached && (cached.length === FULL_TILE_BYTES || (size !== undefined && cached.length >= bytesWithin(size, level, index)))) return cached;
    const [row] = await db.query<{ data: Uint8Array | string }>('SELECT data FROM audit_tlog_tiles WHERE level = $1 AND idx = $2', [level, index]);
    const data = row ? asBuffer(row.data) : Buffer.alloc(0);
    if (data.length > 0 && (!cached || data.length >= cached.length)) cache.set(key, data);
    return data;
  };
}

/** The bytes of tile (level, index) that a tree of `size` leaves holds. */
function bytesWithin(size: number, level: number, index: number): number {
  const nodes = Math.floor(size / 256 ** level) - index * 256;
  return Math.max(0, Math.min(256, nodes)) * 32;
}

/** The integrated tree's size (the number of leaf hashes stored) and each level's rightmost tile. */
export async function treeState(db: Query): Promise<{ size: number; lastTiles: Map<number, Uint8Array> }> {
  const rows = await db.query<{ level: number; idx: number | string; data: Uint8Array | string }>(
    `SELECT t.level, t.idx, t.data FROM audit_tlog_tiles t
      JOIN (SELECT level, max(idx) AS idx FROM audit_tlog_tiles GROUP BY level) m ON m.level = t.level AND m.idx = t.idx`,
  );
  const lastTiles = new Map<number, Uint8Array>();
  let size = 0;
  for (const r of rows) {
    const data = asBuffer(r.data);
    lastTiles.set(Number(r.level), data);
    if (Number(r.level) === 0) size = Number(r.idx) * 256 + data.length / 32;
  }
  return { size, lastTiles };
}

/** Stores tiles (new, or grown: the table's trigger refuses any other change). */
export async function writeTiles(db: Query, tiles: readonly TileWrite[]): Promise<void> {
  if (!tiles.length) return;
  const json = JSON.stringify(tiles.map((t) => [t.level, t.index, t.data.toString('hex')]));
  await db.query(
    `INSERT INTO audit_tlog_tiles (level, idx, data)
     SELECT (e ->> 0)::smallint, (e ->> 1)::bigint, decode(e ->> 2, 'hex') FROM jsonb_array_elements($1::jsonb) AS e
     ON CONFLICT (level, idx) DO UPDATE SET data = EXCLUDED.data WHERE audit_tlog_tiles.data <> EXCLUDED.data`,
    [json],
  );
}
