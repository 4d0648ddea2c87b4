/**
 * The transparency log over the audit log (issue 21): the tree integrated from committed
 * records, the signed checkpoints, their export, and what the endpoints read (checkpoint,
 * proofs, tiles, entry bundles, cosignatures).
 *
 * - One integrator at a time, whatever the number of processes: each integration runs in one
 *   transaction holding pg_advisory_xact_lock(TLOG_LOCK); it reads the tree's size from the
 *   stored tiles, the leaves after it (readLeaves: a gapless prefix), appends their hashes
 *   (appendLeaves) and, when the tree grew past the latest checkpoint, signs and stores a new
 *   checkpoint in the same transaction. Every process runs the loop; they take turns.
 * - A checkpoint leaves the database after its commit: appended to
 *   `$TLOG_EXPORT_DIR/checkpoints.jsonl` and POSTed to TLOG_CHECKPOINT_WEBHOOK (retried with
 *   backoff, in the background, never on a request's path).
 * - At start the tree is compared with the latest checkpoint published (database and export
 *   file): a tree smaller than it, or with another root at its size, refuses to start.
 */
import fs from 'node:fs';
import { LRUCache } from 'lru-cache';
import path from 'node:path';
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import type { Db } from '../db/index.js';
import { leafCount, readEntryBundle, readLeafHashes, readLeaves } from './leaves.js';
import { appendLeaves, consistencyProof, inclusionProof, leafHash, rootHash } from './merkle.js';
import { asBuffer, fillTileNodes, newTileCache, tileReader, treeState, warmUpperTiles, writeTiles, type TileCache } from './tiles.js';
import { formatCheckpoint, parseCheckpoint } from './checkpoint.js';
import { openNote, parseSignerKey, signNote } from './note.js';
import { parseWitnessVerifierKey, verifyCosignatureLine } from './cosignature.js';
import { WebhookSender } from '../../shared/webhook-sender.js';

/** The advisory lock key that serializes integration (the chain's is 7340100). */
export const TLOG_LOCK = 7_340_101;
/** How long the latest checkpoint's size is reused by proofs before it is read again. */
const CHECKPOINT_TTL_MS = 200;
/** Tiles given their inner nodes per turn of the loop (fillNodes). */
const FILL_TILES = 64;
/** Most leaves integrated per transaction. */
const CHUNK = 20_000;
/**
 * Turns of the integrator per checkpoint (startLoop): it appends a fifth of an interval's
 * records at a time and signs at every fifth turn. Under W1 (about 11,000 records a second),
 * one turn a second for all of them (reading their leaf hashes, writing some 43 tiles) took
 * PostgreSQL tens of milliseconds at once on one of the two cores, and W1's p99 doubled
 * (20-21 ms against 10-12 with the integrator held off). In five turns, two alternated pairs:
 * REST W1 p99 12.7 and 13.3 ms against 18.0 and 18.7, W2 19.0 and 21.9 against 31.1 and 26.0,
 * throughput within the noise (README, "PostgreSQL's share of W1").
 */
const TURNS_PER_CHECKPOINT = 5;
/** The shortest turn: below 5 x 100 ms (tests' intervals), one turn an interval, as before. */
const MIN_TURN_MS = 100;
/** Proofs of each kind the API asks of itself once up (warmUpDraws), and the least tree size it does so for. */
const WARM_PROOFS = 1500;
const WARM_PROOFS_MIN_LEAVES = 65_536;
/** Bytes of full entry bundles kept (about 300,000 leaves of audit.bench's records, 850 bytes each). */
const BUNDLE_CACHE_BYTES = 64 * 1024 * 1024;

export interface Checkpoint {
  treeSize: number;
  root: Buffer;
  /** The signed note as stored (the log's signature only). */
  note: string;
}

type Query = Pick<Db, 'query'>;


export class TransparencyLog {
  readonly origin: string;
  readonly verifierKey: string;
  private readonly signerKey: string;
  private readonly logKeyName: string;
  private readonly cache: TileCache = newTileCache();
  /**
   * Full entry bundles by index: immutable once the checkpoint covers them (the records are,
   * and a full bundle's leaves are all below the tree size), and what a verifier or mirror
   * fetches by the thousand.
   */
  private readonly bundles = new LRUCache<number, Buffer>({ maxSize: BUNDLE_CACHE_BYTES, sizeCalculation: (b) => Math.max(1, b.length) });
  private readonly witnesses: Array<{ name: string; key: string }>;
  private webhook: WebhookSender | null = null;
  private stopped = false;

