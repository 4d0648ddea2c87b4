/**
 * Turning a batch of complete lines into rows, either in this thread or in a worker thread
 * (so that parsing, typing and redaction of batch N+1 run while batch N is committed).
 * A processor never changes what a line yields, only where the work runs.
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../shared/logger.js';
import type { ActivityRow, PackedRow, SourceId } from '../store/store.js';
import { packRow } from '../store/store.js';
import { bump, type Counters } from '../otlp/lines.js';

export interface BatchResult {
  rows: PackedRow[];
  counters: Counters;
}

export interface LineBatchProcessor {
  process(lines: string[], now: string): Promise<BatchResult>;
  close(): Promise<void>;
}

export type LineProcessor = (line: string, rows: ActivityRow[], counters: Counters, now: string) => void;

/** Runs a batch through `processLine` here; a line that throws is counted as malformed. */
export function processBatch(processLine: LineProcessor, lines: string[], now: string): BatchResult {
  const rows: ActivityRow[] = [];
  const counters: Counters = {};
  for (const line of lines) {
    try {
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

export interface WorkerProcessorOptions {
  sourceId: SourceId;
  hmacSecret: string | null;
  logger: Logger;
  /** Used when the worker cannot start (or dies): the same work in this thread. */
  fallback: LineProcessor;
}

interface Pending {
  resolve(r: BatchResult): void;
  reject(e: Error): void;
}

const WORKER_ENTRY = new URL(`./line-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url).href;

/**
 * A processor backed by one worker thread running `line-worker`. Under tsx (how the service
 * runs) the worker registers tsx's loader before importing the TypeScript entry.
 */
export function workerProcessor(o: WorkerProcessorOptions): LineBatchProcessor {
  let worker: Worker | null = null;
  let ready: Promise<boolean> | null = null;
  let broken = false;
  let seq = 0;
  const pending = new Map<number, Pending>();

  const failAll = (e: Error) => {
    for (const p of pending.values()) p.reject(e);
    pending.clear();
  };

  const start = (): Promise<boolean> => {
    ready ??= new Promise<boolean>((resolve) => {
      const code = WORKER_ENTRY.endsWith('.ts')
        ? `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(WORKER_ENTRY)}); })`
        : `import(${JSON.stringify(WORKER_ENTRY)})`;
      let w: Worker;
      try {
        w = new Worker(code, { eval: true, workerData: { sourceId: o.sourceId, hmacSecret: o.hmacSecret } });
      } catch (e) {
        o.logger.warn('collector: parsing worker unavailable; parsing in the main thread', { error: (e as Error).message });
        broken = true;
        return resolve(false);
      }
      worker = w;
      w.on('message', (m: { ready?: boolean; id?: number; result?: BatchResult; error?: string }) => {
        if (m.ready) return resolve(true);
        const p = m.id === undefined ? undefined : pending.get(m.id);
        if (!p) return;
        pending.delete(m.id!);
        if (m.result) p.resolve(m.result);
        else p.reject(new Error(m.error ?? 'worker failed'));
      });
      w.on('error', (e) => {
        o.logger.warn('collector: parsing worker failed; parsing in the main thread from now on', { error: e.message });
        broken = true;
        failAll(e);
        resolve(false);
      });
      w.on('exit', () => {
        worker = null;
        if (pending.size) failAll(new Error('parsing worker exited'));
      });
    });
    return ready;
  };

  return {
    async process(lines, now) {
      if (broken || !(await start()) || !worker) return processBatch(o.fallback, lines, now);
      const id = ++seq;
      return new Promise<BatchResult>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        worker!.postMessage({ id, lines, now });
      });
    },
    async close() {
      const w = worker;
      worker = null;
      if (w) await w.terminate();
      failAll(new Error('processor closed'));
    },
  };
}
