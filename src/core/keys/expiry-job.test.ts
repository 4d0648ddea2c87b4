/** The expiry job started with the API (spec 3.2, 8): interval from KEY_EXPIRY_INTERVAL_SECONDS; its key.expired events. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../../../test/harness.js';
import { issueKey, makeAgent, settableClock } from '../../../test/identity/fixtures.js';
import { verifyAgentKey } from './verify-key.js';

const clock = settableClock();
let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ services: ['api'], clock, env: { KEY_EXPIRY_INTERVAL_SECONDS: '1' } });
});
afterAll(async () => {
  await t?.close();
});

it('moves past-due active keys to expired (is_active false, system:expiry-job) and logs the count', async () => {
  const a = await makeAgent(t);
  const short = await issueKey(t, a.agent_id, { expires_in_days: 1 });
  const long = await issueKey(t, a.agent_id, { expires_in_days: 30 });
  const revoked = await issueKey(t, a.agent_id, { expires_in_days: 1 });
  await t.call('api', 'DELETE', `/api/agents/${a.agent_id}/api-keys/${revoked.key_id}?revoked_by=ops`, { admin: true });
  expect((await verifyAgentKey(t.ctx, short.api_key)).ok).toBe(true);
  const linesBefore = t.logs.length;
  clock.advance(2 * 86_400_000);
  const deadline = Date.now() + 10_000;
  let row: any;
  while (Date.now() < deadline) {
    [row] = await t.testDb.owner.query(`SELECT status, is_active, revoked_by, revoked_at FROM agent_api_keys WHERE key_id = $1`, [short.key_id]);
    if (row.status === 'expired') break;
    await new Promise((r) => setTimeout(r, 200));
  }
  expect(row).toMatchObject({ status: 'expired', is_active: false, revoked_by: 'system:expiry-job' });
  expect(row.revoked_at).toBeInstanceOf(Date);
  const others = await t.testDb.owner.query(`SELECT key_id, status, revoked_by FROM agent_api_keys WHERE key_id = ANY($1::text[]) ORDER BY key_id`, [[long.key_id, revoked.key_id]]);
  expect(Object.fromEntries(others.map((o: any) => [o.key_id, [o.status, o.revoked_by]]))).toEqual({
    [long.key_id]: ['active', null],
    [revoked.key_id]: ['revoked', 'ops'],
  });
  // Recorded once, as the job's: a key.expired event in the transaction of the move.
  const ev = await t.call('api', 'GET', `/api/audit/events?resource_id=${encodeURIComponent(short.key_id)}&event_type=key.expired`, { admin: true });
  expect(ev.body.events).toEqual([
    expect.objectContaining({ actor: 'system:expiry-job', resource_type: 'api_key', after: expect.objectContaining({ status: 'expired', key_prefix: short.key_prefix, revoked_by: 'system:expiry-job' }) }),
  ]);
  expect(JSON.stringify(ev.body)).not.toContain(short.api_key);
  const runs = t.logs.slice(linesBefore).map((l) => JSON.parse(l)).filter((l) => l.msg.startsWith('key expiry job'));
  expect(runs.some((l) => l.expired >= 1)).toBe(true);
  expect(await verifyAgentKey(t.ctx, short.api_key)).toMatchObject({ ok: false, reason: 'API key expired', agentId: a.agent_id });
  const listed = await t.call('api', 'GET', `/api/agents/${a.agent_id}/api-keys`, { admin: true });
  expect(listed.body.api_keys.find((k: any) => k.key_id === short.key_id)).toMatchObject({ status: 'expired', revoked_by: 'system:expiry-job' });
  // An expired key cannot be revoked afterwards: its record stays the job's.
  const rev = await t.call('api', 'DELETE', `/api/agents/${a.agent_id}/api-keys/${short.key_id}?revoked_by=late`, { admin: true });
  expect(rev.status).toBe(409);
  expect(rev.body.details).toEqual({ status: 'expired' });
});
