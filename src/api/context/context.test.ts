/**
 * The context API end to end (REST and gRPC against the real services, PGlite or
 * PostgreSQL): the six steps, the error bodies, key scopes, and one committed audit record
 * per request whatever its outcome, on the real W1 corpus.
 */
import { gzipSync } from 'node:zlib';
import { randomBytes, randomUUID } from 'node:crypto';
import http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../../../test/harness.js';
import { issueKey, makeAgent } from '../../../test/identity/fixtures.js';
import { grpcClient, session } from '../../../test/context/fixtures.js';
import { publishCorpus, type PublishedCorpus } from '../../../test/fixtures/corpus.js';
import { recomputeChain } from '../../../test/audit/recompute.js';

let t: TestStack;
let corpus: PublishedCorpus;
let agent: any;
let key: any;

beforeAll(async () => {
  t = await startTestStack({ services: ['api', 'context-grpc'] });
  corpus = await publishCorpus((s, m, p, o) => t.call(s, m, p, o), { workload: 'W1' });
  agent = await makeAgent(t, { role_id: 'role:security', allowed_intents: ['code_review', 'triage'] });
  key = await issueKey(t, agent.agent_id);
});
afterAll(async () => {
  await t?.close();
});

const ctxCall = (body: unknown, apiKey?: string, headers?: Record<string, string>) => t.call('api', 'POST', '/api/context', { body, apiKey, headers });

