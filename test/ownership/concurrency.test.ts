/**
 * Concurrent owner deactivations on PostgreSQL (PGlite runs one query at a time, so this
 * belongs to the real-database run): two owners whose agents have transfers pending to each
 * other are deactivated at the same moment, over and over. Whatever the interleaving, every
 * agent keeps an owner, no agent has two pending transfers, and every agent held by a
 * deactivated owner has a transfer in flight (to the org admin, or one still pending elsewhere).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { REAL, startTestStack, type TestStack } from '../harness.js';
import { agentOwnedBy, ownerId, requestTransfer } from './fixtures.js';

let t: TestStack;
beforeAll(async () => {
  if (REAL) t = await startTestStack({ services: ['api'] });
});
afterAll(async () => {
  await t?.close();
});

it.runIf(REAL)('two owners deactivated at once never leave an agent ownerless or with two pending transfers', async () => {
  for (let round = 0; round < 8; round++) {
    const a = ownerId('ca');
    const b = ownerId('cb');
    const agents: string[] = [];
    // Held by a, pending to b; held by b, pending to a; held with nothing in flight.
    for (let i = 0; i < 3; i++) {
      const x = await agentOwnedBy(t, a);
      await requestTransfer(t, x.agent_id, b);
      const y = await agentOwnedBy(t, b);
      await requestTransfer(t, y.agent_id, a);
      agents.push(x.agent_id, y.agent_id, (await agentOwnedBy(t, a)).agent_id, (await agentOwnedBy(t, b)).agent_id);
    }
    const [ra, rb] = await Promise.all([
      t.call('api', 'POST', `/api/owners/${a}/deactivate`, { admin: true }),
      t.call('api', 'POST', `/api/owners/${b}/deactivate`, { admin: true }),
    ]);
    expect([ra.status, rb.status], JSON.stringify([ra.body, rb.body])).toEqual([200, 200]);
    const rows = await t.testDb.owner.query(
      `SELECT a.agent_id, a.owner_id,
              (SELECT count(*)::int FROM agent_ownership_transfers p WHERE p.agent_id = a.agent_id AND p.status = 'pending') AS pending,
              (SELECT p.to_owner_id FROM agent_ownership_transfers p WHERE p.agent_id = a.agent_id AND p.status = 'pending') AS pending_to
         FROM agents a WHERE a.agent_id = ANY($1::text[]) ORDER BY a.agent_id`,
      [agents],
    );
    expect(rows).toHaveLength(agents.length);
    for (const r of rows) {
      expect(r.owner_id, r.agent_id).toMatch(/^c[ab]-/);
      // Both owners are deactivated, so every agent must be on its way to the org admin, once.
      expect({ agent: r.agent_id, pending: r.pending, to: r.pending_to }).toEqual({ agent: r.agent_id, pending: 1, to: 'org-admin' });
    }
  }
});

it.runIf(REAL)('a concurrent accept and cancel of one transfer: exactly one wins, and the owner matches the winner', async () => {
  for (let round = 0; round < 10; round++) {
    const from = ownerId('race-from');
    const to = ownerId('race-to');
    const a = await agentOwnedBy(t, from);
    const tr = await requestTransfer(t, a.agent_id, to);
    const base = `/api/agents/${a.agent_id}/ownership/transfer/${tr.transfer_id}`;
    const [acc, can] = await Promise.all([
      t.call('api', 'POST', `${base}/accept`, { admin: true, headers: { 'x-acceptance-token': tr.acceptance_token } }),
      t.call('api', 'POST', `${base}/cancel`, { admin: true }),
    ]);
    expect([acc.status, can.status].sort(), JSON.stringify([acc.body, can.body])).toEqual([200, 409]);
    const [row] = await t.testDb.owner.query(`SELECT status FROM agent_ownership_transfers WHERE id = $1`, [tr.transfer_id]);
    const [agent] = await t.testDb.owner.query(`SELECT owner_id FROM agents WHERE agent_id = $1`, [a.agent_id]);
    const events = await t.testDb.owner.query(`SELECT event_type FROM audit_management_events WHERE resource_id = $1 ORDER BY event_sequence`, [tr.transfer_id]);
    if (acc.status === 200) {
      expect([row.status, agent.owner_id]).toEqual(['accepted', to]);
      expect(can.body.details).toEqual({ status: 'accepted' });
    } else {
      expect([row.status, agent.owner_id]).toEqual(['cancelled', from]);
      expect(acc.body.details).toMatchObject({ status: 'cancelled' });
    }
    expect(events.map((e: any) => e.event_type)).toEqual(['ownership.transfer_requested', `ownership.transfer_${row.status}`]);
  }
});