  constructor(private readonly ctx: Pick<AppContext, 'db' | 'config' | 'logger'>) {
    const t = ctx.config.tlog;
    this.signerKey = t.signingKey;
    const signer = parseSignerKey(t.signingKey);
    this.logKeyName = signer.name;
    this.verifierKey = signer.verifierKey;
    this.origin = t.origin ?? signer.name;
    this.witnesses = t.witnessKeys.map((k) => ({ name: parseWitnessVerifierKey(k).name, key: k }));
  }

  /** Reads tiles through `db` with this log's tile cache (`size`: the tree size read within, see tileReader). */
  reader(db: Query = this.ctx.db, size?: number) {
    return tileReader(db, this.cache, size);
  }

  /**
   * Loads the full tiles of level >= 1 into the tile cache (one query; see TileCache), so that
   * a proof reads at most the level-0 and partial tiles it needs. Run as the log starts.
   */
  async warm(): Promise<{ tiles: number }> {
    return { tiles: await warmUpperTiles(this.ctx.db, this.cache) };
  }

  /**
   * What the API proves once it is up, to warm the proofs' path (the tlog module's warmUp,
   * see HttpServiceDef.warmUp): `calls` leaves and `calls` old sizes drawn below the latest
   * checkpoint's size, when the tree has at least WARM_PROOFS_MIN_LEAVES leaves (none
   * otherwise). V8 optimizes a function only after it has run a while: a server a moment up
   * answered the proofs of a 10,000,000-leaf tree with a p99 over 5 ms (5.4-7.0 ms after 600
   * calls; 3.7-3.9 ms after 3,600; README, the transparency log's figures).
   */
  async warmUpDraws(opts: { calls?: number; minLeaves?: number } = {}): Promise<{ size: number; leaves: number[]; froms: number[] }> {
    const calls = opts.calls ?? WARM_PROOFS;
    const size = await this.checkpointSize();
    if (size < Math.max(2, opts.minLeaves ?? WARM_PROOFS_MIN_LEAVES)) return { size, leaves: [], froms: [] };
    const next = (below: number) => Math.floor(Math.random() * below);
    const leaves: number[] = [];
    const froms: number[] = [];
    for (let i = 0; i < calls; i++) {
      leaves.push(next(size));
      froms.push(1 + next(size - 1));
    }
    return { size, leaves, froms };
  }

  /**
   * Integrates every committed leaf not yet in the tree, then signs a checkpoint when the
   * tree grew past the latest one. Returns the checkpoint made, or null.
   */
  async integrate(opts: { sign?: boolean; fromRecords?: boolean } = {}): Promise<Checkpoint | null> {
    const sign = opts.sign ?? true;
    for (;;) {
      const r = await this.ctx.db.tx(async (t) => {
        await t.query('SELECT pg_advisory_xact_lock($1)', [TLOG_LOCK]);
        const state = await treeState(t);
        // Normally the hash the database stored with each record; from the records themselves
        // (fromRecords) at start, so that a tree rebuilt after its tables were emptied owes
        // nothing to a column the records' rewriter could have left alone.
        const hashes = opts.fromRecords ? (await readLeaves(t, state.size, CHUNK)).map((l) => leafHash(l.data)) : await readLeafHashes(t, state.size, CHUNK);
        let size = state.size;
        if (hashes.length) {
          const res = appendLeaves(state.size, state.lastTiles, hashes);
          await writeTiles(t, res.tiles);
          size = res.size;
        }
        if (hashes.length === CHUNK) return { more: true as const };
        if (!sign) return { more: false as const, made: null };
        const last = await latestCheckpoint(t);
        if (last && last.treeSize >= size) return { more: false as const, made: null };
        const root = await rootHash(tileReader(t, this.cache), size);
        const note = signNote(formatCheckpoint({ origin: this.origin, size, root }), this.signerKey);
        await t.query('INSERT INTO audit_tlog_checkpoints (tree_size, root_hash, note) VALUES ($1, $2, $3)', [size, root, note]);
        return { more: false as const, made: { treeSize: size, root, note } };
      });
      if (r.more) continue;
      if (r.made) this.publish(r.made);
      return r.made;
    }
  }

  /** The checkpoint leaves the database: the export file and the webhook. */
  private publish(c: Checkpoint): void {
    const { exportDir, checkpointWebhook } = this.ctx.config.tlog;
    if (exportDir) {
      try {
        fs.mkdirSync(exportDir, { recursive: true });
        fs.appendFileSync(path.join(exportDir, 'checkpoints.jsonl'), JSON.stringify({ tree_size: c.treeSize, root: c.root.toString('base64'), note: c.note }) + '\n');
      } catch (e) {
        this.ctx.logger.error('checkpoint export failed', { error: e as Error, tree_size: c.treeSize });
      }
    }
    if (checkpointWebhook) {
      this.webhook ??= new WebhookSender(checkpointWebhook, this.ctx.logger, { what: 'checkpoint', contentType: 'text/plain; charset=utf-8' });
      this.webhook.send(c.note);
    }
  }

