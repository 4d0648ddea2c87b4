/**
 * In-process cache of verified agent keys, keyed by the key's SHA-256 (never the plaintext).
 *
 * Invariant: a revoked or expired key, or a key of a suspended or revoked agent, is refused
 * on the next request on every process. How:
 * - every code path that changes a key or an agent calls `invalidateKeys` after its commit:
 *   it drops the entries in this process synchronously and publishes the change on
 *   `svc:key-invalidations`, which every other process applies on arrival;
 * - a cache fill that raced with an invalidation is discarded (generation check), so an
 *   entry read before a commit can never be stored after that commit's invalidation;
 * - the cache is used only while the broker is known to deliver: the broker reports a
 *   connection (`connected()`), no heartbeat ping this process sent through Redis (every
 *   0.5 s) has gone unanswered for more than 1.5 s (a stalled connection: messages delayed
 *   past that are not waited for), and nothing was lost since the entry was
 *   stored (any outage or reconnect starts a new epoch and empties the cache). While the
 *   broker is unavailable every request is verified against the database: slower, never
 *   stale. Entries also live at most 60 s (backstop for changes made outside the service,
 *   e.g. by hand in SQL).
 * - expires_at is checked on every hit, in process.
 */
import type { AppContext } from '../../shared/app-context.js';

export const KEY_INVALIDATION_CHANNEL = 'svc:key-invalidations';
const ENTRY_TTL_MS = 60_000;
const HEARTBEAT_MS = 500;
const HEARTBEAT_WINDOW_MS = 1_500;
const MAX_ENTRIES = 200_000;
const PUBLISH_RETRIES = 20;

/** What a verified key grants (the `ok: true` branch of KeyCheck, minus `ok`). */
export interface VerifiedKey {
  keyId: string;
  agentId: string;
  roleId: string;
  allowedIntents: string[];
  scopes: string[] | null;
  overrides: string[];
  restrictions: string[];
  expiresAt: Date | null;
}

/** Message on `svc:key-invalidations` (JSON text). */
export type KeyInvalidation = { kind: 'keys'; key_ids: string[] } | { kind: 'agent'; agent_id: string } | { kind: 'all' };

interface Entry {
  key: VerifiedKey;
  storedAt: number;
  epoch: number;
}

export class KeyCache {
  private entries = new Map<string, Entry>();
  private byAgent = new Map<string, Set<string>>();
  private byKeyId = new Map<string, string>();
  /** Bumped by every invalidation; a fill started under an older generation is not stored. */
  private generation = 0;
  /** Bumped whenever delivery of invalidations may have been interrupted. */
  private epoch = 0;
  private subscribed = false;
  /** Heartbeat pings by sequence number, with their send times, until answered. */
  private pingsSent = 0;
  private pingsAnswered = 0;
  private pingTimes = new Map<number, number>();
  private timer: NodeJS.Timeout | null = null;
  private stops: Array<() => unknown> = [];
  private readonly pingChannel: string;
  /** Invalidations whose publish failed: re-sent until the broker takes them. */
  private unsent: KeyInvalidation[] = [];
  hits = 0;
  misses = 0;

  constructor(private readonly ctx: AppContext) {
    this.pingChannel = `${KEY_INVALIDATION_CHANNEL}:ping:${ctx.processId}`;
  }

  /** Subscribes to invalidations; the cache stays bypassed until this has succeeded. */
  async start(): Promise<void> {
    const { broker } = this.ctx;
    this.stops.push(await broker.subscribe(KEY_INVALIDATION_CHANNEL, (m) => this.onMessage(m)));
    this.stops.push(broker.onReconnect(() => this.newEpoch()));
    if (broker.kind === 'redis') {
      this.stops.push(await broker.subscribe(this.pingChannel, (m) => this.onPong(Number(m))));
      const beat = () => {
        if (!this.healthy()) this.newEpoch();
        const seq = ++this.pingsSent;
        this.pingTimes.set(seq, Date.now());
        if (this.pingTimes.size > 1000) {
          // A long outage: keep the oldest unanswered ping (what health is judged by) and the newest.
          const it = this.pingTimes.keys();
          it.next();
          this.pingTimes.delete(it.next().value!);
        }
        void broker.publish(this.pingChannel, String(seq));
        void this.resend();
      };
      this.timer = setInterval(beat, HEARTBEAT_MS);
      this.timer.unref();
      beat();
    }
    this.subscribed = true;
  }

  async stop(): Promise<void> {
    this.subscribed = false;
    if (this.timer) clearInterval(this.timer);
    for (const s of this.stops.splice(0)) await s();
    this.clear();
  }

  /** True when invalidations are known to arrive: only then may entries be used or stored. */
  healthy(): boolean {
    if (!this.subscribed) return false;
    const { broker } = this.ctx;
    if (!broker.connected()) return false;
    if (broker.kind === 'redis') {
      // Unhealthy when a ping has been unanswered for the window. Measured from when the ping
      // was sent, so an event loop busy with requests (no pings sent) is no false alarm.
      if (this.pingsSent === 0) return false;
      const oldest = this.pingTimes.get(this.pingsAnswered + 1);
      if (oldest !== undefined && Date.now() - oldest > HEARTBEAT_WINDOW_MS) return false;
    }
    return true;
  }

