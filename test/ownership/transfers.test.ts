/**
 * Ownership transfers over HTTP (spec 3.6, 4.10): the state machine with a controlled clock,
 * the acceptance token, owner deactivation, history, and the management event of each step.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { settableClock } from '../identity/fixtures.js';
import { expireDueTransfers } from '../../src/core/ownership/expire-transfers.js';
import { agentOwnedBy, eventsOf, ownerId, ownerOf, requestTransfer, step } from './fixtures.js';

const HOUR = 3_600_000;
const clock = settableClock();
let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ services: ['api'], clock });
});
afterAll(async () => {
  await t?.close();
});

async function transferRow(id: string): Promise<any> {
  const [row] = await t.testDb.owner.query(`SELECT status, resolved_by, acceptance_token_hash, audit_hash FROM agent_ownership_transfers WHERE id = $1`, [id]);
  return row;
}

describe('owner_id on agents', () => {
  it('defaults to ORG_ADMIN_OWNER_ID and takes a given owner', async () => {
    const plain = await agentOwnedBy(t, undefined);
    expect(plain.owner_id).toBe('org-admin');
    const owner = ownerId();
    const owned = await agentOwnedBy(t, owner, { owner_name: 'Jane Doe' });
    expect(owned).toMatchObject({ owner_id: owner, owner_name: 'Jane Doe', owner_verified: false });
    expect(await ownerOf(t, owned.agent_id)).toBe(owner);
  });

  it('refuses a malformed owner_id (400) and a deactivated owner (409)', async () => {
    const bad = await t.call('api', 'POST', '/api/agents', { admin: true, body: { agent_id: 'agent:bad-owner', name: 'x', role_id: 'role:x', allowed_intents: [], owner_id: 'has space' } });
    expect(bad.status).toBe(400);
    const gone = ownerId('gone');
    const held = await agentOwnedBy(t, gone);
    expect((await t.call('api', 'POST', `/api/owners/${gone}/deactivate`, { admin: true })).status).toBe(200);
    const r = await t.call('api', 'POST', '/api/agents', { admin: true, body: { agent_id: 'agent:to-gone', name: 'x', role_id: 'role:x', allowed_intents: [], owner_id: gone } });
    expect(r.status).toBe(409);
    expect((await t.call('api', 'GET', '/api/agents/agent:to-gone', { admin: true })).status).toBe(404);
    // PUT: another agent cannot be given to it; the agent it still holds may name it unchanged.
    const other = await agentOwnedBy(t, ownerId());
    const put = await t.call('api', 'PUT', `/api/agents/${other.agent_id}`, { admin: true, body: { owner_id: gone } });
    expect(put.status).toBe(409);
    expect(await ownerOf(t, other.agent_id)).toBe(other.owner_id);
    const same = await t.call('api', 'PUT', `/api/agents/${held.agent_id}`, { admin: true, body: { owner_id: gone, name: 'still held' } });
    expect(same.status).toBe(200);
    expect(same.body).toMatchObject({ owner_id: gone, name: 'still held' });
  });

  it('PUT with another owner_id is a force-assign in the history; the same owner changes nothing', async () => {
    const a = await agentOwnedBy(t, ownerId());
    const next = ownerId('put');
    const r = await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { owner_id: next, owner_name: 'New Name' } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ owner_id: next, owner_name: 'New Name' });
    const h = await t.call('api', 'GET', `/api/agents/${a.agent_id}/ownership/history`, { admin: true });
    expect(h.body.transfers).toHaveLength(1);
    expect(h.body.transfers[0]).toMatchObject({ status: 'force_assigned', from_owner_id: a.owner_id, to_owner_id: next, reason: 'PUT /api/agents' });
    expect(h.body.holders.map((x: any) => [x.owner_id, x.acquired_via])).toEqual([
      [a.owner_id, 'registered'],
      [next, 'force_assigned'],
    ]);
    const same = await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { owner_id: next } });
    expect(same.status).toBe(200);
    expect((await t.call('api', 'GET', `/api/agents/${a.agent_id}/ownership/history`, { admin: true })).body.transfers).toHaveLength(1);
  });

  it('PUT with another owner_id while a transfer is pending is 409 and changes nothing', async () => {
    const a = await agentOwnedBy(t, ownerId());
    await requestTransfer(t, a.agent_id, ownerId());
    const r = await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { owner_id: ownerId(), name: 'renamed' } });
    expect(r.status).toBe(409);
    const after = await t.call('api', 'GET', `/api/agents/${a.agent_id}`, { admin: true });
    expect(after.body).toMatchObject({ owner_id: a.owner_id, name: a.name });
  });
});

describe('request', () => {
  it('answers 201 with the pending transfer and a token stored only as its hash; the agent keeps its owner', async () => {
    const from = ownerId('from');
    const to = ownerId('to');
    const a = await agentOwnedBy(t, from);
    const r = await t.call('api', 'POST', `/api/agents/${a.agent_id}/ownership/transfer`, { admin: true, body: { to_owner_id: to, reason: 'reorg' } });
    expect(r.status).toBe(201);
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.body).toMatchObject({ agent_id: a.agent_id, from_owner_id: from, to_owner_id: to, status: 'pending', reason: 'reorg', resolved_at: null, resolved_by: null });
    expect(r.body.acceptance_token).toMatch(/^ot_[A-Za-z0-9_-]{43}$/);
    expect(new Date(r.body.expires_at).getTime() - new Date(r.body.effective_at).getTime()).toBe(72 * HOUR);
    const row = await transferRow(r.body.transfer_id);
    expect(row.acceptance_token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(row)).not.toContain(r.body.acceptance_token);
    expect(await ownerOf(t, a.agent_id)).toBe(from);
    const ev = await eventsOf(t, r.body.transfer_id);
    expect(ev.map((e) => e.event_type)).toEqual(['ownership.transfer_requested']);
    expect(ev[0]).toMatchObject({ resource_type: 'ownership_transfer', after: { status: 'pending', from_owner_id: from, to_owner_id: to, reason: 'reorg' } });
    expect(JSON.stringify(ev)).not.toContain(r.body.acceptance_token);
    expect(row.audit_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses a second pending transfer, the current owner as target, an unknown agent and bad input', async () => {
    const from = ownerId();
    const a = await agentOwnedBy(t, from);
    await requestTransfer(t, a.agent_id, ownerId());
    const post = (agent: string, body: unknown) => t.call('api', 'POST', `/api/agents/${agent}/ownership/transfer`, { admin: true, body });
    expect((await post(a.agent_id, { to_owner_id: ownerId(), reason: 'again' })).status).toBe(409);
    const b = await agentOwnedBy(t, from);
    expect((await post(b.agent_id, { to_owner_id: from, reason: 'self' })).status).toBe(409);
    expect((await post('agent:nobody-here', { to_owner_id: ownerId(), reason: 'x' })).status).toBe(404);
    expect((await post(b.agent_id, { to_owner_id: ownerId() })).status).toBe(400);
    expect((await post(b.agent_id, { to_owner_id: ownerId(), reason: '' })).status).toBe(400);
    expect((await post(b.agent_id, { to_owner_id: ownerId(), reason: 'x', effective_at: 'tomorrow' })).status).toBe(400);
    expect((await post(b.agent_id, { to_owner_id: ownerId(), reason: 'x', effective_at: new Date(clock.now().getTime() + 400 * 24 * HOUR).toISOString() })).status).toBe(400);
    const h = await t.call('api', 'GET', `/api/agents/${b.agent_id}/ownership/history`, { admin: true });
    expect(h.body.transfers).toEqual([]);
  });
});

describe('accept', () => {
  it('without the token or with a wrong one is 403 and changes nothing; with it the owner changes', async () => {
    const from = ownerId('from');
    const to = ownerId('to');
    const a = await agentOwnedBy(t, from, { owner_name: 'Previous Owner' });
    const tr = await requestTransfer(t, a.agent_id, to);
    const none = await step(t, a.agent_id, tr.transfer_id, 'accept');
    expect(none.status).toBe(403);
    expect(none.body.error).toBe('forbidden');
    const wrong = await step(t, a.agent_id, tr.transfer_id, 'accept', { token: `ot_${'A'.repeat(43)}` });
    expect(wrong.status).toBe(403);
    const wrongBody = await step(t, a.agent_id, tr.transfer_id, 'accept', { body: { acceptance_token: `ot_${'B'.repeat(43)}` } });
    expect(wrongBody.status).toBe(403);
    // Any other value is a wrong token too (403, not a 400 that would tell its shape).
    expect((await step(t, a.agent_id, tr.transfer_id, 'accept', { token: 'guess' })).status).toBe(403);
    expect(await transferRow(tr.transfer_id)).toMatchObject({ status: 'pending', resolved_by: null });
    expect(await ownerOf(t, a.agent_id)).toBe(from);
    expect((await eventsOf(t, tr.transfer_id)).map((e) => e.event_type)).toEqual(['ownership.transfer_requested']);

    const ok = await step(t, a.agent_id, tr.transfer_id, 'accept', { token: tr.acceptance_token });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ status: 'accepted', resolved_by: to });
    const agent = (await t.call('api', 'GET', `/api/agents/${a.agent_id}`, { admin: true })).body;
    expect(agent).toMatchObject({ owner_id: to, owner_name: null, owner_verified: false });
    const ev = await eventsOf(t, tr.transfer_id);
    expect(ev.map((e) => e.event_type)).toEqual(['ownership.transfer_requested', 'ownership.transfer_accepted']);
    expect(ev[1]).toMatchObject({ actor: to, before: { status: 'pending', owner_id: from }, after: { status: 'accepted', owner_id: to, reason: 'team change' } });
    // The same, as an auditor reads it (newest first), with the admin key that carried each call.
    const listed = await t.call('api', 'GET', `/api/audit/events?resource_type=ownership_transfer&resource_id=${tr.transfer_id}`, { admin: true });
    expect(listed.status).toBe(200);
    expect(listed.body.events.map((e: any) => [e.event_type, e.actor, e.leaf_index])).toEqual([
      ['ownership.transfer_accepted', to, Number(ev[1].leaf_index)],
      ['ownership.transfer_requested', 'admin', Number(ev[0].leaf_index)],
    ]);
    expect(listed.body.events[0].after.presented_by).toBe('admin');

    // Not pending any more: 409 with the status (the token is still checked first).
    const again = await step(t, a.agent_id, tr.transfer_id, 'accept', { token: tr.acceptance_token });
    expect(again.status).toBe(409);
    expect(again.body.details).toMatchObject({ status: 'accepted' });
    expect((await step(t, a.agent_id, tr.transfer_id, 'accept')).status).toBe(403);
  });

  it('is 404 for an unknown transfer or another agent\'s, and 400 when header and body tokens differ', async () => {
    const a = await agentOwnedBy(t, ownerId());
    const b = await agentOwnedBy(t, ownerId());
    const tr = await requestTransfer(t, a.agent_id, ownerId());
    expect((await step(t, b.agent_id, tr.transfer_id, 'accept', { token: tr.acceptance_token })).status).toBe(404);
    expect((await step(t, a.agent_id, '00000000-0000-4000-8000-000000000000', 'accept', { token: tr.acceptance_token })).status).toBe(404);
    expect((await step(t, a.agent_id, 'not-a-uuid', 'accept', { token: tr.acceptance_token })).status).toBe(400);
    const mixed = await step(t, a.agent_id, tr.transfer_id, 'accept', { token: tr.acceptance_token, body: { acceptance_token: `ot_${'C'.repeat(43)}` } });
    expect(mixed.status).toBe(400);
    expect(await transferRow(tr.transfer_id)).toMatchObject({ status: 'pending' });
  });

  it('waits for effective_at (409 not_yet_effective), and the window counts from it', async () => {
    const a = await agentOwnedBy(t, ownerId());
    const to = ownerId();
    const effective = new Date(clock.now().getTime() + 10 * HOUR);
    const tr = await requestTransfer(t, a.agent_id, to, { effective_at: effective.toISOString() });
    expect(new Date(tr.expires_at).getTime()).toBe(new Date(tr.effective_at).getTime() + 72 * HOUR);
    const early = await step(t, a.agent_id, tr.transfer_id, 'accept', { token: tr.acceptance_token });
    expect(early.status).toBe(409);
    expect(early.body.details).toMatchObject({ rule: 'not_yet_effective' });
    expect(await ownerOf(t, a.agent_id)).toBe(a.owner_id);
    clock.advance(11 * HOUR);
    const ok = await step(t, a.agent_id, tr.transfer_id, 'accept', { body: { acceptance_token: tr.acceptance_token } });
    expect(ok.status).toBe(200);
    expect(await ownerOf(t, a.agent_id)).toBe(to);
  });
});

describe('reject and cancel', () => {
  it('reject needs the token, leaves the owner, and records the incoming owner', async () => {
    const from = ownerId();
    const to = ownerId();
    const a = await agentOwnedBy(t, from);
    const tr = await requestTransfer(t, a.agent_id, to);
    expect((await step(t, a.agent_id, tr.transfer_id, 'reject')).status).toBe(403);
    expect(await transferRow(tr.transfer_id)).toMatchObject({ status: 'pending' });
    const r = await step(t, a.agent_id, tr.transfer_id, 'reject', { token: tr.acceptance_token });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'rejected', resolved_by: to });
    expect(await ownerOf(t, a.agent_id)).toBe(from);
    expect((await step(t, a.agent_id, tr.transfer_id, 'accept', { token: tr.acceptance_token })).status).toBe(409);
    expect((await eventsOf(t, tr.transfer_id)).map((e) => [e.event_type, e.actor])).toEqual([
      ['ownership.transfer_requested', expect.any(String)],
      ['ownership.transfer_rejected', to],
    ]);
  });

  it('cancel closes a pending transfer once; a new transfer can then be requested', async () => {
    const from = ownerId();
    const a = await agentOwnedBy(t, from);
    const tr = await requestTransfer(t, a.agent_id, ownerId());
    const r = await step(t, a.agent_id, tr.transfer_id, 'cancel');
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('cancelled');
    const again = await step(t, a.agent_id, tr.transfer_id, 'cancel');
    expect(again.status).toBe(409);
    expect(again.body.details).toEqual({ status: 'cancelled' });
    expect((await step(t, a.agent_id, tr.transfer_id, 'force-assign')).status).toBe(409);
    expect(await ownerOf(t, a.agent_id)).toBe(from);
    await requestTransfer(t, a.agent_id, ownerId());
    expect((await eventsOf(t, tr.transfer_id)).map((e) => e.event_type)).toEqual(['ownership.transfer_requested', 'ownership.transfer_cancelled']);
  });
});

describe('expiry and force-assign', () => {
  it('a pending transfer expires after the window with an escalation; accept is then 409; an admin can force-assign', async () => {
    const from = ownerId();
    const to = ownerId();
    const a = await agentOwnedBy(t, from);
    const tr = await requestTransfer(t, a.agent_id, to);
    clock.advance(71 * HOUR);
    expect(await expireDueTransfers(t.ctx, { agentId: a.agent_id })).toBe(0);
    expect(await transferRow(tr.transfer_id)).toMatchObject({ status: 'pending' });
    clock.advance(2 * HOUR);
    expect(await expireDueTransfers(t.ctx, { agentId: a.agent_id })).toBe(1);
    expect(await transferRow(tr.transfer_id)).toMatchObject({ status: 'expired', resolved_by: 'system:transfer-expiry' });
    expect(await ownerOf(t, a.agent_id)).toBe(from);
    const ev = await eventsOf(t, tr.transfer_id);
    expect(ev.map((e) => [e.event_type, e.actor])).toEqual([
      ['ownership.transfer_requested', expect.any(String)],
      ['ownership.transfer_expired', 'system:transfer-expiry'],
      ['ownership.escalated', 'system:transfer-expiry'],
    ]);
    expect(ev[2].after).toMatchObject({ escalated_to: 'admin', agent_id: a.agent_id });
    expect(t.logs.some((l) => l.includes('escalated to an admin') && l.includes(tr.transfer_id))).toBe(true);
    const late = await step(t, a.agent_id, tr.transfer_id, 'accept', { token: tr.acceptance_token });
    expect(late.status).toBe(409);
    expect(late.body.details).toMatchObject({ status: 'expired' });

    const forced = await step(t, a.agent_id, tr.transfer_id, 'force-assign', { body: { reason: 'owner unreachable' } });
    expect(forced.status).toBe(200);
    expect(forced.body.status).toBe('force_assigned');
    expect(await ownerOf(t, a.agent_id)).toBe(to);
    const all = await eventsOf(t, tr.transfer_id);
    // The acting admin (not the incoming owner, not a job) completed it.
    expect(forced.body.resolved_by).toBe(all.at(-1).actor);
    expect([to, from]).not.toContain(forced.body.resolved_by);
    expect(forced.body.resolved_by).not.toMatch(/^system:/);
    expect(all.at(-1)).toMatchObject({ event_type: 'ownership.force_assigned', before: { status: 'expired', owner_id: from }, after: { status: 'force_assigned', owner_id: to, reason: 'owner unreachable' } });
    expect((await step(t, a.agent_id, tr.transfer_id, 'force-assign')).status).toBe(409);
  });

  it('a read applies a due expiry lazily', async () => {
    const a = await agentOwnedBy(t, ownerId());
    await requestTransfer(t, a.agent_id, ownerId());
    clock.advance(73 * HOUR);
    const h = await t.call('api', 'GET', `/api/agents/${a.agent_id}/ownership/history`, { admin: true });
    expect(h.body.transfers[0].status).toBe('expired');
    expect(h.body.transfers[0].steps.map((s: any) => s.event_type)).toEqual(['ownership.transfer_requested', 'ownership.transfer_expired', 'ownership.escalated']);
    // An expired transfer no longer blocks a new one.
    await requestTransfer(t, a.agent_id, ownerId());
  });

  it('force-assign of a pending transfer completes it; of a stale expired one (owner changed since) is 409', async () => {
    const a = await agentOwnedBy(t, ownerId());
    const first = await requestTransfer(t, a.agent_id, ownerId());
    clock.advance(73 * HOUR);
    const second = await requestTransfer(t, a.agent_id, ownerId());
    // Another transfer is pending: the expired one cannot be forced.
    expect((await step(t, a.agent_id, first.transfer_id, 'force-assign')).status).toBe(409);
    const ok = await step(t, a.agent_id, second.transfer_id, 'force-assign');
    expect(ok.status).toBe(200);
    expect(await ownerOf(t, a.agent_id)).toBe(second.to_owner_id);
    const stale = await step(t, a.agent_id, first.transfer_id, 'force-assign');
    expect(stale.status).toBe(409);
    expect(await ownerOf(t, a.agent_id)).toBe(second.to_owner_id);
  });
});

describe('owner deactivation', () => {
  it('starts a transfer to the org admin for each agent held with nothing in flight; cancels transfers to the owner', async () => {
    const x = ownerId('x');
    const y = ownerId('y');
    const a1 = await agentOwnedBy(t, x);
    const a2 = await agentOwnedBy(t, x);
    const a3 = await agentOwnedBy(t, x);
    const b = await agentOwnedBy(t, y);
    const inFlight = await requestTransfer(t, a3.agent_id, y);
    const toX = await requestTransfer(t, b.agent_id, x);
    const r = await t.call('api', 'POST', `/api/owners/${x}/deactivate`, { admin: true });
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.body.owner).toMatchObject({ owner_id: x, status: 'deactivated' });
    expect(r.body.started.map((s: any) => [s.agent_id, s.from_owner_id, s.to_owner_id, s.status]).sort()).toEqual(
      [
        [a1.agent_id, x, 'org-admin', 'pending'],
        [a2.agent_id, x, 'org-admin', 'pending'],
      ].sort(),
    );
    expect(r.body.started.every((s: any) => /^ot_/.test(s.acceptance_token))).toBe(true);
    expect(r.body.cancelled.map((c: any) => [c.transfer_id, c.status, c.resolved_by])).toEqual([[toX.transfer_id, 'cancelled', 'system:owner-deactivated']]);
    // Every agent still has an owner; a3 keeps its transfer in flight; b stays with y.
    for (const a of [a1, a2, a3]) expect(await ownerOf(t, a.agent_id)).toBe(x);
    expect(await ownerOf(t, b.agent_id)).toBe(y);
    expect(await transferRow(inFlight.transfer_id)).toMatchObject({ status: 'pending' });
    const ev = await eventsOf(t, x);
    expect(ev.map((e) => [e.event_type, e.resource_type])).toEqual([['owner.deactivated', 'owner']]);

    // The org admin accepts one with its token.
    const s1 = r.body.started.find((s: any) => s.agent_id === a1.agent_id);
    expect((await step(t, a1.agent_id, s1.transfer_id, 'accept', { token: s1.acceptance_token })).status).toBe(200);
    expect(await ownerOf(t, a1.agent_id)).toBe('org-admin');

    // A deactivated owner receives nothing; it cannot be deactivated twice.
    const c = await agentOwnedBy(t, ownerId());
    expect((await t.call('api', 'POST', `/api/agents/${c.agent_id}/ownership/transfer`, { admin: true, body: { to_owner_id: x, reason: 'no' } })).status).toBe(409);
    expect((await t.call('api', 'POST', `/api/owners/${x}/deactivate`, { admin: true })).status).toBe(409);

    // y rejects a3's transfer: a3's owner x is deactivated, so a transfer to the org admin starts.
    const rej = await step(t, a3.agent_id, inFlight.transfer_id, 'reject', { token: inFlight.acceptance_token });
    expect(rej.status).toBe(200);
    const h = await t.call('api', 'GET', `/api/agents/${a3.agent_id}/ownership/history`, { admin: true });
    expect(h.body.transfers.map((x2: any) => [x2.to_owner_id, x2.status])).toEqual([
      [y, 'rejected'],
      ['org-admin', 'pending'],
    ]);
  });

  it('refuses the org admin (409) and an unknown owner (404)', async () => {
    expect((await t.call('api', 'POST', '/api/owners/org-admin/deactivate', { admin: true })).status).toBe(409);
    expect((await t.call('api', 'POST', `/api/owners/${ownerId('never')}/deactivate`, { admin: true })).status).toBe(404);
    expect((await t.call('api', 'POST', '/api/owners/bad%20id/deactivate', { admin: true })).status).toBe(400);
  });
});

describe('history', () => {
  it('is the chain of custody with each step\'s event leaf_index', async () => {
    const o1 = ownerId('h1');
    const o2 = ownerId('h2');
    const o3 = ownerId('h3');
    const a = await agentOwnedBy(t, o1);
    const t1 = await requestTransfer(t, a.agent_id, o2, { reason: 'first move' });
    clock.advance(1000);
    expect((await step(t, a.agent_id, t1.transfer_id, 'accept', { token: t1.acceptance_token })).status).toBe(200);
    clock.advance(1000);
    const t2 = await requestTransfer(t, a.agent_id, o3, { reason: 'rejected move' });
    expect((await step(t, a.agent_id, t2.transfer_id, 'reject', { token: t2.acceptance_token })).status).toBe(200);
    clock.advance(1000);
    const t3 = await requestTransfer(t, a.agent_id, o3, { reason: 'second move' });
    clock.advance(1000);
    expect((await step(t, a.agent_id, t3.transfer_id, 'force-assign')).status).toBe(200);

    const h = await t.call('api', 'GET', `/api/agents/${a.agent_id}/ownership/history`, { admin: true });
    expect(h.status).toBe(200);
    expect(h.body.owner_id).toBe(o3);
    expect(h.body.holders.map((x: any) => [x.owner_id, x.acquired_via, x.reason])).toEqual([
      [o1, 'registered', null],
      [o2, 'accepted', 'first move'],
      [o3, 'force_assigned', 'second move'],
    ]);
    const [first, second, third] = h.body.holders;
    expect(first.until).toBe(second.from);
    expect(second.until).toBe(third.from);
    expect(third.until).toBeNull();
    expect(second.accepted_by).toBe(o2);
    const [created] = await eventsOf(t, a.agent_id);
    expect(created.event_type).toBe('agent.created');
    expect(first.leaf_index).toBe(Number(created.leaf_index));
    const ev = await eventsOf(t, t1.transfer_id, t3.transfer_id);
    const leaf = (type: string, id: string) => Number(ev.find((e) => e.event_type === type && e.resource_id === id).leaf_index);
    expect(second.leaf_index).toBe(leaf('ownership.transfer_accepted', t1.transfer_id));
    expect(third.leaf_index).toBe(leaf('ownership.force_assigned', t3.transfer_id));
    expect(h.body.transfers.map((x: any) => [x.transfer_id, x.status, x.steps.map((s: any) => s.event_type)])).toEqual([
      [t1.transfer_id, 'accepted', ['ownership.transfer_requested', 'ownership.transfer_accepted']],
      [t2.transfer_id, 'rejected', ['ownership.transfer_requested', 'ownership.transfer_rejected']],
      [t3.transfer_id, 'force_assigned', ['ownership.transfer_requested', 'ownership.force_assigned']],
    ]);
    expect((await t.call('api', 'GET', '/api/agents/agent:no-such/ownership/history', { admin: true })).status).toBe(404);
    // Every step is in the verified chain of management events.
    const v = await t.call('api', 'GET', '/api/audit/verify', { admin: true });
    expect(v.body.management_events).toMatchObject({ status: 'ok', tampered_at_sequence: null });
  });
});
