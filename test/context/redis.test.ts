/**
 * Fan-out across processes through Redis: a tag moved through process A's API reaches a
 * Subscribe stream on process B; when Redis goes away context requests keep working, and
 * when it returns every stream gets a fresh SNAPSHOT.
 *
 * "Processes" are two stacks with their own AppContext, broker connection and ports on one
 * database (what separates two processes here). With REAL_REDIS they use REDIS_URL; the
 * restart test always uses a private redis-server started on a free loopback port by the
 * test (never the shared one), and is skipped when redis-server is not installed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDb, freePort, REAL_REDIS, startTestStack, type TestDb, type TestStack } from '../harness.js';
import { createRedisBroker } from '../../src/shared/broker.js';
import { memoryLogger } from '../../src/shared/logger.js';
import { agentWithKey, grpcClient, moveTag, SNAPSHOT, sleep, Stream, taggedBundle, UPDATE } from './fixtures.js';

const HAVE_REDIS_SERVER = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

async function pingable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    sock.once('connect', () => sock.write('PING\r\n'));
    sock.once('data', (d) => {
      sock.destroy();
      resolve(d.toString().startsWith('+PONG'));
    });
    sock.once('error', () => resolve(false));
  });
}

/** A private redis-server on loopback that the test may kill and restart. */
class PrivateRedis {
  private proc: ChildProcess | null = null;
  constructor(readonly port: number) {}
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }
  static async start(): Promise<PrivateRedis> {
    const r = new PrivateRedis(await freePort());
    await r.up();
    return r;
  }
  async up(): Promise<void> {
    this.proc = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'], { stdio: 'ignore' });
    const deadline = Date.now() + 10_000;
    while (!(await pingable(this.port))) {
      if (Date.now() > deadline) throw new Error('private redis-server did not start');
      await sleep(50);
    }
  }
  async down(): Promise<void> {
    const p = this.proc;
    this.proc = null;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((resolve) => p.once('exit', resolve));
    p.kill('SIGKILL');
    await exited;
  }
}

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
}, 120_000);

/** Two stacks (A: api + context, B: context + api) on one database, each with its own broker. */
async function twoProcesses(brokerUrl: string | null): Promise<{ a: TestStack; b: TestStack; db: TestDb }> {
  const db = await createTestDb();
  cleanups.push(() => db.close());
  const broker = brokerUrl ? () => createRedisBroker(brokerUrl, memoryLogger()) : undefined;
  const services = ['api', 'context-grpc', 'context-webhook'] as const;
  const a = await startTestStack({ testDb: db, broker, services: [...services] });
  cleanups.push(() => a.close());
  const b = await startTestStack({ testDb: db, broker, services: [...services] });
  cleanups.push(() => b.close());
  expect(a.ctx.processId).not.toBe(b.ctx.processId);
  return { a, b, db };
}

describe.skipIf(!REAL_REDIS && !HAVE_REDIS_SERVER)('two processes through Redis', () => {
  it("a tag moved through A's API reaches a Subscribe stream on B", async () => {
    let url: string | null = null;
    if (!REAL_REDIS) {
      const redis = await PrivateRedis.start();
      cleanups.push(() => redis.down());
      url = redis.url;
    }
    const { a, b } = await twoProcesses(url);
    expect(a.broker.kind).toBe('redis');
    const { tag, bundleId } = await taggedBundle(a);
    const agent = await agentWithKey(a);
    const clientB = grpcClient(b);
    cleanups.push(() => clientB.close());
    const onB = new Stream(clientB, { tag, agent_id: agent.agentId, auth_token: agent.token });
    await onB.contextCount(1);
    expect(onB.contexts[0]).toMatchObject({ type: SNAPSHOT, bundle_version: '1.0.0' });
    await moveTag(a, tag, bundleId, '1.1.0');
    await onB.contextCount(2);
    expect(onB.contexts[1]).toMatchObject({ type: UPDATE, bundle_id: bundleId, bundle_version: '1.1.0' });
    const [open] = await b.ctx.db.query<{ process_id: string }>('SELECT process_id FROM active_subscriptions WHERE agent_id = $1', [agent.agentId]);
    expect(open!.process_id).toBe(b.ctx.processId);
    onB.cancel();
    await onB.ended();
  }, 180_000);
});