  private onPong(seq: number): void {
    if (!Number.isInteger(seq) || seq <= this.pingsAnswered) return;
    for (let i = this.pingsAnswered + 1; i <= seq; i++) this.pingTimes.delete(i);
    this.pingsAnswered = seq;
  }

  /** The generation to pass to `set` (read it before the database lookup). */
  currentGeneration(): number {
    return this.generation;
  }

  get(hash: string): VerifiedKey | undefined {
    if (!this.healthy()) {
      if (this.entries.size) this.newEpoch();
      this.misses++;
      return undefined;
    }
    const e = this.entries.get(hash);
    if (!e || e.epoch !== this.epoch || Date.now() - e.storedAt > ENTRY_TTL_MS) {
      if (e) this.remove(hash);
      this.misses++;
      return undefined;
    }
    this.hits++;
    return e.key;
  }

  set(hash: string, key: VerifiedKey, generation: number): void {
    if (generation !== this.generation || !this.healthy()) return;
    if (this.entries.size >= MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.remove(oldest);
    }
    this.entries.set(hash, { key, storedAt: Date.now(), epoch: this.epoch });
    let set = this.byAgent.get(key.agentId);
    if (!set) this.byAgent.set(key.agentId, (set = new Set()));
    set.add(hash);
    this.byKeyId.set(key.keyId, hash);
  }

  /** Applies an invalidation in this process. */
  apply(msg: KeyInvalidation): void {
    this.generation++;
    if (msg.kind === 'all') return this.clear();
    if (msg.kind === 'agent') {
      for (const h of [...(this.byAgent.get(msg.agent_id) ?? [])]) this.remove(h);
      return;
    }
    for (const id of msg.key_ids) {
      const h = this.byKeyId.get(id);
      if (h) this.remove(h);
    }
  }

  /** Keeps a message whose publish failed, to re-send it (a storm collapses into `all`). */
  publishLater(msg: KeyInvalidation): void {
    this.unsent = this.unsent.length >= 1000 ? [{ kind: 'all' }] : [...this.unsent, msg];
  }

  private async resend(): Promise<void> {
    while (this.unsent.length) {
      const msg = this.unsent[0];
      if (!(await this.ctx.broker.publish(KEY_INVALIDATION_CHANNEL, JSON.stringify(msg)))) return;
      this.unsent.shift();
    }
  }

  get size(): number {
    return this.entries.size;
  }

  private onMessage(text: string): void {
    let msg: KeyInvalidation;
    try {
      msg = JSON.parse(text) as KeyInvalidation;
    } catch {
      msg = { kind: 'all' }; // unreadable: assume the worst
    }
    if (!msg || typeof msg !== 'object' || !['keys', 'agent', 'all'].includes((msg as { kind: string }).kind)) msg = { kind: 'all' };
    this.apply(msg);
  }

  private newEpoch(): void {
    this.epoch++;
    this.generation++;
    this.clear();
  }

  private clear(): void {
    this.entries.clear();
    this.byAgent.clear();
    this.byKeyId.clear();
  }

  private remove(hash: string): void {
    const e = this.entries.get(hash);
    if (!e) return;
    this.entries.delete(hash);
    this.byAgent.get(e.key.agentId)?.delete(hash);
    if (this.byAgent.get(e.key.agentId)?.size === 0) this.byAgent.delete(e.key.agentId);
    if (this.byKeyId.get(e.key.keyId) === hash) this.byKeyId.delete(e.key.keyId);
  }
}

/** The process's key cache (subscribed on first use, stopped at close). */
export function keyCache(ctx: AppContext): KeyCache {
  return ctx.singleton('agent-key-cache', () => {
    const cache = new KeyCache(ctx);
    cache.start().catch((e) => ctx.logger.warn('key cache disabled: cannot subscribe to key invalidations', { error: (e as Error).message }));
    ctx.onClose(() => cache.stop());
    return cache;
  });
}

/**
 * Call after the commit of any change that can make a key stop authenticating or change
 * what it grants (key revoked or expired; agent status, intents or policy changed). Drops
 * the entries here at once and tells every other process. Never throws.
 */
export async function invalidateKeys(ctx: AppContext, msg: KeyInvalidation): Promise<void> {
  const cache = keyCache(ctx);
  cache.apply(msg);
  const text = JSON.stringify(msg);
  let ok = await ctx.broker.publish(KEY_INVALIDATION_CHANNEL, text);
  // A broker blip (reconnect within ~2 s) must not leave other processes trusting a revoked
  // key: retry before answering; past that, re-send in the background on every heartbeat.
  for (let i = 0; !ok && i < PUBLISH_RETRIES; i++) {
    await new Promise((r) => setTimeout(r, 100));
    ok = await ctx.broker.publish(KEY_INVALIDATION_CHANNEL, text);
  }
  if (!ok) {
    cache.publishLater(msg);
    ctx.logger.warn('key invalidation not published; it is re-sent when the broker is back', { kind: msg.kind });
  }
}
