/**
 * Key rotation and lifecycle through the real HTTP server (issue 22): grace 0 and > 0 with a
 * controlled clock (the old key works through the grace, cached, and is refused after it; the
 * new key works), bad grace changes nothing, 404/409, last_used_at on the read answers after
 * a flush, expiry recorded when first seen, and the events of every key change.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REAL, startTestStack, type TestStack } from '../../../test/harness.js';
import { agentId, issueKey, makeAgent, servedFromCache, settableClock } from '../../../test/identity/fixtures.js';
import { hashKey } from './key-material.js';
import { keyUsage } from './key-usage.js';

const clock = settableClock();
const OPS_KEY = `ops_${randomBytes(24).toString('base64url')}`;
let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ services: ['api'], clock, env: { ADMIN_API_KEYS: `ops:${OPS_KEY}` } });
});
afterAll(async () => {
  await t?.close();
});

/** The management events of one resource, oldest first, as GET /api/audit/events answers them. */
async function eventsOf(resourceId: string): Promise<Array<Record<string, any>>> {
  const r = await t.call('api', 'GET', `/api/audit/events?resource_id=${encodeURIComponent(resourceId)}&limit=100`, { admin: true });
  expect(r.status).toBe(200);
  return (r.body.events as Array<Record<string, any>>).reverse();
}
/** Every stored event, as text (to look for secrets). */
const allEventsText = async () => JSON.stringify(await t.testDb.owner.query(`SELECT * FROM audit_management_events`));
const eventCount = async () => Number((await t.testDb.owner.query(`SELECT count(*)::int AS n FROM audit_management_events`))[0].n);

const ask = (apiKey: string) => t.call('api', 'POST', '/api/context', { apiKey, body: { task_type: 'triage' } });
const rotate = (agent: string, key: string, body?: unknown) => t.call('api', 'POST', `/api/agents/${agent}/api-keys/${key}/rotate`, { admin: true, body });
const readKey = async (agent: string, key: string) => (await t.call('api', 'GET', `/api/agents/${agent}/api-keys/${key}`, { admin: true })).body;

async function agentAndKey(keyBody: Record<string, unknown> = {}) {
  const a = await makeAgent(t, { allowed_intents: ['triage', 'billing'] });
  return { a, k: await issueKey(t, a.agent_id, { name: 'ci', scopes: ['triage'], ...keyBody }) };
}