async function recordOf(requestId: string): Promise<Record<string, any>> {
  const rows = await t.testDb.db.query('SELECT * FROM agent_context_requests WHERE request_id = $1', [requestId]);
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

async function count(): Promise<number> {
  const [r] = await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM agent_context_requests');
  return Number(r!.n);
}

describe('POST /api/context', () => {
  it('serves the role-scoped context (W1) and records it', async () => {
    const r = await ctxCall({ task_type: 'code_review', params: { repo: 'svc', pr: '42' } }, key.api_key);
    expect(r.status).toBe(200);
    const want = [...corpus.metaScdIds, ...corpus.concernScds.security!];
    expect(r.body).toMatchObject({ success: true, agent_id: agent.agent_id, role_id: 'role:security', task_type: 'code_review' });
    expect([...r.body.scd_ids].sort()).toEqual([...want].sort());
    expect(Object.keys(r.body.scd_content).sort()).toEqual([...want].sort());
    expect(r.body.context_bundle_ids).toEqual(expect.arrayContaining([corpus.concernBundles.security]));
    expect(typeof r.body.timestamp).toBe('number');
    expect(Math.abs(r.body.timestamp - Date.now() / 1000)).toBeLessThan(60);
    expect(r.headers.get('x-request-id')).toBe(r.body.request_id);
    const rec = await recordOf(r.body.request_id);
    expect(rec).toMatchObject({ agent_id: agent.agent_id, task_type: 'code_review', intent_valid: true, validation_errors: null, request_params: { repo: 'svc', pr: '42' } });
    expect(rec.context_scd_ids).toEqual(r.body.scd_ids);
    expect(rec.context_bundle_ids).toEqual(r.body.context_bundle_ids);
    expect(rec.processing_time_ms).toBe(r.body.processing_time_ms);
  });

  it.each([
    ['a missing key', undefined, 'API key missing'],
    ['an unknown key', `sk_${randomBytes(30).toString('base64url').replace(/[-_]/g, 'a').slice(0, 40)}`, 'Invalid API key'],
    ['a malformed key', 'not-a-key', 'Invalid API key'],
  ])('refuses %s with 401 AUTH_FAILED and records it with no agent', async (_, apiKey, message) => {
    const r = await ctxCall({ task_type: 'code_review' }, apiKey);
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ success: false, error_code: 'AUTH_FAILED', error_message: message, request_id: expect.any(String), audit_leaf_index: expect.any(Number) });
    const rec = await recordOf(r.body.request_id);
    expect(Number(rec.leaf_index)).toBe(r.body.audit_leaf_index);
    expect(rec).toMatchObject({ agent_id: null, task_type: 'code_review', intent_valid: false, context_scd_ids: null });
    expect(rec.validation_errors).toMatchObject({ error_code: 'AUTH_FAILED' });
  });

  it('refuses a revoked key, an expired key and a suspended agent with 401, recording the agent', async () => {
    const a = await makeAgent(t, { role_id: 'role:security', allowed_intents: ['code_review'] });
    const revoked = await issueKey(t, a.agent_id);
    expect((await t.call('api', 'DELETE', `/api/agents/${a.agent_id}/api-keys/${revoked.key_id}?revoked_by=tests`, { admin: true })).status).toBeLessThan(300);
    const r1 = await ctxCall({ task_type: 'code_review' }, revoked.api_key);
    expect(r1.status).toBe(401);
    expect(r1.body.error_message).toBe('API key revoked');
    expect((await recordOf(r1.body.request_id)).agent_id).toBe(a.agent_id);

    const expired = await issueKey(t, a.agent_id);
    await t.testDb.owner.query(`UPDATE agent_api_keys SET expires_at = now() - interval '1 minute' WHERE key_id = $1`, [expired.key_id]);
    const r2 = await ctxCall({ task_type: 'code_review' }, expired.api_key);
    expect(r2.status).toBe(401);
    expect(r2.body.error_message).toBe('API key expired');

    const live = await issueKey(t, a.agent_id);
    expect((await ctxCall({ task_type: 'code_review' }, live.api_key)).status).toBe(200);
    expect((await t.call('api', 'PUT', `/api/agents/${a.agent_id}`, { admin: true, body: { status: 'suspended' } })).status).toBe(200);
    const r3 = await ctxCall({ task_type: 'code_review' }, live.api_key);
    expect(r3.status).toBe(401);
    expect(r3.body.error_code).toBe('AUTH_FAILED');
    expect((await recordOf(r3.body.request_id)).agent_id).toBe(a.agent_id);
  });

  it('refuses an intent outside the allowed intents, and outside the key scopes, with 403', async () => {
    const r = await ctxCall({ task_type: 'deploy_prod' }, key.api_key);
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ success: false, error_code: 'INTENT_NOT_ALLOWED' });
    expect(await recordOf(r.body.request_id)).toMatchObject({ agent_id: agent.agent_id, task_type: 'deploy_prod', intent_valid: false, context_scd_ids: null });

    const scoped = await issueKey(t, agent.agent_id, { scopes: ['triage'] });
    expect((await ctxCall({ task_type: 'triage' }, scoped.api_key)).status).toBe(200);
    const r2 = await ctxCall({ task_type: 'code_review' }, scoped.api_key);
    expect(r2.status).toBe(403);
    expect(r2.body.error_message).toMatch(/scopes/);
  });

  it('answers 400 VALIDATION_ERROR for a bad body after authenticating, and records it', async () => {
    const cases: Array<[unknown, string]> = [
      [{}, ''],
      [{ task_type: 'code_review', extra: 1 }, 'code_review'],
      [{ task_type: 7 }, ''],
      [{ task_type: 'x'.repeat(129) }, 'x'.repeat(129)],
      [{ task_type: 'code_review', params: { a: 1 } }, 'code_review'],
      ['{not json', ''],
    ];
    for (const [body, task] of cases) {
      const r = await ctxCall(body, key.api_key);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body).toMatchObject({ success: false, error_code: 'VALIDATION_ERROR', request_id: expect.any(String) });
      const rec = await recordOf(r.body.request_id);
      expect(rec).toMatchObject({ agent_id: agent.agent_id, task_type: task, intent_valid: false });
      expect(rec.validation_errors.errors.length).toBeGreaterThan(0);
    }
    // Without a valid key the answer is 401 whatever the body.
    const r = await ctxCall('{not json');
    expect(r.status).toBe(401);
    expect(r.body.error_code).toBe('AUTH_FAILED');
  });

  it('answers a body over 16 MiB with 413 VALIDATION_ERROR (401 without a key), recorded', async () => {
    const big = JSON.stringify({ task_type: 'code_review', params: { x: 'y'.repeat(17 * 1024 * 1024) } });
    const r = await ctxCall(big, key.api_key);
    expect(r.status).toBe(413);
    expect(r.body).toMatchObject({ success: false, error_code: 'VALIDATION_ERROR', request_id: expect.any(String) });
    expect(await recordOf(r.body.request_id)).toMatchObject({ agent_id: agent.agent_id, task_type: '', intent_valid: false });
    const anon = await ctxCall(big);
    expect(anon.status).toBe(401);
    expect(anon.body.error_code).toBe('AUTH_FAILED');
  });

  it('answers the same through the edge as through the node:http fast path', async () => {
    // A chunked body (no Content-Length) leaves the request to the edge.
    const viaEdge = async (body: unknown, apiKey?: string) => {
      const text = JSON.stringify(body);
      const stream = new ReadableStream({ start: (c) => (c.enqueue(new TextEncoder().encode(text)), c.close()) });
      const res = await fetch(`${t.url('api')}/api/context`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', connection: 'close', ...(apiKey ? { 'x-api-key': apiKey } : {}) },
        body: stream,
        duplex: 'half',
      } as RequestInit);
      return { status: res.status, headers: res.headers, body: await res.json() };
    };
    const [fast, edge] = [await ctxCall({ task_type: 'code_review' }, key.api_key), await viaEdge({ task_type: 'code_review' }, key.api_key)];
    expect(edge.status).toBe(200);
    expect({ ...edge.body, request_id: 0, timestamp: 0, processing_time_ms: 0, audit_leaf_index: 0 }).toEqual({ ...fast.body, request_id: 0, timestamp: 0, processing_time_ms: 0, audit_leaf_index: 0 });
    expect(edge.body.audit_leaf_index).toBe(fast.body.audit_leaf_index + 1);
    expect(edge.headers.get('x-request-id')).toBe(edge.body.request_id);
    for (const [body, k, status] of [[{ task_type: 'code_review', extra: 1 }, key.api_key, 400], [{ task_type: 'nope' }, key.api_key, 403], [{ task_type: 'code_review' }, undefined, 401]] as const) {
      const a = await ctxCall(body, k);
      const b = await viaEdge(body, k);
      expect([a.status, b.status]).toEqual([status, status]);
      expect({ ...b.body, request_id: 0, audit_leaf_index: 0 }).toEqual({ ...a.body, request_id: 0, audit_leaf_index: 0 });
      expect(b.body.audit_leaf_index).toBe(a.body.audit_leaf_index + 1);
    }
  });

  it('applies overrides and restrictions (a restriction wins)', async () => {
    const security = corpus.concernScds.security!;
    const other = corpus.concernScds[Object.keys(corpus.concernScds).find((n) => n !== 'security')!]![0]!;
    const a = await makeAgent(t, { role_id: 'role:security', allowed_intents: ['code_review'], overrides: [other, security[1]], restrictions: [security[0], security[1]] });
    const k = await issueKey(t, a.agent_id);
    const r = await ctxCall({ task_type: 'code_review' }, k.api_key);
    expect(r.status).toBe(200);
    expect(r.body.scd_ids).toContain(other);
    expect(r.body.scd_ids).not.toContain(security[0]);
    expect(r.body.scd_ids).not.toContain(security[1]);
    expect(r.body.scd_ids).toContain(security[2]);
  });

  it('writes exactly one record per request, whatever the outcome', async () => {
    const before = await count();
    const bodies = [
      ...Array.from({ length: 20 }, () => ({ b: { task_type: 'code_review' }, k: key.api_key })),
      ...Array.from({ length: 5 }, () => ({ b: { task_type: 'nope' }, k: key.api_key })),
      ...Array.from({ length: 5 }, () => ({ b: { task_type: 'code_review' }, k: undefined })),
      ...Array.from({ length: 5 }, () => ({ b: { bad: true }, k: key.api_key })),
    ];
    const answers = await Promise.all(bodies.map((x) => ctxCall(x.b, x.k)));
    expect(answers.map((a) => a.status).sort()).toEqual([...Array(20).fill(200), ...Array(5).fill(400), ...Array(5).fill(401), ...Array(5).fill(403)].sort());
    expect(await count()).toBe(before + bodies.length);
    const ids = answers.map((a) => a.body.request_id);
    const rows = await t.testDb.db.query('SELECT request_id FROM agent_context_requests WHERE request_id = ANY($1::text[])', [ids]);
    expect(rows).toHaveLength(bodies.length);
  });

  it('records chain_id and parent_request_id, readable as a chain', async () => {
    const chainId = `chain-${randomUUID()}`;
    const r1 = await ctxCall({ task_type: 'code_review', chain_id: chainId }, key.api_key);
    const r2 = await ctxCall({ task_type: 'triage', chain_id: chainId, parent_request_id: r1.body.request_id }, key.api_key);
    const r3 = await ctxCall({ task_type: 'forbidden', chain_id: chainId, parent_request_id: r2.body.request_id }, key.api_key);
    expect([r1.status, r2.status, r3.status]).toEqual([200, 200, 403]);
    const c = await t.call('api', 'GET', `/api/audit/chain/${chainId}`, { admin: true });
    expect(c.status).toBe(200);
    expect(c.body.chain_id).toBe(chainId);
    expect(c.body.records.map((x: any) => [x.request_id, x.parent_request_id])).toEqual([
      [r1.body.request_id, null],
      [r2.body.request_id, r1.body.request_id],
      [r3.body.request_id, r2.body.request_id],
    ]);
    expect((await t.call('api', 'GET', `/api/audit/chain/none-${randomUUID()}`, { admin: true })).status).toBe(404);
  });
});