  /**
   * Start-up check: integrates, then compares the tree with the latest checkpoint published
   * (the database's and the export file's). Throws, naming the checkpoint, when the tree is
   * smaller or has another root at that size.
   */
  async checkAgainstPublished(): Promise<void> {
    // What was published before this start, read before anything new is signed.
    const published: Array<{ where: string; size: number; root: Buffer }> = [];
    const db = await latestCheckpoint(this.ctx.db);
    if (db) published.push({ where: 'the database', size: db.treeSize, root: db.root });
    const file = this.ctx.config.tlog.exportDir ? path.join(this.ctx.config.tlog.exportDir, 'checkpoints.jsonl') : null;
    const last = file ? lastExported(file) : null;
    if (last) published.push({ where: file!, size: last.tree_size, root: Buffer.from(last.root, 'base64') });
    await this.integrate({ sign: false, fromRecords: true });
    const { size: treeSize } = await treeState(this.ctx.db);
    // The records must still hold every leaf of the tree, and the tree every published leaf.
    const size = Math.min(treeSize, await leafCount(this.ctx.db));
    for (const p of published) {
      const name = `checkpoint ${this.origin} tree_size ${p.size} root ${p.root.toString('base64')} (from ${p.where})`;
      if (size < p.size) throw new Error(`transparency log: the log has ${size} leaves, fewer than the published ${name}: records were removed`);
      const root = await rootHash(this.reader(), p.size);
      if (!root.equals(p.root)) throw new Error(`transparency log: the tree at size ${p.size} has root ${root.toString('base64')}, not the published ${name}: records were rewritten`);
    }
  }

  /**
   * Runs the loop: signs a checkpoint every TLOG_CHECKPOINT_INTERVAL_MS, and appends the
   * records that came in TURNS_PER_CHECKPOINT turns between two (when a turn is at least
   * MIN_TURN_MS; otherwise once an interval). Returns the stop function.
   */
  startLoop(): () => Promise<void> {
    const interval = this.ctx.config.tlog.checkpointIntervalMs;
    const turns = interval >= TURNS_PER_CHECKPOINT * MIN_TURN_MS ? TURNS_PER_CHECKPOINT : 1;
    let turn = 0;
    let running: Promise<unknown> = Promise.resolve();
    const timer = setInterval(() => {
      const sign = ++turn % turns === 0;
      running = running.then(() =>
        this.integrate({ sign })
          .then(() => this.fillNodes())
          .catch((e) => {
            if (!this.stopped) this.ctx.logger.error('transparency log integration failed', { error: e as Error });
          }),
      );
    }, interval / turns);
    timer.unref();
    return async () => {
      clearInterval(timer);
      await running;
      // What was committed before the stop is covered by a checkpoint.
      await this.integrate().catch(() => undefined);
      this.stopped = true;
      this.webhook?.stop();
    };
  }

  /**
   * After an upgrade past migration 0017, the loop gives the full level-0 tiles stored before
   * it their inner nodes, FILL_TILES a turn (about 16,000 hashes, 10-40 ms of CPU), until none
   * is left: proofs over those tiles then read nodes too (see fillTileNodes). The tiles written
   * since come with theirs.
   */
  private async fillNodes(): Promise<void> {
    if (this.filledTo !== null) this.filledTo = await fillTileNodes(this.ctx.db, this.filledTo, FILL_TILES);
  }
  private filledTo: number | null = -1;

  /** The served checkpoint: the latest signed note with the witnesses' cosignature lines. */
  async servedCheckpoint(): Promise<{ checkpoint: Checkpoint; served: string } | null> {
    const c = await latestCheckpoint(this.ctx.db);
    if (!c) return null;
    const lines = await this.ctx.db.query<{ line: string }>('SELECT line FROM audit_tlog_cosignatures WHERE tree_size = $1 ORDER BY key_name', [c.treeSize]);
    return { checkpoint: c, served: c.note + lines.map((l) => l.line + '\n').join('') };
  }

