/**
 * The console's overview over HTTP: the requests chart, agents by status, the latest checkpoint, and verify run
 * from the page by an auditor (it changes nothing, so any session may run it, with the CSRF
 * token; without it, 403).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { transparencyLog } from '../../src/core/tlog/log.js';
import { ConsoleClient } from './client.js';

const AUDITOR_KEY = `audit_${randomBytes(24).toString('base64url')}`;
let t: TestStack;

beforeAll(async () => {
  t = await startTestStack({ services: ['api'], env: { AUDITOR_API_KEYS: `compliance:${AUDITOR_KEY}` } });
});
afterAll(async () => {
  await t?.close();
});

it('shows agents by status and the latest checkpoint; an auditor runs verify from the page', async () => {
  const a = await makeAgent(t, { allowed_intents: ['triage'] });
  const k = await issueKey(t, a.agent_id);
  expect((await t.call('api', 'POST', '/api/context', { apiKey: k.api_key, body: { task_type: 'triage' } })).status).toBe(200);
  await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { status: 'suspended' } });
  await transparencyLog(t.ctx).integrate();
  const agents = (await t.call('api', 'GET', '/api/agents?status=suspended&limit=1', { admin: true })).body.total;

  const c = ConsoleClient.for(t);
  await c.signIn(AUDITOR_KEY);
  const home = await c.get('/console');
  expect(home.status).toBe(200);
  expect(home.text).toMatch(new RegExp(`<div class="big">${agents}</div><span class="badge badge-suspended">suspended</span>`));
  const cp = (await t.call('api', 'GET', '/api/audit/tlog/checkpoint')).body as unknown as string;
  const size = Number(String(cp).split('\n')[1]);
  expect(home.text).toContain(`<dt>Tree size</dt><dd>${size}</dd>`);
  expect(home.text).toContain('Not verified from the console');
  // The chart: the usage analytics of the last 24 hours (one accepted request, none refused).
  expect(home.text).toContain('id="activity-chart" data-accepted="1" data-refused="0"');

  expect((await c.post('/console/verify', {})).status).toBe(403);
  const r = await c.post('/console/verify', { _csrf: ConsoleClient.csrfOf(home.text) });
  expect(r.status).toBe(303);
  expect(decodeURIComponent(r.location!.replace(/\+/g, ' '))).toMatch(/The audit log verifies: \d+ records checked/);
  const after = await c.get(r.location!);
  expect(after.text).toContain('<span class="badge badge-ok">ok</span>');
  expect(after.text).toContain('by compliance');
});
