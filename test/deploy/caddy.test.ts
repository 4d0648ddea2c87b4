/**
 * deploy/Caddyfile with Debian's caddy: `caddy validate`, then caddy run in front of the
 * real services on port 0 (its ports and upstreams from the environment, its local CA
 * (`tls internal`) in a temporary XDG_DATA_HOME, its admin API off): a REST call and a
 * rules call through 443's path routing, gRPC (HTTP/2) and Connect (HTTP/1.1) calls through
 * 8443 to the h2c upstream, and the collector's API and /metrics not reachable through it.
 * Skipped, saying why, where caddy is missing (`make caddy` installs it).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, freePort, startTestStack, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { ContextService } from '../../gen/proto/context_pb.js';

const CADDYFILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../deploy/Caddyfile');
const CADDY = [process.env.CADDY_PATH, '/usr/bin/caddy', '/usr/local/bin/caddy'].find((p): p is string => !!p && existsSync(p));
if (!CADDY) console.warn('test/deploy/caddy.test.ts skipped: no caddy at $CADDY_PATH, /usr/bin/caddy or /usr/local/bin/caddy (make caddy installs Debian\'s caddy)');

interface Answer {
  status: number;
  version: string;
  text: string;
}

describe.skipIf(!CADDY)('TLS front (deploy/Caddyfile, caddy)', () => {
  let t: TestStack;
  let caddy: ChildProcess | undefined;
  let caddyLog = '';
  let dir: string;
  let ca: Buffer;
  let restPort: number;
  let rpcPort: number;
  let apiKey: string;
  let agentId: string;

  /** One HTTPS request to the front (its own connection, HTTP/1.1). */
  const get = (port: number, p: string, headers: Record<string, string> = {}, method = 'GET', body?: string): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = https.request({ host: '127.0.0.1', port, path: p, method, ca, agent: false, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, version: res.httpVersion, text: Buffer.concat(chunks).toString('utf8') }));
      });
      req.on('error', reject);
      req.end(body);
    });

  it('caddy validate accepts deploy/Caddyfile with its defaults', () => {
    const home = mkdtempSync(path.join(os.tmpdir(), 'svc-caddy-validate-'));
    try {
      const r = spawnSync(CADDY!, ['validate', '--config', CADDYFILE, '--adapter', 'caddyfile'], { env: { PATH: process.env.PATH, HOME: home, XDG_DATA_HOME: home, XDG_CONFIG_HOME: home }, encoding: 'utf8' });
      expect({ status: r.status, out: r.stdout + r.stderr }).toMatchObject({ status: 0, out: expect.stringContaining('Valid configuration') });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  describe('in front of the services', () => {
    beforeAll(async () => {
      t = await startTestStack();
      const agent = await makeAgent(t, { role_id: 'role:security', allowed_intents: ['code_review'] });
      agentId = agent.agent_id;
      apiKey = (await issueKey(t, agent.agent_id)).api_key;
      restPort = await freePort();
      rpcPort = await freePort();
      dir = mkdtempSync(path.join(os.tmpdir(), 'svc-caddy-'));
      const hostPort = (name: Parameters<TestStack['url']>[0]) => new URL(t.url(name)).host;
      caddy = spawn(CADDY!, ['run', '--config', CADDYFILE, '--adapter', 'caddyfile'], {
        env: {
          PATH: process.env.PATH,
          HOME: dir,
          XDG_DATA_HOME: path.join(dir, 'data'),
          XDG_CONFIG_HOME: path.join(dir, 'config'),
          SVC_TLS_HOST: '127.0.0.1',
          SVC_TLS_BIND: '127.0.0.1',
          SVC_TLS_PORT: String(restPort),
          SVC_RPC_TLS_PORT: String(rpcPort),
          SVC_API_UPSTREAM: hostPort('api'),
          SVC_RULES_UPSTREAM: hostPort('rules'),
          SVC_WEBHOOK_UPSTREAM: hostPort('context-webhook'),
          SVC_TELEMETRY_UPSTREAM: hostPort('telemetry'),
          SVC_CONTEXT_GRPC_UPSTREAM: hostPort('context-grpc'),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      caddy.stdout!.on('data', (c: Buffer) => (caddyLog += c.toString()));
      caddy.stderr!.on('data', (c: Buffer) => (caddyLog += c.toString()));
      // Caddy makes its local CA at start, then the sites' certificates; wait until the
      // front answers through TLS verified by that CA (or caddy exits).
      const root = path.join(dir, 'data', 'caddy', 'pki', 'authorities', 'local', 'root.crt');
      const deadline = Date.now() + 60_000;
      for (;;) {
        if (caddy.exitCode !== null) throw new Error(`caddy exited (${caddy.exitCode}):\n${caddyLog}`);
        if (existsSync(root)) {
          ca = readFileSync(root);
          const up = await Promise.all([get(restPort, '/health'), get(rpcPort, '/health')]).then(
            (rs) => rs.every((r) => r.status === 200),
            () => false,
          );
          if (up) break;
        }
        if (Date.now() > deadline) throw new Error(`caddy did not serve within 60 s:\n${caddyLog}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }, 120_000);

    afterAll(async () => {
      // caddy first: its pooled upstream connections would otherwise be the stack's open connections.
      if (caddy && caddy.exitCode === null) {
        const exited = new Promise((r) => caddy!.once('exit', r));
        caddy.kill('SIGTERM');
        await exited;
      }
      await t?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    }, 60_000);

    it('443: the control plane\'s REST API with the admin key, and the rules service by its /api/rules path', async () => {
      const created = await get(restPort, '/api/agents', { 'x-admin-key': ADMIN_KEY, 'content-type': 'application/json' }, 'POST', JSON.stringify({ agent_id: 'agent:via-caddy', name: 'via caddy', role_id: 'role:security', allowed_intents: ['code_review'] }));
      expect(created.status).toBe(201);
      const list = await get(restPort, '/api/agents', { 'x-admin-key': ADMIN_KEY });
      expect(list.status).toBe(200);
      expect(list.text).toContain('agent:via-caddy');
      expect((await get(restPort, '/api/agents')).status).toBe(401);
      const rules = await get(restPort, '/api/rules/rule-sets', { 'x-admin-key': ADMIN_KEY });
      expect(rules.status).toBe(200);
      // The rules service's own health under its stripped prefix.
      expect(JSON.parse((await get(restPort, '/rules/health')).text).service).toBe('rules');
    });

    it('8443: RequestContext over gRPC (HTTP/2, TLS) and Connect (HTTP/1.1, TLS), through to 8002\'s h2c', async () => {
      const baseUrl = `https://127.0.0.1:${rpcPort}`;
      const sessions = new Http2SessionManager(baseUrl, {}, { ca });
      try {
        const grpc = createClient(ContextService, createGrpcTransport({ baseUrl, sessionManager: sessions }));
        const res = await grpc.requestContext({ apiKey, taskType: 'code_review' });
        expect({ success: res.success, agentId: res.agentId }).toEqual({ success: true, agentId });
      } finally {
        sessions.abort();
      }
      const connect = createClient(ContextService, createConnectTransport({ baseUrl, httpVersion: '1.1', nodeOptions: { ca, agent: false } }));
      const res = await connect.requestContext({ apiKey, taskType: 'code_review' });
      expect({ success: res.success, agentId: res.agentId }).toEqual({ success: true, agentId });
    });

    it('the collector\'s API, /metrics and /ready are not reachable through the front', async () => {
      // The collector answers on its own port...
      expect((await t.call('collector', 'GET', '/api/activity/stats')).status).toBe(200);
      // ...and not through either site.
      for (const port of [restPort, rpcPort]) {
        for (const p of ['/api/activity/stats', '/api/activity/observed', '/api/activity-sources', '/metrics', '/ready', '/rules/metrics', '/telemetry/metrics']) {
          const r = await get(port, p);
          expect({ port, p, status: r.status }).toEqual({ port, p, status: 404 });
        }
      }
    });
  });
});
