/**
 * Ownership notices (spec 3.6): a transfer request notifies the incoming owner and an expiry
 * escalates to an admin, as JSON POSTed to OWNERSHIP_WEBHOOK after the change committed,
 * retried when the receiver fails, never carrying the acceptance token; a refused request
 * (rolled back) sends nothing.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { settableClock } from '../identity/fixtures.js';
import { expireDueTransfers } from '../../src/core/ownership/expire-transfers.js';
import { agentOwnedBy, ownerId, requestTransfer } from './fixtures.js';

const HOUR = 3_600_000;
const clock = settableClock();
const received: Array<Record<string, any>> = [];
let refusals = 1;
let receiver: http.Server;
let t: TestStack;

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      // The first delivery is refused: the sender retries.
      if (refusals > 0) {
        refusals--;
        res.writeHead(503, { connection: 'close' }).end();
        return;
      }
      received.push(JSON.parse(body));
      res.writeHead(204, { connection: 'close' }).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/ownership`;
  t = await startTestStack({ services: ['api'], clock, env: { OWNERSHIP_WEBHOOK: url } });
});
afterAll(async () => {
  await t?.close();
  await new Promise((r) => receiver.close(r));
});

async function until(pred: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !pred(); i++) await new Promise((r) => setTimeout(r, 25));
}

describe('ownership notices', () => {
  it('a request notifies the incoming owner (retried, no token); a refused request sends nothing; an expiry escalates', async () => {
    const from = ownerId('from');
    const to = ownerId('to');
    const agent = await agentOwnedBy(t, from);
    const created = await requestTransfer(t, agent.agent_id, to);
    await until(() => received.length >= 1);
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ type: 'ownership.transfer_requested', transfer_id: created.transfer_id, agent_id: agent.agent_id, from_owner_id: from, to_owner_id: to, status: 'pending' });
    expect(JSON.stringify(received)).not.toContain(created.acceptance_token);
    // A second pending transfer of the agent is refused (409): rolled back, no notice.
    const refused = await t.call('api', 'POST', `/api/agents/${agent.agent_id}/ownership/transfer`, { admin: true, body: { to_owner_id: ownerId('other'), reason: 'again' } });
    expect(refused.status).toBe(409);
    // Past the window: expired, escalated to an admin.
    clock.advance(73 * HOUR);
    expect(await expireDueTransfers(t.ctx)).toBeGreaterThanOrEqual(1);
    await until(() => received.length >= 2);
    expect(received.map((n) => n.type)).toEqual(['ownership.transfer_requested', 'ownership.escalated']);
    expect(received[1]).toMatchObject({ transfer_id: created.transfer_id, status: 'expired', escalated_to: 'admin' });
  });
});
