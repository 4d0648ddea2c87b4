/**
 * The consistency token, whole-server (PGlite or PostgreSQL): context answers carry
 * `content_revision`, writes answer the revision they produced, and a request with
 * `at_least_revision` waits for it (and is answered) or is refused 409 / ABORTED after 2 s,
 * with its audit record. "Processes": P1 writes, P2 answers (two stacks on one database,
 * joined by a shared in-memory bus that the test can silence); on PostgreSQL also a spawned
 * OS process.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { createTestDb, REAL, REAL_REDIS, startTestStack, type TestDb, type TestStack } from '../../../test/harness.js';
import { issueKey, makeAgent, sharedBus } from '../../../test/identity/fixtures.js';
import { grpcClient, session } from '../../../test/context/fixtures.js';
import { corpusBundlePayload, publishCorpus, type PublishedCorpus } from '../../../test/fixtures/corpus.js';
import { spawnApi, type ServerProcess } from '../../../test/audit/server-process.js';

let testDb: TestDb;
let p1: TestStack;
let p2: TestStack;
let corpus: PublishedCorpus;
let key: string;
const bus = sharedBus();
const broker2 = bus.broker('memory');
const tag = `rev-${randomUUID().slice(0, 8)}:latest`;

beforeAll(async () => {
  testDb = await createTestDb();
  p1 = await startTestStack({ services: ['api'], testDb, broker: async () => bus.broker('memory') });
  p2 = await startTestStack({ services: ['api', 'context-grpc'], testDb, broker: async () => broker2 });
  corpus = await publishCorpus((s, m, p, o) => p1.call(s, m, p, o), { workload: 'W1' });
  const agent = await makeAgent(p1, { role_id: 'role:security', allowed_intents: ['code_review'] });
  key = (await issueKey(p1, agent.agent_id)).api_key;
  const r = await p1.call('api', 'POST', '/api/tags', { admin: true, body: { tag, bundle_id: corpus.project.id, bundle_version: corpus.project.version } });
  expect(r.status).toBe(201);
}, 120_000);
afterAll(async () => {
  await p1?.close();
  await p2?.close();
  await testDb?.close();
});

const ctx = (t: TestStack, body: Record<string, unknown>, apiKey: string | undefined = key) => t.call('api', 'POST', '/api/context', { body: { task_type: 'code_review', ...body }, apiKey });
/** A write through P1 (a tag move): its answer's content_revision. */
async function write(): Promise<number> {
  const r = await p1.call('api', 'PUT', `/api/tags/${tag}`, { admin: true, body: { bundle_id: corpus.project.id, bundle_version: corpus.project.version, description: randomUUID() } });
  expect(r.status).toBe(200);
  expect(Number.isInteger(r.body.content_revision)).toBe(true);
  return r.body.content_revision;
}

function grpcCall(req: Record<string, unknown>): Promise<{ res: any; err: (grpc.ServiceError & { metadata?: grpc.Metadata }) | null }> {
  return new Promise((resolve) => {
    const client = grpcClient(p2);
    client.RequestContext(req, (err: grpc.ServiceError | null, res: any) => {
      client.close();
      resolve({ res, err });
    });
  });
}

describe('content_revision', () => {
  it('is on every context answer, and writes answer the revision they produced', async () => {
    const w = await write();
    const a = await ctx(p1, {});
    expect(a.status).toBe(200);
    expect(a.body.content_revision).toBe(w); // P1 made the write: it has it at once
    // Each write produces the next revision.
    expect(await write()).toBe(w + 1);
    const pub = await p1.call('api', 'POST', '/api/bundles', { admin: true, body: { ...corpusBundlePayload('concerns/security.yaml'), version: '7.7.7' } });
    expect(pub.status).toBe(201);
    expect(pub.body.content_revision).toBe(w + 2);
    const dep = await p1.call('api', 'POST', '/api/deploy', { admin: true, body: { project_bundles: [corpus.project] } });
    expect(dep.status).toBe(201);
    expect(dep.body.content_revision).toBe(w + 3);
    // Not part of a stored deployment: reading it back has none.
    expect((await p1.call('api', 'GET', `/api/deployments/${dep.body.deployment_id}`, { admin: true })).body).not.toHaveProperty('content_revision');
  });

  it('is on gRPC answers too', async () => {
    const w = await write();
    const { res } = await grpcCall({ api_key: key, task_type: 'code_review', at_least_revision: w });
    expect(res.success).toBe(true);
    expect(res.content_revision).toBeGreaterThanOrEqual(w);
  });
});

