/** Server shutdown ends every Subscribe stream cleanly (UNAVAILABLE), records the end, and does not wait for the drain timeout. */
import { afterAll, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { createTestDb, startTestStack, type TestDb } from '../harness.js';
import { fanout } from '../../src/context/fanout/index.js';
import { agentWithKey, grpcClient, Stream, taggedBundle } from './fixtures.js';

let db: TestDb | undefined;
afterAll(async () => {
  await db?.close();
});

it('closing the server ends open streams with UNAVAILABLE and records server_shutdown', async () => {
  db = await createTestDb();
  const t = await startTestStack({ testDb: db, services: ['api', 'context-grpc'] });
  const client = grpcClient(t);
  try {
    const { tag } = await taggedBundle(t);
    const a = await agentWithKey(t);
    const streams = [0, 1, 2].map(() => new Stream(client, { tag, agent_id: a.agentId, auth_token: a.token }));
    for (const s of streams) await s.contextCount(1);
    expect(fanout(t.ctx).count(tag)).toBe(3);

    const started = Date.now();
    await t.stack.close();
    expect(Date.now() - started).toBeLessThan(3000); // not the 5 s drain timeout
    for (const s of streams) {
      const st = await s.ended();
      expect(st.code).toBe(grpc.status.UNAVAILABLE);
      expect(st.details).toMatch(/shutting down/);
    }
    expect(fanout(t.ctx).count()).toBe(0);
    const rows = await db.db.query<{ ended_at: Date | null; end_reason: string | null }>('SELECT ended_at, end_reason FROM active_subscriptions WHERE agent_id = $1', [a.agentId]);
    expect(rows).toHaveLength(3);
    expect(rows.every((r) => r.ended_at !== null && r.end_reason === 'server_shutdown')).toBe(true);
    const ev = await db.db.query<{ n: number }>("SELECT count(*)::int AS n FROM context_service_events WHERE event_type = 'unsubscribe' AND agent_id = $1", [a.agentId]);
    expect(ev[0]!.n).toBe(3);
  } finally {
    client.close();
    await t.close();
  }
}, 120_000);
