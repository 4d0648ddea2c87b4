/**
 * Recomputes a tree's root while streaming its new leaves, in constant memory: it holds only
 * the rightmost tile of each tile level (at most 8 KB per level), seeded from the hash tiles
 * of the old tree, and grows them with appendLeaves as leaf hashes arrive in batches.
 *
 * Seeding: the rightmost tiles at size m are the tiles `rightmostTiles(m)` names; their bytes
 * come from wherever the caller trusts them to be checked (the old root: `root()` before any
 * append must equal the old checkpoint's root, which proves the seed).
 */
import { appendLeaves, HASH_SIZE, rootHash, TILE_WIDTH } from './merkle.js';

/** The rightmost non-empty tile at one tile level of a tree of some size. */
export interface TileCoord {
  level: number;
  index: number;
  /** Hashes it holds at that size (1..255: a rightmost tile is never full). */
  width: number;
}

/** The rightmost partial tiles of a tree of `size` leaves, lowest level first (none for 0). */
export function rightmostTiles(size: number): TileCoord[] {
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`size ${String(size)} is not a non-negative safe integer`);
  const out: TileCoord[] = [];
  for (let level = 0, per = 1; per <= size; level++, per *= TILE_WIDTH) {
    const width = Math.floor(size / per) % TILE_WIDTH;
    if (width > 0) out.push({ level, index: Math.floor(size / (per * TILE_WIDTH)), width });
  }
  return out;
}

export class TreeExtender {
  private tiles = new Map<number, Uint8Array>();
  private n: number;

  /** `seed` holds the bytes of every tile rightmostTiles(size) names, by level. */
  constructor(size: number, seed: Map<number, Uint8Array>) {
    this.n = size;
    for (const t of rightmostTiles(size)) {
      const data = seed.get(t.level);
      if (!data || data.length !== t.width * HASH_SIZE) {
        throw new RangeError(`the rightmost tile at level ${t.level} for size ${size} must hold ${t.width} hashes, got ${data ? data.length / HASH_SIZE : 'none'}`);
      }
      this.tiles.set(t.level, data);
    }
  }

  get size(): number {
    return this.n;
  }

  /** The leaf hashes of the rightmost level-0 tile (the last size % 256 leaves). */
  lastLeafHashes(): Uint8Array {
    return this.tiles.get(0) ?? new Uint8Array(0);
  }

  /** Appends leaf hashes; only the new rightmost tile of each level is kept. */
  append(leafHashes: Uint8Array[]): void {
    if (leafHashes.length === 0) return;
    const { size, tiles } = appendLeaves(this.n, this.tiles, leafHashes);
    // appendLeaves returns tiles in (level, index) order: the last one per level is the rightmost.
    for (const t of tiles) {
      if (t.data.length === TILE_WIDTH * HASH_SIZE) this.tiles.delete(t.level);
      else this.tiles.set(t.level, t.data);
    }
    // A level whose rightmost tile filled and emptied has no tile left at the new size.
    for (const level of [...this.tiles.keys()]) {
      if (Math.floor(size / TILE_WIDTH ** level) % TILE_WIDTH === 0) this.tiles.delete(level);
    }
    this.n = size;
  }

  /** The root of the tree so far (every complete subtree of its decomposition lies in a rightmost tile). */
  root(): Promise<Buffer> {
    const expected = new Map(rightmostTiles(this.n).map((t) => [t.level, t.index]));
    return rootHash(async (level, index) => {
      const data = this.tiles.get(level);
      if (!data || expected.get(level) !== index) throw new Error(`tree extender: tile ${level}/${index} is not a rightmost tile of size ${this.n}`);
      return data;
    }, this.n);
  }
}
