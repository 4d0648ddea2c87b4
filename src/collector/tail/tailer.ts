/**
 * Effectively-once tailing of a line-oriented export file (decisions.md "Collector store").
 *
 * Invariants (each names the failure it prevents):
 * - Only complete lines are read: the bytes after the last `\n` wait for the next pass (the
 *   exporter buffers writes, so a reader can see half a line).
 * - The byte offset after a batch of lines is committed in the SAME SQLite transaction as
 *   the rows those lines produced: a crash loses both or neither, never one of them.
 * - Rows carry a deterministic event_id (`INSERT OR IGNORE`), so if anything is read twice
 *   (a replaced file, a lost state) nothing is inserted twice.
 * - Rotation (rename + new file): the file being read is found again by device:inode among
 *   `<stem>-*<ext>`, read to its end (its last line is complete by then), then any newer
 *   backups, then the new active file from 0. Nothing written before the rename is lost.
 * - Truncation (the exporter opens with O_TRUNC on restart) or replacement: a size below the
 *   offset, or a head that no longer matches the stored fingerprint, restarts at 0.
 * - A malformed line is counted and skipped; no input makes a pass throw.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import type { Logger } from '../../shared/logger.js';
import type { Clock } from '../../shared/app-context.js';
import type { CollectorStore, PackedRow, SourceId, TailState } from '../store/store.js';
import { bump, type Counters } from '../otlp/lines.js';
import { fileKey, listRotated, statFile, type FileInfo } from './rotation.js';
import { inThreadProcessor, packLines, type BatchResult, type LineBatchProcessor, type LineProcessor } from './processor.js';

const FINGERPRINT_MAX = 4096;

export interface TailerOptions {
  sourceId: SourceId;
  /** The active file (the exporter's configured path). */
  path: string;
  store: CollectorStore;
  logger: Logger;
  clock: Clock;
  intervalMs: number;
  /** Lines to rows, in this thread or a worker; `processLine` is the in-thread shorthand. */
  processor?: LineBatchProcessor;
  processLine?: LineProcessor;
  /** Bytes read per call (default 1 MiB). */
  chunkBytes?: number;
  /** Lines are handed over (and committed) in batches of about this many bytes (default 1 MiB)... */
  batchBytes?: number;
  /** ...or of at most this many lines (default 10,000). */
  batchLines?: number;
  /** Batches being processed while the previous one is committed (default 2). */
  pipelineDepth?: number;
  /** A longer line is skipped and counted (default 64 MiB). */
  maxLineBytes?: number;
}

export class FileTailer {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private readonly chunkBytes: number;
  private readonly batchBytes: number;
  private readonly batchLines: number;
  private readonly depth: number;
  private readonly maxLineBytes: number;
  private readonly processor: LineBatchProcessor;

  constructor(private readonly o: TailerOptions) {
    this.chunkBytes = o.chunkBytes ?? 1 << 20;
    this.batchBytes = o.batchBytes ?? 1 << 20;
    this.batchLines = o.batchLines ?? 10_000;
    this.depth = Math.max(1, o.pipelineDepth ?? 2);
    this.maxLineBytes = o.maxLineBytes ?? 64 << 20;
    if (o.processor) this.processor = o.processor;
    else if (o.processLine) this.processor = inThreadProcessor(o.processLine);
    else throw new Error('FileTailer needs a processor or processLine');
  }

  /** Runs a pass now, then one every intervalMs after the previous pass ends. */
  start(): void {
    this.stopped = false;
    const loop = async () => {
      this.timer = null;
      await this.tick();
      if (!this.stopped) this.timer = setTimeout(loop, this.o.intervalMs);
    };
    this.timer = setTimeout(loop, 0);
  }

