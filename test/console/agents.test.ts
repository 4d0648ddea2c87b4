/**
 * The console's agents pages and actions over HTTP (a real server on port 0), and the API's
 * `search` filter they use: the list filters, searches and pages; the agent page shows its
 * fields, keys by prefix (never a secret), latest requests, ownership and events, escaped;
 * suspend, activate, key revocation, transfer and force-assign change what the API reads
 * back, each with its management event by the signed-in key's name; a POST without the
 * session's CSRF token, with a wrong one, or from an auditor is 403 and changes nothing;
 * domain errors are error pages with their status. `/console/transfers` lists transfers.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startTestStack, type TestStack } from '../harness.js';
import { agentId, issueKey, makeAgent } from '../identity/fixtures.js';
import { ConsoleClient } from './client.js';

const AUDITOR_KEY = `audit_${randomBytes(24).toString('base64url')}`;
const RUN = randomBytes(4).toString('hex');
let t: TestStack;
let admin: ConsoleClient;
let auditor: ConsoleClient;

beforeAll(async () => {
  t = await startTestStack({ services: ['api'], env: { AUDITOR_API_KEYS: `compliance:${AUDITOR_KEY}` } });
  admin = await ConsoleClient.signedIn(t, ADMIN_KEY);
  auditor = await ConsoleClient.signedIn(t, AUDITOR_KEY);
});
afterAll(async () => {
  await t?.close();
});

const path = (id: string) => `/console/agents/${encodeURIComponent(id)}`;
const ask = (apiKey: string, task_type = 'triage') => t.call('api', 'POST', '/api/context', { apiKey, body: { task_type } });
const readAgent = async (id: string) => (await t.call('api', 'GET', `/api/agents/${id}`, { admin: true })).body;
const eventsOf = async (resourceId: string) => (await t.call('api', 'GET', `/api/audit/events?resource_id=${encodeURIComponent(resourceId)}`, { admin: true })).body.events as Array<Record<string, any>>;
const historyOf = async (id: string) => (await t.call('api', 'GET', `/api/agents/${id}/ownership/history`, { admin: true })).body;

/** POSTs a console form with the session's CSRF token. */
async function act(c: ConsoleClient, p: string, form: Record<string, string> = {}) {
  return c.post(p, { _csrf: await c.csrf(), ...form });
}

describe('GET /api/agents?search', () => {
  it('matches a substring of the id or the name, case-insensitively, with % and _ taken literally', async () => {
    const literal = await makeAgent(t, { name: `Pct 100%_sure ${RUN}` });
    const other = await makeAgent(t, { name: `Pct 100xysure ${RUN}` });
    const byId = await makeAgent(t, { agent_id: agentId(`findme${RUN}`), name: 'plain' });
    const ids = async (q: string) => {
      const r = await t.call('api', 'GET', `/api/agents?search=${encodeURIComponent(q)}&limit=1000`, { admin: true });
      expect(r.status).toBe(200);
      return (r.body.agents as Array<{ agent_id: string }>).map((a) => a.agent_id);
    };
    expect(await ids(`100%_SURE ${RUN}`)).toEqual([literal.agent_id]);
    expect((await ids(`pct 100`)).filter((id) => [literal.agent_id, other.agent_id].includes(id)).sort()).toEqual([literal.agent_id, other.agent_id].sort());
    expect(await ids('%_')).toEqual([literal.agent_id]);
    expect(await ids(`FINDME${RUN}`)).toEqual([byId.agent_id]);
    const r = await t.call('api', 'GET', `/api/agents?search=${encodeURIComponent(`%_ ${RUN}`)}&limit=1`, { admin: true });
    expect(r.body.total).toBe(0);
  });

  it('refuses a search longer than 200 characters or empty (400), with the error body', async () => {
    const long = await t.call('api', 'GET', `/api/agents?search=${'x'.repeat(201)}`, { admin: true });
    expect(long.status).toBe(400);
    expect(long.body.error).toBe('validation_error');
    expect((await t.call('api', 'GET', `/api/agents?search=${'x'.repeat(200)}`, { admin: true })).status).toBe(200);
  });
});