  /**
   * The size proofs default to and may not exceed: the latest checkpoint's. Read at most every
   * CHECKPOINT_TTL_MS (a proof against a checkpoint a moment old is as good), and again when a
   * caller names a larger size (another process may have signed it since).
   */
  private async checkpointSize(atLeast = 0): Promise<number> {
    const now = performance.now();
    if (this.latest && now - this.latest.at < CHECKPOINT_TTL_MS && this.latest.size >= atLeast) return this.latest.size;
    const c = await latestCheckpoint(this.ctx.db);
    this.latest = { at: now, size: c ? c.treeSize : 0 };
    return this.latest.size;
  }
  private latest: { at: number; size: number } | null = null;

  private async sizeWithin(size: number | undefined, name: string): Promise<number> {
    const max = await this.checkpointSize(size ?? 0);
    if (size === undefined) return max;
    if (size > max) throw new AppError('not_found', `${name} ${size} is past the latest checkpoint (tree size ${max})`);
    return size;
  }

  async inclusion(q: { leafIndex?: number; requestId?: string; treeSize?: number }): Promise<{ leaf_index: number; tree_size: number; hashes: string[] }> {
    if ((q.leafIndex === undefined) === (q.requestId === undefined)) {
      throw new AppError('validation_error', 'Give exactly one of leaf_index and request_id', {
        details: { errors: [{ path: '/query/leaf_index', rule: 'oneOf', message: 'exactly one of leaf_index and request_id is required' }] },
      });
    }
    // The contract's bounds for a request id, here for every transport (gRPC has no schema for them).
    if (q.requestId !== undefined && (q.requestId.length < 1 || q.requestId.length > 1024)) {
      throw new AppError('validation_error', `request_id must be 1 to 1024 characters (got ${q.requestId.length})`, {
        details: { errors: [{ path: '/query/request_id', rule: 'length', message: 'must be 1 to 1024 characters' }] },
      });
    }
    let index = q.leafIndex;
    if (index === undefined) {
      const [r] = await this.ctx.db.query<{ leaf_index: number | string }>('SELECT leaf_index FROM agent_context_requests WHERE request_id = $1', [q.requestId]);
      if (!r) throw new AppError('not_found', 'No audit record has this request_id');
      index = Number(r.leaf_index);
    }
    const size = await this.sizeWithin(q.treeSize, 'tree_size');
    if (index >= size) {
      throw new AppError(q.requestId !== undefined && q.treeSize === undefined ? 'not_found' : 'validation_error', `Leaf ${index} is not below the tree size ${size}`, {
        details: { errors: [{ path: q.leafIndex !== undefined ? '/query/leaf_index' : '/query/tree_size', rule: 'range', message: 'the leaf index must be below the tree size' }] },
      });
    }
    const hashes = await inclusionProof(this.reader(this.ctx.db, size), index, size);
    return { leaf_index: index, tree_size: size, hashes: hashes.map((h) => h.toString('base64')) };
  }

  async consistency(q: { from: number; to?: number }): Promise<{ from: number; to: number; hashes: string[] }> {
    const to = await this.sizeWithin(q.to, 'to');
    if (q.from > to) {
      throw new AppError('validation_error', `from (${q.from}) is greater than to (${to})`, {
        details: { errors: [{ path: '/query/from', rule: 'range', message: 'from must not be greater than to' }] },
      });
    }
    const hashes = await consistencyProof(this.reader(this.ctx.db, to), q.from, to);
    return { from: q.from, to, hashes: hashes.map((h) => h.toString('base64')) };
  }

  /**
   * A hash tile (level >= 0) or, with level 'entries', an entry bundle; width undefined for a
   * full tile. 404 when the latest checkpoint does not cover it.
   */
  async tile(level: number | 'entries', index: number, width: number | undefined): Promise<Buffer> {
    const l = level === 'entries' ? 0 : level;
    const w = width ?? 256;
    const size = await this.checkpointSize(Math.min(Number.MAX_SAFE_INTEGER, (index * 256 + w) * 256 ** l));
    // Level-8L nodes complete in a tree of `size` leaves: floor(size / 256^L).
    const nodes = Math.floor(size / 256 ** l);
    if (index * 256 + w > nodes) throw new AppError('not_found', 'No such tile in the tree of the latest checkpoint');
    if (level === 'entries') {
      const full = this.bundles.get(index);
      if (full) return w === 256 ? full : full.subarray(0, bundlePrefix(full, w));
      const bundle = await readEntryBundle(this.ctx.db, index * 256, w);
      if (!bundle) throw new AppError('not_found', 'No such entry bundle');
      if (w === 256) this.bundles.set(index, bundle);
      return bundle;
    }
    const data = Buffer.from(await this.reader(this.ctx.db, size)(l, index));
    if (data.length < w * 32) throw new AppError('not_found', 'No such tile');
    return data.subarray(0, w * 32);
  }