  /** Stops scheduling and waits for a pass in progress (it stops between batches). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
    await this.processor.close();
  }

  /** One pass: catch up with every complete line available now. Never throws. */
  tick(): Promise<void> {
    if (this.running) return this.running;
    this.running = this.pass()
      .catch((e) => this.o.logger.error('collector tail pass failed', { source_id: this.o.sourceId, path: this.o.path, error: e as Error }))
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  private fresh(file: FileInfo | null): TailState {
    return {
      active_path: this.o.path,
      file_key: file?.key ?? null,
      file_path: file?.path ?? null,
      file_offset: 0,
      file_mtime_ms: file?.mtimeMs ?? null,
      fingerprint: null,
      fingerprint_len: 0,
    };
  }

  private async pass(): Promise<void> {
    let state = this.o.store.getTailState(this.o.sourceId);
    // A different configured path starts afresh: the saved offset belongs to another file.
    if (state && state.active_path !== this.o.path) state = null;
    const active = await statFile(this.o.path);
    if (state?.file_key && state.file_key !== active?.key) {
      await this.finishRotated(state, active);
      if (this.stopped) return;
      state = this.fresh(active);
      this.o.store.commit(this.o.sourceId, { rows: [], tail: state }, this.o.clock.now());
    }
    if (!active || this.stopped) return;
    if (!state?.file_key) state = this.fresh(active);
    await this.drain(active.path, state, false);
  }

  /** The file we were reading is no longer the active one: read it (and newer backups) to the end. */
  private async finishRotated(state: TailState, active: FileInfo | null): Promise<void> {
    const rotated = await listRotated(this.o.path);
    const idx = rotated.findIndex((f) => f.key === state.file_key);
    let queue: FileInfo[];
    if (idx >= 0) {
      queue = rotated.slice(idx);
    } else {
      // The file is gone (deleted, or moved out of the directory): read the backups written
      // after it was last seen; event ids make any overlap harmless.
      this.o.logger.warn('collector: the file being tailed disappeared; reading newer rotated files', {
        source_id: this.o.sourceId,
        path: state.file_path,
      });
      const since = state.file_mtime_ms ?? Number.POSITIVE_INFINITY;
      queue = rotated.filter((f) => f.mtimeMs >= since);
    }
    queue = queue.filter((f) => f.key !== active?.key);
    for (let i = 0; i < queue.length && !this.stopped; i++) {
      const f = queue[i];
      const st = i === 0 && idx >= 0 ? { ...state, file_path: f.path } : this.fresh(f);
      await this.drain(f.path, st, true);
    }
  }

  /**
   * Reads `p` from the state's offset to its end, committing rows and offset together.
   * `final`: the file will not grow any more (a rotated backup), so an unterminated last
   * line is read as a line too.
   */
  private async drain(p: string, st: TailState, final: boolean): Promise<void> {
    let fh: fs.FileHandle;
    try {
      fh = await fs.open(p, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return; // rotated between stat and open: next pass
      throw e;
    }
    try {
      const fst = await fh.stat();
      const key = fileKey(fst);
      if (st.file_key && key !== st.file_key) return; // replaced between stat and open: next pass
      st = { ...st, file_key: key, file_path: p, file_mtime_ms: fst.mtimeMs };
      if (st.file_offset > 0 && (fst.size < st.file_offset || !(await this.headMatches(fh, st)))) {
        this.o.logger.warn('collector: file truncated or replaced; reading it from the start', { source_id: this.o.sourceId, path: p });
        st = { ...st, file_offset: 0, fingerprint: null, fingerprint_len: 0 };
        this.o.store.commit(this.o.sourceId, { rows: [], counters: { files_restarted: 1 }, tail: st }, this.o.clock.now());
      }
      await this.readLines(fh, st, final);
    } finally {
      await fh.close();
    }
  }

  private async headMatches(fh: fs.FileHandle, st: TailState): Promise<boolean> {
    if (!st.fingerprint || st.fingerprint_len <= 0) return true;
    return (await this.fingerprint(fh, st.fingerprint_len)) === st.fingerprint;
  }

  private async fingerprint(fh: fs.FileHandle, len: number): Promise<string> {
    const buf = Buffer.alloc(len);
    const { bytesRead } = await fh.read(buf, 0, len, 0);
    return createHash('sha256').update(buf.subarray(0, bytesRead)).digest('hex');
  }

  private async readLines(fh: fs.FileHandle, start: TailState, final: boolean): Promise<void> {
    let st = start;
    let readPos = st.file_offset;
    let parts: Buffer[] = []; // the unfinished line so far
    let partsLen = 0;
    let skipping = false; // inside a line longer than maxLineBytes
    let batch: Buffer[] = []; // slices of the chunks read, packed into one buffer at dispatch
    let batchBytes = 0;
    let batchEnd = st.file_offset; // file offset after the last line in `batch`
    let extra: Counters = {}; // what the tailer itself counted (oversize lines)
    // Batches handed to the processor, committed strictly in order.
    const inflight: Array<{ result: Promise<BatchResult>; end: number; extra: Counters }> = [];
    const totals: Counters = {};

    const commit = async (rows: PackedRow[], counters: Counters, offset: number) => {
      if (!rows.length && !Object.keys(counters).length && offset === st.file_offset) return;
      let next: TailState = { ...st, file_offset: offset };
      if (next.fingerprint_len < FINGERPRINT_MAX && offset > next.fingerprint_len) {
        const len = Math.min(FINGERPRINT_MAX, offset);
        next = { ...next, fingerprint: await this.fingerprint(fh, len), fingerprint_len: len };
      }
      // The rows of these lines and the offset after them: one transaction.
      this.o.store.commit(this.o.sourceId, { rows, counters, tail: next }, this.o.clock.now());
      for (const [k, v] of Object.entries(counters)) bump(totals, k, v);
      st = next;
      // Let the API answer between transactions.
      await new Promise<void>((r) => setImmediate(r));
    };
    const commitOldest = async () => {
      const f = inflight.shift()!;
      const r = await f.result;
      for (const [k, v] of Object.entries(f.extra)) bump(r.counters, k, v);
      await commit(r.rows, r.counters, f.end);
    };
    const dispatch = async () => {
      if (!batch.length && !Object.keys(extra).length) return;
      const result = this.processor.process(packLines(batch), this.o.clock.now().toISOString());
      result.catch(() => {}); // awaited in order below; this only keeps it from being "unhandled"
      inflight.push({ result, end: batchEnd, extra });
      batch = [];
      batchBytes = 0;
      extra = {};
      while (inflight.length > this.depth) await commitOldest();
    };
    const add = (line: Buffer, end: number) => {
      batch.push(line);
      batchBytes += line.length;
      batchEnd = end;
    };

    try {
      while (!this.stopped) {
        const buf = Buffer.allocUnsafe(this.chunkBytes);
        const { bytesRead } = await fh.read(buf, 0, this.chunkBytes, readPos);
        if (bytesRead === 0) break;
        readPos += bytesRead;
        const chunk = buf.subarray(0, bytesRead);
        if (chunk.indexOf(0x0a) < 0) {
          // No line ends in this chunk: keep it (unless the line is already too long).
          if (!skipping) {
            parts.push(chunk);
            partsLen += chunk.length;
            if (partsLen > this.maxLineBytes) {
              parts = [];
              partsLen = 0;
              skipping = true;
            }
          }
          continue;
        }
        const data = parts.length ? Buffer.concat([...parts, chunk]) : chunk;
        const base = readPos - data.length; // the file offset of data[0]
        let s = 0;
        parts = [];
        partsLen = 0;
        if (skipping) {
          skipping = false;
          bump(extra, 'lines_oversize');
          s = data.indexOf(0x0a) + 1;
          batchEnd = base + s;
        }
        for (;;) {
          const nl = data.indexOf(0x0a, s);
          if (nl < 0) break;
          add(data.subarray(s, nl), base + nl + 1);
          s = nl + 1;
          if (batchBytes >= this.batchBytes || batch.length >= this.batchLines) await dispatch();
          if (this.stopped) break;
        }
        if (this.stopped) break;
        if (s < data.length) {
          // The unfinished last line: copied, so the chunk buffer can be freed.
          const rest = Buffer.from(data.subarray(s));
          parts = [rest];
          partsLen = rest.length;
        }
      }
      if (final && !this.stopped) {
        if (skipping) bump(extra, 'lines_oversize');
        else if (partsLen) add(Buffer.concat(parts), readPos);
        batchEnd = readPos;
      }
      await dispatch();
      // An offset move with nothing to process (an oversize line skipped to the end).
      if (!inflight.length && batchEnd > st.file_offset) await commit([], {}, batchEnd);
      while (inflight.length) await commitOldest();
    } finally {
      // After a failure: nothing more is committed, but no batch is left unobserved.
      await Promise.allSettled(inflight.map((f) => f.result));
    }
    if (totals.lines_malformed || totals.records_malformed || totals.lines_oversize) {
      this.o.logger.warn('collector: malformed input skipped', {
        source_id: this.o.sourceId,
        lines_malformed: totals.lines_malformed ?? 0,
        records_malformed: totals.records_malformed ?? 0,
        lines_oversize: totals.lines_oversize ?? 0,
      });
    }
  }
}
