/**
 * What the edge refuses before any handler, on every HTTP port, through real sockets:
 * a request node's parser rejects, a path with dot segments, a body in an undeclared media
 * type, JSON nested too deeply. Each answers the spec's error body with application/json,
 * changes nothing, and logs no error.
 */
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startTestStack, type TestStack } from '../harness.js';
import { integerParams, jsonTooDeep, MAX_JSON_DEPTH } from '../../src/shared/http/wire-guards.js';
import { loadOperations } from './operations.js';
import type { ServiceName } from '../../src/shared/service.js';

// 8002 (context-grpc) included: it serves HTTP/1.1 beside HTTP/2 on the same port.
const HTTP_SERVICES: ServiceName[] = ['api', 'rules', 'context-grpc', 'context-webhook', 'telemetry', 'collector'];
let s: TestStack;
let apiKey: string;

beforeAll(async () => {
  s = await startTestStack();
  for (const id of ['agent:guards', 'agent:victim']) {
    const r = await s.call('api', 'POST', '/api/agents', { admin: true, body: { agent_id: id, name: id, role_id: 'role:guards', allowed_intents: ['guard_check'] } });
    expect(r.status).toBe(201);
  }
  apiKey = (await s.call('api', 'POST', '/api/agents/agent:guards/api-keys', { admin: true, body: {} })).body.api_key;
});
afterAll(async () => {
  await s?.close();
});

const portOf = (name: ServiceName) => Number(new URL(s.url(name)).port);

/** Bytes on a fresh socket; resolves with everything the server sent before closing. */
function rawExchange(port: number, bytes: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => sock.end(bytes));
    const chunks: Buffer[] = [];
    sock.on('data', (c) => chunks.push(c));
    sock.on('error', reject);
    sock.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

