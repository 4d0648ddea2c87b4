/**
 * One Subscribe stream's mailbox. Messages carry a tag's full state (never a diff), so the
 * mailbox holds at most one pending state: a newer state replaces an unsent older one, and a
 * client that reads slower than the tag moves gets the latest state instead of an unbounded
 * queue. A pending SNAPSHOT stays a SNAPSHOT when replaced (the first message of a stream,
 * and the message after a resync, must be a SNAPSHOT).
 */
import type { ConnectError } from '@connectrpc/connect';
import type { TagState } from './tag-state.js';

export type MessageKind = 'snapshot' | 'update';

export type Next =
  | { kind: 'message'; type: MessageKind; state: TagState }
  | { kind: 'heartbeat' }
  /** The stream must end: with `error` as its status, or cleanly when null. */
  | { kind: 'end'; error: ConnectError | null; reason: EndReason }
  | { kind: 'aborted' };

export type EndReason = 'client_closed' | 'server_shutdown' | 'tag_not_found' | 'revoked' | 'error';

export interface SubscriberInfo {
  subscriptionId: string;
  tag: string;
  agentId: string;
  authMethod: 'token' | 'api_key';
  /** Set when the stream authenticated with an agent key (revalidated when keys change). */
  keyId: string | null;
}

export class Subscriber {
  /** Key (`bundle_id`, `bundle_version`, `updated_at`) of the last state put in the mailbox. */
  lastKey: string | null = null;
  /** True until the registry has put a SNAPSHOT in the mailbox (again after a resync). */
  needsSnapshot = true;
  /** True once a SNAPSHOT was put in the mailbox: the stream is open. */
  opened = false;
  private pending: { type: MessageKind; state: TagState } | null = null;
  private ending: { error: ConnectError | null; reason: EndReason } | null = null;
  private wake: (() => void) | null = null;

  constructor(readonly info: SubscriberInfo) {}

  /** Puts a state in the mailbox; false when the stream is ending. */
  offer(type: MessageKind, state: TagState): boolean {
    if (this.ending) return false;
    const t: MessageKind = this.pending?.type === 'snapshot' || type === 'snapshot' ? 'snapshot' : 'update';
    this.pending = { type: t, state };
    this.lastKey = state.key;
    if (t === 'snapshot') {
      this.needsSnapshot = false;
      this.opened = true;
    }
    this.notify();
    return true;
  }

  /** Asks the stream to end (first call wins). */
  end(error: ConnectError | null, reason: EndReason): void {
    if (this.ending) return;
    this.ending = { error, reason };
    this.notify();
  }

  get isEnding(): boolean {
    return this.ending !== null;
  }

  /**
   * The next thing to send: a pending message, else an end, else a heartbeat once the stream
   * has been idle `idleMs`, or `aborted` when the client went away.
   */
  async next(idleMs: number, signal: AbortSignal): Promise<Next> {
    for (;;) {
      if (signal.aborted) return { kind: 'aborted' };
      if (this.ending) return { kind: 'end', ...this.ending };
      if (this.pending) {
        const p = this.pending;
        this.pending = null;
        return { kind: 'message', ...p };
      }
      const woke = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => done(false), idleMs);
        const onAbort = () => done(true);
        const done = (v: boolean) => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          this.wake = null;
          resolve(v);
        };
        this.wake = () => done(true);
        signal.addEventListener('abort', onAbort, { once: true });
      });
      // Heartbeats only on an open stream (never before its SNAPSHOT).
      if (!woke && this.opened) return { kind: 'heartbeat' };
    }
  }

  private notify(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }
}
