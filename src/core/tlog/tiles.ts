/**
 * The tree's tiles in the database (migration 0011, `audit_tlog_tiles`): what the integrator
 * writes and what proofs and the tile endpoints read. Full tiles never change, so they are
 * cached (lru-cache); a partial tile is read from the database unless the cached copy covers
 * the size asked for. The hashes one proof needs are read in one query (tileReader batches):
 * from a full level-0 tile, only the 32 bytes of each subtree it needs, from the tile's stored
 * inner nodes (migration 0017); from a partial tile, or a tile stored before 0017, the tile.
 */
import { LRUCache } from 'lru-cache';
import type { Db } from '../db/index.js';
import { HASH_SIZE, subtreeFromTile, subtreeTile, tileInnerNodes, tileNodeOffset, type ReadTile, type TileWrite } from './merkle.js';

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
  /**
   * Subtree hashes read from full level-0 tiles (Merkle levels 0..7), which never change:
   * 65,536 of them (2 MiB of hashes), the nodes of some 8,000 proofs.
   */
  nodes: NodeCache;
}

/**
 * Subtree hashes by (Merkle level 0..7, index), least recently used evicted past `max`: the
 * hashes live in one buffer allocated once, the LRU holds only numbers (the slot of each), and
 * `get` answers a copy (a slot is reused once evicted). Before, each entry was the 32-byte
 * Buffer of postgres.js's row, a view of an 8 KiB slab of Node's buffer pool, and kept its slab
 * alive: a heap snapshot after 1,000 cold proofs at 10,000,000 leaves held 997 array buffers
 * (7.9 MB), where with the copies it held 552 after 500 proofs and 561 after 1,500. Full, the
 * cache could have kept some 64 MB alive for its 2 MiB of hashes.
 */
