/**
 * Management events commit with their change (issue 22), on PostgreSQL across OS processes:
 * a spawned API server takes agent creations and status changes from 16 clients and is killed
 * with SIGKILL mid-way. Afterwards every agent has exactly one `agent.created` event, every
 * event names a change that is stored (its agent exists, and each agent's status is the one its
 * last status event says), every acknowledged change has its event, and the events' chain and
 * the whole audit log verify.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, createTestDb, REAL, startTestStack, type TestDb, type TestStack } from '../harness.js';
import { spawnApi, type ServerProcess } from './server-process.js';
import { verifyManagementEvents } from '../../src/core/audit/verify-events.js';

describe.runIf(REAL)('management events and SIGKILL (PostgreSQL)', () => {
  let testDb: TestDb;
  let t: TestStack;
  let proc: ServerProcess | undefined;

  beforeAll(async () => {
    testDb = await createTestDb();
    t = await startTestStack({ services: ['api'], testDb });
  }, 120_000);
  afterAll(async () => {
    await proc?.kill('SIGKILL');
    await t?.close();
    await testDb?.close();
  });

  it('every change has its event and every event its change, whatever the kill interrupted', async () => {
    proc = await spawnApi(testDb.appUrl!, t.config.deploymentId, { DATABASE_MIGRATION_URL: testDb.ownerUrl! });
    const prefix = `agent:crash-${randomUUID().slice(0, 8)}`;
    const acked: Array<{ agent: string; status: string }> = [];
    let killed = false;
    const call = async (method: string, p: string, body: unknown) => {
      const res = await fetch(proc!.url + p, { method, headers: { 'x-admin-key': ADMIN_KEY, 'content-type': 'application/json', connection: 'close' }, body: JSON.stringify(body) });
      await res.text();
      return res.status;
    };
    const client = async (c: number) => {
      for (let i = 0; !killed; i++) {
        const agent = `${prefix}-${c}-${i}`;
        try {
          if ((await call('POST', '/api/agents', { agent_id: agent, name: 'n', role_id: 'role:r', allowed_intents: ['triage'] })) !== 201) continue;
          acked.push({ agent, status: 'active' });
          if ((await call('PUT', `/api/agents/${agent}`, { status: 'suspended' })) === 200) acked.push({ agent, status: 'suspended' });
        } catch {
          return; // the server is gone
        }
      }
    };
    const clients = Promise.all(Array.from({ length: 16 }, (_, c) => client(c)));
    const deadline = Date.now() + 60_000;
    while (acked.length < 150 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await proc.kill('SIGKILL');
    killed = true;
    await clients;
    expect(acked.length).toBeGreaterThanOrEqual(150);

    const agents = await testDb.db.query<{ agent_id: string; status: string }>('SELECT agent_id, status FROM agents WHERE agent_id LIKE $1', [`${prefix}-%`]);
    const events = await testDb.db.query<{ resource_id: string; event_type: string; event_sequence: string }>(
      `SELECT resource_id, event_type, event_sequence FROM audit_management_events WHERE resource_type = 'agent' AND resource_id LIKE $1 ORDER BY event_sequence`,
      [`${prefix}-%`],
    );
    const stored = new Map(agents.map((a) => [a.agent_id, a.status]));
    const created = new Map<string, number>();
    const lastStatus = new Map<string, string>();
    for (const e of events) {
      expect(stored.has(e.resource_id), `event ${e.event_type} of ${e.resource_id} without its agent`).toBe(true);
      if (e.event_type === 'agent.created') created.set(e.resource_id, (created.get(e.resource_id) ?? 0) + 1);
      lastStatus.set(e.resource_id, e.event_type === 'agent.suspended' ? 'suspended' : 'active');
    }
    for (const [agent, status] of stored) {
      expect(created.get(agent), `agent ${agent} without its agent.created event`).toBe(1);
      expect(lastStatus.get(agent), `agent ${agent}'s status without its event`).toBe(status);
    }
    for (const a of acked) expect(stored.has(a.agent)).toBe(true);
    for (const a of acked.filter((x) => x.status === 'suspended')) expect(stored.get(a.agent)).toBe('suspended');

    const [g] = await testDb.db.query<{ genesis_hash: string }>('SELECT genesis_hash FROM audit_chain_genesis');
    expect(await verifyManagementEvents(t.ctx, g!.genesis_hash)).toMatchObject({ status: 'ok' });
    const v = await t.call('api', 'GET', '/api/audit/verify', { admin: true });
    expect(v.body.status).toBe('ok');
  }, 180_000);
});