describe('at_least_revision', () => {
  it('is answered at once by another process that has the revision', async () => {
    const w = await write();
    const r = await ctx(p2, { at_least_revision: w });
    expect(r.status).toBe(200);
    expect(r.body.content_revision).toBeGreaterThanOrEqual(w);
  });

  it.each([
    ['told by the broker', false],
    ['with the broker message lost (the counter is re-read)', true],
  ])('waits for a write through another process that lands within 2 s: %s', async (_, silent) => {
    const w = await write();
    broker2.silent = silent;
    try {
      const asked = ctx(p2, { at_least_revision: w + 1 });
      await new Promise((r) => setTimeout(r, 200));
      const produced = await write();
      const r = await asked;
      expect(produced).toBe(w + 1);
      expect(r.status).toBe(200);
      expect(r.body.content_revision).toBeGreaterThanOrEqual(w + 1);
    } finally {
      broker2.silent = false;
    }
  });

  it('is refused 409 with the general error body when the revision does not arrive, and audited', async () => {
    const w = await write();
    const wanted = w + 1000;
    const r = await ctx(p2, { at_least_revision: wanted });
    expect(r.status).toBe(409);
    expect(r.body).toEqual({
      error: 'conflict',
      message: expect.stringContaining(String(wanted)),
      details: { content_revision: expect.any(Number), at_least_revision: wanted, request_id: expect.any(String), audit_leaf_index: expect.any(Number) },
    });
    expect(r.body.details.content_revision).toBeGreaterThanOrEqual(w);
    expect(r.body.details.content_revision).toBeLessThan(wanted);
    const [rec] = await testDb.db.query<Record<string, any>>('SELECT * FROM agent_context_requests WHERE request_id = $1', [r.body.details.request_id]);
    expect(rec).toMatchObject({ intent_valid: true, context_scd_ids: null, task_type: 'code_review' });
    expect(Number(rec!.leaf_index)).toBe(r.body.details.audit_leaf_index);
    expect(rec!.validation_errors).toEqual({ error_code: 'REVISION_NOT_REACHED', error_message: r.body.message, content_revision: r.body.details.content_revision, at_least_revision: wanted });
  });

  it('is refused ABORTED on gRPC (grpc-js and Connect), after its audit record', async () => {
    const wanted = (await write()) + 1000;
    const { err } = await grpcCall({ api_key: key, task_type: 'code_review', at_least_revision: wanted });
    expect(err?.code).toBe(grpc.status.ABORTED);
    expect(err?.details).toContain(String(wanted));
    const requestId = String(err!.metadata!.get('svc-request-id')[0]);
    expect(Number(err!.metadata!.get('svc-content-revision')[0])).toBeLessThan(wanted);
    const [rec] = await testDb.db.query<Record<string, any>>('SELECT validation_errors FROM agent_context_requests WHERE request_id = $1', [requestId]);
    expect(rec!.validation_errors.error_code).toBe('REVISION_NOT_REACHED');

    const { createClient, ConnectError, Code } = await import('@connectrpc/connect');
    const node = await import('@connectrpc/connect-node');
    const { ContextService } = await import('../../../gen/proto/context_pb.js');
    const client = createClient(ContextService, node.createConnectTransport({ baseUrl: p2.url('context-grpc'), httpVersion: '2', sessionManager: session(p2) }));
    const e = await client.requestContext({ apiKey: key, taskType: 'code_review', atLeastRevision: BigInt(wanted) }).then(
      () => null,
      (x: unknown) => ConnectError.from(x),
    );
    expect(e?.code).toBe(Code.Aborted);
  });

  it.each([[-1], [1.5], ['7'], [2 ** 53], [null]])('refuses %j with 400 VALIDATION_ERROR (never a 500)', async (v) => {
    const r = await ctx(p2, { at_least_revision: v });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, error_code: 'VALIDATION_ERROR' });
  });

  it('refuses a negative revision on gRPC in-band with VALIDATION_ERROR', async () => {
    const { res } = await grpcCall({ api_key: key, task_type: 'code_review', at_least_revision: -1 });
    expect(res).toMatchObject({ success: false, error_code: 'VALIDATION_ERROR' });
  });

  it('checks the key and the intent first: a stranger or a forbidden intent is refused as before', async () => {
    const wanted = (await write()) + 1000;
    expect((await ctx(p2, { at_least_revision: wanted }, 'sk_nope')).status).toBe(401);
    expect((await ctx(p2, { task_type: 'launch', at_least_revision: wanted })).status).toBe(403);
  });
});

describe.runIf(REAL)('at_least_revision across OS processes (PostgreSQL)', () => {
  let proc: ServerProcess;
  let writer: TestStack;
  beforeAll(async () => {
    // The writer on the broker a real deployment uses (Redis when REDIS_URL is set).
    writer = await startTestStack({ services: ['api'], testDb });
    proc = await spawnApi(testDb.appUrl!, p1.config.deploymentId, { DATABASE_MIGRATION_URL: testDb.ownerUrl!, ...(REAL_REDIS && { REDIS_URL: process.env.REDIS_URL! }) });
  }, 180_000);
  afterAll(async () => {
    await proc?.kill('SIGKILL');
    await writer?.close();
  });

  it('a client that wrote through one process reads no older content from another', async () => {
    const move = () => writer.call('api', 'PUT', `/api/tags/${tag}`, { admin: true, body: { bundle_id: corpus.project.id, bundle_version: corpus.project.version, description: randomUUID() } });
    const post = (body: Record<string, unknown>) =>
      fetch(`${proc.url}/api/context`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify({ task_type: 'code_review', ...body }) });
    const w = (await move()).body.content_revision as number;
    const now = await post({ at_least_revision: w });
    expect(now.status).toBe(200);
    expect(((await now.json()) as any).content_revision).toBeGreaterThanOrEqual(w);
    // Waits for a write that lands within the window...
    const asked = post({ at_least_revision: w + 1 });
    await new Promise((r) => setTimeout(r, 200));
    expect((await move()).body.content_revision).toBe(w + 1);
    const later = await asked;
    expect(later.status).toBe(200);
    expect(((await later.json()) as any).content_revision).toBeGreaterThanOrEqual(w + 1);
    // ...and refuses one that does not.
    const never = await post({ at_least_revision: w + 1000 });
    expect(never.status).toBe(409);
    expect(((await never.json()) as any).details.at_least_revision).toBe(w + 1000);
  });
});
