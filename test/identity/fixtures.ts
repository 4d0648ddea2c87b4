/**
 * Test fixtures for the agent-identity area: license minting with keypairs generated here
 * (the product's private key never exists in the repository), a settable clock, and small
 * factories that go through the HTTP API.
 */
import { randomUUID } from 'node:crypto';
import { exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { LICENSE_ISSUER } from '../../src/shared/license.js';
import type { TestStack } from '../harness.js';
import type { Broker } from '../../src/shared/broker.js';
import type { AppContext } from '../../src/shared/app-context.js';
import { keyCache } from '../../src/core/keys/key-cache.js';
import { waitFor } from '../wait.js';

export interface LicenseAuthority {
  publicKeyPem: string;
  mint(claims?: Record<string, unknown>, opts?: { omit?: string[] }): Promise<string>;
}

/** A fresh RS256 keypair acting as the license authority. */
export async function licenseAuthority(): Promise<LicenseAuthority> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const publicKeyPem = await exportSPKI(publicKey);
  return {
    publicKeyPem,
    async mint(claims = {}, opts = {}) {
      const now = Math.floor(Date.now() / 1000);
      const all: Record<string, unknown> = {
        sub: 'customer-test',
        deployment_id: randomUUID(),
        agent_cap: 0,
        tier: 'standard',
        iss: LICENSE_ISSUER,
        iat: now,
        exp: now + 365 * 86400,
        ...claims,
      };
      for (const k of opts.omit ?? []) delete all[k];
      return new SignJWT(all).setProtectedHeader({ alg: 'RS256', typ: 'JWT' }).sign(privateKey);
    },
  };
}

/** A clock tests can move forward. */
export function settableClock(start = Date.now()) {
  let offset = 0;
  const base = start;
  return {
    now: () => new Date(base + offset + (Date.now() - start)),
    advance(ms: number) {
      offset += ms;
    },
  };
}

let seq = 0;
/** A unique agent id for this run. */
export function agentId(label = 'a'): string {
  return `agent:${label}-${process.pid}-${Date.now().toString(36)}-${(seq++).toString(36)}`;
}

export async function makeAgent(t: TestStack, over: Record<string, unknown> = {}): Promise<any> {
  const body = { agent_id: agentId(), name: 'Test agent', role_id: 'role:nurse', allowed_intents: ['medication_review', 'triage'], ...over };
  const r = await t.call('api', 'POST', '/api/agents', { admin: true, body });
  if (r.status !== 201) throw new Error(`makeAgent: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

export async function issueKey(t: TestStack, agent: string, body: Record<string, unknown> = {}): Promise<any> {
  const r = await t.call('api', 'POST', `/api/agents/${agent}/api-keys`, { admin: true, body });
  if (r.status !== 201) throw new Error(`issueKey: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/**
 * True once `use` (one authenticated request) is answered from `ctx`'s key cache, trying up to
 * `tries` times, each once the cache is healthy (an error after 5 s without). Both reasons for
 * a miss are the product's rules, met under CI's load: on a shared Redis, invalidations
 * published by other test files' processes arrive here too, and one landing between a lookup
 * and its fill discards the fill (the generation check); and a heartbeat left unanswered for
 * 1.5 s (a busy machine) bypasses and empties the cache until the next one is answered. A
 * cache that never serves the key fails every try.
 */
export async function servedFromCache(ctx: AppContext, use: () => Promise<unknown>, tries = 10): Promise<boolean> {
  const cache = keyCache(ctx);
  for (let i = 0; i < tries; i++) {
    await waitFor(() => cache.healthy(), { timeoutMs: 5_000, what: 'a healthy key cache' });
    const hits = cache.hits;
    await use();
    if (cache.hits > hits) return true;
  }
  return false;
}

/**
 * An in-memory stand-in for Redis shared by several contexts ("processes"), whose brokers
 * can be taken down: `down` (connection reported lost, messages dropped, publish fails) or
 * `silent` (connection reported fine but messages silently dropped: a partition).
 */
export function sharedBus() {
  const subs = new Map<string, Set<{ broker: FakeBroker; fn: (m: string) => void }>>();
  interface FakeBroker extends Broker {
    down: boolean;
    silent: boolean;
    reconnect(): void;
  }
  const make = (kind: 'memory' | 'redis' = 'redis'): FakeBroker => {
    const reconnectFns = new Set<() => void>();
    const b: FakeBroker = {
      kind,
      down: false,
      silent: false,
      async publish(channel, message) {
        if (b.down) return false;
        for (const s of subs.get(channel) ?? []) {
          if (!s.broker.down && !s.broker.silent && !b.silent) queueMicrotask(() => s.fn(message));
        }
        return true;
      },
      async subscribe(channel, fn) {
        const entry = { broker: b, fn };
        if (!subs.has(channel)) subs.set(channel, new Set());
        subs.get(channel)!.add(entry);
        return async () => void subs.get(channel)?.delete(entry);
      },
      onReconnect(fn) {
        reconnectFns.add(fn);
        return () => reconnectFns.delete(fn);
      },
      connected: () => !b.down,
      async ping() {
        if (b.down) throw new Error('broker down');
      },
      reconnect() {
        b.down = false;
        b.silent = false;
        for (const fn of reconnectFns) fn();
      },
      async close() {},
    };
    return b;
  };
  return { broker: make };
}
