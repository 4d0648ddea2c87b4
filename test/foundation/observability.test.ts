/**
 * Metrics and request logs (issue 20), against the real services on port 0: every HTTP
 * service's `GET /metrics` parses as Prometheus text, the request histogram is labelled by
 * route template (never the raw path), the domain counters move after context requests on
 * REST and gRPC, no label value carries an agent id or a key; one request line per request
 * with its route template, status and request id, `X-Request-Id` taken or made and echoed,
 * and no key reaching a log line (headers, bodies, a handler's error).
 */
import http2 from 'node:http2';
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startTestStack, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { agentWithKey, grpcClient, Stream, taggedBundle } from '../context/fixtures.js';
import type { ServiceName } from '../../src/shared/service.js';
import { metricsText } from '../../src/shared/metrics.js';

let t: TestStack;
let agent: { agent_id: string };
let key: { api_key: string; key_id: string };

beforeAll(async () => {
  t = await startTestStack();
  agent = await makeAgent(t, { allowed_intents: ['triage'] });
  key = await issueKey(t, agent.agent_id);
});
afterAll(async () => {
  await t?.close();
});

const HTTP_SERVICES: ServiceName[] = ['api', 'rules', 'context-webhook', 'telemetry', 'collector'];

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const METRIC_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\})? (-?(?:[0-9.]+(?:e[+-]?[0-9]+)?|\+Inf|Inf|NaN))(?: -?[0-9]+)?$/i;
const COMMENT_LINE = /^# (?:HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*|TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (?:counter|gauge|histogram|summary|untyped))$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"/g;

/** Parses the text exposition format (0.0.4); every line must be a sample, a HELP/TYPE comment or empty. */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      expect(line, 'a HELP or TYPE line').toMatch(COMMENT_LINE);
      continue;
    }
    const m = METRIC_LINE.exec(line);
    expect(m, `a sample line: ${line}`).not.toBeNull();
    const labels: Record<string, string> = {};
    for (const l of (m![2] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    samples.push({ name: m![1]!, labels, value: Number(m![3]) });
  }
  return samples;
}

async function scrape(name: ServiceName): Promise<Sample[]> {
  const r = await fetch(`${t.url(name)}/metrics`, { headers: { connection: 'close' } });
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await r.text());
}

/** The sum of the samples of `name` whose labels include `where`. */
function total(samples: Sample[], name: string, where: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);
}

function grpcRequestContext(req: Record<string, unknown>, requestId?: string): Promise<any> {
  return new Promise((resolve, reject) => {
    const client = grpcClient(t);
    const md = new grpc.Metadata();
    if (requestId) md.set('x-request-id', requestId);
    client.RequestContext(req, md, (err: Error | null, res: any) => {
      client.close();
      if (err) reject(err);
      else resolve(res);
    });
  });
}

/** A gRPC call of a method the port does not serve; resolves when its stream closed. */
function unknownGrpcCall(): Promise<void> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(t.url('context-grpc'));
    session.on('error', reject);
    const req = session.request({ ':method': 'POST', ':path': '/no.such.v1.Service/Method', 'content-type': 'application/grpc', te: 'trailers' });
    req.on('error', () => {});
    req.on('data', () => {});
    req.on('close', () => session.close(() => resolve()));
    req.end(Buffer.from([0, 0, 0, 0, 0]));
  });
}

/**
 * POST /api/context through the edge instead of the fast path: a body without a declared
 * length (chunked) is the edge's.
 */
async function viaEdge(body: unknown, apiKey: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; body: any }> {
  const text = JSON.stringify(body);
  const stream = new ReadableStream({ start: (c) => (c.enqueue(new TextEncoder().encode(text)), c.close()) });
  const res = await fetch(`${t.url('api')}/api/context`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', connection: 'close', 'x-api-key': apiKey, ...headers },
    body: stream,
    duplex: 'half',
  } as RequestInit);
  return { status: res.status, headers: res.headers, body: await res.json() };
}

