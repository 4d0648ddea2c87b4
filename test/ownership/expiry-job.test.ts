/** The transfer expiry job started with the API (TRANSFER_EXPIRY_INTERVAL_SECONDS), with a controlled clock. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { settableClock } from '../identity/fixtures.js';
import { agentOwnedBy, ownerId, requestTransfer } from './fixtures.js';

const clock = settableClock();
let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ services: ['api'], clock, env: { TRANSFER_EXPIRY_INTERVAL_SECONDS: '1', TRANSFER_WINDOW_HOURS: '2' } });
});
afterAll(async () => {
  await t?.close();
});

it('expires a pending transfer past its window on its own, with the escalation, and leaves others pending', async () => {
  const a = await agentOwnedBy(t, ownerId());
  const b = await agentOwnedBy(t, ownerId());
  const due = await requestTransfer(t, a.agent_id, ownerId());
  expect(new Date(due.expires_at).getTime() - new Date(due.effective_at).getTime()).toBe(2 * 3_600_000);
  clock.advance(3 * 3_600_000);
  const later = await requestTransfer(t, b.agent_id, ownerId());
  // Wait (bounded) for a run of the job; nothing here reads the transfer through the API, which would expire it lazily.
  const deadline = Date.now() + 10_000;
  let row: any;
  while (Date.now() < deadline) {
    [row] = await t.testDb.owner.query(`SELECT status, resolved_by FROM agent_ownership_transfers WHERE id = $1`, [due.transfer_id]);
    if (row.status !== 'pending') break;
    await new Promise((r) => setTimeout(r, 200));
  }
  expect(row).toEqual({ status: 'expired', resolved_by: 'system:transfer-expiry' });
  const events = await t.testDb.owner.query(`SELECT event_type, actor FROM audit_management_events WHERE resource_id = $1 ORDER BY event_sequence`, [due.transfer_id]);
  expect(events.map((e: any) => e.event_type)).toEqual(['ownership.transfer_requested', 'ownership.transfer_expired', 'ownership.escalated']);
  const [other] = await t.testDb.owner.query(`SELECT status FROM agent_ownership_transfers WHERE id = $1`, [later.transfer_id]);
  expect(other.status).toBe('pending');
});
