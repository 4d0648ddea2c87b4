/** Agent key lifecycle through HTTP (spec 3.2, 4.2), and where the plaintext may never go. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../../../test/harness.js';
import { agentId, issueKey, makeAgent } from '../../../test/identity/fixtures.js';
import { hashKey } from './key-material.js';
import { verifyAgentKey } from './verify-key.js';

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ services: ['api'], env: { AGENT_KEY_TTL_DAYS: '30' } });
});
afterAll(async () => {
  await t?.close();
});

const DAY = 86_400_000;

describe('POST /api/agents/{agent_id}/api-keys', () => {
  it('issues sk_ + 40 base62, stores only prefix and SHA-256, default lifetime AGENT_KEY_TTL_DAYS', async () => {
    const a = await makeAgent(t);
    const r = await t.call('api', 'POST', `/api/agents/${a.agent_id}/api-keys`, { admin: true, body: { key_id: `k-${Date.now()}`, name: 'ci' } });
    expect(r.status).toBe(201);
    expect(r.headers.get('cache-control')).toBe('no-store');
    const k = r.body;
    expect(k.api_key).toMatch(/^sk_[A-Za-z0-9]{40}$/);
    expect(k).toMatchObject({ agent_id: a.agent_id, name: 'ci', scopes: null, status: 'active', key_prefix: k.api_key.slice(0, 8) });
    expect(new Date(k.expires_at).getTime() - new Date(k.created_at).getTime()).toBe(30 * DAY);
    const [row] = await t.testDb.owner.query(`SELECT * FROM agent_api_keys WHERE key_id = $1`, [k.key_id]);
    expect(row).toMatchObject({ key_prefix: k.api_key.slice(0, 8), key_hash: hashKey(k.api_key), status: 'active', is_active: true, revoked_by: null });
  });

  it('generates key_id when missing; body may be absent; expires_in_days overrides the default', async () => {
    const a = await makeAgent(t);
    const none = await t.call('api', 'POST', `/api/agents/${a.agent_id}/api-keys`, { admin: true });
    expect(none.status).toBe(201);
    expect(none.body.key_id).toMatch(/^key_[0-9a-f]{24}$/);
    const short = await issueKey(t, a.agent_id, { expires_in_days: 1 });
    expect(new Date(short.expires_at).getTime() - new Date(short.created_at).getTime()).toBe(DAY);
  });

  it('two keys never share the plaintext; scopes must be a subset of the intents', async () => {
    const a = await makeAgent(t, { allowed_intents: ['triage', 'billing'] });
    const ok = await issueKey(t, a.agent_id, { scopes: ['triage'] });
    expect(ok.scopes).toEqual(['triage']);
    const bad = await t.call('api', 'POST', `/api/agents/${a.agent_id}/api-keys`, { admin: true, body: { scopes: ['triage', 'surgery'] } });
    expect(bad.status).toBe(400);
    expect(bad.body.details.errors).toEqual([expect.objectContaining({ path: '/body/scopes/1', rule: 'scope_not_allowed' })]);
    const other = await issueKey(t, a.agent_id);
    expect(other.api_key).not.toBe(ok.api_key);
  });

  it('errors: key_id in use 409 (any agent), revoked agent 409, unknown agent 404, bad body 400', async () => {
    const a = await makeAgent(t);
    const b = await makeAgent(t);
    const k = await issueKey(t, a.agent_id);
    const dup = await t.call('api', 'POST', `/api/agents/${b.agent_id}/api-keys`, { admin: true, body: { key_id: k.key_id } });
    expect(dup.status).toBe(409);
    expect((await t.call('api', 'POST', `/api/agents/${agentId('ghost')}/api-keys`, { admin: true, body: {} })).status).toBe(404);
    for (const body of [{ key_id: 'has space' }, { expires_in_days: 0 }, { expires_in_days: 3651 }, { scopes: 'triage' }, { extra: 1 }]) {
      const r = await t.call('api', 'POST', `/api/agents/${a.agent_id}/api-keys`, { admin: true, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
    await t.call('api', 'DELETE', `/api/agents/${b.agent_id}`, { admin: true });
    const rev = await t.call('api', 'POST', `/api/agents/${b.agent_id}/api-keys`, { admin: true, body: {} });
    expect(rev.status).toBe(409);
  });

  it('a suspended agent can be issued a key, which authenticates only once the agent is active', async () => {
    const a = await makeAgent(t, { status: 'suspended' });
    const k = await issueKey(t, a.agent_id);
    expect(await verifyAgentKey(t.ctx, k.api_key)).toMatchObject({ ok: false, agentId: a.agent_id, reason: expect.stringMatching(/suspended/i) });
    await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { status: 'active' } });
    expect(await verifyAgentKey(t.ctx, k.api_key)).toMatchObject({ ok: true, keyId: k.key_id });
  });
});

describe('GET /api/agents/{agent_id}/api-keys', () => {
  it('lists every key newest first with status, never hash or plaintext; past-due keys show expired', async () => {
    const a = await makeAgent(t);
    const k1 = await issueKey(t, a.agent_id);
    const k2 = await issueKey(t, a.agent_id);
    await t.testDb.owner.query(`UPDATE agent_api_keys SET expires_at = now() - interval '1 minute' WHERE key_id = $1`, [k1.key_id]);
    const r = await t.call('api', 'GET', `/api/agents/${a.agent_id}/api-keys`, { admin: true });
    expect(r.status).toBe(200);
    expect(r.body.agent_id).toBe(a.agent_id);
    expect(r.body.total).toBe(2);
    expect(r.body.api_keys.map((k: any) => [k.key_id, k.status])).toEqual([
      [k2.key_id, 'active'],
      [k1.key_id, 'expired'],
    ]);
    const text = JSON.stringify(r.body);
    expect(text).not.toContain(k1.api_key);
    expect(text).not.toContain(hashKey(k1.api_key));
    expect(Object.keys(r.body.api_keys[0]).sort()).toEqual(
      ['agent_id', 'created_at', 'expires_at', 'key_id', 'key_prefix', 'last_used_at', 'name', 'revoked_at', 'revoked_by', 'scopes', 'status', 'rotated_from', 'rotated_to', 'grace_until'].sort(),
    );
  });

  it('unknown agent 404', async () => {
    expect((await t.call('api', 'GET', `/api/agents/${agentId('ghost')}/api-keys`, { admin: true })).status).toBe(404);
  });
});

describe('DELETE /api/agents/{agent_id}/api-keys/{key_id}', () => {
  it('active -> revoked: 204, revoked_at and the caller revoked_by (query or body), refused on the next request', async () => {
    const a = await makeAgent(t);
    const kq = await issueKey(t, a.agent_id);
    const kb = await issueKey(t, a.agent_id);
    expect((await verifyAgentKey(t.ctx, kq.api_key)).ok).toBe(true); // cached now
    const r = await t.call('api', 'DELETE', `/api/agents/${a.agent_id}/api-keys/${kq.key_id}?revoked_by=alice%40example`, { admin: true });
    expect(r.status).toBe(204);
    expect(r.body).toBeUndefined();
    expect(await verifyAgentKey(t.ctx, kq.api_key)).toEqual({ ok: false, reason: 'API key revoked', agentId: a.agent_id });
    const rb = await t.call('api', 'DELETE', `/api/agents/${a.agent_id}/api-keys/${kb.key_id}`, { admin: true, body: { revoked_by: 'bob' } });
    expect(rb.status).toBe(204);
    const both = await t.call('api', 'DELETE', `/api/agents/${a.agent_id}/api-keys/${(await issueKey(t, a.agent_id)).key_id}?revoked_by=carol`, {
      admin: true,
      body: { revoked_by: 'carol' },
    });
    expect(both.status).toBe(204);
    const keys = (await t.call('api', 'GET', `/api/agents/${a.agent_id}/api-keys`, { admin: true })).body.api_keys;
    expect(keys.find((k: any) => k.key_id === kq.key_id)).toMatchObject({ status: 'revoked', revoked_by: 'alice@example' });
    expect(keys.find((k: any) => k.key_id === kb.key_id)).toMatchObject({ status: 'revoked', revoked_by: 'bob' });
    expect(keys.find((k: any) => k.key_id === kq.key_id).revoked_at).toMatch(/Z$/);
    const [row] = await t.testDb.owner.query(`SELECT is_active FROM agent_api_keys WHERE key_id = $1`, [kq.key_id]);
    expect(row.is_active).toBe(false);
  });

  it('a key that is not active is 409 with its status and keeps its original revocation', async () => {
    const a = await makeAgent(t);
    const k = await issueKey(t, a.agent_id);
    await t.call('api', 'DELETE', `/api/agents/${a.agent_id}/api-keys/${k.key_id}?revoked_by=first`, { admin: true });
    const again = await t.call('api', 'DELETE', `/api/agents/${a.agent_id}/api-keys/${k.key_id}?revoked_by=second`, { admin: true });
    expect(again.status).toBe(409);
    expect(again.body.details).toEqual({ status: 'revoked' });
    const keys = (await t.call('api', 'GET', `/api/agents/${a.agent_id}/api-keys`, { admin: true })).body.api_keys;
    expect(keys[0].revoked_by).toBe('first');
  });

  it('errors: revoked_by missing, reserved or conflicting is 400; another agent key or unknown key is 404', async () => {
    const a = await makeAgent(t);
    const b = await makeAgent(t);
    const k = await issueKey(t, a.agent_id);
    const base = `/api/agents/${a.agent_id}/api-keys/${k.key_id}`;
    expect((await t.call('api', 'DELETE', base, { admin: true })).status).toBe(400);
    expect((await t.call('api', 'DELETE', `${base}?revoked_by=system:expiry-job`, { admin: true })).status).toBe(400);
    expect((await t.call('api', 'DELETE', base, { admin: true, body: { revoked_by: 'system:agent-revoked' } })).status).toBe(400);
    expect((await t.call('api', 'DELETE', `${base}?revoked_by=x`, { admin: true, body: { revoked_by: 'y' } })).status).toBe(400);
    expect((await t.call('api', 'DELETE', `${base}?revoked_by=`, { admin: true })).status).toBe(400);
    expect((await t.call('api', 'DELETE', `/api/agents/${b.agent_id}/api-keys/${k.key_id}?revoked_by=x`, { admin: true })).status).toBe(404);
    expect((await t.call('api', 'DELETE', `/api/agents/${a.agent_id}/api-keys/nope?revoked_by=x`, { admin: true })).status).toBe(404);
    const still = await t.call('api', 'GET', `/api/agents/${a.agent_id}/api-keys`, { admin: true });
    expect(still.body.api_keys[0].status).toBe('active');
  });
});

describe('the plaintext key is never stored or logged', () => {
  it('a dump of every table and every log line never contains an issued key', async () => {
    const a = await makeAgent(t);
    const keys = [await issueKey(t, a.agent_id), await issueKey(t, a.agent_id, { name: 'second' })];
    for (const k of keys) {
      expect((await verifyAgentKey(t.ctx, k.api_key)).ok).toBe(true);
      // A request that presents the key to the admin API is logged nowhere either.
      await t.call('api', 'GET', `/api/agents/${a.agent_id}`, { admin: true, headers: { 'x-api-key': k.api_key } });
    }
    await t.call('api', 'DELETE', `/api/agents/${a.agent_id}/api-keys/${keys[0].key_id}?revoked_by=tester`, { admin: true });
    await t.call('api', 'DELETE', `/api/agents/${a.agent_id}`, { admin: true });
    await verifyAgentKey(t.ctx, keys[1].api_key);
    const tables = await t.testDb.owner.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
    );
    expect(tables.map((x) => x.table_name)).toContain('agent_api_keys');
    let dump = '';
    for (const { table_name } of tables) {
      const rows = await t.testDb.owner.query<{ r: string }>(`SELECT t::text AS r FROM "${table_name}" t`);
      dump += rows.map((x) => x.r).join('\n');
    }
    expect(dump).toContain(hashKey(keys[0].api_key)); // the dump really holds the keys' rows
    const logs = t.logs.join('\n');
    for (const k of keys) {
      const secret = k.api_key.slice(8); // the part after the stored prefix
      expect(dump).not.toContain(secret);
      expect(logs).not.toContain(secret);
    }
  });
});