describe('POST /api/agents/{agent_id}/api-keys/{key_id}/rotate', () => {
  it('grace 0: a new key answered once; the old key (cached) is refused on the next request, revoked by system:key-rotated', async () => {
    const { a, k } = await agentAndKey();
    expect((await ask(k.api_key)).status).toBe(200);
    expect((await ask(k.api_key)).status).toBe(200); // cached
    const r = await rotate(a.agent_id, k.key_id);
    expect(r.status).toBe(201);
    expect(r.headers.get('cache-control')).toBe('no-store');
    const n = r.body;
    expect(n.api_key).toMatch(/^sk_[A-Za-z0-9]{40}$/);
    expect(n).toMatchObject({ agent_id: a.agent_id, name: 'ci', scopes: ['triage'], status: 'active', key_prefix: n.api_key.slice(0, 8), rotated_from: k.key_id });
    expect(n.key_id).not.toBe(k.key_id);
    expect(new Date(n.grace_until).getTime()).toBeLessThanOrEqual(clock.now().getTime());

    expect((await ask(k.api_key)).status).toBe(401);
    expect((await ask(n.api_key)).status).toBe(200);
    expect(await readKey(a.agent_id, k.key_id)).toMatchObject({ status: 'revoked', revoked_by: 'system:key-rotated', rotated_to: n.key_id, grace_until: n.grace_until });
    expect(await readKey(a.agent_id, n.key_id)).toMatchObject({ status: 'active', rotated_from: k.key_id, rotated_to: null, grace_until: null });
    // Rotating the old key again: it is revoked.
    const again = await rotate(a.agent_id, k.key_id, { grace_seconds: 10 });
    expect(again.status).toBe(409);
    expect(again.body.details).toEqual({ status: 'revoked' });
  });

  it('grace > 0: the old key works (from the cache) through the grace, is refused after it, and is then recorded expired', async () => {
    const { a, k } = await agentAndKey();
    expect((await ask(k.api_key)).status).toBe(200);
    const r = await rotate(a.agent_id, k.key_id, { grace_seconds: 600 });
    expect(r.status).toBe(201);
    const n = r.body;
    expect(new Date(n.grace_until).getTime() - clock.now().getTime()).toBeGreaterThan(590_000);
    expect((await ask(k.api_key)).status).toBe(200);
    // The old key is served from the cache (every use answered 200).
    expect(await servedFromCache(t.ctx, async () => expect((await ask(k.api_key)).status).toBe(200))).toBe(true);
    expect((await ask(n.api_key)).status).toBe(200);
    expect(await readKey(a.agent_id, k.key_id)).toMatchObject({ status: 'active', rotated_to: n.key_id, grace_until: n.grace_until, expires_at: n.grace_until });
    // Rotating a key already rotated (still in its grace) is 409.
    const twice = await rotate(a.agent_id, k.key_id, {});
    expect(twice.status).toBe(409);
    expect(twice.body.details).toEqual({ status: 'active', rotated_to: n.key_id });

    clock.advance(600_000);
    const refused = await ask(k.api_key);
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ success: false, error_code: 'AUTH_FAILED' });
    expect((await ask(n.api_key)).status).toBe(200);
    // The first refused use records the expiry (in the background): wait for it.
    let old: any;
    for (const until = Date.now() + 10_000; Date.now() < until; await new Promise((res) => setTimeout(res, 50))) {
      old = await readKey(a.agent_id, k.key_id);
      if (old.revoked_by) break;
    }
    expect(old).toMatchObject({ status: 'expired', revoked_by: 'system:expiry-job' });
    const expired = (await eventsOf(k.key_id)).filter((e) => e.event_type === 'key.expired');
    expect(expired).toEqual([expect.objectContaining({ actor: 'system:expiry-job', resource_type: 'api_key', request_id: null })]);
    expect((await ask(k.api_key)).status).toBe(401);
    expect((await eventsOf(k.key_id)).filter((e) => e.event_type === 'key.expired')).toHaveLength(1); // once
  });

  it('a grace past the old key\'s expiry ends at that expiry', async () => {
    const { a, k } = await agentAndKey({ expires_in_days: 1 });
    clock.advance(86_400_000 - 60_000);
    const r = await rotate(a.agent_id, k.key_id, { grace_seconds: 86_400 });
    expect(r.status).toBe(201);
    expect(r.body.grace_until).toBe(k.expires_at);
    clock.advance(60_000);
    expect((await ask(k.api_key)).status).toBe(401);
    expect((await ask(r.body.api_key)).status).toBe(200);
  });

  // PGlite runs one query at a time: the race belongs to the PostgreSQL run.
  it.runIf(REAL)('concurrent rotations of one key: exactly one wins, the others are 409, one successor exists', async () => {
    const { a, k } = await agentAndKey();
    const results = await Promise.all(Array.from({ length: 6 }, () => rotate(a.agent_id, k.key_id, { grace_seconds: 60 })));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    const rows = await t.testDb.owner.query(`SELECT key_id FROM agent_api_keys WHERE rotated_from = $1`, [k.key_id]);
    expect(rows).toHaveLength(1);
    expect((await eventsOf(k.key_id)).filter((e) => e.event_type === 'key.rotated')).toHaveLength(1);
  });

  it('bad grace_seconds is 400 and changes nothing', async () => {
    const { a, k } = await agentAndKey();
    const keysBefore = (await t.call('api', 'GET', `/api/agents/${a.agent_id}/api-keys`, { admin: true })).body;
    const eventsBefore = await eventCount();
    for (const body of [{ grace_seconds: -1 }, { grace_seconds: 86_401 }, { grace_seconds: 1.5 }, { grace_seconds: '10' }, { grace_seconds: null }, { extra: 1 }, [1]]) {
      const r = await rotate(a.agent_id, k.key_id, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body).toMatchObject({ error: 'validation_error' });
    }
    expect((await t.call('api', 'GET', `/api/agents/${a.agent_id}/api-keys`, { admin: true })).body).toEqual(keysBefore);
    expect(await eventCount()).toBe(eventsBefore);
    expect((await ask(k.api_key)).status).toBe(200);
    // The boundary is accepted.
    expect((await rotate(a.agent_id, k.key_id, { grace_seconds: 86_400 })).status).toBe(201);
  });

  it('404 for an unknown key, another agent\'s key or an unknown agent; 409 for an expired or revoked key or a revoked agent', async () => {
    const { a, k } = await agentAndKey();
    const b = await makeAgent(t);
    expect((await rotate(a.agent_id, 'key_nope')).status).toBe(404);
    expect((await rotate(b.agent_id, k.key_id)).status).toBe(404);
    expect((await rotate(agentId('ghost'), k.key_id)).status).toBe(404);
    const short = await issueKey(t, a.agent_id, { expires_in_days: 1 });
    const revoked = await issueKey(t, a.agent_id);
    await t.call('api', 'DELETE', `/api/agents/${a.agent_id}/api-keys/${revoked.key_id}?revoked_by=ops`, { admin: true });
    clock.advance(86_400_000);
    const e = await rotate(a.agent_id, short.key_id);
    expect(e.status).toBe(409);
    expect(e.body.details).toEqual({ status: 'expired' });
    expect((await rotate(a.agent_id, revoked.key_id)).body.details).toEqual({ status: 'revoked' });
    await t.call('api', 'DELETE', `/api/agents/${a.agent_id}`, { admin: true });
    expect((await rotate(a.agent_id, k.key_id)).status).toBe(409);
    // A suspended agent's key can be rotated (like issue); neither key authenticates until it is active.
    const s = await makeAgent(t, { allowed_intents: ['triage'], status: 'suspended' });
    const sk = await issueKey(t, s.agent_id);
    const sr = await rotate(s.agent_id, sk.key_id, { grace_seconds: 60 });
    expect(sr.status).toBe(201);
    expect((await ask(sr.body.api_key)).status).toBe(401);
    await t.call('api', 'PUT', `/api/agents/${s.agent_id}`, { admin: true, body: { status: 'active' } });
    expect((await ask(sr.body.api_key)).status).toBe(200);
    expect((await ask(sk.api_key)).status).toBe(200);
  });
});

