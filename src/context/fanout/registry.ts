/**
 * The per-process registry of Subscribe streams, fed by the broker channel `svc:tag-updates`.
 *
 * Invariants:
 * - A tag's state is read from the database, never taken from a message, and reads of one
 *   tag are serialized: a refresh asked for while a read is running gets the next read, so
 *   every caller sees a state at least as new as the database at its call, and a stream
 *   never goes back to an older state.
 * - One read per tag move per process, whatever the number of streams; the message fields
 *   are shared, only type, sequence and timestamp differ per stream.
 * - A stream's first message is a SNAPSHOT; an unchanged state (same bundle_id,
 *   bundle_version, updated_at) is never sent twice to one stream.
 * - Anything that may have lost updates resynchronizes: a broker reconnect sends every stream
 *   a fresh SNAPSHOT; the safety poll (CONTEXT_RESYNC_SECONDS) compares each subscribed
 *   tag's stored state with the last one sent and refreshes those that differ.
 * - A stream whose agent is no longer active, or whose key is no longer valid, is ended
 *   (on a `svc:key-invalidations` message, and at every safety poll).
 */
import { Code, ConnectError } from '@connectrpc/connect';
import type { AppContext } from '../../shared/app-context.js';
import { TAG_UPDATES_CHANNEL } from '../../shared/broker.js';
import { KEY_INVALIDATION_CHANNEL, type KeyInvalidation } from '../../core/keys/key-cache.js';
import { readTagKeys, readTagState, type TagState } from './tag-state.js';
import { StreamRecords } from './records.js';
import { Subscriber } from './subscriber.js';
import { findRevokedStreams } from './auth.js';

export interface RefreshResult {
  found: boolean;
  state: TagState | null;
  /** Streams of this process on the tag that now hold the tag's current state. */
  holding: number;
}

interface TagLoop {
  running: boolean;
  queued: Array<{ resolve: (r: RefreshResult) => void; reject: (e: unknown) => void; source: string }>;
}

const STOP_WAIT_MS = 2000;

export class Fanout {
  readonly records: StreamRecords;
  private byTag = new Map<string, Set<Subscriber>>();
  private loops = new Map<string, TagLoop>();
  private lastKeyByTag = new Map<string, string>();
  private stops: Array<() => unknown> = [];
  private timers: NodeJS.Timeout[] = [];
  private starting: Promise<void> | null = null;
  private stopped = false;
  private removedWaiters: Array<() => void> = [];

  constructor(private readonly ctx: AppContext) {
    this.records = new StreamRecords(ctx);
  }

  get closed(): boolean {
    return this.stopped;
  }

  /** Number of streams registered in this process (all tags, or one). */
  count(tag?: string): number {
    if (tag !== undefined) return this.byTag.get(tag)?.size ?? 0;
    let n = 0;
    for (const s of this.byTag.values()) n += s.size;
    return n;
  }

  /** Subscribes to the broker and starts the timers (idempotent). */
  start(): Promise<void> {
    this.starting ??= (async () => {
      const { broker, config } = this.ctx;
      this.stops.push(await broker.subscribe(TAG_UPDATES_CHANNEL, (m) => this.onTagMessage(m)));
      this.stops.push(await broker.subscribe(KEY_INVALIDATION_CHANNEL, (m) => this.onKeyMessage(m)));
      this.stops.push(broker.onReconnect(() => this.resyncAll('broker_reconnect')));
      const every = (seconds: number, fn: () => Promise<void>) => {
        const t = setInterval(() => void fn().catch((e: unknown) => this.ctx.logger.warn('context stream job failed', { error: (e as Error).message })), seconds * 1000);
        t.unref();
        this.timers.push(t);
      };
      every(config.contextStream.heartbeatSeconds, async () => this.records.touch(this.openIds()));
      if (config.contextStream.resyncSeconds > 0) every(config.contextStream.resyncSeconds, () => this.poll());
    })();
    return this.starting;
  }

  /** Ends every stream with UNAVAILABLE (clients reconnect elsewhere), then stops listening. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of this.timers.splice(0)) clearInterval(t);
    await this.starting?.catch(() => {});
    for (const s of this.stops.splice(0)) await s();
    const bye = new ConnectError('server is shutting down', Code.Unavailable);
    for (const subs of this.byTag.values()) for (const s of subs) s.end(bye, 'server_shutdown');
    const deadline = Date.now() + STOP_WAIT_MS;
    while (this.count() > 0 && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, deadline - Date.now());
        this.removedWaiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    await this.records.drain();
  }

  /** Registers a stream and asks for its SNAPSHOT. */
  add(sub: Subscriber): void {
    let set = this.byTag.get(sub.info.tag);
    if (!set) this.byTag.set(sub.info.tag, (set = new Set()));
    set.add(sub);
    this.refresh(sub.info.tag, 'subscribe').catch((e: unknown) => {
      this.ctx.logger.warn('reading tag for a new stream failed', { tag: sub.info.tag, error: (e as Error).message });
      if (!sub.opened) sub.end(new ConnectError('context store unavailable', Code.Unavailable), 'error');
    });
  }

  remove(sub: Subscriber): void {
    const set = this.byTag.get(sub.info.tag);
    if (set?.delete(sub) && set.size === 0) {
      this.byTag.delete(sub.info.tag);
      this.lastKeyByTag.delete(sub.info.tag);
    }
    for (const w of this.removedWaiters.splice(0)) w();
  }

