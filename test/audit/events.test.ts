/**
 * Management events (issue 22) through the real API: each change writes its event in the same
 * transaction, the acting admin key's name is the actor, `GET /api/audit/events` filters and
 * pages them newest first, verify checks their chain (a tampered event is reported at its
 * sequence) and the transparency log's tree covers them as leaves. No secret in an event.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { transparencyLog } from '../../src/core/tlog/log.js';
import { readLeaves } from '../../src/core/tlog/leaves.js';
import { eventRecordHash } from '../../src/core/audit/events.js';
import { LeafRecordChecker } from '../../src/core/tlog/record-check.js';
import { bundle, concern, deploy, path, publish, uid } from '../content/factories.js';

const OPS_KEY = `ops_${randomBytes(24).toString('base64url')}`;
let t: TestStack;

beforeAll(async () => {
  t = await startTestStack({ services: ['api', 'rules'], env: { ADMIN_API_KEYS: `ops:${OPS_KEY}` } });
});
afterAll(async () => {
  await t?.close();
});

const events = async (query = '') => {
  const r = await t.call('api', 'GET', `/api/audit/events${query}`, { admin: true });
  expect(r.status).toBe(200);
  return r.body as { events: Array<Record<string, any>>; next_cursor: string | null };
};

describe('management events', () => {
  it('records who changed what, with only the changed fields, in leaf order', async () => {
    const agent = await makeAgent(t, { allowed_intents: ['triage'] });
    // Suspended with the named key: its name is the actor.
    const r = await t.call('api', 'PUT', `/api/agents/${agent.agent_id}`, { headers: { 'x-admin-key': OPS_KEY }, body: { status: 'suspended', description: 'on hold' } });
    expect(r.status).toBe(200);
    const page = await events(`?resource_id=${encodeURIComponent(agent.agent_id)}`);
    expect(page.events.map((e) => [e.event_type, e.actor])).toEqual([
      ['agent.suspended', 'ops'],
      ['agent.created', 'admin'],
    ]);
    const [suspended, created] = page.events;
    expect(suspended!.before).toEqual({ status: 'active', description: agent.description ?? null });
    expect(suspended!.after).toEqual({ status: 'suspended', description: 'on hold' });
    expect(suspended!.request_id).toBe(r.headers.get('x-request-id'));
    expect(created!.before).toBeNull();
    expect(created!.after).toMatchObject({ agent_id: agent.agent_id, status: 'active', allowed_intents: ['triage'] });
    expect(suspended!.event_sequence).toBe(created!.event_sequence + 1);
    expect(suspended!.previous_hash).toBe(created!.record_hash);
    expect(suspended!.leaf_index).toBeGreaterThan(created!.leaf_index);
    for (const e of page.events) expect(eventRecordHash(e as any)).toBe(e.record_hash);
  });

  it('names revoked keys by id and prefix only, never the key', async () => {
    const agent = await makeAgent(t, { allowed_intents: ['triage'] });
    const key = await issueKey(t, agent.agent_id);
    expect((await t.call('api', 'DELETE', `/api/agents/${agent.agent_id}`, { admin: true })).status).toBe(200);
    const all = await events('?limit=1000');
    const text = JSON.stringify(all);
    expect(text).not.toContain(key.api_key);
    const revoked = all.events.find((e) => e.event_type === 'key.revoked' && e.resource_id === key.key_id);
    expect(revoked?.after).toMatchObject({ status: 'revoked', revoked_by: 'system:agent-revoked', agent_id: agent.agent_id });
    expect(all.events.find((e) => e.event_type === 'agent.revoked' && e.resource_id === agent.agent_id)?.after).toEqual({ status: 'revoked' });
  });

  it('records MCP servers, bundles, tags, deployments and rules, each with its change (and no event for a refused change)', async () => {
    const ops = { 'x-admin-key': OPS_KEY };
    const last = async (resource: string) => (await events(`?resource_id=${encodeURIComponent(resource)}`)).events;
    // MCP servers.
    const m = await t.call('api', 'POST', '/api/mcp-servers', { headers: ops, body: { name: 'fhir', owner_name: 'Ana' } });
    expect(m.status).toBe(200);
    const id = m.body.server_id as string;
    expect((await t.call('api', 'PUT', `/api/mcp-servers/${id}`, { headers: ops, body: { status: 'deprecated' } })).status).toBe(200);
    expect((await t.call('api', 'PUT', `/api/mcp-servers/${id}`, { headers: ops, body: { status: 'deprecated' } })).status).toBe(200); // no change: no event
    expect((await t.call('api', 'DELETE', `/api/mcp-servers/${id}`, { headers: ops })).status).toBe(200);
    expect((await last(id)).map((e) => [e.event_type, e.actor, e.before, e.after?.status ?? null])).toEqual([
      ['mcp_server.deleted', 'ops', expect.objectContaining({ server_id: id, status: 'deprecated' }), null],
      ['mcp_server.updated', 'ops', { status: 'active' }, 'deprecated'],
      ['mcp_server.created', 'ops', null, 'active'],
    ]);
    // Bundles, a tag, a deployment; a refused publish (a version that exists) writes nothing.
    const c = concern(`ev-${uid()}`, 2);
    await publish(t, c.body);
    const count = (await events('?limit=1000')).events.length;
    await publish(t, c.body, 409);
    expect((await events('?limit=1000')).events.length).toBe(count);
    const [published] = await last(`${c.id}:1.0.0`);
    expect(published).toMatchObject({ event_type: 'bundle.published', actor: 'admin', after: { bundle_id: c.id, version: '1.0.0', scds: c.scds, validation_status: 'valid' } });
    const tag = `ev-${uid()}:prod`;
    expect((await t.call('api', 'POST', '/api/tags', { admin: true, body: { tag, bundle_id: c.id, bundle_version: '1.0.0' } })).status).toBe(201);
    await publish(t, bundle(c.id, 'concern', { version: '1.1.0', scds: c.scds }));
    expect((await t.call('api', 'PUT', `/api/tags/${tag}`, { headers: ops, body: { bundle_id: c.id, bundle_version: '1.1.0' } })).status).toBe(200);
    const tagEvents = await last(tag);
    expect(tagEvents.map((e) => [e.event_type, e.actor])).toEqual([['tag.moved', 'ops'], ['tag.created', 'admin']]);
    expect(tagEvents[0]).toMatchObject({ before: { bundle_version: '1.0.0' }, after: { bundle_version: '1.1.0' } });
    const d = await deploy(t, [[c.id, '1.0.0']]);
    expect((await last(d.deployment_id))[0]).toMatchObject({ event_type: 'deployment.created', after: { project_bundles: [`${c.id}:1.0.0`] } });
    const d2 = await deploy(t, [[c.id, '1.1.0']]);
    expect((await last(d2.deployment_id))[0]!.after.superseded).toEqual([d.deployment_id]);
    expect((await t.call('api', 'DELETE', path(c.id, '1.0.0'), { headers: ops })).status).toBe(204);
    expect((await last(`${c.id}:1.0.0`))[0]).toMatchObject({ event_type: 'bundle.deactivated', actor: 'ops', before: { is_active: true }, after: { is_active: false } });
    // Rules (port 8001).
    const schemaId = `ev-${uid()}`;
    expect((await t.call('rules', 'POST', '/api/rules/schemas', { headers: ops, body: { id: schemaId, schema: { type: 'object' } } })).status).toBe(201);
    expect((await t.call('rules', 'POST', '/api/rules/rule-sets', { headers: ops, body: { id: schemaId, version: '1.0.0', schema_id: schemaId } })).status).toBe(201);
    expect((await t.call('rules', 'POST', `/api/rules/rule-sets/${schemaId}/rules`, { headers: ops, body: { rule_id: 'r1', rule_data: { a: 1 } } })).status).toBe(201);
    const rules = (await events('?actor=ops&limit=10')).events.filter((e) => e.resource_type.startsWith('rule'));
    expect(rules.map((e) => [e.event_type, e.resource_id])).toEqual([
      ['rule.created', `${schemaId}@1.0.0/r1`],
      ['rule_set.created', `${schemaId}@1.0.0`],
      ['rule_schema.created', schemaId],
    ]);
  });

  it('filters, and pages newest first by cursor', async () => {
    for (let i = 0; i < 3; i++) await makeAgent(t, { allowed_intents: ['triage'] });
    const all = (await events('?event_type=agent.created&limit=1000')).events;
    expect(all.length).toBeGreaterThanOrEqual(5);
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const page = await events(`?event_type=agent.created&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.events.map((e) => e.event_sequence));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual(all.map((e) => e.event_sequence));
    expect([...seen].sort((a, b) => b - a)).toEqual(seen);
    expect((await events('?actor=ops')).events.every((e) => e.actor === 'ops')).toBe(true);
    expect((await events('?actor=nobody')).events).toEqual([]);
    const last = all[0]!;
    expect((await events(`?since=${encodeURIComponent(last.occurred_at)}&event_type=agent.created`)).events.map((e) => e.event_id)).toContain(last.event_id);
    expect((await events(`?until=${encodeURIComponent(last.occurred_at)}&resource_id=${encodeURIComponent(last.resource_id)}`)).events).toEqual([]);
  });

  it('refuses a bad cursor, limit or date with 400, and answers 401 without the admin key', async () => {
    for (const q of ['?cursor=abc', '?cursor=0', '?limit=0', '?since=yesterday']) {
      const r = await t.call('api', 'GET', `/api/audit/events${q}`, { admin: true });
      expect(r.status, q).toBe(400);
      expect(r.body.error).toBe('validation_error');
    }
    expect((await t.call('api', 'GET', '/api/audit/events')).status).toBe(401);
  });

  it('verify counts the events, the tree covers them, and the CLI checker accepts their leaves', async () => {
    await transparencyLog(t.ctx).integrate();
    const v = await t.call('api', 'GET', '/api/audit/verify', { admin: true });
    expect(v.status).toBe(200);
    expect(v.body.status).toBe('ok');
    const n = (await events('?limit=1000')).events.length;
    expect(v.body.management_events).toEqual({ status: 'ok', event_count: n, tampered_at_sequence: null, error: null });
    expect(v.body.record_count).toBe(n + (await countRequests()));
    expect(v.body.transparency_log.status).toBe('ok');
    expect(v.body.transparency_log.leaf_count).toBe(n + (await countRequests()));
    // Every leaf, as served, is an event the checker accepts.
    const leaves = await readLeaves(t.ctx.db, 0, v.body.transparency_log.leaf_count);
    const checker = new LeafRecordChecker(null, false);
    for (const l of leaves) expect(checker.check(l.index, l.data), `leaf ${l.index}`).toBeNull();
    expect(checker.events).toBe(n);
  });
});

async function countRequests(): Promise<number> {
  const [r] = await t.ctx.db.query<{ n: string | number }>('SELECT count(*) AS n FROM agent_context_requests');
  return Number(r!.n);
}

describe('a tampered event', () => {
  it('is reported by verify at its sequence, and by the tree at its leaf', async () => {
    const before = (await events('?limit=1000')).events;
    const target = before[before.length - 2]!; // the second event
    await t.testDb.owner.exec('ALTER TABLE audit_management_events DISABLE TRIGGER USER');
    try {
      await t.testDb.owner.exec(`UPDATE audit_management_events SET actor = 'someone-else' WHERE event_sequence = ${target.event_sequence}`);
      const v = await t.call('api', 'GET', '/api/audit/verify', { admin: true });
      expect(v.body.status).toBe('tampered');
      expect(v.body.management_events).toMatchObject({ status: 'tampered', tampered_at_sequence: target.event_sequence });
      expect(v.body.transparency_log).toMatchObject({ status: 'tampered', tampered_at_leaf: target.leaf_index });
    } finally {
      await t.testDb.owner.exec(`UPDATE audit_management_events SET actor = '${target.actor}' WHERE event_sequence = ${target.event_sequence}`);
      await t.testDb.owner.exec('ALTER TABLE audit_management_events ENABLE TRIGGER USER');
    }
    expect((await t.call('api', 'GET', '/api/audit/verify', { admin: true })).body.status).toBe('ok');
  });

  it('the store refuses to change or delete an event', async () => {
    await expect(t.ctx.db.query(`UPDATE audit_management_events SET actor = 'x'`)).rejects.toThrow();
    await expect(t.ctx.db.query('DELETE FROM audit_management_events')).rejects.toThrow();
  });
});