describe('last_used_at', () => {
  it('is null until a use is flushed, then shown on the key read and list answers', async () => {
    const { a, k } = await agentAndKey();
    expect((await readKey(a.agent_id, k.key_id)).last_used_at).toBeNull();
    const before = clock.now().getTime();
    expect((await ask(k.api_key)).status).toBe(200);
    await keyUsage(t.ctx).flush();
    const read = await readKey(a.agent_id, k.key_id);
    expect(new Date(read.last_used_at).getTime()).toBeGreaterThanOrEqual(before);
    const list = (await t.call('api', 'GET', `/api/agents/${a.agent_id}/api-keys`, { admin: true })).body;
    expect(list.api_keys.find((x: any) => x.key_id === k.key_id).last_used_at).toBe(read.last_used_at);
    const agent = (await t.call('api', 'GET', `/api/agents/${a.agent_id}`, { admin: true })).body;
    expect(agent.api_keys.find((x: any) => x.key_id === k.key_id).last_used_at).toBe(read.last_used_at);
  });

  it('GET one key: 404 for an unknown key or another agent\'s', async () => {
    const { a, k } = await agentAndKey();
    const b = await makeAgent(t);
    expect((await t.call('api', 'GET', `/api/agents/${a.agent_id}/api-keys/key_nope`, { admin: true })).status).toBe(404);
    expect((await t.call('api', 'GET', `/api/agents/${b.agent_id}/api-keys/${k.key_id}`, { admin: true })).status).toBe(404);
  });
});

describe('key events', () => {
  it('created, rotated, revoked (by a caller, by rotation, by the agent cascade): key_id and prefix only, never a secret', async () => {
    const { a, k } = await agentAndKey();
    const k2 = await issueKey(t, a.agent_id);
    const k3 = await issueKey(t, a.agent_id);
    // Rotated with the named admin key `ops`: its name is the actor.
    const rotation = await t.call('api', 'POST', `/api/agents/${a.agent_id}/api-keys/${k.key_id}/rotate`, { headers: { 'x-admin-key': OPS_KEY }, body: { grace_seconds: 0 } });
    expect(rotation.status).toBe(201);
    const n = rotation.body;
    await t.call('api', 'DELETE', `/api/agents/${a.agent_id}/api-keys/${k2.key_id}?revoked_by=ops`, { admin: true });
    await t.call('api', 'DELETE', `/api/agents/${a.agent_id}`, { admin: true });

    const types = async (id: string) => (await eventsOf(id)).map((e) => [e.event_type, e.actor]);
    expect(await types(k.key_id)).toEqual([
      ['key.created', 'admin'],
      ['key.rotated', 'ops'],
      ['key.revoked', 'ops'],
    ]);
    expect(await types(n.key_id)).toEqual([
      ['key.created', 'ops'],
      ['key.revoked', 'admin'],
    ]);
    expect(await types(k2.key_id)).toEqual([
      ['key.created', 'admin'],
      ['key.revoked', 'admin'],
    ]);
    expect(await types(k3.key_id)).toEqual([
      ['key.created', 'admin'],
      ['key.revoked', 'admin'],
    ]);
    const [, rotated, revoked] = await eventsOf(k.key_id);
    expect(rotated).toMatchObject({
      resource_type: 'api_key',
      before: { rotated_to: null },
      after: { agent_id: a.agent_id, key_prefix: k.key_prefix, rotated_to: n.key_id, rotated_to_prefix: n.key_prefix, grace_until: n.grace_until },
    });
    expect(rotated.request_id).toEqual(expect.any(String));
    expect(revoked).toMatchObject({ before: { status: 'active' }, after: { status: 'revoked', revoked_by: 'system:key-rotated' } });
    expect((await eventsOf(n.key_id))[1]).toMatchObject({ after: { status: 'revoked', revoked_by: 'system:agent-revoked' } });
    expect((await eventsOf(n.key_id))[0]).toMatchObject({ after: { rotated_from: k.key_id, key_prefix: n.key_prefix, scopes: ['triage'] } });
    // The same cascade through PUT status revoked.
    const { a: b, k: kb } = await agentAndKey();
    await t.call('api', 'PUT', `/api/agents/${b.agent_id}`, { admin: true, body: { status: 'revoked' } });
    expect(await types(kb.key_id)).toEqual([
      ['key.created', 'admin'],
      ['key.revoked', 'admin'],
    ]);
    const text = await allEventsText();
    for (const key of [k, k2, k3, n]) {
      expect(text).not.toContain(key.api_key);
      expect(text).not.toContain(hashKey(key.api_key));
    }
  });
});
