/**
 * Port 8002 over HTTP/1.1 (the same port as HTTP/2): Connect unary JSON and binary and
 * gRPC-Web from connect-node's HTTP/1.1 transports, a raw JSON POST as curl sends it, the
 * plain routes (/health) and the error bodies of unknown paths and wrong methods on both
 * protocols, node's parser refusals as on the other ports, and CORS on 8002 and 8000
 * (CORS_ORIGINS: preflights, allow headers only for a listed origin).
 */
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { createClient, type Transport } from '@connectrpc/connect';
import { createConnectTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { ContextMessageType, ContextService, type ContextMessage } from '../../gen/proto/context_pb.js';
import { agentWithKey, moveTag, taggedBundle } from './fixtures.js';

const PATH = '/svc.context.v1.ContextService/RequestContext';
const LISTED = 'http://app.example:8443';
const OTHER = 'http://evil.example';
let t: TestStack;
let apiKey: string;
let agentId: string;

beforeAll(async () => {
  t = await startTestStack({ services: ['api', 'context-grpc'], env: { CORS_ORIGINS: `${LISTED}, https://second.example` } });
  const agent = await makeAgent(t, { role_id: 'role:security', allowed_intents: ['code_review'] });
  agentId = agent.agent_id;
  apiKey = (await issueKey(t, agent.agent_id)).api_key;
}, 120_000);
afterAll(async () => {
  await t?.close();
});

const port = (name: 'api' | 'context-grpc') => Number(new URL(t.url(name)).port);

interface Answer {
  version: string;
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One HTTP/1.1 request on its own connection (no keep-alive left behind). */
function h1(name: 'api' | 'context-grpc', method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: port(name), method, path, agent: false, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ version: res.httpVersion, status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** One request over HTTP/2 (prior knowledge), its own session. */
async function h2(method: string, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const session = http2.connect(t.url('context-grpc'));
  try {
    return await new Promise<Answer>((resolve, reject) => {
      const req = session.request({ ':method': method, ':path': path, ...headers });
      req.end();
      let status = 0;
      let h: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      req.on('response', (r) => {
        status = Number(r[':status']);
        h = r;
      });
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve({ version: '2.0', status, headers: h as http.IncomingHttpHeaders, text: Buffer.concat(chunks).toString('utf8') }));
      req.on('error', reject);
    });
  } finally {
    session.close();
  }
}

describe('RPCs over HTTP/1.1', () => {
  it('a Connect JSON POST, as `curl --http1.1 -H "Content-Type: application/json" -d ...` sends it, answers', async () => {
    const r = await h1('context-grpc', 'POST', PATH, { 'content-type': 'application/json' }, JSON.stringify({ apiKey, taskType: 'code_review' }));
    expect({ version: r.version, status: r.status, type: r.headers['content-type'] }).toEqual({ version: '1.1', status: 200, type: 'application/json' });
    expect(JSON.parse(r.text)).toMatchObject({ success: true, agentId });
  });

  it('a wrong key is refused in the RPC\'s own answer over HTTP/1.1 too', async () => {
    const r = await h1('context-grpc', 'POST', PATH, { 'content-type': 'application/json' }, JSON.stringify({ apiKey: 'sk-not-a-key', taskType: 'code_review' }));
    // RequestContext answers a refused key in its message (success false), as over HTTP/2.
    expect(r.status).toBe(200);
    // (proto3 JSON leaves out `success: false`, a default value.)
    const body = JSON.parse(r.text);
    expect({ success: body.success, errorCode: body.errorCode, agentId: body.agentId }).toEqual({ success: undefined, errorCode: 'AUTH_FAILED', agentId: undefined });
  });

  const transports: Record<string, () => Transport> = {
    'connect json': () => createConnectTransport({ baseUrl: t.url('context-grpc'), httpVersion: '1.1', useBinaryFormat: false, nodeOptions: { agent: false } }),
    'connect binary': () => createConnectTransport({ baseUrl: t.url('context-grpc'), httpVersion: '1.1', useBinaryFormat: true, nodeOptions: { agent: false } }),
    'grpc-web binary': () => createGrpcWebTransport({ baseUrl: t.url('context-grpc'), httpVersion: '1.1', useBinaryFormat: true, nodeOptions: { agent: false } }),
    'grpc-web json': () => createGrpcWebTransport({ baseUrl: t.url('context-grpc'), httpVersion: '1.1', useBinaryFormat: false, nodeOptions: { agent: false } }),
  };
  it.each(Object.keys(transports))('%s over HTTP/1.1 (connect-node)', async (name) => {
    const client = createClient(ContextService, transports[name]!());
    const res = await client.requestContext({ apiKey, taskType: 'code_review' });
    expect(res.success).toBe(true);
    expect(res.agentId).toBe(agentId);
  });
});

describe('Subscribe (server streaming) over HTTP/1.1', () => {
  it.each(['connect', 'grpc-web'] as const)('%s: the SNAPSHOT, then an UPDATE when the tag moves', async (protocol) => {
    const { tag, bundleId } = await taggedBundle(t);
    const a = await agentWithKey(t);
    const opts = { baseUrl: t.url('context-grpc'), httpVersion: '1.1' as const, useBinaryFormat: true, nodeOptions: { agent: false } };
    const transport = protocol === 'connect' ? createConnectTransport(opts) : createGrpcWebTransport(opts);
    const ac = new AbortController();
    const got: ContextMessage[] = [];
    let snapshot!: () => void;
    const first = new Promise<void>((r) => (snapshot = r));
    const reading = (async () => {
      try {
        for await (const m of createClient(ContextService, transport).subscribe({ tag, agentId: a.agentId, authToken: a.token }, { signal: ac.signal })) {
          if (m.type === ContextMessageType.HEARTBEAT) continue;
          got.push(m);
          if (got.length === 1) snapshot();
          if (got.length === 2) ac.abort();
        }
      } catch (e) {
        if (!ac.signal.aborted) throw e;
      }
    })();
    await Promise.race([first, reading]);
    await moveTag(t, tag, bundleId, '1.1.0');
    await reading;
    expect(got.map((m) => m.type)).toEqual([ContextMessageType.SNAPSHOT, ContextMessageType.UPDATE]);
  });
});

describe('plain routes and errors, on both protocols', () => {
  it('GET /health is the liveness JSON over HTTP/1.1 and HTTP/2; HEAD has no body', async () => {
    for (const r of [await h1('context-grpc', 'GET', '/health'), await h2('GET', '/health')]) {
      expect({ version: r.version, status: r.status, type: r.headers['content-type'] }).toEqual({ version: r.version, status: 200, type: 'application/json; charset=utf-8' });
      expect(JSON.parse(r.text)).toMatchObject({ status: 'ok', service: 'context' });
    }
    const head = await h1('context-grpc', 'HEAD', '/health');
    expect({ status: head.status, text: head.text }).toEqual({ status: 200, text: '' });
  });

  it('an unknown path is 404, a wrong method 405 with Allow, each with the error body', async () => {
    const cases: Array<[string, string, number, string, string | undefined]> = [
      ['GET', '/nope', 404, 'not_found', undefined],
      ['POST', '/svc.context.v1.ContextService/Nope', 404, 'not_found', undefined],
      ['GET', PATH, 405, 'method_not_allowed', 'POST'],
      ['PUT', PATH, 405, 'method_not_allowed', 'POST'],
      ['POST', '/health', 405, 'method_not_allowed', 'GET, HEAD'],
      ['OPTIONS', '/health', 405, 'method_not_allowed', 'GET, HEAD'],
    ];
    for (const [method, path, status, error, allow] of cases) {
      for (const r of [await h1('context-grpc', method, path), await h2(method, path)]) {
        expect({ method, path, v: r.version, status: r.status, error: JSON.parse(r.text).error, allow: r.headers.allow }).toEqual({ method, path, v: r.version, status, error, allow });
      }
    }
  });

  it('what node\'s HTTP/1.1 parser refuses gets the error body, as on the other ports', async () => {
    const out = await new Promise<string>((resolve, reject) => {
      const sock = net.connect(port('context-grpc'), '127.0.0.1', () => sock.end('GET /health HTTP/1.1\r\nHost: x\r\nX-Bad: a\x01b\r\n\r\n'));
      const chunks: Buffer[] = [];
      sock.on('data', (c: Buffer) => chunks.push(c));
      sock.on('error', reject);
      sock.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    });
    const [head, body] = out.split('\r\n\r\n');
    expect(head!.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    expect(JSON.parse(body!).error).toBe('validation_error');
  });
});

describe('CORS (CORS_ORIGINS)', () => {
  const preflight = (origin: string, headers: string) => ({ origin, 'access-control-request-method': 'POST', 'access-control-request-headers': headers });

  it('8002: a listed origin\'s preflight is 204 with Connect\'s and gRPC-Web\'s headers, on HTTP/1.1 and HTTP/2', async () => {
    for (const r of [
      await h1('context-grpc', 'OPTIONS', PATH, preflight(LISTED, 'content-type,connect-protocol-version')),
      await h2('OPTIONS', PATH, preflight(LISTED, 'content-type,connect-protocol-version')),
    ]) {
      expect({ v: r.version, status: r.status, origin: r.headers['access-control-allow-origin'], vary: r.headers.vary }).toEqual({ v: r.version, status: 204, origin: LISTED, vary: 'Origin' });
      const allowed = String(r.headers['access-control-allow-headers']).toLowerCase().split(', ');
      for (const h of ['content-type', 'connect-protocol-version', 'connect-timeout-ms', 'x-grpc-web', 'x-user-agent', 'grpc-timeout', 'x-api-key', 'authorization']) expect(allowed).toContain(h);
      expect(String(r.headers['access-control-allow-methods'])).toContain('POST');
    }
  });

  it('8002: a listed origin\'s call carries the allow and expose headers; another origin\'s none', async () => {
    const body = JSON.stringify({ apiKey, taskType: 'code_review' });
    const ok = await h1('context-grpc', 'POST', PATH, { 'content-type': 'application/json', origin: LISTED }, body);
    expect({ status: ok.status, origin: ok.headers['access-control-allow-origin'], vary: ok.headers.vary }).toEqual({ status: 200, origin: LISTED, vary: 'Origin' });
    expect(String(ok.headers['access-control-expose-headers'])).toContain('Grpc-Status');
    const other = await h1('context-grpc', 'POST', PATH, { 'content-type': 'application/json', origin: OTHER }, body);
    expect({ status: other.status, origin: other.headers['access-control-allow-origin'] }).toEqual({ status: 200, origin: undefined });
    const pre = await h1('context-grpc', 'OPTIONS', PATH, preflight(OTHER, 'content-type'));
    expect({ status: pre.status, origin: pre.headers['access-control-allow-origin'], error: JSON.parse(pre.text).error }).toEqual({ status: 403, origin: undefined, error: 'forbidden' });
  });

  it('8000: preflights for a listed origin are 204 (not 405), others 403; answers, the context fast path included, carry the allow header only for a listed origin', async () => {
    const pre = await h1('api', 'OPTIONS', '/api/agents', { ...preflight(LISTED, 'x-admin-key,content-type'), 'access-control-request-method': 'DELETE' });
    expect({ status: pre.status, origin: pre.headers['access-control-allow-origin'] }).toEqual({ status: 204, origin: LISTED });
    expect(String(pre.headers['access-control-allow-headers'])).toContain('X-Admin-Key');
    expect(String(pre.headers['access-control-allow-methods'])).toContain('DELETE');
    const denied = await h1('api', 'OPTIONS', '/api/agents', preflight(OTHER, 'x-admin-key'));
    expect({ status: denied.status, origin: denied.headers['access-control-allow-origin'], error: JSON.parse(denied.text).error }).toEqual({ status: 403, origin: undefined, error: 'forbidden' });
    // Without a preflight's headers OPTIONS stays what it was: 405 from the contract.
    expect((await h1('api', 'OPTIONS', '/api/agents')).status).toBe(405);

    const body = JSON.stringify({ task_type: 'code_review' });
    for (const [origin, expected] of [[LISTED, LISTED], [OTHER, undefined]] as const) {
      const fast = await h1('api', 'POST', '/api/context', { 'content-type': 'application/json', 'x-api-key': apiKey, origin }, body);
      expect({ origin, status: fast.status, allow: fast.headers['access-control-allow-origin'], vary: fast.headers.vary }).toEqual({ origin, status: 200, allow: expected, vary: 'Origin' });
      const edge = await h1('api', 'GET', '/health', { origin });
      expect({ origin, status: edge.status, allow: edge.headers['access-control-allow-origin'] }).toEqual({ origin, status: 200, allow: expected });
    }
    const withId = await h1('api', 'GET', '/health', { origin: LISTED });
    expect(String(withId.headers['access-control-expose-headers'])).toContain('X-Request-Id');
  });
});