  /**
   * Reads the tag (a read that starts after this call) and sends every stream of this
   * process on it what it lacks: a SNAPSHOT to new or resynchronizing streams, an UPDATE to
   * those holding an older state. Rejects when the database cannot be read.
   */
  refresh(tag: string, source: string): Promise<RefreshResult> {
    let loop = this.loops.get(tag);
    if (!loop) this.loops.set(tag, (loop = { running: false, queued: [] }));
    const l = loop;
    const p = new Promise<RefreshResult>((resolve, reject) => l.queued.push({ resolve, reject, source }));
    if (!l.running) void this.runLoop(tag, l);
    return p;
  }

  /** Sends every stream a fresh SNAPSHOT (after a broker outage, updates may have been lost). */
  resyncAll(reason: string): void {
    if (this.stopped) return;
    let streams = 0;
    for (const subs of this.byTag.values()) {
      for (const s of subs) {
        s.needsSnapshot = true;
        streams++;
      }
    }
    const tags = [...this.byTag.keys()];
    this.ctx.logger.info('resynchronizing context streams', { reason, streams, tags: tags.length });
    if (streams) this.records.event('resync', { details: { reason, streams, tags: tags.length } });
    for (const tag of tags) this.refresh(tag, reason).catch((e: unknown) => this.ctx.logger.warn('resync read failed', { tag, error: (e as Error).message }));
  }

  /** The safety poll: refresh tags whose stored state differs from the last one sent; end revoked streams. */
  async poll(): Promise<void> {
    const tags = [...this.byTag.keys()];
    if (!tags.length) return;
    const keys = await readTagKeys(this.ctx, tags);
    for (const tag of tags) {
      const subs = this.byTag.get(tag);
      const stale = keys.get(tag) !== this.lastKeyByTag.get(tag) || [...(subs ?? [])].some((s) => s.needsSnapshot);
      if (stale) await this.refresh(tag, 'poll').catch(() => {});
    }
    await this.revalidate(() => true);
  }

  private async runLoop(tag: string, loop: TagLoop): Promise<void> {
    loop.running = true;
    try {
      while (loop.queued.length) {
        const batch = loop.queued.splice(0);
        try {
          const r = await this.readAndDeliver(tag, [...new Set(batch.map((b) => b.source))]);
          for (const b of batch) b.resolve(r);
        } catch (e) {
          for (const b of batch) b.reject(e);
        }
      }
    } finally {
      loop.running = false;
      if (!loop.queued.length) this.loops.delete(tag);
    }
  }

  private async readAndDeliver(tag: string, sources: string[]): Promise<RefreshResult> {
    const state = await readTagState(this.ctx, tag);
    const subs = [...(this.byTag.get(tag) ?? [])];
    if (!state) {
      this.lastKeyByTag.delete(tag);
      for (const s of subs) s.end(new ConnectError(`tag ${tag} not found`, Code.NotFound), 'tag_not_found');
      return { found: false, state: null, holding: 0 };
    }
    if (subs.length) this.lastKeyByTag.set(tag, state.key);
    let updates = 0;
    let holding = 0;
    for (const s of subs) {
      if (s.isEnding) continue;
      if (s.needsSnapshot) s.offer('snapshot', state);
      else if (s.lastKey !== state.key && s.offer('update', state)) updates++;
      if (s.lastKey === state.key) holding++;
    }
    if (updates) {
      this.records.event('update_delivered', {
        tag,
        details: { bundle_id: state.fields.bundleId, bundle_version: state.fields.bundleVersion, updated_at: state.updatedAt.toISOString(), delivered_to: updates, sources },
      });
    }
    return { found: true, state, holding };
  }

  private onTagMessage(text: string): void {
    let tag: unknown;
    try {
      tag = (JSON.parse(text) as { tag?: unknown })?.tag;
    } catch {
      /* handled below */
    }
    if (typeof tag !== 'string') {
      this.ctx.logger.warn('ignored a malformed tag-update message', { channel: TAG_UPDATES_CHANNEL });
      return;
    }
    if (!this.byTag.has(tag) || this.stopped) return;
    this.refresh(tag, 'broker').catch((e: unknown) => this.ctx.logger.warn('tag refresh failed', { tag, error: (e as Error).message }));
  }

  private onKeyMessage(text: string): void {
    let msg: KeyInvalidation = { kind: 'all' };
    try {
      msg = JSON.parse(text) as KeyInvalidation;
    } catch {
      /* unreadable: recheck everything */
    }
    const filter =
      msg?.kind === 'agent' ? (s: Subscriber) => s.info.agentId === msg.agent_id
      : msg?.kind === 'keys' && Array.isArray(msg.key_ids) ? (s: Subscriber) => s.info.keyId !== null && msg.key_ids.includes(s.info.keyId)
      : () => true;
    this.revalidate(filter).catch((e: unknown) => this.ctx.logger.warn('stream revalidation failed', { error: (e as Error).message }));
  }

  /** Ends the streams (matching `filter`) whose agent is no longer active or whose key is no longer valid. */
  private async revalidate(filter: (s: Subscriber) => boolean): Promise<void> {
    const subs: Subscriber[] = [];
    for (const set of this.byTag.values()) for (const s of set) if (!s.isEnding && filter(s)) subs.push(s);
    if (!subs.length) return;
    for (const [s, err] of await findRevokedStreams(this.ctx, subs)) s.end(err, 'revoked');
  }

  private openIds(): string[] {
    const ids: string[] = [];
    for (const set of this.byTag.values()) for (const s of set) if (s.opened) ids.push(s.info.subscriptionId);
    return ids;
  }
}