describe('gRPC RequestContext (an independent grpc-js client)', () => {
  const call = (req: Record<string, unknown>): Promise<any> =>
    new Promise((resolve, reject) => {
      const client = grpcClient(t);
      client.RequestContext(req, (err: Error | null, res: any) => {
        client.close();
        if (err) reject(err);
        else resolve(res);
      });
    });

  it('serves the same context as REST and records it', async () => {
    const rest = await ctxCall({ task_type: 'code_review' }, key.api_key);
    const res = await call({ api_key: key.api_key, task_type: 'code_review', params: { ticket: 'T-1' }, chain_id: 'g-chain' });
    expect(res).toMatchObject({ success: true, agent_id: agent.agent_id, role_id: 'role:security', task_type: 'code_review', error_code: '', error_message: '' });
    expect(res.scd_ids).toEqual(rest.body.scd_ids);
    expect(res.scd_content).toEqual(rest.body.scd_content);
    expect(res.context_bundle_ids).toEqual(rest.body.context_bundle_ids);
    expect(Number(res.timestamp)).toBeGreaterThan(1_700_000_000);
    expect(await recordOf(res.request_id)).toMatchObject({ agent_id: agent.agent_id, intent_valid: true, request_params: { ticket: 'T-1' }, chain_id: 'g-chain', parent_request_id: null });
  });

  it.each([
    ['Connect JSON', false, 'connect'],
    ['Connect binary', true, 'connect'],
    ['gRPC-Web binary', true, 'grpc-web'],
    ['Connect gRPC binary', true, 'grpc'],
  ] as const)('serves the same fields to a %s client', async (_, binary, protocol) => {
    const { createClient } = await import('@connectrpc/connect');
    const node = await import('@connectrpc/connect-node');
    const { ContextService } = await import('../../../gen/proto/context_pb.js');
    const baseUrl = t.url('context-grpc');
    const sessionManager = session(t);
    const transport =
      protocol === 'connect'
        ? node.createConnectTransport({ baseUrl, httpVersion: '2', useBinaryFormat: binary, sessionManager })
        : protocol === 'grpc-web'
          ? node.createGrpcWebTransport({ baseUrl, httpVersion: '2', useBinaryFormat: binary, sessionManager })
          : node.createGrpcTransport({ baseUrl, sessionManager });
    const client = createClient(ContextService, transport);
    const res = await client.requestContext({ apiKey: key.api_key, taskType: 'code_review' });
    const rest = await ctxCall({ task_type: 'code_review' }, key.api_key);
    expect(res.success).toBe(true);
    expect(res.scdIds).toEqual(rest.body.scd_ids);
    expect(res.scdContent).toEqual(rest.body.scd_content);
    expect(res.contextBundleIds).toEqual(rest.body.context_bundle_ids);
    const refused = await client.requestContext({ apiKey: 'sk_wrong', taskType: 'code_review' });
    expect(refused).toMatchObject({ success: false, errorCode: 'AUTH_FAILED', scdIds: [] });
  });

  it('answers refusals in-band and records them', async () => {
    const bad = await call({ api_key: 'sk_nope', task_type: 'code_review' });
    expect(bad).toMatchObject({ success: false, error_code: 'AUTH_FAILED', agent_id: '', scd_ids: [] });
    expect((await recordOf(bad.request_id)).agent_id).toBeNull();
    const denied = await call({ api_key: key.api_key, task_type: 'launch' });
    expect(denied).toMatchObject({ success: false, error_code: 'INTENT_NOT_ALLOWED', agent_id: agent.agent_id });
    const invalid = await call({ api_key: key.api_key, task_type: '' });
    expect(invalid).toMatchObject({ success: false, error_code: 'VALIDATION_ERROR' });
    expect((await recordOf(invalid.request_id)).validation_errors.errors[0].path).toBe('/task_type');
  });
});