describe('/console/agents', () => {
  it('lists agents with escaped names, filters by status and role, searches, and pages', async () => {
    const evil = await makeAgent(t, { name: `<script>alert("x")</script> ${RUN}`, role_id: `role:lst${RUN}` });
    const quiet = await makeAgent(t, { name: `Quiet "one" ${RUN}`, role_id: `role:lst${RUN}` });
    await t.call('api', 'PUT', `/api/agents/${quiet.agent_id}`, { admin: true, body: { status: 'suspended' } });

    const all = await auditor.get(`/console/agents?q=${RUN}&limit=1000`);
    expect(all.status).toBe(200);
    expect(all.text).not.toContain('<script>alert');
    expect(all.text).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(all.text).toContain(`href="${path(evil.agent_id)}"`);
    expect(all.text).toContain('Quiet &quot;one&quot;');

    const suspended = await auditor.get(`/console/agents?status=suspended&role=${encodeURIComponent(`role:lst${RUN}`)}`);
    expect(suspended.text).toContain(quiet.agent_id);
    expect(suspended.text).not.toContain(evil.agent_id);
    const byRole = await auditor.get(`/console/agents?role=${encodeURIComponent(`role:lst${RUN}`)}`);
    expect(byRole.text).toContain(quiet.agent_id);
    expect(byRole.text).toContain(evil.agent_id);
    const searched = await auditor.get(`/console/agents?q=${encodeURIComponent(`QUIET "ONE" ${RUN}`)}`);
    expect(searched.text).toContain(quiet.agent_id);
    expect(searched.text).not.toContain(evil.agent_id);

    const first = await auditor.get(`/console/agents?role=${encodeURIComponent(`role:lst${RUN}`)}&limit=1`);
    expect(first.text).toContain(evil.agent_id);
    expect(first.text).not.toContain(quiet.agent_id);
    const next = /<a href="([^"]+)" rel="next">/.exec(first.text)![1].replaceAll('&amp;', '&');
    const second = await auditor.get(next);
    expect(second.text).toContain(quiet.agent_id);
    expect(second.text).not.toContain(evil.agent_id);
    expect(second.text).not.toContain('rel="next"');
    expect(second.text).toContain('rel="prev"');
  });

  it('bad filters are a 400 page', async () => {
    for (const q of ['status=bogus', 'role=nurse', `q=${'x'.repeat(201)}`, 'q=a%00b', 'limit=0', 'offset=-1']) {
      const r = await auditor.get(`/console/agents?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.text).toContain('class="problem"');
    }
  });
});

describe('/console/agents/{agent_id}', () => {
  it('shows the fields, owner, keys by prefix (no secret), latest requests with their outcome, and events; no forms for an auditor', async () => {
    const a = await makeAgent(t, { name: `Detail <b>${RUN}</b>`, allowed_intents: ['triage'], owner_id: `owner-d-${RUN}`, owner_name: `Dr "Who" <x>` });
    const k = await issueKey(t, a.agent_id);
    const ok = await ask(k.api_key);
    const refused = await ask(k.api_key, 'medication_review');
    const r = await auditor.get(path(a.agent_id));
    expect(r.status).toBe(200);
    expect(r.text).toContain(`Detail &lt;b&gt;${RUN}&lt;/b&gt;`);
    expect(r.text).toContain('Dr &quot;Who&quot; &lt;x&gt;');
    expect(r.text).toContain(`owner-d-${RUN}`);
    expect(r.text).toContain(k.key_id);
    expect(r.text).toContain(k.key_prefix);
    expect(r.text).not.toContain(k.api_key);
    expect(ok.status).toBe(200);
    expect(r.text).toContain(`/console/audit/${encodeURIComponent(ok.body.request_id)}`);
    expect(refused.status).toBe(403);
    expect(r.text).toContain(`/console/audit/${encodeURIComponent(refused.body.request_id)}`);
    expect(r.text).toContain('INTENT_NOT_ALLOWED');
    expect(r.text).toContain('agent.created');
    expect(r.text).not.toContain('<form method="post" action="/console/agents');

    const asAdmin = await admin.get(path(a.agent_id));
    expect(asAdmin.text).toContain(`action="${path(a.agent_id)}/suspend"`);
    expect(asAdmin.text).toContain(`action="${path(a.agent_id)}/keys/${encodeURIComponent(k.key_id)}/revoke"`);
    expect(asAdmin.text).toContain(`action="${path(a.agent_id)}/transfer"`);
    expect(asAdmin.text).toContain(`action="${path(a.agent_id)}/force-assign"`);
    expect(asAdmin.text).not.toContain(k.api_key);
  });

  it('an unknown agent is a 404 page', async () => {
    const r = await auditor.get(path('agent:nobody-here'));
    expect(r.status).toBe(404);
    expect(r.text).toContain('agent:nobody-here does not exist');
  });
});

describe('actions', () => {
  it('suspend: the next context request is refused 401 AUTH_FAILED; activate restores it; events by the key name', async () => {
    const a = await makeAgent(t, { allowed_intents: ['triage'] });
    const k = await issueKey(t, a.agent_id);
    expect((await ask(k.api_key)).status).toBe(200);
    const r = await act(admin, `${path(a.agent_id)}/suspend`);
    expect(r.status).toBe(303);
    expect(r.location).toMatch(new RegExp(`^${path(a.agent_id).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\?done=`));
    expect((await admin.get(r.location!)).text).toContain('is suspended');
    expect((await readAgent(a.agent_id)).status).toBe('suspended');
    expect(await ask(k.api_key)).toMatchObject({ status: 401, body: { error_code: 'AUTH_FAILED' } });
    expect((await eventsOf(a.agent_id)).find((e) => e.event_type === 'agent.suspended')).toMatchObject({ actor: 'admin' });

    expect((await act(admin, `${path(a.agent_id)}/activate`)).status).toBe(303);
    expect((await readAgent(a.agent_id)).status).toBe('active');
    expect((await ask(k.api_key)).status).toBe(200);
    expect((await eventsOf(a.agent_id)).find((e) => e.event_type === 'agent.activated')).toMatchObject({ actor: 'admin' });
  });

  it('activate refuses a revoked agent (409 page), and nothing changes', async () => {
    const a = await makeAgent(t);
    await t.call('api', 'DELETE', `/api/agents/${a.agent_id}`, { admin: true });
    const r = await act(admin, `${path(a.agent_id)}/activate`);
    expect(r.status).toBe(409);
    expect((await readAgent(a.agent_id)).status).toBe('revoked');
  });

  it('revoke a key: the key is refused, its event names the key name; again is a 409 page', async () => {
    const a = await makeAgent(t, { allowed_intents: ['triage'] });
    const k = await issueKey(t, a.agent_id);
    expect((await ask(k.api_key)).status).toBe(200);
    const r = await act(admin, `${path(a.agent_id)}/keys/${encodeURIComponent(k.key_id)}/revoke`);
    expect(r.status).toBe(303);
    const key = (await t.call('api', 'GET', `/api/agents/${a.agent_id}/api-keys/${k.key_id}`, { admin: true })).body;
    expect(key).toMatchObject({ status: 'revoked', revoked_by: 'admin' });
    expect((await ask(k.api_key)).status).toBe(401);
    expect((await eventsOf(k.key_id)).find((e) => e.event_type === 'key.revoked')).toMatchObject({ actor: 'admin' });
    const again = await act(admin, `${path(a.agent_id)}/keys/${encodeURIComponent(k.key_id)}/revoke`);
    expect(again.status).toBe(409);
    expect(again.text).toContain('already revoked');
    expect((await act(admin, `${path(a.agent_id)}/keys/nokey/revoke`)).status).toBe(404);
  });

  it('start a transfer, then force-assign it; both events by the key name; the transfers page lists it', async () => {
    const a = await makeAgent(t, { owner_id: `owner-from-${RUN}` });
    const to = `owner-to-${RUN}`;
    const r = await act(admin, `${path(a.agent_id)}/transfer`, { to_owner_id: to, reason: `hand <over> ${RUN}` });
    expect(r.status).toBe(303);
    const pending = (await historyOf(a.agent_id)).transfers.at(-1);
    expect(pending).toMatchObject({ status: 'pending', from_owner_id: `owner-from-${RUN}`, to_owner_id: to, reason: `hand <over> ${RUN}`, initiated_by: 'admin' });
    expect((await eventsOf(pending.transfer_id)).find((e) => e.event_type === 'ownership.transfer_requested')).toMatchObject({ actor: 'admin' });
    const redirected = await admin.get(r.location!);
    expect(redirected.text).toContain(pending.transfer_id);
    expect(redirected.text).not.toMatch(/ot_[A-Za-z0-9_-]{20,}/);

    const list = await auditor.get('/console/transfers?status=pending');
    expect(list.status).toBe(200);
    expect(list.text).toContain(`href="${path(a.agent_id)}"`);
    expect(list.text).toContain(`hand &lt;over&gt; ${RUN}`);
    expect((await auditor.get('/console/transfers?status=force_assigned')).text).not.toContain(`hand &lt;over&gt; ${RUN}`);

    const f = await act(admin, `${path(a.agent_id)}/force-assign`, { owner_id: to, reason: 'no answer' });
    expect(f.status).toBe(303);
    expect((await readAgent(a.agent_id)).owner_id).toBe(to);
    const done = (await historyOf(a.agent_id)).transfers.at(-1);
    expect(done).toMatchObject({ transfer_id: pending.transfer_id, status: 'force_assigned', resolved_by: 'admin' });
    expect((await eventsOf(pending.transfer_id)).find((e) => e.event_type === 'ownership.force_assigned')).toMatchObject({ actor: 'admin' });
    expect((await auditor.get('/console/transfers?status=force_assigned')).text).toContain(`hand &lt;over&gt; ${RUN}`);
    expect((await auditor.get('/console/transfers?status=nope')).status).toBe(400);
  });

  it('force-assign with no transfer reassigns directly (recorded as force_assigned); domain errors are pages', async () => {
    const a = await makeAgent(t, { owner_id: `owner-x-${RUN}` });
    const r = await act(admin, `${path(a.agent_id)}/force-assign`, { owner_id: `owner-y-${RUN}` });
    expect(r.status).toBe(303);
    expect((await readAgent(a.agent_id)).owner_id).toBe(`owner-y-${RUN}`);
    expect((await historyOf(a.agent_id)).transfers.at(-1)).toMatchObject({ status: 'force_assigned', to_owner_id: `owner-y-${RUN}`, resolved_by: 'admin' });

    const bad = await act(admin, `${path(a.agent_id)}/transfer`, { to_owner_id: 'not an id!' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('to_owner_id must be an owner id');
    const same = await act(admin, `${path(a.agent_id)}/transfer`, { to_owner_id: `owner-y-${RUN}` });
    expect(same.status).toBe(409);
    const gone = `owner-gone-${RUN}`;
    await makeAgent(t, { owner_id: gone }); // an owner exists once named
    expect((await t.call('api', 'POST', `/api/owners/${gone}/deactivate`, { admin: true })).status).toBe(200);
    const deactivated = await act(admin, `${path(a.agent_id)}/force-assign`, { owner_id: gone });
    expect(deactivated.status).toBe(409);
    expect(deactivated.text).toContain('deactivated');
    expect((await act(admin, `${path('agent:nobody-here')}/suspend`)).status).toBe(404);
    expect((await readAgent(a.agent_id)).owner_id).toBe(`owner-y-${RUN}`);
  });

  it('without the CSRF token, with a wrong one, or from an auditor: 403 and nothing changes', async () => {
    const a = await makeAgent(t, { owner_id: `owner-c-${RUN}` });
    const k = await issueKey(t, a.agent_id);
    const before = await eventsOf(a.agent_id);
    const posts: Array<[string, Record<string, string>]> = [
      [`${path(a.agent_id)}/suspend`, {}],
      [`${path(a.agent_id)}/keys/${encodeURIComponent(k.key_id)}/revoke`, {}],
      [`${path(a.agent_id)}/transfer`, { to_owner_id: `owner-z-${RUN}` }],
      [`${path(a.agent_id)}/force-assign`, { owner_id: `owner-z-${RUN}` }],
    ];
    for (const [p, form] of posts) {
      expect((await admin.post(p, form)).status, p).toBe(403);
      expect((await admin.post(p, { ...form, _csrf: 'wrong' })).status, p).toBe(403);
      const byAuditor = await act(auditor, p, form);
      expect(byAuditor.status, p).toBe(403);
      expect(byAuditor.text).toContain('read-only');
    }
    const now = await readAgent(a.agent_id);
    expect(now).toMatchObject({ status: 'active', owner_id: `owner-c-${RUN}` });
    expect(now.api_keys[0].status).toBe('active');
    expect((await historyOf(a.agent_id)).transfers).toEqual([]);
    expect(await eventsOf(a.agent_id)).toEqual(before);
  });
});