const linesOf = () => t.logs.map((l) => JSON.parse(l) as Record<string, unknown>);

describe('GET /metrics', () => {
  it('answers Prometheus text with the process and request metrics on every HTTP service', async () => {
    for (const name of HTTP_SERVICES) {
      await t.call(name, 'GET', '/health');
      const samples = await scrape(name);
      expect(total(samples, 'process_cpu_user_seconds_total'), name).toBeGreaterThan(0);
      expect(total(samples, 'svc_http_request_duration_seconds_count', { service: name, method: 'GET', route: '/health', status_class: '2xx' }), name).toBeGreaterThanOrEqual(1);
    }
    // Port 8002 answers the same text over HTTP/1.1 (its plain routes, no OpenAPI edge).
    const grpcPort = await scrape('context-grpc');
    expect(total(grpcPort, 'svc_http_request_duration_seconds_count', { service: 'api', route: '/health' })).toBeGreaterThanOrEqual(1);
    const direct = await metricsText();
    expect(direct.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it('labels requests by route template and counts context requests, audit commits and gRPC calls', async () => {
    const before = await scrape('api');
    const byId = await t.call('api', 'GET', `/api/agents/${agent.agent_id}`, { admin: true });
    expect(byId.status).toBe(200);
    expect((await t.call('api', 'GET', `/api/agents/agent:none-${randomBytes(4).toString('hex')}`, { admin: true })).status).toBe(404);
    expect((await t.call('api', 'GET', `/no/such/${agent.agent_id}`)).status).toBe(404);
    // REST on the fast path (served and refused), then through the edge (a query string), then gRPC.
    expect((await t.call('api', 'POST', '/api/context', { apiKey: key.api_key, body: { task_type: 'triage' } })).status).toBe(200);
    expect((await t.call('api', 'POST', '/api/context', { apiKey: key.api_key, body: { task_type: 'launch' } })).status).toBe(403);
    expect((await viaEdge({ task_type: 'triage' }, key.api_key)).status).toBe(200);
    expect((await t.call('api', 'POST', '/api/context', { apiKey: 'sk_unknown', body: { task_type: 'triage' } })).status).toBe(401);
    expect(await grpcRequestContext({ api_key: key.api_key, task_type: 'triage' })).toMatchObject({ success: true });
    await unknownGrpcCall();
    const after = await scrape('api');

    const moved = (name: string, where: Record<string, string> = {}) => total(after, name, where) - total(before, name, where);
    expect(moved('svc_http_request_duration_seconds_count', { service: 'api', method: 'GET', route: '/api/agents/{agent_id}', status_class: '2xx' })).toBe(1);
    expect(moved('svc_http_request_duration_seconds_count', { service: 'api', method: 'GET', route: '/api/agents/{agent_id}', status_class: '4xx' })).toBe(1);
    expect(moved('svc_http_request_duration_seconds_count', { service: 'api', method: 'GET', route: 'unmatched', status_class: '4xx' })).toBe(1);
    expect(moved('svc_http_request_duration_seconds_count', { service: 'api', method: 'POST', route: '/api/context', status_class: '2xx' })).toBe(2);
    expect(moved('svc_http_request_duration_seconds_count', { service: 'api', method: 'POST', route: '/api/context', status_class: '4xx' })).toBe(2);
    expect(moved('svc_context_requests_total', { outcome: 'served' })).toBe(3);
    expect(moved('svc_context_requests_total', { outcome: 'refused_intent' })).toBe(1);
    expect(moved('svc_context_requests_total', { outcome: 'refused_auth' })).toBe(1);
    expect(moved('svc_audit_records_appended_total')).toBe(5);
    expect(moved('svc_audit_group_commit_batch_size_sum')).toBe(5);
    expect(moved('svc_audit_group_commit_batch_size_count')).toBeGreaterThanOrEqual(1);
    expect(moved('svc_audit_append_duration_seconds_count')).toBe(5);
    expect(moved('svc_grpc_request_duration_seconds_count', { method: '/svc.context.v1.ContextService/RequestContext', code: 'OK' })).toBe(1);
    expect(moved('svc_grpc_request_duration_seconds_count', { method: 'unknown' })).toBe(1);
    for (const name of ['svc_subscribe_streams_open', 'svc_collector_events_stored_total', 'svc_collector_events_skipped_total', 'svc_telemetry_sends_total']) {
      expect(after.some((s) => s.name === name) || (await fetch(`${t.url('api')}/metrics`).then((r) => r.text())).includes(`# TYPE ${name} `), name).toBe(true);
    }

    // No label carries the agent id, the key, its id, or a raw path.
    const values = after.flatMap((s) => Object.values(s.labels));
    for (const secret of [agent.agent_id, key.api_key, key.key_id, 'sk_unknown', ADMIN_KEY]) expect(values.filter((v) => v.includes(secret))).toEqual([]);
    expect(values.filter((v) => v.includes('agent:'))).toEqual([]);
    const routes = new Set(after.filter((s) => s.name.startsWith('svc_http_request_duration_seconds')).map((s) => s.labels.route));
    for (const r of routes) expect(r === 'unmatched' || (r !== undefined && r.startsWith('/') && !/\/agent:|\/no\/such/.test(r)), String(r)).toBe(true);
  });
});

describe('Subscribe streams', () => {
  it('are counted open while they last, and measured by code when they end', async () => {
    const { tag } = await taggedBundle(t);
    const a = await agentWithKey(t);
    const before = await scrape('api');
    const client = grpcClient(t);
    try {
      const s = new Stream(client, { tag, agent_id: a.agentId, auth_token: a.token });
      await s.contextCount(1);
      const open = await scrape('api');
      expect(total(open, 'svc_subscribe_streams_open') - total(before, 'svc_subscribe_streams_open')).toBe(1);
      const values = open.flatMap((x) => Object.values(x.labels));
      for (const secret of [tag, a.agentId, a.token, a.apiKey]) expect(values.filter((v) => v.includes(secret))).toEqual([]);
      s.cancel();
      await s.ended();
      // The server sees the reset a moment after the client: wait for the stream's end to be measured.
      const method = { method: '/svc.context.v1.ContextService/Subscribe' };
      let after = await scrape('api');
      for (let i = 0; i < 100 && total(after, 'svc_grpc_request_duration_seconds_count', method) === total(before, 'svc_grpc_request_duration_seconds_count', method); i++) {
        await new Promise((r) => setTimeout(r, 20));
        after = await scrape('api');
      }
      expect(total(after, 'svc_grpc_request_duration_seconds_count', { ...method, code: 'CANCELLED' }) - total(before, 'svc_grpc_request_duration_seconds_count', { ...method, code: 'CANCELLED' })).toBe(1);
      expect(total(after, 'svc_subscribe_streams_open')).toBe(total(before, 'svc_subscribe_streams_open'));
    } finally {
      client.close();
    }
  });
});

describe('request logs', () => {
  it('writes one request line with the route template, status and request id, and no key anywhere', async () => {
    const bearer = `tok-${randomBytes(16).toString('hex')}`;
    const cookie = `c-${randomBytes(16).toString('hex')}`;
    const bodyKey = `sk_${randomBytes(24).toString('hex')}`;
    const from = t.logs.length;

    const got = await t.call('api', 'GET', `/api/agents/${agent.agent_id}`, { admin: true, headers: { authorization: `Bearer ${bearer}`, cookie: `s=${cookie}`, 'x-api-key': key.api_key } });
    expect(got.status).toBe(200);
    const ctx = await t.call('api', 'POST', '/api/context', { apiKey: key.api_key, headers: { authorization: `Bearer ${bearer}` }, body: { task_type: 'triage', params: { api_key: bodyKey } } });
    expect(ctx.status).toBe(200);
    const bad = await t.call('api', 'POST', '/api/agents', { admin: true, body: { agent_id: 'agent:x', api_key: bodyKey, password: bodyKey } });
    expect(bad.status).toBe(400);
    await grpcRequestContext({ api_key: key.api_key, task_type: 'triage' }, 'grpc-trace-1');

    // A handler's unexpected error whose message quotes the keys: a 500 with the request id, one error line.
    const db = t.ctx.db;
    const query = db.query;
    db.query = (async (text: string, params?: unknown[]) => {
      if (text.includes('WHERE chain_id = $1')) throw new Error(`lost the connection while ${key.api_key} and ${ADMIN_KEY} were in use`);
      return query.call(db, text, params);
    }) as typeof db.query;
    let failed;
    try {
      failed = await t.call('api', 'GET', '/api/audit/chain/c-1', { admin: true, headers: { 'x-request-id': 'trace-500' } });
    } finally {
      db.query = query;
    }
    expect(failed.status).toBe(500);
    expect(failed.body.details.request_id).toBe('trace-500');

    const lines = t.logs.slice(from);
    const text = lines.join('\n');
    for (const secret of [key.api_key, ADMIN_KEY, bearer, cookie, bodyKey]) expect(text).not.toContain(secret);

    const parsed = lines.map((l) => JSON.parse(l) as Record<string, any>);
    const line = parsed.find((l) => l.msg === 'request' && l.request_id === got.headers.get('x-request-id'));
    expect(line).toMatchObject({ level: 'info', service: 'api', method: 'GET', route: '/api/agents/{agent_id}', status: 200 });
    expect(typeof line!.duration_ms).toBe('number');
    expect(Date.parse(line!.time)).not.toBeNaN();
    expect(parsed.find((l) => l.msg === 'request' && l.request_id === ctx.headers.get('x-request-id'))).toMatchObject({ service: 'api', method: 'POST', route: '/api/context', status: 200 });
    expect(parsed.find((l) => l.msg === 'request' && l.request_id === bad.headers.get('x-request-id'))).toMatchObject({ route: '/api/agents', status: 400 });
    expect(parsed.find((l) => l.msg === 'grpc call' && l.request_id === 'grpc-trace-1')).toMatchObject({ service: 'context-grpc', method: '/svc.context.v1.ContextService/RequestContext', code: 'OK' });
    const error = parsed.find((l) => l.msg === 'unhandled error');
    expect(error).toMatchObject({ level: 'error', request_id: 'trace-500', error: { message: expect.stringContaining('[redacted]') } });
    expect(parsed.find((l) => l.msg === 'request' && l.request_id === 'trace-500')).toMatchObject({ route: '/api/audit/chain/{chain_id}', status: 500 });
  });

  it('takes X-Request-Id from the request when it is sane, else makes one, and echoes it', async () => {
    const given = 'trace-1.a:b_c';
    const health = await t.call('rules', 'GET', '/health', { headers: { 'x-request-id': given } });
    expect(health.headers.get('x-request-id')).toBe(given);
    const made = await t.call('rules', 'GET', '/health');
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    for (const insane of ['has space', 'x'.repeat(129), 'semi;colon']) {
      const r = await t.call('rules', 'GET', '/health', { headers: { 'x-request-id': insane } });
      expect(r.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
    // The context API (fast path and edge): the client's id is echoed; the audit record keeps its own UUID.
    const fast = (headers?: Record<string, string>) => t.call('api', 'POST', '/api/context', { apiKey: key.api_key, headers, body: { task_type: 'triage' } });
    const edge = (headers?: Record<string, string>) => viaEdge({ task_type: 'triage' }, key.api_key, headers);
    for (const post of [fast, edge]) {
      const r = await post({ 'x-request-id': given });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-request-id')).toBe(given);
      expect(r.body.request_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(await t.testDb.db.query('SELECT 1 FROM agent_context_requests WHERE request_id = $1', [r.body.request_id])).toHaveLength(1);
      const plain = await post();
      expect(plain.headers.get('x-request-id')).toBe(plain.body.request_id);
    }
    expect(linesOf().filter((l) => l.msg === 'request' && l.request_id === given).length).toBe(3);
  });
});