describe('gRPC RequestContext: malformed calls on the direct binary path', () => {
  /** One raw HTTP/2 call: the status trailers and how many response bytes came first. */
  async function rawCall(session: http2.ClientHttp2Session, body: Buffer, headers: Record<string, string> = {}): Promise<{ status: string | undefined; bytes: number }> {
    const req = session.request({ ':method': 'POST', ':path': '/svc.context.v1.ContextService/RequestContext', 'content-type': 'application/grpc', te: 'trailers', ...headers });
    let bytes = 0;
    req.on('data', (d: Buffer) => (bytes += d.length));
    const done = new Promise<{ status: string | undefined; bytes: number }>((resolve, reject) => {
      let status: string | undefined;
      req.on('response', (h) => (status ??= h['grpc-status'] as string | undefined)); // a trailers-only answer
      req.on('trailers', (h) => (status = h['grpc-status'] as string | undefined));
      req.on('close', () => resolve({ status, bytes }));
      req.on('error', reject);
    });
    req.end(body);
    return done;
  }
  const frame = (msg: Buffer, flag = 0) => {
    const head = Buffer.alloc(5);
    head[0] = flag;
    head.writeUInt32BE(msg.length, 1);
    return Buffer.concat([head, msg]);
  };

  it('answers each with a gRPC status, writes no record, and keeps serving the session', async () => {
    const session = http2.connect(t.url('context-grpc'));
    try {
      const before = await count();
      const cases: Array<[string, Buffer, number]> = [
        ['no message', Buffer.alloc(0), 3],
        ['a prefix shorter than 5 bytes', Buffer.from([0, 0, 0]), 3],
        ['a length that does not match', Buffer.from([0, 0, 0, 0, 9, 1, 2]), 3],
        ['two messages', Buffer.concat([frame(Buffer.from([0x12, 0x01, 0x61])), frame(Buffer.from([0x12, 0x01, 0x61]))]), 3],
        ['bytes that are not a RequestContextRequest', frame(Buffer.from([0xff, 0xff, 0xff])), 3],
        ['a compressed flag without grpc-encoding', frame(Buffer.from([0x12, 0x01, 0x61]), 1), 13],
      ];
      for (const [name, body, code] of cases) {
        const r = await rawCall(session, body);
        expect({ name, status: r.status, bytes: r.bytes }).toEqual({ name, status: String(code), bytes: 0 });
      }
      expect(await count()).toBe(before);
      // The same session still serves a well-formed call, which is audited.
      const k = Buffer.from(key.api_key);
      const ok = await rawCall(session, frame(Buffer.concat([Buffer.from([0x0a, k.length]), k, Buffer.from([0x12, 11]), Buffer.from('code_review')])));
      expect(ok.status).toBe('0');
      expect(ok.bytes).toBeGreaterThan(10_000);
      expect(await count()).toBe(before + 1);
    } finally {
      session.close();
    }
  });
});

