/**
 * The tree's tiles in the database (migration 0011, `audit_tlog_tiles`): what the integrator
 * writes and what proofs and the tile endpoints read. Full tiles never change, so they are
 * cached (lru-cache); a partial tile is read from the database unless the cached copy covers
 * the size asked for. The tiles one proof needs are read in one query (tileReader batches).
 */
import { LRUCache } from 'lru-cache';
import type { Db } from '../db/index.js';
import type { ReadTile, TileWrite } from './merkle.js';

const FULL_TILE_BYTES = 256 * 32;

type Query = Pick<Db, 'query'>;

/** A bytea as the drivers return it (a Uint8Array, or `\\x`-hex text) as a Buffer over the same bytes. */
export const asBuffer = (v: Uint8Array | string): Buffer => (typeof v === 'string' ? Buffer.from(v.replace(/^\\x/, ''), 'hex') : Buffer.from(v.buffer, v.byteOffset, v.byteLength));

/**
 * The tiles of one database, by `level/index`:
 * - `upper`: full tiles of level >= 1, kept (warmed at start, see warmUpperTiles): every proof
 *   needs some, and they are few (1/256 of the level below: 153 at 10,000,000 leaves, 1.2 MB).
 *   Bounded all the same, at 64 MiB (8,192 tiles: level 1 of a tree of 2^29 leaves).
 * - `tiles`: the others (level-0 tiles, and partial tiles of any level), 8 KiB at most each,
 *   4,096 of them at most (32 MiB); a level-0 tile is used by the proofs of its 256 leaves only.
 */
export interface TileCache {
  upper: LRUCache<string, Buffer>;
  tiles: LRUCache<string, Buffer>;
}
const UPPER_BYTES = 64 * 1024 * 1024;
export const newTileCache = (): TileCache => ({
  upper: new LRUCache<string, Buffer>({ maxSize: UPPER_BYTES, sizeCalculation: (b) => b.length }),
  tiles: new LRUCache<string, Buffer>({ max: 4096 }),
});

/** The cached copy of a tile, or undefined (see tileReader for when a partial copy serves). */
function cachedTile(cache: TileCache, level: number, index: number, size: number | undefined): Buffer | undefined {
  const key = `${level}/${index}`;
  if (level >= 1) {
    const full = cache.upper.get(key);
    if (full) return full;
  }
  const cached = cache.tiles.get(key);
  if (cached && (cached.length === FULL_TILE_BYTES || (size !== undefined && cached.length >= bytesWithin(size, level, index)))) return cached;
  return undefined;
}

function keepTile(cache: TileCache, level: number, index: number, data: Buffer): void {
  if (data.length === 0) return;
  const key = `${level}/${index}`;
  if (level >= 1 && data.length === FULL_TILE_BYTES) {
    cache.upper.set(key, data);
    cache.tiles.delete(key);
    return;
  }
  const cached = cache.tiles.get(key);
  if (!cached || data.length >= cached.length) cache.tiles.set(key, data);
}

/**
 * The tiles `keys` (level, index pairs) in one query; a tile not stored is absent from the map.
 * `unnest` of two arrays (sent as text: the same on both drivers) joined on the primary key.
 */
export async function readTiles(db: Query, keys: ReadonlyArray<readonly [number, number]>): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  if (!keys.length) return out;
  const rows = await db.query<{ level: number; idx: number | string; data: Uint8Array | string }>(
    `SELECT t.level, t.idx, t.data FROM unnest($1::text::int2[], $2::text::int8[]) AS k(level, idx)
       JOIN audit_tlog_tiles t ON t.level = k.level AND t.idx = k.idx`,
    [`{${keys.map((k) => k[0]).join(',')}}`, `{${keys.map((k) => k[1]).join(',')}}`],
  );
  for (const r of rows) out.set(`${Number(r.level)}/${Number(r.idx)}`, asBuffer(r.data));
  return out;
}

/**
 * Reads tiles through `db`; full ones come from (and go to) `cache`, the cache of that
 * database. With `size` (a tree size the caller reads no further than: a checkpoint's), a
 * partial tile is served from the cache too when the copy there already holds every hash of
 * that tree (a tile only grows, so an older copy is a prefix of the current one).
 *
 * The tiles asked for in one turn of the event loop's microtasks that the cache does not hold
 * are read together, in one query (readTiles): merkle.ts's proofs ask for every tile they need
 * before awaiting any, so a proof costs one round trip at most (a cold proof at 10,000,000
 * leaves asked for up to five tiles, one query each, and waited on the slowest).
 */
export function tileReader(db: Query, cache: TileCache, size?: number): ReadTile {
  let batch: Map<string, { level: number; index: number; waiting: Array<{ resolve: (b: Buffer) => void; reject: (e: unknown) => void }> }> | null = null;
  const flush = async (): Promise<void> => {
    const b = batch!;
    batch = null;
    try {
      const got = await readTiles(db, [...b.values()].map((x) => [x.level, x.index] as const));
      for (const [key, x] of b) {
        const data = got.get(key) ?? Buffer.alloc(0);
        keepTile(cache, x.level, x.index, data);
        for (const w of x.waiting) w.resolve(data);
      }
    } catch (e) {
      for (const x of b.values()) for (const w of x.waiting) w.reject(e);
    }
  };
  return (level, index) => {
    const hit = cachedTile(cache, level, index, size);
    if (hit) return Promise.resolve(hit);
    if (!batch) {
      batch = new Map();
      queueMicrotask(() => void flush());
    }
    const key = `${level}/${index}`;
    let x = batch.get(key);
    if (!x) batch.set(key, (x = { level, index, waiting: [] }));
    const entry = x;
    return new Promise<Uint8Array>((resolve, reject) => entry.waiting.push({ resolve, reject }));
  };
}

/**
 * Loads every stored full tile of level >= 1 into `cache` (one query), up to its bound: what
 * the log does as it starts, so that no proof waits on them. Returns the number loaded.
 */
export async function warmUpperTiles(db: Query, cache: TileCache): Promise<number> {
  const rows = await db.query<{ level: number; idx: number | string; data: Uint8Array | string }>(
    `SELECT level, idx, data FROM audit_tlog_tiles WHERE level >= 1 AND length(data) = ${FULL_TILE_BYTES} ORDER BY level DESC, idx DESC LIMIT ${UPPER_BYTES / FULL_TILE_BYTES}`,
  );
  for (const r of rows) keepTile(cache, Number(r.level), Number(r.idx), asBuffer(r.data));
  return rows.length;
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
