/** Agent registry through HTTP: every transition of spec 3.1 and the errors of section 7. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../../../test/harness.js';
import { agentId, issueKey, makeAgent } from '../../../test/identity/fixtures.js';

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ services: ['api'] });
});
afterAll(async () => {
  await t?.close();
});

const enc = (id: string) => encodeURIComponent(id);

describe('POST /api/agents', () => {
  it('registers an agent: 201 with the record, intents stored as {task_type} objects', async () => {
    const id = agentId('create');
    const r = await t.call('api', 'POST', '/api/agents', {
      admin: true,
      body: { agent_id: id, name: 'Triage', role_id: 'role:nurse', allowed_intents: ['triage', 'medication_review'], description: 'd', overrides: ['scd:project:a'], restrictions: ['scd:project:b'], owner_name: 'Dr. Who' },
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      agent_id: id,
      name: 'Triage',
      description: 'd',
      role_id: 'role:nurse',
      allowed_intents: ['triage', 'medication_review'],
      overrides: ['scd:project:a'],
      restrictions: ['scd:project:b'],
      status: 'active',
      owner_name: 'Dr. Who',
      owner_verified: false,
      created_by: 'admin',
      organization_id: null,
    });
    expect(r.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const [row] = await t.testDb.owner.query(`SELECT allowed_intents FROM agents WHERE agent_id = $1`, [id]);
    expect(row.allowed_intents).toEqual([{ task_type: 'triage' }, { task_type: 'medication_review' }]);
    const edges = await t.testDb.owner.query(`SELECT edge_type, to_id FROM graph_edges WHERE from_id = $1 ORDER BY edge_type`, [id]);
    expect(edges).toEqual([
      { edge_type: 'HAS_OVERRIDE', to_id: 'scd:project:a' },
      { edge_type: 'HAS_RESTRICTION', to_id: 'scd:project:b' },
      { edge_type: 'HAS_ROLE', to_id: 'role:nurse' },
    ]);
  });

  it('accepts status suspended at creation and a caller-given created_by', async () => {
    const a = await makeAgent(t, { status: 'suspended', created_by: 'ops@example' });
    expect(a.status).toBe('suspended');
    expect(a.created_by).toBe('ops@example');
  });

  it('a duplicate agent_id is 409, also for a revoked agent (ids are never reused)', async () => {
    const a = await makeAgent(t);
    const dup = await t.call('api', 'POST', '/api/agents', { admin: true, body: { agent_id: a.agent_id, name: 'x', role_id: 'role:x', allowed_intents: [] } });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toBe('conflict');
    await t.call('api', 'DELETE', `/api/agents/${enc(a.agent_id)}`, { admin: true });
    const again = await t.call('api', 'POST', '/api/agents', { admin: true, body: { agent_id: a.agent_id, name: 'x', role_id: 'role:x', allowed_intents: [] } });
    expect(again.status).toBe(409);
  });

  it.each([
    ['agent id without the agent: prefix', { agent_id: 'bot-1' }, '/body/agent_id'],
    ['agent id with a space', { agent_id: 'agent:a b' }, '/body/agent_id'],
    ['role id of the wrong shape', { role_id: 'nurse' }, '/body/role_id'],
    ['override that is not an SCD id', { overrides: ['bundle:x'] }, '/body/overrides/0'],
    ['intents not an array', { allowed_intents: 'triage' }, '/body/allowed_intents'],
    ['status revoked at creation', { status: 'revoked' }, '/body/status'],
    ['owner_verified true', { owner_verified: true }, '/body/owner_verified'],
    ['unknown field', { colour: 'red' }, '/body/colour'],
  ])('%s is 400 and stores nothing', async (_label, over, path) => {
    const body = { agent_id: agentId('bad'), name: 'n', role_id: 'role:r', allowed_intents: ['x'], ...over };
    const r = await t.call('api', 'POST', '/api/agents', { admin: true, body });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('validation_error');
    expect(r.body.details.errors.map((e: any) => e.path)).toContain(path);
    const rows = await t.testDb.owner.query(`SELECT 1 FROM agents WHERE agent_id = $1`, [body.agent_id]);
    expect(rows).toHaveLength(0);
  });

  it('a NUL character in a text field is 400, not a failure', async () => {
    const r = await t.call('api', 'POST', '/api/agents', { admin: true, body: { agent_id: agentId('nul'), name: 'a\u0000b', role_id: 'role:r', allowed_intents: ['x\u0000'] } });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('validation_error');
    const m = await t.call('api', 'POST', '/api/mcp-servers', { admin: true, body: { name: 'n', owner_name: '\u0000' } });
    expect(m.status).toBe(400);
  });

  it('missing required fields are each named', async () => {
    const r = await t.call('api', 'POST', '/api/agents', { admin: true, body: {} });
    expect(r.status).toBe(400);
    const paths = r.body.details.errors.map((e: any) => e.path);
    for (const f of ['agent_id', 'name', 'role_id', 'allowed_intents']) expect(paths).toContain(`/body/${f}`);
  });
});

describe('GET /api/agents', () => {
  const role = `role:list-${Date.now()}`;
  let ids: string[] = [];
  beforeAll(async () => {
    ids = [];
    for (const status of ['active', 'active', 'suspended', 'active']) ids.push((await makeAgent(t, { role_id: role, status })).agent_id);
    await t.call('api', 'DELETE', `/api/agents/${enc(ids[3])}`, { admin: true });
  });

  it('filters by role and pages in created order, total ignoring paging', async () => {
    const r = await t.call('api', 'GET', `/api/agents?role_id=${enc(role)}&limit=2&offset=1`, { admin: true });
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(4);
    expect(r.body.limit).toBe(2);
    expect(r.body.offset).toBe(1);
    expect(r.body.agents.map((a: any) => a.agent_id)).toEqual(ids.slice(1, 3));
  });

  it('default limit is 100', async () => {
    const r = await t.call('api', 'GET', `/api/agents?role_id=${enc(role)}`, { admin: true });
    expect(r.body.limit).toBe(100);
    expect(r.body.offset).toBe(0);
  });

  it.each([
    ['active', [0, 1]],
    ['suspended', [2]],
    ['revoked', [3]],
    ['inactive', [2, 3]],
  ])('status=%s', async (status, want) => {
    const r = await t.call('api', 'GET', `/api/agents?role_id=${enc(role)}&status=${status}`, { admin: true });
    expect(r.status).toBe(200);
    expect(r.body.agents.map((a: any) => a.agent_id)).toEqual((want as number[]).map((i) => ids[i]));
    expect(r.body.total).toBe((want as number[]).length);
  });

  it.each([['status=gone'], ['limit=0'], ['limit=1001'], ['offset=-1'], ['role_id=nurse'], ['limit=abc']])('bad query %s is 400', async (q) => {
    const r = await t.call('api', 'GET', `/api/agents?${q}`, { admin: true });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('validation_error');
  });
});

describe('GET /api/agents/{agent_id}', () => {
  it('answers the agent with its keys (newest first, no hash), literal or percent-encoded id', async () => {
    const a = await makeAgent(t);
    const k1 = await issueKey(t, a.agent_id, { key_id: `k1-${Date.now()}` });
    const k2 = await issueKey(t, a.agent_id, { key_id: `k2-${Date.now()}` });
    for (const p of [a.agent_id, enc(a.agent_id)]) {
      const r = await t.call('api', 'GET', `/api/agents/${p}`, { admin: true });
      expect(r.status).toBe(200);
      expect(r.body.agent_id).toBe(a.agent_id);
      expect(r.body.api_keys.map((k: any) => k.key_id)).toEqual([k2.key_id, k1.key_id]);
      expect(r.body.api_keys[0]).toMatchObject({ key_id: k2.key_id, created_at: k2.created_at, last_used_at: null, status: 'active' });
      const text = JSON.stringify(r.body);
      expect(text).not.toContain('key_hash');
      expect(text).not.toContain(k1.api_key);
    }
  });

  it('unknown agent is 404; malformed id is 400', async () => {
    expect((await t.call('api', 'GET', `/api/agents/${agentId('nobody')}`, { admin: true })).status).toBe(404);
    const bad = await t.call('api', 'GET', '/api/agents/not-an-agent', { admin: true });
    expect(bad.status).toBe(400);
    expect(bad.body.details.errors[0].path).toBe('/path/agent_id');
  });
});

describe('PUT /api/agents/{agent_id}', () => {
  it('partial update changes only the given fields and sets updated_at', async () => {
    const a = await makeAgent(t, { description: 'keep' });
    await new Promise((r) => setTimeout(r, 5));
    const r = await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { name: 'Renamed', allowed_intents: ['only_this'] } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ name: 'Renamed', allowed_intents: ['only_this'], description: 'keep', role_id: a.role_id, status: 'active' });
    expect(r.body.updated_at > a.updated_at).toBe(true);
    expect(r.body.created_at).toBe(a.created_at);
    const d = await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { description: null } });
    expect(d.body.description).toBeNull();
  });

  it('active -> suspended -> active keeps the keys active', async () => {
    const a = await makeAgent(t);
    const k = await issueKey(t, a.agent_id);
    const s = await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { status: 'suspended' } });
    expect(s.body.status).toBe('suspended');
    const back = await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { status: 'active' } });
    expect(back.body.status).toBe('active');
    const keys = await t.call('api', 'GET', `/api/agents/${a.agent_id}/api-keys`, { admin: true });
    expect(keys.body.api_keys.find((x: any) => x.key_id === k.key_id).status).toBe('active');
  });

  it('status revoked revokes every active key with system:agent-revoked, like DELETE', async () => {
    const a = await makeAgent(t);
    const k1 = await issueKey(t, a.agent_id);
    const k2 = await issueKey(t, a.agent_id);
    await t.call('api', 'DELETE', `/api/agents/${a.agent_id}/api-keys/${k2.key_id}?revoked_by=alice`, { admin: true });
    const r = await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { status: 'revoked' } });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('revoked');
    const keys = (await t.call('api', 'GET', `/api/agents/${a.agent_id}/api-keys`, { admin: true })).body.api_keys;
    expect(keys.find((x: any) => x.key_id === k1.key_id)).toMatchObject({ status: 'revoked', revoked_by: 'system:agent-revoked' });
    // The key revoked earlier keeps its own revocation.
    expect(keys.find((x: any) => x.key_id === k2.key_id)).toMatchObject({ status: 'revoked', revoked_by: 'alice' });
    const [row] = await t.testDb.owner.query(`SELECT is_active, revoked_at FROM agent_api_keys WHERE key_id = $1`, [k1.key_id]);
    expect(row.is_active).toBe(false);
    expect(row.revoked_at).toBeInstanceOf(Date);
  });

  it('revoked -> active is allowed; keys revoked at revocation stay revoked', async () => {
    const a = await makeAgent(t);
    const k = await issueKey(t, a.agent_id);
    await t.call('api', 'DELETE', `/api/agents/${a.agent_id}`, { admin: true });
    const r = await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { status: 'active' } });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('active');
    const keys = (await t.call('api', 'GET', `/api/agents/${a.agent_id}/api-keys`, { admin: true })).body.api_keys;
    expect(keys[0]).toMatchObject({ key_id: k.key_id, status: 'revoked' });
  });

  it('owner_name changes keep owner_verified false; owner_verified true is 400 and changes nothing', async () => {
    const a = await makeAgent(t, { owner_name: 'First Owner' });
    const r = await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { owner_name: 'Second Owner' } });
    expect(r.body).toMatchObject({ owner_name: 'Second Owner', owner_verified: false });
    const v = await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { owner_verified: true, name: 'should not apply' } });
    expect(v.status).toBe(400);
    expect(v.body.details.errors[0].rule).toBe('owner_unverifiable');
    const after = await t.call('api', 'GET', `/api/agents/${a.agent_id}`, { admin: true });
    expect(after.body).toMatchObject({ owner_verified: false, name: a.name });
    const f = await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { owner_verified: false, owner_name: null } });
    expect(f.body).toMatchObject({ owner_name: null, owner_verified: false });
  });

  it('errors: empty body 400, unknown field 400, malformed role_id 400, unknown agent 404', async () => {
    const a = await makeAgent(t);
    expect((await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: {} })).status).toBe(400);
    expect((await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { agent_id: 'agent:x' } })).status).toBe(400);
    expect((await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { role_id: 'x' } })).status).toBe(400);
    expect((await t.call('api', 'GET', `/api/agents/${a.agent_id}`, { admin: true })).body.role_id).toBe(a.role_id);
    expect((await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { status: 'inactive' } })).status).toBe(400);
    expect((await t.call('api', 'PUT', `/api/agents/${agentId('ghost')}`, { admin: true, body: { name: 'x' } })).status).toBe(404);
  });
});

describe('If-Match and ETag on an agent', () => {
  it('GET, PUT and POST policy answer the ETag; a stale If-Match is 412 and changes nothing; the current one, a list naming it, or * passes', async () => {
    const a = await makeAgent(t);
    const path = `/api/agents/${enc(a.agent_id)}`;
    const read = await t.call('api', 'GET', path, { admin: true });
    const etag = read.headers.get('etag')!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    // A key's issue does not change the agent's tag.
    await issueKey(t, a.agent_id);
    expect((await t.call('api', 'GET', path, { admin: true })).headers.get('etag')).toBe(etag);

    const put = await t.call('api', 'PUT', path, { admin: true, headers: { 'if-match': etag }, body: { allowed_intents: ['triage', 'first'] } });
    expect(put.status).toBe(200);
    const next = put.headers.get('etag')!;
    expect(next).not.toBe(etag);
    expect((await t.call('api', 'GET', path, { admin: true })).headers.get('etag')).toBe(next);

    // The tag read before that change: refused, with the current tag, and nothing changed.
    for (const [method, p, body] of [['PUT', path, { allowed_intents: ['triage', 'second'] }], ['POST', `${path}/policy`, { overrides: ['scd:project:x'] }]] as const) {
      for (const stale of [etag, `W/${next}`, '"nope"', `"a", ${etag}`]) {
        const r = await t.call('api', method, p, { admin: true, headers: { 'if-match': stale }, body });
        expect(r.status, `${method} ${stale}`).toBe(412);
        expect(r.body).toEqual({ error: 'precondition_failed', message: expect.stringContaining(`Agent ${a.agent_id} changed since it was read`), details: { agent_id: a.agent_id, etag: next } });
      }
    }
    const after = await t.call('api', 'GET', path, { admin: true });
    expect([after.body.allowed_intents, after.body.overrides, after.headers.get('etag')]).toEqual([['triage', 'first'], [], next]);
    const events = await t.call('api', 'GET', `/api/audit/events?resource_id=${enc(a.agent_id)}&limit=100`, { admin: true });
    expect(events.body.events.filter((e: { event_type: string }) => e.event_type === 'agent.updated')).toHaveLength(1);

    const policy = await t.call('api', 'POST', `${path}/policy`, { admin: true, headers: { 'if-match': `"other", ${next}` }, body: { overrides: ['scd:project:x'] } });
    expect(policy.status).toBe(200);
    const any = await t.call('api', 'PUT', path, { admin: true, headers: { 'if-match': '*' }, body: { name: 'Renamed' } });
    expect(any.status).toBe(200);
    expect(any.headers.get('etag')).not.toBe(policy.headers.get('etag'));
    // Without If-Match an update is unconditional, as before.
    expect((await t.call('api', 'PUT', path, { admin: true, body: { name: 'Again' } })).status).toBe(200);
    expect((await t.call('api', 'PUT', `/api/agents/${enc(agentId('absent'))}`, { admin: true, headers: { 'if-match': '*' }, body: { name: 'x' } })).status).toBe(404);
  });
});

describe('DELETE /api/agents/{agent_id}', () => {
  it('revokes the agent and its active keys in one go, idempotently', async () => {
    const a = await makeAgent(t, { status: 'suspended' });
    await issueKey(t, a.agent_id);
    await issueKey(t, a.agent_id);
    const r = await t.call('api', 'DELETE', `/api/agents/${a.agent_id}`, { admin: true });
    expect(r.status).toBe(200);
    expect(r.body.revoked_key_count).toBe(2);
    expect(r.body.agent).toMatchObject({ agent_id: a.agent_id, status: 'revoked' });
    const again = await t.call('api', 'DELETE', `/api/agents/${a.agent_id}`, { admin: true });
    expect(again.status).toBe(200);
    expect(again.body.revoked_key_count).toBe(0);
    const got = await t.call('api', 'GET', `/api/agents/${a.agent_id}`, { admin: true });
    expect(got.body.status).toBe('revoked');
    expect(got.body.api_keys.every((k: any) => k.status === 'revoked' && k.revoked_by === 'system:agent-revoked')).toBe(true);
  });

  it('unknown agent is 404', async () => {
    expect((await t.call('api', 'DELETE', `/api/agents/${agentId('ghost')}`, { admin: true })).status).toBe(404);
  });
});

describe('POST /api/agents/{agent_id}/policy', () => {
  it('replaces each given list, leaves the other, records history and graph edges', async () => {
    const a = await makeAgent(t, { overrides: ['scd:project:o1'], restrictions: ['scd:project:r1'] });
    const r = await t.call('api', 'POST', `/api/agents/${a.agent_id}/policy`, { admin: true, body: { overrides: ['scd:project:o2', 'scd:project:o3'] } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ overrides: ['scd:project:o2', 'scd:project:o3'], restrictions: ['scd:project:r1'] });
    const r2 = await t.call('api', 'POST', `/api/agents/${a.agent_id}/policy`, { admin: true, body: { restrictions: [] } });
    expect(r2.body).toMatchObject({ overrides: ['scd:project:o2', 'scd:project:o3'], restrictions: [] });
    const edges = await t.testDb.owner.query(`SELECT edge_type, to_id FROM graph_edges WHERE from_id = $1 ORDER BY edge_type, to_id`, [a.agent_id]);
    expect(edges).toEqual([
      { edge_type: 'HAS_OVERRIDE', to_id: 'scd:project:o2' },
      { edge_type: 'HAS_OVERRIDE', to_id: 'scd:project:o3' },
      { edge_type: 'HAS_ROLE', to_id: a.role_id },
    ]);
    const hist = await t.testDb.owner.query(`SELECT overrides, restrictions FROM agent_policy_overrides WHERE agent_id = $1 ORDER BY id`, [a.agent_id]);
    expect(hist).toHaveLength(2);
  });

  it('errors: empty body 400, bad SCD id 400, unknown agent 404', async () => {
    const a = await makeAgent(t);
    expect((await t.call('api', 'POST', `/api/agents/${a.agent_id}/policy`, { admin: true, body: {} })).status).toBe(400);
    expect((await t.call('api', 'POST', `/api/agents/${a.agent_id}/policy`, { admin: true, body: { overrides: ['nope'] } })).status).toBe(400);
    expect((await t.call('api', 'POST', `/api/agents/${agentId('ghost')}/policy`, { admin: true, body: { overrides: [] } })).status).toBe(404);
  });
});