describe('gRPC RequestContext through the Connect router: size limits', () => {
  it('refuses a compressed message that inflates past 1 MiB (RESOURCE_EXHAUSTED), writes no record, keeps serving', async () => {
    const session = http2.connect(t.url('context-grpc'));
    try {
      const before = await count();
      const bomb = gzipSync(Buffer.alloc(8 << 20)); // about 8 KB on the wire
      const head = Buffer.alloc(5);
      head[0] = 1;
      head.writeUInt32BE(bomb.length, 1);
      const req = session.request({ ':method': 'POST', ':path': '/svc.context.v1.ContextService/RequestContext', 'content-type': 'application/grpc', 'grpc-encoding': 'gzip', te: 'trailers' });
      const status = await new Promise<string | undefined>((resolve, reject) => {
        let st: string | undefined;
        req.on('response', (h) => (st ??= h['grpc-status'] as string | undefined));
        req.on('trailers', (h) => (st = h['grpc-status'] as string | undefined));
        req.on('data', () => {});
        req.on('close', () => resolve(st));
        req.on('error', reject);
        req.end(Buffer.concat([head, bomb]));
      });
      expect(status).toBe('8');
      expect(await count()).toBe(before);
    } finally {
      session.close();
    }
  });
});

describe('the chain after all of the above', () => {
  it('verifies, and every stored hash matches an independent recomputation', async () => {
    const v = await t.call('api', 'GET', '/api/audit/verify', { admin: true });
    expect(v.status).toBe(200);
    expect(v.body).toMatchObject({ status: 'ok', tampered_at_sequence: null, legacy_record_count: 0 });
    // The context requests and the management events of the set-up (agents, keys).
    expect(v.body.record_count).toBe((await count()) + v.body.management_events.event_count);
    expect(v.body.deployment_id).toBe(t.config.deploymentId);
    expect((await recomputeChain(t.testDb.db)).mismatches).toEqual([]);
  });
});