export class NodeCache {
  private readonly slots: LRUCache<number, number>;
  private readonly hashes: Buffer;
  private used = 0;
  constructor(readonly max: number) {
    this.slots = new LRUCache<number, number>({ max });
    this.hashes = Buffer.alloc(max * HASH_SIZE);
  }
  private static key(level: number, index: number): number {
    return index * 8 + level;
  }
  get size(): number {
    return this.slots.size;
  }
  get(level: number, index: number): Buffer | undefined {
    const slot = this.slots.get(NodeCache.key(level, index));
    return slot === undefined ? undefined : Buffer.from(this.hashes.subarray(slot * HASH_SIZE, (slot + 1) * HASH_SIZE));
  }
  set(level: number, index: number, hash: Uint8Array): void {
    if (hash.length !== HASH_SIZE) throw new RangeError(`a node hash is ${HASH_SIZE} bytes, got ${hash.length}`);
    const key = NodeCache.key(level, index);
    let slot = this.slots.get(key);
    if (slot === undefined) {
      slot = this.used < this.max ? this.used++ : this.slots.pop()!;
      this.slots.set(key, slot);
    }
    this.hashes.set(hash, slot * HASH_SIZE);
  }
}
const UPPER_BYTES = 64 * 1024 * 1024;
export const newTileCache = (): TileCache => ({
  upper: new LRUCache<string, Buffer>({ maxSize: UPPER_BYTES, sizeCalculation: (b) => b.length }),
  tiles: new LRUCache<string, Buffer>({ max: 4096 }),
  nodes: new NodeCache(65_536),
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
 * Reads tiles through `db`; full ones come from (and go to) `cache`, the cache of that
 * database. With `size` (a tree size the caller reads no further than: a checkpoint's), a
 * partial tile is served from the cache too when the copy there already holds every hash of
 * that tree (a tile only grows, so an older copy is a prefix of the current one).
 *
 * The reader's `node` answers for one subtree (see ReadTile), which is what the proofs ask:
 * from a cached tile, computed; otherwise read. Whatever one turn of the event loop's
 * microtasks asks that the cache does not hold is read together, in one query: merkle.ts's
 * proofs ask for every subtree they need before awaiting any, so a proof costs one round trip
 * at most (a cold proof at 10,000,000 leaves asked for up to five tiles, one query each, and
 * waited on the slowest). From a full level-0 tile with stored inner nodes the query returns
 * the subtree's 32 bytes (kept in `cache.nodes`); from any other tile, the tile (kept as above).
 * Before 0017 a cold proof at 10,000,000 leaves read one or two 8 KiB level-0 tiles and
 * hashed the 255 inner nodes of each (p50 1.0-1.3 ms, about 1-1.5 ms of CPU; now 0.6-1.0 ms
 * and 0.4-0.7 ms, README "Benchmarks").
 */
export function tileReader(db: Query, cache: TileCache, size?: number): ReadTile {
  interface Want {
    level: number;
    index: number;
    /** A node of a level-0 tile (Merkle level 0..7, its index), when asked through `node`. */
    node?: { level: number; index: number };
    resolve: (b: Buffer) => void;
    reject: (e: unknown) => void;
  }
  let batch: Want[] | null = null;
  const flush = async (): Promise<void> => {
    const b = batch!;
    batch = null;
    try {
      const got = await readTileParts(db, b);
      for (let k = 0; k < b.length; k++) {
        const w = b[k]!;
        const r = got[k]!;
        try {
          if (r.part) {
            cache.nodes.set(w.node!.level, w.node!.index, r.part);
            w.resolve(r.part);
            continue;
          }
          const data = r.tile ?? Buffer.alloc(0);
          keepTile(cache, w.level, w.index, data);
          w.resolve(w.node ? subtreeFromTile(data, w.node.level, w.node.index) : data);
        } catch (e) {
          w.reject(e);
        }
      }
    } catch (e) {
      for (const w of b) w.reject(e);
    }
  };
  const ask = (w: Omit<Want, 'resolve' | 'reject'>): Promise<Buffer> => {
    if (!batch) {
      batch = [];
      // After this turn's asks, on a promise: Node's queueMicrotask wraps each callback in an
      // AsyncResource, and with it a cold proof's server kept about 500 KB more young objects
      // alive at each collection (--trace-gc-nvp, one node asked a call: 715 against 215 KB).
      void Promise.resolve().then(flush);
    }
    const list = batch;
    // The ask's fields named, not spread (`{ ...w }`): the spread, over asks of two shapes, cost
    // about 2 µs an ask (a CPU profile of cold inclusion proofs in process, 2026-12-05).
    return new Promise<Buffer>((resolve, reject) => list.push({ level: w.level, index: w.index, node: w.node, resolve, reject }));
  };
  const read: ReadTile = (level, index) => {
    const hit = cachedTile(cache, level, index, size);
    return hit ? Promise.resolve(hit) : ask({ level, index });
  };
  /** The subtree's hash from what the cache holds (a tile, or a stored node of a level-0 tile), else undefined. */
  const cachedNode = (level: number, index: number): Buffer | undefined => {
    const { tileLevel, tileIndex } = subtreeTile(level, index);
    const hit = cachedTile(cache, tileLevel, tileIndex, size);
    if (hit) return subtreeFromTile(hit, level, index);
    return tileLevel === 0 ? cache.nodes.get(level, index) : undefined;
  };
  read.cachedNode = cachedNode;
  read.node = (level, index) => {
    let hit: Buffer | undefined;
    try {
      hit = cachedNode(level, index);
    } catch (e) {
      return Promise.reject(e);
    }
    if (hit) return Promise.resolve(hit);
    const { tileLevel, tileIndex } = subtreeTile(level, index);
    if (tileLevel > 0) return read(tileLevel, tileIndex).then((data) => subtreeFromTile(data, level, index));
    return ask({ level: 0, index: tileIndex, node: { level, index } });
  };
  return read;
}

/**
 * One query for what a tileReader batch asks: for each ask, in order, `part` (the 32 bytes of
 * a node of a full level-0 tile with stored inner nodes) or `tile` (the tile's bytes; given
 * once per tile, on its first ask, and repeated for the others from it); neither when the
 * tile is not stored.
 */
async function readTileParts(db: Query, asks: ReadonlyArray<{ level: number; index: number; node?: { level: number; index: number } }>): Promise<Array<{ part?: Buffer; tile?: Buffer }>> {
  // Per tile, the ask that brings the tile when it is read whole: its first whole-tile ask, else its first ask.
  const first = new Map<string, number>();
  asks.forEach((a, k) => !a.node && !first.has(`${a.level}/${a.index}`) && first.set(`${a.level}/${a.index}`, k));
  asks.forEach((a, k) => !first.has(`${a.level}/${a.index}`) && first.set(`${a.level}/${a.index}`, k));
  // Per ask: its part (-1 the tile, 0 a hash of `data`, 1-7 a node of that level in `nodes`), where its bytes start (1-based), and whether it brings the tile.
  const part: number[] = [];
  const off: number[] = [];
  const isFirst: boolean[] = [];
  asks.forEach((a, k) => {
    isFirst.push(first.get(`${a.level}/${a.index}`) === k);
    const l = a.node ? a.node.level : -1;
    const p = a.node ? a.node.index % (256 >> l) : 0;
    part.push(l);
    off.push(l === 0 ? p * HASH_SIZE + 1 : l > 0 ? tileNodeOffset(l, p) + 1 : 0);
  });
  const list = (xs: Array<number | boolean>) => `{${xs.join(',')}}`;
  // A tile ask (part -1) and any ask of a tile without stored nodes gets the tile (on its first ask only).
  const rows = await db.query<{ k: number; part: Uint8Array | string | null; tile: Uint8Array | string | null }>(
    `SELECT k.k, CASE WHEN k.part >= 0 AND t.nodes IS NOT NULL THEN
                   CASE WHEN k.part = 0 THEN substring(t.data FROM k.off FOR ${HASH_SIZE}) ELSE substring(t.nodes FROM k.off FOR ${HASH_SIZE}) END
                 END AS part,
            CASE WHEN (k.part < 0 OR t.nodes IS NULL) AND k.first THEN t.data END AS tile
       FROM unnest($1::text::int4[], $2::text::int2[], $3::text::int8[], $4::text::int2[], $5::text::int4[], $6::text::bool[]) AS k(k, level, idx, part, off, first)
       JOIN audit_tlog_tiles t ON t.level = k.level AND t.idx = k.idx`,
    [list(asks.map((_, k) => k)), list(asks.map((a) => a.level)), list(asks.map((a) => a.index)), list(part), list(off), list(isFirst)],
  );
  const out: Array<{ part?: Buffer; tile?: Buffer }> = asks.map(() => ({}));
  for (const r of rows) {
    const k = Number(r.k);
    if (r.part != null) out[k]!.part = asBuffer(r.part);
    if (r.tile != null) out[k]!.tile = asBuffer(r.tile);
  }
  // The tile for the other asks of a tile read whole.
  asks.forEach((a, k) => {
    const f = first.get(`${a.level}/${a.index}`)!;
    if (!out[k]!.part && !out[k]!.tile && out[f]!.tile) out[k]!.tile = out[f]!.tile;
  });
  return out;
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

/**
 * Gives full level-0 tiles stored without inner nodes (before migration 0017) theirs, computed
 * from their hashes (what GET /api/audit/verify checks against the records): up to `limit`
 * tiles of index above `after`, in order. Returns the last index given nodes, or null when no
 * such tile is left past `after`. Another process doing the same is harmless: a tile's nodes
 * are written only where they are still missing, and the trigger lets them go from none to a
 * value only.
 */
export async function fillTileNodes(db: Query, after: number, limit: number): Promise<number | null> {
  const rows = await db.query<{ idx: number | string; data: Uint8Array | string }>(
    `SELECT idx, data FROM audit_tlog_tiles WHERE level = 0 AND idx > $1 AND nodes IS NULL AND length(data) = ${FULL_TILE_BYTES} ORDER BY idx LIMIT ${Number(limit)}`,
    [after],
  );
  if (!rows.length) return null;
  const json = JSON.stringify(rows.map((r) => [Number(r.idx), tileInnerNodes(asBuffer(r.data)).nodes.toString('hex')]));
  await db.query(
    `UPDATE audit_tlog_tiles t SET nodes = decode(e ->> 1, 'hex') FROM jsonb_array_elements($1::jsonb) AS e
      WHERE t.level = 0 AND t.idx = (e ->> 0)::bigint AND t.nodes IS NULL`,
    [json],
  );
  return Number(rows[rows.length - 1]!.idx);
}

/** Stores tiles (new, or grown: the table's trigger refuses any other change). */
export async function writeTiles(db: Query, tiles: readonly TileWrite[]): Promise<void> {
  if (!tiles.length) return;
  const json = JSON.stringify(tiles.map((t) => [t.level, t.index, t.data.toString('hex'), t.nodes ? t.nodes.toString('hex') : null]));
  await db.query(
    `INSERT INTO audit_tlog_tiles (level, idx, data, nodes)
     SELECT (e ->> 0)::smallint, (e ->> 1)::bigint, decode(e ->> 2, 'hex'), decode(e ->> 3, 'hex') FROM jsonb_array_elements($1::jsonb) AS e
     ON CONFLICT (level, idx) DO UPDATE SET data = EXCLUDED.data, nodes = COALESCE(EXCLUDED.nodes, audit_tlog_tiles.nodes)
       WHERE audit_tlog_tiles.data <> EXCLUDED.data OR (audit_tlog_tiles.nodes IS NULL AND EXCLUDED.nodes IS NOT NULL)`,
    [json],
  );
}
