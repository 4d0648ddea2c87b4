/**
 * Verify's read on three threads. `GET /api/audit/verify` checked each record on the API's
 * thread, which also receives the COPY stream (postgres.js's protocol work), while PostgreSQL
 * sends it on the other core: that thread was the bound (13.9 µs of server CPU a record
 * against PostgreSQL's 6.0 µs, 2026-11-29). A record's check needs only the stored hashes of
 * the record before it, so records can be checked anywhere, in any order. After the first
 * `handOverAfter` rows (a small chain never waits for threads to start), this thread's
 * checker state (chain-check.ts, `state()`) and the rest of the stream go to two worker
 * threads (verify-thread-worker.ts): each reads every row, checks those of its own blocks of
 * BLOCK rows, and takes only the stored hashes of the others (ByteChainChecker.pass). This
 * thread then only receives the stream and hands it on in shared segments of 256 KB; with
 * more than 8 segments not yet read by both it pauses the stream (TCP holds the rest), so
 * memory stays bounded whichever thread is slower.
 *
 * The threads' answers are merged only when neither found anything. A failure, or a thread
 * that cannot go on once it took over, makes the call reject with ReadAgain once the stream is
 * read to its end, and verify.ts reads the records again on this thread alone: a tampered
 * log gets exactly the one-thread checker's answer (which record failed first, and how).
 * Threads that cannot start leave the check here.
 */
import type { Readable } from 'node:stream';
import type { Worker } from 'node:worker_threads';
import { moduleWorker, siblingModule } from '../../shared/module-worker.js';
import { ByteChainChecker, N_CHECK_COLUMNS, type CheckerState } from './chain-check.js';
import { CopyBinaryReader, CopyFormatError, resumeSocketAtEnd } from './copy-binary.js';
import { OrderedRows } from './ordered-rows.js';

/** What the API's thread sends a checking thread. */
export type ToThread =
  | { init: { state: CheckerState; part: number; parts: number; block: number; ascendingOnly: boolean; ascending: boolean; prev: number; carry: Uint8Array } }
  | { chunk: SharedArrayBuffer; length: number; id: number }
  | { end: true };

/** What a checking thread answers. */
export type FromThread = { ready: true } | { ack: number } | { done: { state: CheckerState; ascending: boolean } } | { error: string; format: boolean };

const ENTRY = siblingModule('verify-thread-worker', import.meta.url);
const THREADS = 2;
/** Rows a thread checks in a row before the other's turn. */
const BLOCK = 256;
const SEGMENT = 256 * 1024;
/** Segments sent and not yet read by every thread before the stream is paused (2 MB). */
const MAX_IN_FLIGHT = 8;

/** The records must be read again on one thread: a failure was found, or a checking thread failed. */
export class ReadAgain extends Error {}

export interface CheckResult {
  /** The checker as it ended (the threads' merged, when they took over). */
  checker: ByteChainChecker;
  /** False when a sequence did not rise in an ascendingOnly read (OrderedRows). */
  ascending: boolean;
  /** The rows checked on this thread before the others took over; null when they did not. */
  handedOverAt: number | null;
}

/**
 * Checks a binary COPY stream of CHECK_COLUMNS rows with `checker` (through OrderedRows),
 * handing the rest over to worker threads once `handOverAfter` rows were checked here
 * (Infinity: never), each thread checking `block` rows in turn. Resolves at the end of the stream.
 */