describe.skipIf(!HAVE_REDIS_SERVER)('Redis outage and return (private redis-server)', () => {
  it('keeps serving during the outage and resynchronizes every stream with a SNAPSHOT when Redis returns', async () => {
    const redis = await PrivateRedis.start();
    cleanups.push(() => redis.down());
    const { a, b } = await twoProcesses(redis.url);
    const { tag, bundleId } = await taggedBundle(a);
    const agent = await agentWithKey(a);
    const clientB = grpcClient(b);
    cleanups.push(() => clientB.close());
    const s1 = new Stream(clientB, { tag, agent_id: agent.agentId, auth_token: agent.token });
    const s2 = new Stream(clientB, { tag, agent_id: agent.agentId, auth_token: agent.apiKey });
    await s1.contextCount(1);
    await s2.contextCount(1);

    await redis.down();
    await sleep(300);
    // Redis is gone: the tag still moves, but its broker message is lost, so the open
    // streams still hold 1.0.0.
    await moveTag(a, tag, bundleId, '1.1.0');
    await sleep(500);
    expect(s1.contexts.map((m) => [m.type, m.sequence, m.bundle_version])).toEqual([[SNAPSHOT, 1, '1.0.0']]);
    // Tokens are still minted, context requests still answered, new streams still open
    // (their SNAPSHOT is read from the database; that read also brings this process's
    // other streams on the tag up to date).
    const minted = await a.call('api', 'POST', '/api/context/token', { apiKey: agent.apiKey });
    expect(minted.status).toBe(200);
    const ctxReq = await a.call('api', 'POST', '/api/context', { apiKey: agent.apiKey, body: { task_type: 'triage' } });
    if (ctxReq.status !== 501) expect(ctxReq.status).toBe(200);
    const s3 = new Stream(clientB, { tag, agent_id: agent.agentId, auth_token: minted.body.token });
    await s3.contextCount(1);
    expect(s3.contexts[0]).toMatchObject({ type: SNAPSHOT, bundle_version: '1.1.0' });
    for (const s of [s1, s2]) await s.contextCount(2);
    expect(s1.contexts[1]).toMatchObject({ type: UPDATE, bundle_version: '1.1.0' });

    // Redis returns: every stream of the process gets a fresh SNAPSHOT.
    await redis.up();
    for (const s of [s1, s2]) await s.contextCount(3, 20_000);
    await s3.contextCount(2, 20_000);
    for (const s of [s1, s2]) expect(s.contexts[2]).toMatchObject({ type: SNAPSHOT, bundle_version: '1.1.0' });
    expect(s3.contexts[1]).toMatchObject({ type: SNAPSHOT, bundle_version: '1.1.0' });
    for (const s of [s1, s2, s3]) expect(s.messages.map((m) => m.sequence)).toEqual(s.messages.map((_, i) => i + 1));
    // The resync event is recorded beside the delivery, not before it: wait for the row.
    let resyncs: Array<{ details: any }> = [];
    for (let i = 0; i < 100 && resyncs.length === 0; i++) {
      resyncs = await b.ctx.db.query<{ details: any }>("SELECT details FROM context_service_events WHERE event_type = 'resync' AND process_id = $1", [b.ctx.processId]);
      if (resyncs.length === 0) await sleep(100);
    }
    expect(resyncs.length).toBeGreaterThan(0);
    expect(resyncs[0]!.details).toMatchObject({ reason: 'broker_reconnect', streams: 3 });

    // And the broker carries moves again.
    await waitUntilConnected(a);
    await moveTag(a, tag, bundleId, '1.0.0');
    for (const s of [s1, s2]) await s.contextCount(4, 10_000);
    await s3.contextCount(3, 10_000);
    expect(s1.contexts[3]).toMatchObject({ type: UPDATE, bundle_version: '1.0.0' });
    for (const s of [s1, s2, s3]) s.cancel();
    for (const s of [s1, s2, s3]) await s.ended();
  }, 180_000);
});

async function waitUntilConnected(t: TestStack): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!t.broker.connected()) {
    if (Date.now() > deadline) throw new Error('broker did not reconnect');
    await sleep(100);
  }
}
