/**
 * Publish/subscribe broker: Redis pub/sub (ioredis) when REDIS_URL is set, otherwise an
 * in-process broker. Channel names and message bodies are the product's (decisions.md:
 * `svc:tag-updates`, the tag-update body as JSON text).
 *
 * Redis going away must not break context requests: publish never throws (a failed publish
 * is logged and reported false), and `onReconnect` lets subscribers resynchronize when the
 * connection returns.
 */
import { EventEmitter } from 'node:events';
import { Redis } from 'ioredis';
import type { Logger } from './logger.js';

export const TAG_UPDATES_CHANNEL = 'svc:tag-updates';

type MessageHandler = (message: string) => void;

export interface Broker {
  readonly kind: 'memory' | 'redis';
  /** Resolves true when the message was handed to the broker. Never rejects. */
  publish(channel: string, message: string): Promise<boolean>;
  /** Returns an unsubscribe function. */
  subscribe(channel: string, handler: MessageHandler): Promise<() => Promise<void>>;
  /** Called after the broker connection comes back (Redis only), so subscribers can resync. */
  onReconnect(fn: () => void): () => void;
  /** False while the connection to the broker is down (messages published meanwhile are lost). */
  connected(): boolean;
  /** Resolves when the broker answers PING (readiness); rejects when it does not. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export function createMemoryBroker(): Broker {
  const ee = new EventEmitter();
  ee.setMaxListeners(0);
  return {
    kind: 'memory',
    async publish(channel, message) {
      // Deliver asynchronously, as a real broker would, so publishers never run subscriber code inline.
      queueMicrotask(() => ee.emit(channel, message));
      return true;
    },
    async subscribe(channel, handler) {
      ee.on(channel, handler);
      return async () => {
        ee.off(channel, handler);
      };
    },
    onReconnect() {
      return () => {};
    },
    connected() {
      return true;
    },
    async ping() {},
    async close() {
      ee.removeAllListeners();
    },
  };
}

export async function createRedisBroker(url: string, logger: Logger): Promise<Broker> {
  const opts = { maxRetriesPerRequest: 1, enableOfflineQueue: false, retryStrategy: (n: number) => Math.min(100 * n, 2000), lazyConnect: true };
  const pub = new Redis(url, opts);
  const sub = new Redis(url, { ...opts, enableOfflineQueue: true, maxRetriesPerRequest: null });
  const handlers = new Map<string, Set<MessageHandler>>();
  const reconnectFns = new Set<() => void>();
  let wasDown = false;
  let closing = false;
  for (const [name, conn] of [['pub', pub], ['sub', sub]] as const) {
    conn.on('error', (e: Error) => {
      if (!wasDown) logger.warn('redis connection error', { connection: name, error: e.message });
      wasDown = true;
    });
    // A clean close (server restart, idle kill) emits no error but loses messages all the same.
    conn.on('close', () => {
      if (!wasDown && !closing) logger.warn('redis connection closed', { connection: name });
      wasDown = true;
    });
  }
  sub.on('ready', () => {
    if (wasDown) {
      wasDown = false;
      logger.info('redis connection restored');
      for (const fn of reconnectFns) {
        try {
          fn();
        } catch (e) {
          logger.error('reconnect handler failed', { error: e as Error });
        }
      }
    }
  });
  sub.on('message', (channel: string, message: string) => {
    for (const h of handlers.get(channel) ?? []) h(message);
  });
  await Promise.all([pub.connect(), sub.connect()]);
  return {
    kind: 'redis',
    async publish(channel, message) {
      try {
        await pub.publish(channel, message);
        return true;
      } catch (e) {
        logger.warn('redis publish failed', { channel, error: (e as Error).message });
        return false;
      }
    },
    async subscribe(channel, handler) {
      let set = handlers.get(channel);
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
        await sub.subscribe(channel);
      }
      set.add(handler);
      return async () => {
        const s = handlers.get(channel);
        if (!s) return;
        s.delete(handler);
        if (s.size === 0) {
          handlers.delete(channel);
          await sub.unsubscribe(channel).catch(() => {});
        }
      };
    },
    onReconnect(fn) {
      reconnectFns.add(fn);
      return () => reconnectFns.delete(fn);
    },
    connected() {
      return pub.status === 'ready' && sub.status === 'ready';
    },
    async ping() {
      // The publishing connection has no offline queue: PING fails at once while it is down.
      await pub.ping();
    },
    async close() {
      closing = true;
      handlers.clear();
      reconnectFns.clear();
      pub.disconnect();
      sub.disconnect();
    },
  };
}
