/**
 * `svc audit verify --since` on two threads: the records of the new leaves are rechecked
 * (LeafRecordChecker: both hash chains, the record's form) on a worker thread
 * (record-check-worker.ts), in leaf order, while the caller's thread fetches the entry bundles,
 * hashes the leaves and extends the tree. On one thread the check was most of the CLI's CPU,
 * and the CLI's thread the longest of the three (the CLI, the server, PostgreSQL) sharing two
 * cores.
 *
 * Each bundle is copied into one of SLOTS shared buffers (the caller gives its own back to its
 * source at once) and handed over; with every slot in use the caller waits for one, so memory
 * stays bounded whichever thread is slower. The worker reports the first record that fails
 * and checks nothing after it.
 */
import type { Worker } from 'node:worker_threads';
import { moduleWorker, siblingModule } from '../../shared/module-worker.js';
import type { ChainTip } from './record-check.js';

/** What the caller's thread sends the checking thread. */
export type ToChecker =
  | { init: { tip: ChainTip | null; chained: boolean } }
  | { bundle: { buf: SharedArrayBuffer; slot: number; length: number; base: number; from: number } }
  | { end: true };

/** What the checking thread answers. */
export type FromChecker =
  | { ready: true }
  | { ack: number; failure: CheckFailure | null }
  | { done: { requests: number; outputs: number; events: number; failure: CheckFailure | null } }
  | { error: string };

export interface CheckFailure {
  leaf: number;
  reason: string;
}

const ENTRY = siblingModule('record-check-worker', import.meta.url);
/** Bundles handed over and not yet checked. */
const SLOTS = 8;
/** A slot's size: a full bundle of audit records is about 220 KB (a larger one gets a buffer of its own size). */
const SLOT_BYTES = 512 * 1024;

export class RecordCheckThread {
  private readonly slots: SharedArrayBuffer[] = [];
  private readonly free: number[] = [];
  private readonly waiting: Array<() => void> = [];
  private error: Error | null = null;
  private done: ((d: { requests: number; outputs: number; events: number; failure: CheckFailure | null }) => void) | null = null;
  /** The first failing record the thread reported so far (it checks nothing after it). */
  failure: CheckFailure | null = null;

  private constructor(private readonly worker: Worker) {
    for (let k = 0; k < SLOTS; k++) {
      this.slots.push(new SharedArrayBuffer(SLOT_BYTES));
      this.free.push(k);
    }
    worker.on('message', (m: FromChecker) => {
      if ('ack' in m) {
        this.failure ??= m.failure;
        this.free.push(m.ack);
        this.waiting.shift()?.();
      } else if ('done' in m) {
        this.failure ??= m.done.failure;
        this.done?.(m.done);
      } else if ('error' in m) this.fail(new Error(`the record-checking thread failed: ${m.error}`));
    });
    worker.on('error', (e) => this.fail(e));
    worker.on('exit', (code) => {
      if (!this.closing) this.fail(new Error(`the record-checking thread exited (code ${code})`));
    });
  }

  private fail(e: Error): void {
    this.error ??= e;
    for (const w of this.waiting.splice(0)) w();
    this.done?.({ requests: 0, outputs: 0, events: 0, failure: null });
  }

  /** A thread whose checker continues from `tip`; null when no thread could be started. */
  static async start(tip: ChainTip | null, chained: boolean): Promise<RecordCheckThread | null> {
    let worker: Worker;
    try {
      worker = moduleWorker(ENTRY);
    } catch {
      return null;
    }
    // Only the listeners added here are removed after (a Worker's own, on 'newListener', keep its port going).
    let onMessage!: (m: FromChecker) => void;
    let onGone!: () => void;
    const ready = await new Promise<boolean>((resolve) => {
      onMessage = (m) => resolve('ready' in m);
      onGone = () => resolve(false);
      worker.once('message', onMessage).once('error', onGone).once('exit', onGone);
    });
    worker.off('message', onMessage).off('error', onGone).off('exit', onGone);
    if (!ready) {
      await worker.terminate().catch(() => 0);
      return null;
    }
    const t = new RecordCheckThread(worker);
    t.post({ init: { tip, chained } });
    return t;
  }

  private post(m: ToChecker): void {
    this.worker.postMessage(m);
  }

  /**
   * Hands over the entries `from`.. of the bundle `buf` (its first entry is leaf `base`),
   * copied: the caller may reuse `buf` once this resolves. Rejects when the thread failed.
   */
  async check(base: number, from: number, buf: Uint8Array): Promise<void> {
    while (!this.free.length && !this.error) await new Promise<void>((resolve) => this.waiting.push(resolve));
    if (this.error) throw this.error;
    const slot = this.free.pop()!;
    if (this.slots[slot]!.byteLength < buf.length) this.slots[slot] = new SharedArrayBuffer(buf.length);
    new Uint8Array(this.slots[slot]!).set(buf);
    this.post({ bundle: { buf: this.slots[slot]!, slot, length: buf.length, base, from } });
  }

  /** Waits for every bundle handed over to be checked; the counts and the first failure. Rejects when the thread failed. */
  async finish(): Promise<{ requests: number; outputs: number; events: number; failure: CheckFailure | null }> {
    if (this.error) throw this.error;
    const d = await new Promise<{ requests: number; outputs: number; events: number; failure: CheckFailure | null }>((resolve) => {
      this.done = resolve;
      this.post({ end: true });
    });
    if (this.error) throw this.error;
    return d;
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.worker.terminate().catch(() => 0);
  }
  private closing = false;
}
