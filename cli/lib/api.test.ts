import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiError, call, cliFetch, connection, controlPlane, describeNetworkError, detailLines, UnreachableError, type Connection } from './api.js';
import { EXIT } from './errors.js';
import { closeServers, freePort, listenLoopback } from '../../test/harness.js';

/** Real loopback servers: one answering a spec error body, one that never answers. */
describe('cli/lib/api: how the CLI reports what the API said, and what nothing said', () => {
  const servers: Server[] = [];
  let answering = '';
  let silent = '';
  beforeAll(async () => {
    const a = createServer((req, res) => {
      if (req.url === '/api/agents/ghost') {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not_found', message: 'Agent ghost not found' }));
      } else if (req.url?.startsWith('/api/agents')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ agents: [], total: 0 }));
      } else res.writeHead(502, { 'content-type': 'text/plain' }).end('bad gateway');
    });
    const s = createServer(() => { /* never answers */ });
    servers.push(a, s);
    answering = await listenLoopback(a);
    silent = await listenLoopback(s);
  });
  afterAll(() => closeServers(servers));

  const conn = (endpoint: string, timeoutMs = 30000): Connection => ({ endpoint, adminKey: 'admin-key-for-this-test-1234', timeoutMs });

  it('a 2xx body is returned; an error body becomes exit 1 naming the error code, the message and the status', async () => {
    const c = conn(answering);
    const api = controlPlane(c);
    expect(await call(api.GET('/api/agents', {}), c)).toEqual({ agents: [], total: 0 });
    const e = await call(api.GET('/api/agents/{agent_id}', { params: { path: { agent_id: 'ghost' } } }), c).catch((x: unknown) => x);
    expect(e).toMatchObject({ exitCode: EXIT.failed, status: 404, code: 'not_found', message: 'not_found: Agent ghost not found (HTTP 404)' });
  });

  it('a body that is not the spec\'s (a proxy\'s text) is still named, by its status', () => {
    expect(apiError(502, 'bad gateway').message).toBe('http_502: bad gateway (HTTP 502)');
    expect(apiError(401, { error: 'unauthorized', message: 'Invalid admin API key' }, conn('http://x')).message)
      .toBe('unauthorized: Invalid admin API key (HTTP 401) (the admin key sent was ****1234)');
    expect(apiError(401, { success: false, error_code: 'AUTH_FAILED', error_message: 'API key revoked' }).code).toBe('AUTH_FAILED');
    expect(detailLines({ error: 'validation_error', details: { errors: [{ severity: 'error', path: '/body/x', rule: 'required', message: 'x is required' }] } }))
      .toEqual(['error /body/x [required] x is required']);
    expect(detailLines({ error: 'conflict', details: { field: 'description' } })).toEqual(['field: description']);
  });

  it('nothing answering is exit 5, naming the endpoint and the cause: refused, timed out, DNS, TLS', async () => {
    const closed = await freePort();
    const attempt = async (c: Connection) => cliFetch(c)(`${c.endpoint}/api/health`).then(() => null, (e: unknown) => e);
    const refused = await attempt(conn(`http://127.0.0.1:${closed}`));
    expect(refused).toBeInstanceOf(UnreachableError);
    expect(refused).toMatchObject({ exitCode: EXIT.unreachable, message: `cannot reach http://127.0.0.1:${closed}: connection refused (ECONNREFUSED)` });
    expect(await attempt(conn(silent, 300))).toMatchObject({ exitCode: 5, message: `cannot reach ${silent}: timed out` });
    const dns = (await attempt(conn('http://svc-cli-test.invalid'))) as Error;
    expect(dns.message).toMatch(/^cannot reach http:\/\/svc-cli-test\.invalid: DNS lookup failed \((ENOTFOUND|EAI_AGAIN)\)$/);
    const tls = (await attempt(conn(answering.replace('http:', 'https:')))) as Error;
    expect(tls.message).toMatch(/: TLS failed \(ERR_SSL_/);
    expect(describeNetworkError(new Error('plain'))).toBe('plain');
  });

  it('the connection comes from flags, else the environment, and an endpoint that is not http(s) is a usage error', () => {
    const saved = { e: process.env.SVC_API_ENDPOINT, k: process.env.SVC_API_KEY, h: process.env.SVC_CONFIG_HOME };
    try {
      process.env.SVC_CONFIG_HOME = '/nonexistent/svc-cli-test'; // no test reads ~
      process.env.SVC_API_ENDPOINT = 'http://127.0.0.1:9/';
      process.env.SVC_API_KEY = 'from-env';
      expect(connection()).toMatchObject({ endpoint: 'http://127.0.0.1:9', adminKey: 'from-env' });
      expect(connection({ endpoint: 'https://svc.example/', key: 'from-flag' })).toMatchObject({ endpoint: 'https://svc.example', adminKey: 'from-flag' });
      expect(() => connection({ endpoint: 'ftp://x' })).toThrow(expect.objectContaining({ exitCode: EXIT.usage }));
    } finally {
      if (saved.e === undefined) delete process.env.SVC_API_ENDPOINT; else process.env.SVC_API_ENDPOINT = saved.e;
      if (saved.k === undefined) delete process.env.SVC_API_KEY; else process.env.SVC_API_KEY = saved.k;
      if (saved.h === undefined) delete process.env.SVC_CONFIG_HOME; else process.env.SVC_CONFIG_HOME = saved.h;
    }
  });
});
