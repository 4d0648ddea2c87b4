/**
 * verifyAgentKey at the verb level, with two contexts on one database standing for two
 * processes: every refusal case, prefix collisions, the cache, and revocation taking effect
 * on the next request on every process, also while the broker is unavailable.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, testEnv, type TestDb, TEST_WHO } from '../../../test/harness.js';
import { agentId, settableClock, sharedBus } from '../../../test/identity/fixtures.js';
import { createAppContext, type AppContext } from '../../shared/app-context.js';
import { loadConfig } from '../../shared/config.js';
import { memoryLogger } from '../../shared/logger.js';
import { createAgent } from '../agents/create-agent.js';
import { revokeAgent, setAgentPolicy, updateAgent } from '../agents/update-agent.js';
import { expireKeys } from './expiry-job.js';
import { hashKey, KEY_PREFIX_LENGTH } from './key-material.js';
import { KeyCache, keyCache } from './key-cache.js';
import { keyUsage } from './key-usage.js';
import { issueApiKey, revokeApiKey } from './manage-keys.js';
import { rotateApiKey } from './rotate-key.js';
import { KEY_REASONS, verifyAgentKey } from './verify-key.js';

let tdb: TestDb;
const bus = sharedBus();
const clock = settableClock();
let A: AppContext; // the process that changes state
let B: AppContext; // another process that verifies
const brokerA = bus.broker('memory');
const brokerB = bus.broker('memory');

async function context(broker: ReturnType<typeof bus.broker>, logger = memoryLogger()): Promise<AppContext> {
  return createAppContext(loadConfig(testEnv()), { logger, db: tdb.db, broker, clock, skipMigrations: true });
}

beforeAll(async () => {
  tdb = await createTestDb();
  A = await context(brokerA);
  B = await context(brokerB);
  keyCache(A);
  keyCache(B);
  await new Promise((r) => setTimeout(r, 20)); // let the subscriptions settle
});
afterAll(async () => {
  await A?.close();
  await B?.close();
  await tdb?.close();
});

async function agentWithKey(over: Record<string, unknown> = {}, keyOver: Record<string, unknown> = {}) {
  const agent = await createAgent(A, { agent_id: agentId('v'), name: 'n', role_id: 'role:nurse', allowed_intents: ['triage', 'billing'], ...over } as any, TEST_WHO);
  const key = await issueApiKey(A, agent.agent_id, keyOver, TEST_WHO);
  return { agent, key };
}

describe('refusals say which case', () => {
  it.each([[undefined], [null], [''], ['   ']])('missing key (%j)', async (k) => {
    expect(await verifyAgentKey(B, k as any)).toEqual({ ok: false, reason: KEY_REASONS.missing, agentId: null });
  });

  it.each([['sk_short'], ['not-a-key'], ['sk_' + 'a'.repeat(39) + '!'], ['x'.repeat(10_000)]])('malformed key %#', async (k) => {
    expect(await verifyAgentKey(B, k)).toEqual({ ok: false, reason: KEY_REASONS.invalid, agentId: null });
  });

  it('well-formed unknown key', async () => {
    expect(await verifyAgentKey(B, 'sk_' + 'Z'.repeat(40))).toEqual({ ok: false, reason: KEY_REASONS.invalid, agentId: null });
  });

  it('accepted key answers what it grants', async () => {
    const { agent, key } = await agentWithKey({ overrides: ['scd:p:o'], restrictions: ['scd:p:r'] }, { scopes: ['triage'] });
    const c = await verifyAgentKey(B, key.api_key);
    expect(c).toEqual({
      ok: true,
      keyId: key.key_id,
      agentId: agent.agent_id,
      roleId: 'role:nurse',
      allowedIntents: ['triage', 'billing'],
      scopes: ['triage'],
      overrides: ['scd:p:o'],
      restrictions: ['scd:p:r'],
      expiresAt: new Date(key.expires_at),
    });
  });

  it('revoked key, with the agent named for the audit record', async () => {
    const { agent, key } = await agentWithKey();
    await revokeApiKey(A, agent.agent_id, key.key_id, 'tester', TEST_WHO);
    expect(await verifyAgentKey(B, key.api_key)).toEqual({ ok: false, reason: KEY_REASONS.revoked, agentId: agent.agent_id });
  });

  it('expired key: checked in process before the job runs, and after it', async () => {
    const { agent, key } = await agentWithKey({}, { expires_in_days: 1 });
    expect((await verifyAgentKey(B, key.api_key)).ok).toBe(true); // cached
    clock.advance(86_400_000 + 1000);
    try {
      expect(await verifyAgentKey(B, key.api_key)).toEqual({ ok: false, reason: KEY_REASONS.expired, agentId: agent.agent_id });
      await expireKeys(A);
      expect(await verifyAgentKey(B, key.api_key)).toEqual({ ok: false, reason: KEY_REASONS.expired, agentId: agent.agent_id });
    } finally {
      clock.advance(-(86_400_000 + 1000));
    }
  });

  it('suspended agent, then active again', async () => {
    const { agent, key } = await agentWithKey();
    expect((await verifyAgentKey(B, key.api_key)).ok).toBe(true);
    await updateAgent(A, agent.agent_id, { status: 'suspended' }, TEST_WHO);
    expect(await verifyAgentKey(B, key.api_key)).toEqual({ ok: false, reason: KEY_REASONS.agentSuspended, agentId: agent.agent_id });
    await updateAgent(A, agent.agent_id, { status: 'active' }, TEST_WHO);
    expect((await verifyAgentKey(B, key.api_key)).ok).toBe(true);
  });

  it('revoked agent', async () => {
    const { agent, key } = await agentWithKey();
    expect((await verifyAgentKey(B, key.api_key)).ok).toBe(true);
    await revokeAgent(A, agent.agent_id, TEST_WHO);
    expect(await verifyAgentKey(B, key.api_key)).toEqual({ ok: false, reason: KEY_REASONS.agentRevoked, agentId: agent.agent_id });
  });

  it('refusal reasons never name another agent', async () => {
    const { agent, key } = await agentWithKey();
    await revokeAgent(A, agent.agent_id, TEST_WHO);
    const c = await verifyAgentKey(B, key.api_key);
    expect(c.ok).toBe(false);
    expect(JSON.stringify((c as any).reason)).not.toContain('agent:');
  });
});

describe('prefix collisions', () => {
  it('every candidate row is checked: two keys sharing a prefix each resolve to their own agent', async () => {
    const { agent, key } = await agentWithKey();
    const other = await createAgent(A, { agent_id: agentId('coll'), name: 'n', role_id: 'role:other', allowed_intents: [] } as any, TEST_WHO);
    const twin = key.api_key.slice(0, KEY_PREFIX_LENGTH) + 'Q'.repeat(40 - (KEY_PREFIX_LENGTH - 3));
    await tdb.owner.query(
      `INSERT INTO agent_api_keys (key_id, agent_id, key_prefix, key_hash, status, is_active, expires_at) VALUES ($1, $2, $3, $4, 'active', true, now() + interval '1 day')`,
      [`twin-${Date.now()}`, other.agent_id, twin.slice(0, KEY_PREFIX_LENGTH), hashKey(twin)],
    );
    expect(await verifyAgentKey(B, twin)).toMatchObject({ ok: true, agentId: other.agent_id, roleId: 'role:other' });
    expect(await verifyAgentKey(B, key.api_key)).toMatchObject({ ok: true, agentId: agent.agent_id });
    // A third key with the same prefix that was never issued is still unknown.
    const stranger = key.api_key.slice(0, KEY_PREFIX_LENGTH) + 'R'.repeat(37);
    expect(await verifyAgentKey(B, stranger)).toEqual({ ok: false, reason: KEY_REASONS.invalid, agentId: null });
  });
});

describe('cache and invalidation across processes', () => {
  it('a repeated verification is served from the cache', async () => {
    const { key } = await agentWithKey();
    await verifyAgentKey(B, key.api_key);
    const before = keyCache(B).hits;
    await verifyAgentKey(B, key.api_key);
    expect(keyCache(B).hits).toBe(before + 1);
  });

  it('revocation in one process is refused by the next request in another', async () => {
    const { agent, key } = await agentWithKey();
    expect((await verifyAgentKey(B, key.api_key)).ok).toBe(true);
    expect((await verifyAgentKey(A, key.api_key)).ok).toBe(true);
    await revokeApiKey(A, agent.agent_id, key.key_id, 'tester', TEST_WHO);
    expect((await verifyAgentKey(B, key.api_key)).ok).toBe(false);
    expect((await verifyAgentKey(A, key.api_key)).ok).toBe(false);
  });

  it('policy and intent changes reach cached keys at once', async () => {
    const { agent, key } = await agentWithKey();
    await verifyAgentKey(B, key.api_key);
    await setAgentPolicy(A, agent.agent_id, { overrides: ['scd:p:new'] }, TEST_WHO);
    await updateAgent(A, agent.agent_id, { allowed_intents: ['only'] }, TEST_WHO);
    expect(await verifyAgentKey(B, key.api_key)).toMatchObject({ ok: true, overrides: ['scd:p:new'], allowedIntents: ['only'] });
  });

  it('broker down: the other process verifies against the database, so the revocation still holds', async () => {
    const { agent, key } = await agentWithKey();
    expect((await verifyAgentKey(B, key.api_key)).ok).toBe(true);
    brokerB.down = true; // B loses its connection: the invalidation below never reaches it
    try {
      await revokeApiKey(A, agent.agent_id, key.key_id, 'tester', TEST_WHO);
      expect(await verifyAgentKey(B, key.api_key)).toMatchObject({ ok: false, reason: KEY_REASONS.revoked });
      expect(keyCache(B).size).toBe(0);
    } finally {
      brokerB.reconnect();
    }
    const fresh = await agentWithKey();
    await verifyAgentKey(B, fresh.key.api_key);
    await verifyAgentKey(B, fresh.key.api_key);
    expect(keyCache(B).size).toBeGreaterThan(0); // cached again once the broker is back
  });

  it('rotation: the old key, cached in another process, works through the grace and is refused at its end; grace 0 at once', async () => {
    const { agent, key } = await agentWithKey();
    expect((await verifyAgentKey(B, key.api_key)).ok).toBe(true);
    const next = await rotateApiKey(A, agent.agent_id, key.key_id, { grace_seconds: 60 }, TEST_WHO);
    const hits = keyCache(B).hits;
    expect(await verifyAgentKey(B, key.api_key)).toMatchObject({ ok: true, keyId: key.key_id });
    expect(await verifyAgentKey(B, key.api_key)).toMatchObject({ ok: true, keyId: key.key_id });
    expect(keyCache(B).hits).toBe(hits + 1); // the second use was a cache hit
    expect(await verifyAgentKey(B, next.api_key)).toMatchObject({ ok: true, keyId: next.key_id });
    clock.advance(60_000);
    expect(await verifyAgentKey(B, key.api_key)).toMatchObject({ ok: false, reason: KEY_REASONS.expired, agentId: agent.agent_id });
    expect(await verifyAgentKey(B, next.api_key)).toMatchObject({ ok: true, keyId: next.key_id });

    const third = await rotateApiKey(A, agent.agent_id, next.key_id, {}, TEST_WHO);
    expect(await verifyAgentKey(B, next.api_key)).toMatchObject({ ok: false, reason: KEY_REASONS.revoked });
    expect(await verifyAgentKey(A, next.api_key)).toMatchObject({ ok: false, reason: KEY_REASONS.revoked });
    expect(await verifyAgentKey(B, third.api_key)).toMatchObject({ ok: true, keyId: third.key_id });
  });

  it('a fill that raced with an invalidation is not stored', () => {
    const c = new KeyCache(B);
    (c as any).subscribed = true;
    const gen = c.currentGeneration();
    c.apply({ kind: 'agent', agent_id: 'agent:x' });
    c.set('h', { keyId: 'k', agentId: 'agent:x', roleId: 'role:r', allowedIntents: [], scopes: null, overrides: [], restrictions: [], expiresAt: null }, gen);
    expect(c.get('h')).toBeUndefined();
  });

  it('an unreadable invalidation message empties the cache', async () => {
    const { key } = await agentWithKey();
    await verifyAgentKey(B, key.api_key);
    expect(keyCache(B).size).toBeGreaterThan(0);
    await brokerA.publish('svc:key-invalidations', '{garbage');
    await new Promise((r) => setTimeout(r, 5));
    expect(keyCache(B).size).toBe(0);
  });
});

describe('silent partition (Redis-like broker)', () => {
  it('when the heartbeat stops coming back the cache is bypassed', async () => {
    const bus2 = sharedBus();
    const bA = bus2.broker('redis');
    const bB = bus2.broker('redis');
    const ctxA = await context(bA);
    const ctxB = await context(bB);
    try {
      keyCache(ctxA);
      keyCache(ctxB);
      await new Promise((r) => setTimeout(r, 50));
      const agent = await createAgent(ctxA, { agent_id: agentId('part'), name: 'n', role_id: 'role:r', allowed_intents: [] } as any, TEST_WHO);
      const key = await issueApiKey(ctxA, agent.agent_id, {}, TEST_WHO);
      await verifyAgentKey(ctxB, key.api_key);
      await verifyAgentKey(ctxB, key.api_key);
      expect(keyCache(ctxB).hits).toBeGreaterThan(0);
      bB.silent = true; // messages to and from B vanish, yet B's connection looks fine
      await new Promise((r) => setTimeout(r, 4200));
      await revokeApiKey(ctxA, agent.agent_id, key.key_id, 'tester', TEST_WHO);
      expect(await verifyAgentKey(ctxB, key.api_key)).toMatchObject({ ok: false, reason: KEY_REASONS.revoked });
    } finally {
      await ctxA.close();
      await ctxB.close();
    }
  }, 20_000);
});

describe('last_used_at', () => {
  it('is written in the background, not on the request, and flushed at close', async () => {
    const logger = memoryLogger();
    const C = await context(bus.broker('memory'), logger);
    const { key } = await agentWithKey();
    const before = clock.now();
    expect((await verifyAgentKey(C, key.api_key)).ok).toBe(true);
    const read = async () => (await tdb.owner.query(`SELECT last_used_at FROM agent_api_keys WHERE key_id = $1`, [key.key_id]))[0].last_used_at as Date | null;
    expect(await read()).toBeNull();
    await keyUsage(C).flush();
    const first = await read();
    expect(first!.getTime()).toBeGreaterThanOrEqual(before.getTime() - 1);
    clock.advance(5000);
    await verifyAgentKey(C, key.api_key);
    await C.close();
    clock.advance(-5000);
    expect((await read())!.getTime()).toBeGreaterThan(first!.getTime());
  });
});