export function checkCopyStream(stream: Readable, checker: ByteChainChecker, ascendingOnly: boolean, handOverAfter: number, block = BLOCK): Promise<CheckResult> {
  const rows = new OrderedRows(checker, ascendingOnly);
  const reader = new CopyBinaryReader(N_CHECK_COLUMNS, rows.row);
  return new Promise<CheckResult>((resolve, reject) => {
    let workers: Worker[] = [];
    let readyCount = 0;
    let noThread = !(handOverAfter < Infinity);
    let handedOverAt: number | null = null;
    let threadError: Error | null = null;
    let failed = false;
    let settled = false;
    let ended = false;
    let paused = false;
    /** The segment being filled, its id, and the segments free to fill again. */
    let seg: Buffer | null = null;
    let segId = -1;
    let segLen = 0;
    const segments: SharedArrayBuffer[] = [];
    const free: number[] = [];
    /** Per segment id: the threads that have not read it yet. */
    const unread: number[] = [];
    let inFlight = 0;
    const done: Array<{ state: CheckerState; ascending: boolean }> = [];

    const pause = () => {
      if (!paused) {
        paused = true;
        stream.pause();
      }
    };
    const resume = () => {
      if (paused) {
        paused = false;
        stream.resume();
      }
    };
    const stopThreads = () => {
      const ws = workers;
      workers = [];
      return Promise.all(ws.map((w) => w.terminate().catch(() => 0)));
    };
    const finish = (e: Error | null, r?: CheckResult) => {
      if (settled) return;
      settled = true;
      void stopThreads().then(() => (e ? reject(e) : resolve(r!)));
    };
    /** Stops checking; the stream is still read to its end so the connection ends in order. */
    const fail = (e: Error) => {
      if (failed) return;
      failed = true;
      resume();
      finish(e);
    };
    const readAgain = () => finish(new ReadAgain(`verify reads the records again on one thread${threadError ? ` (a checking thread failed: ${threadError.message})` : ''}`));
    /** A thread failed: the check stays here before the hand-over, else ReadAgain at the end. */
    const threadFailed = (e: Error) => {
      if (handedOverAt === null) {
        noThread = true;
        void stopThreads();
        if (!failed) resume();
        return;
      }
      threadError ??= e;
      resume();
      if (ended) readAgain();
    };
    const merge = () => {
      const [a, ...others] = done;
      const ascending = done.every((d) => d.ascending);
      if (ascending && done.some((d) => d.state.failure || d.state.leafFailure)) return readAgain();
      // Each thread's counts began at the hand-over's, where this thread's checker stopped.
      const state = { ...a!.state };
      for (const o of others) {
        state.count += o.state.count - checker.count;
        state.leavesChecked += o.state.leavesChecked - checker.leavesChecked;
      }
      finish(null, { checker: ByteChainChecker.resume(state), ascending, handedOverAt });
    };

    const handOver = () => {
      if (failed) return;
      try {
        const state = checker.state();
        const carry = reader.handOver();
        workers.forEach((w, part) =>
          w.postMessage({ init: { state, part, parts: workers.length, block, ascendingOnly, ascending: rows.ascending, prev: rows.prev, carry } } satisfies ToThread),
        );
        handedOverAt = checker.count;
      } catch (e) {
        return fail(e as Error);
      }
      resume();
    };
    /** Starts the threads; the stream waits until they take over (a few tens of milliseconds). */
    const start = () => {
      try {
        for (let i = 0; i < THREADS; i++) workers.push(moduleWorker(ENTRY, { resourceLimits: { maxYoungGenerationSizeMb: 4 } }));
      } catch {
        noThread = true;
        void stopThreads();
        return;
      }
      pause();
      for (const w of workers) {
        w.on('message', (m: FromThread) => {
          if (!workers.includes(w) || settled) return;
          if ('ready' in m) {
            if (++readyCount === workers.length) handOver();
          } else if ('ack' in m) {
            if (--unread[m.ack]! === 0) {
              free.push(m.ack);
              if (--inFlight <= MAX_IN_FLIGHT / 2) resume();
            }
          } else if ('done' in m) {
            done.push(m.done);
            if (done.length === workers.length) merge();
          } else if (m.format) fail(new CopyFormatError(m.error));
          else threadFailed(new Error(m.error));
        });
        w.on('error', (e) => workers.includes(w) && threadFailed(e));
        w.on('exit', (code) => workers.includes(w) && threadFailed(new Error(`it exited (${code})`)));
      }
    };

    const flush = () => {
      if (!seg || segLen === 0) return;
      unread[segId] = workers.length;
      for (const w of workers) w.postMessage({ chunk: segments[segId]!, length: segLen, id: segId } satisfies ToThread);
      seg = null;
      segLen = 0;
      if (++inFlight >= MAX_IN_FLIGHT) pause();
    };
    const append = (chunk: Buffer) => {
      if (seg && segLen + chunk.length > seg.length) flush();
      if (!seg) {
        let id = chunk.length <= SEGMENT ? free.pop() : undefined;
        if (id === undefined || segments[id]!.byteLength < chunk.length) {
          id = segments.push(new SharedArrayBuffer(Math.max(SEGMENT, chunk.length))) - 1;
        }
        segId = id;
        seg = Buffer.from(segments[id]!);
      }
      segLen += chunk.copy(seg, segLen);
    };

    stream.on('data', (chunk: Buffer) => {
      if (failed || threadError) return;
      try {
        if (handedOverAt !== null) return append(chunk);
        reader.push(chunk);
        if (!workers.length && !noThread && !reader.finished && checker.count >= handOverAfter) start();
      } catch (e) {
        fail(e as Error);
      }
    });
    stream.once('error', fail);
    stream.once('end', () => {
      ended = true;
      resumeSocketAtEnd(stream);
      if (failed) return;
      if (threadError) return readAgain();
      if (handedOverAt === null) {
        try {
          reader.end();
        } catch (e) {
          return fail(e as Error);
        }
        return finish(null, { checker, ascending: rows.ascending, handedOverAt: null });
      }
      flush();
      for (const w of workers) w.postMessage({ end: true } satisfies ToThread);
    });
  });
}
