/**
 * The TypeScript client (clients/ts, @svc/client) against the real stack (PGlite, or
 * PostgreSQL and Redis): consumer.ts, which imports only the package, runs in a process of
 * its own (plain Node resolution to clients/ts/dist, as for a user of the package) and must
 * create an agent, read a missing one, issue a key, request context over Connect, gRPC and
 * gRPC-Web and subscribe; what it did is checked here against the database. In-process,
 * `close()` must end the client's HTTP/2 session (the harness's teardown fails on a
 * connection left open) and leave a caller's own session manager alone. The other REST
 * clients send their credentials and read typed answers and errors.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCollectorClient, createContextClient, createRulesClient, createTelemetryClient, createWebhookClient, Http2SessionManager, type ContextProtocol } from '@svc/client';
import { signWebhookToken } from '../../src/core/tokens/jwt.js';
import { ADMIN_KEY, JWT_SECRET, startTestStack, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { concern, deploy, publish, uid } from '../content/factories.js';

const CONSUMER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'consumer.ts');

let t: TestStack;
let roleId: string;
let tag: string;
let scdIds: string[];
let bundleId: string;

beforeAll(async () => {
  t = await startTestStack();
  const u = uid();
  roleId = `role:consumer-${u}`;
  const c = concern(`consumer-${u}`, 2, { applies_to: { roles: [roleId] } });
  scdIds = c.scds;
  bundleId = c.id;
  await publish(t, c.body);
  await deploy(t, [[c.id, '1.0.0']]);
  tag = `consumer-${u}:prod`;
  const r = await t.call('api', 'POST', '/api/tags', { admin: true, body: { tag, bundle_id: c.id, bundle_version: '1.0.0' } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
});
afterAll(async () => {
  await t?.close();
});

function runConsumer(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', CONSUMER], { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe('@svc/client', () => {
  it('a consumer creates an agent, reads a missing one, issues a key and requests context over the three protocols', async () => {
    const run = await runConsumer({
      SVC_API_URL: t.url('api'),
      SVC_CONTEXT_URL: t.url('context-grpc'),
      SVC_ADMIN_KEY: ADMIN_KEY,
      SVC_ROLE_ID: roleId,
      SVC_TAG: tag,
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout);

    // The agent exists as created, its defaults filled in by the server.
    const agent = await t.call('api', 'GET', `/api/agents/${encodeURIComponent(out.agentId)}`, { admin: true });
    expect(agent.status).toBe(200);
    expect(agent.body).toMatchObject({ agent_id: out.agentId, role_id: roleId, status: 'active', overrides: [], restrictions: [], owner_verified: false });
    expect(out.notFound).toMatchObject({ error: 'not_found', message: expect.any(String) });

    // One accepted, audited request per protocol (and REST), with the consumer's key and params.
    expect([...out.rest.scdIds].sort()).toEqual([...scdIds].sort());
    const [restRec] = await t.testDb.db.query<Record<string, any>>('SELECT * FROM agent_context_requests WHERE request_id = $1', [out.rest.requestId]);
    expect(restRec).toMatchObject({ agent_id: out.agentId, intent_valid: true, request_params: { consumer: 'rest' } });
    const protocols: ContextProtocol[] = ['connect', 'grpc', 'grpc-web'];
    expect(Object.keys(out.context).sort()).toEqual([...protocols].sort());
    for (const p of protocols) {
      const res = out.context[p];
      expect(res).toMatchObject({ success: true, agentId: out.agentId });
      expect([...res.scdIds].sort()).toEqual([...scdIds].sort());
      const [rec] = await t.testDb.db.query<Record<string, any>>('SELECT * FROM agent_context_requests WHERE request_id = $1', [res.requestId]);
      expect(rec).toMatchObject({ agent_id: out.agentId, task_type: 'code_review', intent_valid: true, request_params: { consumer: p } });
    }
    const [key] = await t.testDb.db.query<{ agent_id: string; last_used_at: Date | null }>('SELECT agent_id, last_used_at FROM agent_api_keys WHERE key_id = $1', [out.keyId]);
    expect(key).toMatchObject({ agent_id: out.agentId });

    expect(out.snapshot).toMatchObject({ tag });
    expect([...out.snapshot.scdIds].sort()).toEqual([...scdIds].sort());
  });

  it('close() ends the HTTP/2 session it opened, and leaves a session manager of the caller open', async () => {
    const agent = await makeAgent(t, { role_id: roleId, allowed_intents: ['code_review'] });
    const { api_key: apiKey } = await issueKey(t, agent.agent_id);
    for (const protocol of ['connect', 'grpc', 'grpc-web'] as const) {
      const client = createContextClient({ baseUrl: t.url('context-grpc'), apiKey, protocol });
      expect((await client.requestContext({ taskType: 'code_review' })).success).toBe(true);
      client.close(); // a session left open here fails the harness's teardown
    }
    const sessionManager = new Http2SessionManager(t.url('context-grpc'));
    try {
      const client = createContextClient({ baseUrl: t.url('context-grpc'), apiKey, sessionManager });
      const refused = await client.requestContext({ taskType: 'deploy_prod' });
      expect(refused).toMatchObject({ success: false, errorCode: 'INTENT_NOT_ALLOWED', agentId: agent.agent_id });
      client.close();
      expect(sessionManager.state()).not.toBe('closed');
      expect((await client.requestContext({ taskType: 'code_review' })).success).toBe(true);
    } finally {
      sessionManager.abort();
    }
    expect(t.logs.join('\n')).not.toContain(apiKey);
  });

  it('the rules, telemetry, collector and webhook clients send their credentials and read typed answers', async () => {
    // In this process a kept-alive connection would fail the harness's teardown.
    const headers = { connection: 'close' };
    const rules = await createRulesClient({ baseUrl: t.url('rules'), adminKey: ADMIN_KEY, headers }).GET('/api/rules/rule-sets');
    expect(rules.response.status).toBe(200);
    const wrongKey = await createRulesClient({ baseUrl: t.url('rules'), adminKey: 'admin_wrong', headers }).GET('/api/rules/rule-sets');
    expect(wrongKey.response.status).toBe(401);
    expect(wrongKey.error).toMatchObject({ error: 'auth_failed' });

    const stats = await createTelemetryClient({ baseUrl: t.url('telemetry'), adminKey: ADMIN_KEY, headers }).GET('/stats');
    expect(stats.response.status).toBe(200);
    expect(stats.data).toMatchObject({ total_reports_sent: expect.any(Number), total_reports_failed: expect.any(Number) });

    const sources = await createCollectorClient({ baseUrl: t.url('collector'), headers }).GET('/api/activity-sources');
    expect(sources.response.status).toBe(200);
    expect(Array.isArray(sources.data?.sources)).toBe(true);

    const tagRow = await t.call('api', 'GET', `/api/tags/${encodeURIComponent(tag)}`, { admin: true });
    expect(tagRow.status).toBe(200);
    const update = { tag, bundle_id: bundleId, bundle_version: '1.0.0', updated_at: tagRow.body.updated_at };
    const token = await signWebhookToken(JWT_SECRET, new Date());
    const accepted = await createWebhookClient({ baseUrl: t.url('context-webhook'), token, headers }).POST('/webhook/tag-update', { body: update });
    expect(accepted.response.status).toBe(202);
    expect(accepted.data).toEqual({ status: 'accepted', delivered_to: 0 });
    const forged = await createWebhookClient({ baseUrl: t.url('context-webhook'), token: `${token}x`, headers }).POST('/webhook/tag-update', { body: update });
    expect(forged.response.status).toBe(401);
    expect(forged.error).toMatchObject({ error: 'auth_failed' });
  });
});
