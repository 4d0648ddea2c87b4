/**
 * Turning a batch of complete lines into rows, either in this thread or in a worker thread
 * (so that parsing, typing and redaction of batch N+1 run while batch N is committed).
 * A processor never changes what a line yields, only where the work runs.
 */
import type { Worker } from 'node:worker_threads';
import { moduleWorker, siblingModule } from '../../shared/module-worker.js';
import type { Logger } from '../../shared/logger.js';
import type { ActivityRow, PackedRow, SourceId } from '../store/store.js';
import { packRow } from '../store/store.js';
import { bump, type Counters } from '../otlp/lines.js';

export interface BatchResult {
  rows: PackedRow[];
  counters: Counters;
}

/**
 * Complete lines as their bytes, back to back without the newlines: line i is
 * `data[ends[i-1] ?? 0, ends[i])`. This is how the tailer hands lines over: the bytes are
 * moved (transferred) to a parsing thread, which decodes them, instead of being decoded
 * and then copied again in the tailer's thread.
 */
export interface LineBuffer {
  data: Buffer;
  ends: Uint32Array;
}

/** A batch: decoded lines, or their bytes. */
export type LineBatch = string[] | LineBuffer;

export interface LineBatchProcessor {
  process(lines: LineBatch, now: string): Promise<BatchResult>;
  close(): Promise<void>;
}

export type LineProcessor = (line: string, rows: ActivityRow[], counters: Counters, now: string) => void;

/** Packs line slices into one buffer of its own (so that it can be transferred). */
export function packLines(lines: Buffer[]): LineBuffer {
  let total = 0;
  for (const l of lines) total += l.length;
  const data = Buffer.allocUnsafeSlow(total);
  const ends = new Uint32Array(lines.length);
  let at = 0;
  for (let i = 0; i < lines.length; i++) {
    at += lines[i].copy(data, at);
    ends[i] = at;
  }
  return { data, ends };
}

function batchSize(lines: LineBatch): number {
  return Array.isArray(lines) ? lines.length : lines.ends.length;
}

/** Runs a batch through `processLine` here; a line that throws is counted as malformed. */
export function processBatch(processLine: LineProcessor, lines: LineBatch, now: string): BatchResult {
  const rows: ActivityRow[] = [];
  const counters: Counters = {};
  const n = batchSize(lines);
  for (let i = 0; i < n; i++) {
    try {
      const line = Array.isArray(lines) ? lines[i] : lines.data.toString('utf8', i ? lines.ends[i - 1] : 0, lines.ends[i]);
      processLine(line, rows, counters, now);
    } catch {
      bump(counters, 'lines_malformed');
    }
  }
  return { rows: rows.map(packRow), counters };
}

export function inThreadProcessor(processLine: LineProcessor): LineBatchProcessor {
  return {
    process: async (lines, now) => processBatch(processLine, lines, now),
    close: async () => {},
  };
}

interface Pending {
  resolve(r: BatchResult): void;
  reject(e: Error): void;
}

const WORKER_ENTRY = siblingModule('line-worker', import.meta.url);

/** One parsing thread. Under tsx (how the service runs) it registers tsx's loader first. */
class ParseWorker {
  private worker: Worker | null = null;
  private ready: Promise<boolean> | null = null;
  private seq = 0;
  readonly pending = new Map<number, Pending>();
  broken = false;

  constructor(
    private readonly hmacSecret: string | null,
    private readonly pseudonymize: readonly string[] | undefined,
    private readonly logger: Logger,
  ) {}

  start(): Promise<boolean> {
    this.ready ??= new Promise<boolean>((resolve) => {
      let w: Worker;
      try {
        w = moduleWorker(WORKER_ENTRY, { workerData: { hmacSecret: this.hmacSecret, pseudonymize: this.pseudonymize } });
      } catch (e) {
        this.fail(e as Error);
        return resolve(false);
      }
      this.worker = w;
      w.on('message', (m: { ready?: boolean; id?: number; result?: BatchResult; error?: string }) => {
        if (m.ready) return resolve(true);
        const p = m.id === undefined ? undefined : this.pending.get(m.id);
        if (!p) return;
        this.pending.delete(m.id!);
        if (m.result) p.resolve(m.result);
        else p.reject(new Error(m.error ?? 'worker failed'));
      });
      w.on('error', (e) => {
        this.fail(e);
        resolve(false);
      });
      w.on('exit', () => {
        this.worker = null;
        this.failPending(new Error('parsing worker exited'));
      });
    });
    return this.ready;
  }

  private fail(e: Error) {
    if (!this.broken) this.logger.warn('collector: parsing worker unavailable; parsing in the main thread instead', { error: e.message });
    this.broken = true;
    this.failPending(e);
  }

  private failPending(e: Error) {
    for (const p of this.pending.values()) p.reject(e);
    this.pending.clear();
  }

  async process(sourceId: SourceId, lines: LineBatch, now: string): Promise<BatchResult | null> {
    if (this.broken || !(await this.start()) || !this.worker) return null;
    const id = ++this.seq;
    return new Promise<BatchResult>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (Array.isArray(lines)) {
        this.worker!.postMessage({ id, sourceId, lines, now });
        return;
      }
      // The bytes move to the thread (no copy) when the buffer is a whole one of its own.
      const { data, ends } = lines;
      const own = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength && !(data.buffer instanceof SharedArrayBuffer);
      const bytes = own ? (data.buffer as ArrayBuffer) : new Uint8Array(data).buffer;
      this.worker!.postMessage({ id, sourceId, data: bytes, ends, now }, [bytes, ends.buffer as ArrayBuffer]);
    });
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    this.broken = true;
    if (w) await w.terminate();
    this.failPending(new Error('parsing pool closed'));
  }
}

/**
 * Parsing threads shared by the OTLP collectors: a batch goes to the least busy thread.
 * Batches are independent, and the tailer commits them in the order it dispatched them,
 * so more threads never change what is stored or in which transaction.
 */
export class ParsePool {
  private readonly workers: ParseWorker[];

  /** `pseudonymize`: the attribute names the workers' redactors pseudonymize (default: the config's default list). */
  constructor(opts: { size: number; hmacSecret: string | null; pseudonymize?: readonly string[]; logger: Logger }) {
    this.workers = Array.from({ length: Math.max(1, opts.size) }, () => new ParseWorker(opts.hmacSecret, opts.pseudonymize, opts.logger));
  }

  /** Starts the threads now (otherwise at the first batch). */
  async warm(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.start()));
  }

  /**
   * The batch's result, or null when no thread is available (the caller parses itself).
   * A LineBuffer handed over is moved to the thread: the caller must not use it again.
   */
  process(sourceId: SourceId, lines: LineBatch, now: string): Promise<BatchResult | null> {
    const live = this.workers.filter((w) => !w.broken);
    if (!live.length) return Promise.resolve(null);
    let best = live[0];
    for (const w of live) if (w.pending.size < best.pending.size) best = w;
    return best.process(sourceId, lines, now);
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.close()));
  }
}

/** A tailer's processor on a shared pool; `fallback` does the same work here when it must. */
export function poolProcessor(pool: ParsePool, sourceId: SourceId, fallback: LineProcessor): LineBatchProcessor {
  return {
    async process(lines, now) {
      return (await pool.process(sourceId, lines, now)) ?? processBatch(fallback, lines, now);
    },
    // The pool belongs to its owner (the collector service), not to one tailer.
    close: async () => {},
  };
}