/** A request whose path goes out exactly as written (fetch would resolve `.` and `..`). */
function request(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<{ status: number; type: string; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, agent: false, headers: { connection: 'close', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode!, type: String(res.headers['content-type'] ?? ''), body: text ? JSON.parse(text) : undefined });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

function errorLines(): string[] {
  return s.logs.filter((l) => l.includes('"level":"error"'));
}

describe('requests node:http refuses', () => {
  it('a control character in a header value: 400 with the error body, on every HTTP port', async () => {
    for (const name of HTTP_SERVICES) {
      const out = await rawExchange(portOf(name), 'GET /health HTTP/1.1\r\nHost: x\r\nX-Bad: a\x01b\r\n\r\n');
      const [head, body] = out.split('\r\n\r\n');
      expect({ name, line: head!.split('\r\n')[0] }).toEqual({ name, line: 'HTTP/1.1 400 Bad Request' });
      expect(head).toMatch(/\r\nContent-Type: application\/json; charset=utf-8\r\n/);
      expect(JSON.parse(body!)).toEqual({ error: 'validation_error', message: expect.stringContaining('Malformed HTTP request') });
    }
  });
  it('a bad request line and headers over the limit: 400 and 431, each with the error body', async () => {
    const bad = await rawExchange(portOf('api'), 'GET /health HTTP/1.1 extra\r\nHost: x\r\n\r\n');
    expect(bad).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(bad.split('\r\n\r\n')[1]!).error).toBe('validation_error');
    const big = await rawExchange(portOf('rules'), `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(big).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
    expect(JSON.parse(big.split('\r\n\r\n')[1]!)).toEqual({ error: 'payload_too_large', message: 'Request headers exceed the server limit' });
  });
});

describe('paths are routed as sent', () => {
  const admin = { 'x-admin-key': ADMIN_KEY };
  it('`.` and `%2e` as an agent id are refused by its pattern, not served the agent list', async () => {
    for (const p of ['/api/agents/.', '/api/agents/%2e', '/api/agents/%2E']) {
      const r = await request(portOf('api'), 'GET', p, admin);
      expect({ p, status: r.status, error: r.body.error, path: r.body.details?.errors?.[0]?.path }).toEqual({ p, status: 400, error: 'validation_error', path: '/path/agent_id' });
    }
  });
  it('`..` as a key id deletes nothing: before, it was a DELETE of the agent itself', async () => {
    for (const k of ['..', '.', '%2e%2e']) {
      const r = await request(portOf('api'), 'DELETE', `/api/agents/agent:victim/api-keys/${k}?revoked_by=tester`, admin);
      expect([400, 404]).toContain(r.status);
      expect(r.type).toMatch(/^application\/json/);
    }
    const victim = await s.call('api', 'GET', '/api/agents/agent:victim', { admin: true });
    expect(victim.body.status).toBe('active');
  });
});

describe('paths whose percent-encoding is not UTF-8', () => {
  it('are 400 validation_error (rule encoding) on every operation with a path parameter, after the admin check; never a 500', async () => {
    const ops = (await loadOperations()).filter((o) => o.op.path.includes('{'));
    expect(ops.length).toBeGreaterThanOrEqual(10);
    for (const o of ops) {
      for (const bad of ['x%C0%AFy', '%zz', '%E0%A4']) {
        const p = o.op.path.replace(/\{[^}]+\}/g, bad);
        const method = o.op.method.toUpperCase();
        const body = ['POST', 'PUT', 'PATCH'].includes(method) ? '{}' : undefined;
        const headers = { 'x-admin-key': ADMIN_KEY, ...(body && { 'content-type': 'application/json' }) };
        const r = await request(portOf(o.service), method, p, headers, body);
        // An operation an agent's key opens checks that key first (its handler does): 401 here.
        const agentOnly = o.security.length > 0 && !o.security.some((k) => k === 'AdminKey' || k === 'AuditorKey');
        expect({ op: o.id, p, status: r.status, type: r.type, rule: r.body?.details?.errors?.[0]?.rule }).toEqual(
          agentOnly ? { op: o.id, p, status: 401, type: expect.stringContaining('application/json'), rule: undefined } : { op: o.id, p, status: 400, type: expect.stringContaining('application/json'), rule: 'encoding' },
        );
        if (agentOnly) {
          const withKey = await request(portOf(o.service), method, p, { ...headers, 'x-api-key': apiKey }, body);
          expect({ op: o.id, p, status: withKey.status, type: withKey.type }).toEqual({ op: o.id, p, status: 400, type: expect.stringContaining('application/json') });
        }
        if (o.security.includes('AdminKey')) {
          const anonymous = await request(portOf(o.service), method, p, body ? { 'content-type': 'application/json' } : {}, body);
          expect({ op: o.id, status: anonymous.status }).toEqual({ op: o.id, status: 401 });
        }
      }
    }
    // Before: openapi-backend threw decoding the parameter (URIError), an error line and a 500.
    expect(errorLines()).toEqual([]);
  });
});

describe('bodies in a media type the operation does not declare', () => {
  const agent = { agent_id: 'agent:plain', name: 'plain', role_id: 'role:guards', allowed_intents: ['guard_check'] };
  it('text/plain, a form and no Content-Type: 415 unsupported_media_type, nothing created', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', undefined]) {
      const r = await request(portOf('api'), 'POST', '/api/agents', { 'x-admin-key': ADMIN_KEY, ...(type ? { 'content-type': type } : {}) }, JSON.stringify(agent));
      expect({ type, status: r.status, error: r.body.error, rule: r.body.details.errors[0].rule }).toEqual({ type, status: 415, error: 'unsupported_media_type', rule: 'mediaType' });
    }
    expect((await s.call('api', 'GET', '/api/agents/agent:plain', { admin: true })).status).toBe(404);
    const ok = await request(portOf('api'), 'POST', '/api/agents', { 'x-admin-key': ADMIN_KEY, 'content-type': 'Application/JSON; charset=utf-8' }, JSON.stringify(agent));
    expect(ok.status).toBe(201);
  });
  it('the admin check still comes first', async () => {
    const r = await request(portOf('rules'), 'POST', '/api/rules/schemas', { 'content-type': 'text/plain' }, '{}');
    expect({ status: r.status, error: r.body.error }).toEqual({ status: 401, error: 'auth_failed' });
  });
  it('the context API answers 415 in its own body once the key is known, and 401 before', async () => {
    const body = JSON.stringify({ task_type: 'guard_check' });
    const r = await request(portOf('api'), 'POST', '/api/context', { 'x-api-key': apiKey, 'content-type': 'text/plain' }, body);
    expect({ status: r.status, success: r.body.success, code: r.body.error_code }).toEqual({ status: 415, success: false, code: 'VALIDATION_ERROR' });
    const anon = await request(portOf('api'), 'POST', '/api/context', { 'content-type': 'text/plain' }, body);
    expect({ status: anon.status, code: anon.body.error_code }).toEqual({ status: 401, code: 'AUTH_FAILED' });
  });
  it('the webhook checks its token before the media type', async () => {
    const r = await request(portOf('context-webhook'), 'POST', '/webhook/tag-update', { 'content-type': 'text/plain' }, '{}');
    expect(r.status).toBe(401);
  });
});

describe('JSON nested too deeply', () => {
  const nested = (n: number, leaf = '1') => '{"a":'.repeat(n) + leaf + '}'.repeat(n);
  it('is found in one pass, strings and escapes skipped', () => {
    expect(jsonTooDeep(nested(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonTooDeep(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(jsonTooDeep('['.repeat(200) + ']'.repeat(200))).toBe(true);
    expect(jsonTooDeep(JSON.stringify({ s: '['.repeat(500) + '\\"[' + '{'.repeat(500) }))).toBe(false);
    expect(jsonTooDeep(JSON.stringify([{ a: '"\\' }, '['.repeat(300)]))).toBe(false);
  });
  it('answers 400 maxDepth with the error body on the output log, bundles, agents and the context API', async () => {
    const ctx = await s.call('api', 'POST', '/api/context', { apiKey, body: { task_type: 'guard_check' } });
    expect(ctx.status).toBe(200);
    const output = await request(portOf('api'), 'POST', '/api/audit/output', { 'x-api-key': apiKey, 'content-type': 'application/json' }, `{"request_id":"${ctx.body.request_id}","output":${nested(4000)}}`);
    expect({ status: output.status, rule: output.body.details.errors[0].rule }).toEqual({ status: 400, rule: 'maxDepth' });
    for (const p of ['/api/bundles', '/api/agents']) {
      const r = await request(portOf('api'), 'POST', p, { 'x-admin-key': ADMIN_KEY, 'content-type': 'application/json' }, nested(20_000));
      expect({ p, status: r.status, error: r.body.error, rule: r.body.details.errors[0].rule }).toEqual({ p, status: 400, error: 'validation_error', rule: 'maxDepth' });
    }
    // Under 64 KiB: the context API's fast path, audited as a refused request.
    const small = await request(portOf('api'), 'POST', '/api/context', { 'x-api-key': apiKey, 'content-type': 'application/json' }, `{"task_type":"guard_check","context":${nested(9000)}}`);
    expect({ status: small.status, code: small.body.error_code }).toEqual({ status: 400, code: 'VALIDATION_ERROR' });
    const big = await request(portOf('api'), 'POST', '/api/context', { 'x-api-key': apiKey, 'content-type': 'application/json' }, `{"task_type":"guard_check","context":${nested(20_000)}}`);
    expect({ status: big.status, code: big.body.error_code }).toEqual({ status: 400, code: 'VALIDATION_ERROR' });
    expect(errorLines()).toEqual([]);
  });
});

describe('integer parameters', () => {
  const NOT_DECIMAL = ['0x10', '1e1', '+1', ' 1', '1.0', '1_0'];
  const TOO_BIG = ['9007199254740992', '9007199254740993', '99999999999999999999999', '-9007199254740992'];

  it('every integer parameter of every service: not written in decimal digits, or past 2^53 - 1, is 400 validation_error naming it', async () => {
    const ops = (await loadOperations()).map((o) => ({ ...o, ints: integerParams(o.op.parameters) })).filter((o) => o.ints.length);
    // The audit reads' and the proofs' sequences, the lists' limits and offsets, the telemetry log's, the collector's, a header.
    expect(ops.length).toBeGreaterThanOrEqual(12);
    expect(ops.some((o) => o.ints.some((p) => p.in === 'header'))).toBe(true);
    for (const o of ops) {
      const base = o.op.path.replace(/\{[^}]+\}/g, 'x');
      // The operation's other required query parameters, at their least value.
      const params = (o.op.parameters ?? []) as Array<{ in: string; name: string; required?: boolean; schema?: { minimum?: number } }>;
      const others = (name: string) => params.filter((q) => q.in === 'query' && q.required && q.name !== name).map((q) => `&${q.name}=${q.schema?.minimum ?? 0}`).join('');
      for (const p of o.ints) {
        // Past 2^53 - 1: the format's refusal, or the parameter's own bound's where it has one.
        // (A header value's surrounding spaces are not part of it: HTTP drops them.)
        const notDecimal = p.in === 'header' ? NOT_DECIMAL.filter((t) => t.trim() === t) : NOT_DECIMAL;
        for (const [text, rule] of [...notDecimal.map((t) => [t, 'type']), ...TOO_BIG.map((t) => [t, expect.stringMatching(/^(format|maximum|minimum)$/)])] as Array<[string, unknown]>) {
          const r = p.in === 'header'
            ? await s.call(o.service, o.op.method.toUpperCase(), `${base}?${others(p.name).slice(1)}`, { admin: true, headers: { [p.name]: text } })
            : await s.call(o.service, o.op.method.toUpperCase(), `${base}?${p.name}=${encodeURIComponent(text)}${others(p.name)}`, { admin: true });
          expect({ op: o.id, param: p.name, text, status: r.status, error: r.body?.error, issue: r.body?.details?.errors?.[0] }).toEqual({
            op: o.id,
            param: p.name,
            text,
            status: 400,
            error: 'validation_error',
            issue: { path: `/${p.in}/${p.name}`, rule, message: expect.any(String) },
          });
        }
      }
    }
    expect(errorLines()).toEqual([]);
  });

  it('decimal digits are taken as before: leading zeros, a minus sign where the minimum allows it, 2^53 - 1', async () => {
    const r = await s.call('api', 'GET', '/api/agents?limit=05&offset=00', { admin: true });
    expect(r.status).toBe(200);
    const negative = await s.call('api', 'GET', '/api/agents?offset=-1', { admin: true });
    expect({ status: negative.status, rule: negative.body.details.errors[0].rule }).toEqual({ status: 400, rule: 'minimum' });
    const max = await s.call('api', 'GET', `/api/audit/requests?after_sequence=${Number.MAX_SAFE_INTEGER}`, { admin: true });
    expect([max.status, max.body.records]).toEqual([200, []]);
  });
});

describe('a client that leaves in the middle of its body', () => {
  it('is one warn line without a stack, never a 500 error line', async () => {
    const before = s.logs.length;
    const cases: Array<[ServiceName, string]> = [
      ['api', '/api/agents'],
      ['api', '/api/context'],
      ['rules', '/api/rules/schemas'],
      ['context-webhook', '/webhook/tag-update'],
    ];
    for (const [name, p] of cases) {
      await new Promise<void>((resolve, reject) => {
        const sock = net.connect(portOf(name), '127.0.0.1', () => {
          // Promises 100,000 bytes (past the context fast path's 64 KiB) and sends a few.
          sock.write(`POST ${p} HTTP/1.1\r\nHost: x\r\nX-Admin-Key: ${ADMIN_KEY}\r\nX-API-Key: ${apiKey}\r\nAuthorization: Bearer x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"agent_id":`);
          setTimeout(() => sock.destroy(), 150);
        });
        sock.on('error', reject);
        sock.on('close', () => resolve());
      });
    }
    const deadline = Date.now() + 5000;
    const warned = () => s.logs.slice(before).filter((l) => l.includes('client left before its request body was read'));
    while (warned().length < cases.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(warned()).toHaveLength(cases.length);
    for (const line of warned()) {
      expect(line).toContain('"level":"warn"');
      expect(line).not.toContain('stack');
    }
    expect(errorLines()).toEqual([]);
  });
});

describe('a chunked body over the limit', () => {
  it('is still the body limit\'s 413 (its error passes through the body read)', async () => {
    const r = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: portOf('api'), method: 'POST', path: '/api/agents', agent: false, headers: { connection: 'close', 'x-admin-key': ADMIN_KEY, 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
        (res) => {
          answered = true;
          const chunks: Buffer[] = [];
          res.on('data', (c) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
        },
      );
      // The server answers before the whole body is sent and closes: the rest of our writes
      // may then fail (EPIPE), which is not the test's concern once the answer came.
      let answered = false;
      req.on('error', (e) => {
        if (!answered) reject(e);
      });
      const chunk = Buffer.alloc(1 << 20, 0x20);
      for (let i = 0; i < 17; i++) req.write(chunk);
      req.end();
    });
    expect({ status: r.status, error: r.body.error }).toEqual({ status: 413, error: 'payload_too_large' });
    expect(errorLines()).toEqual([]);
  });
});
