/**
 * The console's management events page over HTTP: events made through the API by a named
 * admin key show that name as actor, newest first, with the changed fields and the whole
 * event (hashes, leaf index) in each row's expansion; filters, cursor paging, escaping; bad
 * filters are a 400 page, never a 500; an auditor session reads it.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { agentId } from '../identity/fixtures.js';
import { ConsoleClient } from './client.js';

const ALICE_KEY = `alice_${randomBytes(24).toString('base64url')}`;
const AUDITOR_KEY = `audit_${randomBytes(24).toString('base64url')}`;
const EVIL = `<script>alert("x")</script> & 'q'`;

let t: TestStack;
let auditor: ConsoleClient;
const agentA = agentId('ev');
const agentB = agentId('ev');

async function alice(method: string, path: string, body: unknown): Promise<any> {
  const r = await t.call('api', method, path, { headers: { 'x-admin-key': ALICE_KEY }, body });
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  return r.body;
}

const apiEvents = async (q: string): Promise<any[]> => (await t.call('api', 'GET', `/api/audit/events?${q}`, { admin: true })).body.events;
const rows = (page: string): string[] => page.split('<tbody>')[1]?.split('</tbody>')[0]?.split('<tr>').slice(1) ?? [];

beforeAll(async () => {
  t = await startTestStack({ services: ['api'], env: { ADMIN_API_KEYS: `alice:${ALICE_KEY}`, AUDITOR_API_KEYS: `compliance:${AUDITOR_KEY}` } });
  await alice('POST', '/api/agents', { agent_id: agentA, name: EVIL, role_id: 'role:nurse', allowed_intents: ['triage'] });
  await t.call('api', 'POST', '/api/agents', { admin: true, body: { agent_id: agentB, name: 'By the default admin', role_id: 'role:nurse', allowed_intents: ['triage'] } });
  await alice('POST', `/api/agents/${agentA}/api-keys`, {});
  auditor = await ConsoleClient.signedIn(t, AUDITOR_KEY);
});
afterAll(async () => {
  await t?.close();
});

describe('/console/events', () => {
  it('lists events newest first with actor, type, a link to the agent and the changed fields, escaped', async () => {
    const r = await auditor.get('/console/events');
    expect(r.status).toBe(200);
    expect(r.text).toContain('aria-current="page">Events');
    const all = rows(r.text);
    const created = all.findIndex((x) => x.includes(`/console/agents/${encodeURIComponent(agentA)}"`) && x.includes('>agent.created</a>'));
    const other = all.findIndex((x) => x.includes(`/console/agents/${encodeURIComponent(agentB)}"`));
    expect(created).toBeGreaterThan(other); // agentA was created first: further down
    expect(other).toBeGreaterThan(-1);
    const row = all[created]!;
    expect(row).toContain('>alice</a>');
    expect(row).toContain('<code>name</code>');
    expect(row).toContain('&lt;script&gt;alert');
    expect(r.text).not.toContain('<script>alert');
    expect(all[other]).toContain('>admin</a>');
  });

  it('each row expands to the whole event, as the API gives it: ids, hashes, leaf index', async () => {
    const [e] = await apiEvents(`event_type=agent.created&resource_id=${agentA}`);
    const r = await auditor.get(`/console/events?event_type=agent.created&resource_id=${agentA}`);
    const [row, ...more] = rows(r.text);
    expect(more).toEqual([]);
    for (const v of [e.event_id, e.record_hash, e.previous_hash, e.request_id]) expect(row).toContain(v);
    expect(row).toContain(`<dt>Leaf index</dt><dd>${e.leaf_index}</dd>`);
    expect(row).toContain('<details>');
  });

  it('filters by actor, event type, resource and time', async () => {
    const byAlice = rows((await auditor.get('/console/events?actor=alice')).text);
    expect(byAlice.length).toBe((await apiEvents('actor=alice')).length);
    expect(byAlice.length).toBeGreaterThanOrEqual(2);
    for (const x of byAlice) expect(x).toContain('>alice</a>');
    const keys = rows((await auditor.get('/console/events?actor=alice&resource_type=api_key')).text);
    expect(keys.length).toBe(1);
    expect(keys[0]).not.toContain('agent.created');
    const none = await auditor.get(`/console/events?resource_type=agent&resource_id=${agentA}&actor=admin`);
    expect(none.text).toContain('No events match.');
    expect((await auditor.get('/console/events?since=2999-01-01T00:00:00Z')).text).toContain('No events match.');
    const until = rows((await auditor.get(`/console/events?until=2999-01-01T00:00:00Z&resource_id=${agentB}`)).text);
    expect(until.length).toBe(1);
    // The filter form keeps what was asked.
    expect((await auditor.get('/console/events?actor=alice')).text).toContain('name="actor" value="alice"');
  });

  it('pages by cursor: Older follows on from the last row, keeping the filters', async () => {
    const expected = (await apiEvents('actor=alice')).map((e) => e.event_id);
    const first = await auditor.get('/console/events?actor=alice&limit=1');
    expect(rows(first.text)).toHaveLength(1);
    expect(rows(first.text)[0]).toContain(expected[0]);
    const older = /href="([^"]+)" rel="next"/.exec(first.text)![1]!.replace(/&amp;/g, '&');
    expect(older).toContain('actor=alice');
    const second = await auditor.get(older);
    expect(rows(second.text)).toHaveLength(1);
    expect(rows(second.text)[0]).toContain(expected[1]);
    expect(second.text).toContain('>Newest</a>');
  });

  it('bad filters are a 400 page, not a 500', async () => {
    for (const q of ['since=yesterday', 'until=2026-13-45', 'cursor=abc', 'limit=0', 'limit=x']) {
      const r = await auditor.get(`/console/events?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.text).toContain('role="alert"');
    }
  });
});