  /**
   * A witness's cosignature: the note must be a checkpoint this log signed, and carry a line
   * that verifies with a configured witness key. Returns whether it was new.
   */
  async addCosignature(note: string | undefined): Promise<{ created: boolean; treeSize: number; witness: string }> {
    if (typeof note !== 'string' || note.length === 0) throw new AppError('validation_error', 'The body must be a signed checkpoint note (text/plain)');
    let opened;
    try {
      opened = openNote(note, [this.verifierKey]);
    } catch (e) {
      throw new AppError('validation_error', `The note is not a checkpoint this log signed: ${(e as Error).message}`);
    }
    if (!opened.verified.some((v) => v.name === this.logKeyName)) throw new AppError('validation_error', 'The note does not carry this log\'s signature');
    const text = opened.text;
    let cp;
    try {
      cp = parseCheckpoint(text);
    } catch (e) {
      throw new AppError('validation_error', `The note is not a checkpoint: ${(e as Error).message}`);
    }
    if (cp.origin !== this.origin) throw new AppError('validation_error', `The checkpoint's origin is not ${this.origin}`);
    const [stored] = await this.ctx.db.query<{ root_hash: Uint8Array | string }>('SELECT root_hash FROM audit_tlog_checkpoints WHERE tree_size = $1', [cp.size]);
    if (!stored || !asBuffer(stored.root_hash).equals(Buffer.from(cp.root))) throw new AppError('validation_error', 'This log signed no checkpoint with this tree size and root');
    // The lines by other keys, as openNote parsed them.
    const others = opened.unverified.map((sig) => `\u2014 ${sig.name} ${sig.base64}`);
    if (!others.length) throw new AppError('validation_error', 'The note carries no witness signature line');
    let known: { name: string; line: string } | null = null;
    for (const line of others) {
      const name = line.slice(2, line.indexOf(' ', 2));
      for (const w of this.witnesses.filter((x) => x.name === name)) {
        const v = verifyCosignatureLine(line, text, w.key);
        if (v.ok) known = { name, line };
        else if (!known) throw new AppError('validation_error', `The cosignature of ${name} does not verify: ${v.reason}`);
      }
      if (known) break;
    }
    if (!known) throw new AppError('forbidden', 'No signature line is by a configured witness key (TLOG_WITNESS_KEYS)');
    const rows = await this.ctx.db.query('INSERT INTO audit_tlog_cosignatures (tree_size, key_name, line) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING tree_size', [cp.size, known.name, known.line]);
    return { created: rows.length > 0, treeSize: cp.size, witness: known.name };
  }
}

/** The bytes of an entry bundle's first `count` entries (each a 2-byte big-endian length, then the entry). */
function bundlePrefix(bundle: Buffer, count: number): number {
  let at = 0;
  for (let i = 0; i < count; i++) at += 2 + bundle.readUInt16BE(at);
  return at;
}

/** The last checkpoint appended to an export file (its last line; only the file's tail is read), or null. */
function lastExported(file: string): { tree_size: number; root: string } | null {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  try {
    const size = fs.fstatSync(fd).size;
    const n = Math.min(size, 256 * 1024);
    const buf = Buffer.alloc(n);
    fs.readSync(fd, buf, 0, n, size - n);
    const lines = buf.toString('utf8').split('\n').filter((l) => l.trim().length > 0);
    for (let i = lines.length - 1; i >= 0; i--) {
      try {
        const v = JSON.parse(lines[i]!) as { tree_size?: unknown; root?: unknown };
        if (typeof v.tree_size === 'number' && typeof v.root === 'string') return { tree_size: v.tree_size, root: v.root };
      } catch {
        // A line cut by the tail's start, or by a crash mid-append: the one before it.
      }
    }
    throw new Error(`transparency log: ${file} holds no readable checkpoint line`);
  } finally {
    fs.closeSync(fd);
  }
}

/** The latest stored checkpoint, or null. */
export async function latestCheckpoint(db: Query): Promise<Checkpoint | null> {
  const [r] = await db.query<{ tree_size: number | string; root_hash: Uint8Array | string; note: string }>(
    'SELECT tree_size, root_hash, note FROM audit_tlog_checkpoints ORDER BY tree_size DESC LIMIT 1',
  );
  return r ? { treeSize: Number(r.tree_size), root: asBuffer(r.root_hash), note: r.note } : null;
}

/** The process's log (one per AppContext). */
export function transparencyLog(ctx: AppContext): TransparencyLog {
  return ctx.singleton('transparency-log', () => new TransparencyLog(ctx));
}
