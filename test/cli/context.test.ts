/**
 * `svc context request` against the real API (REST, port 0) and context service (Connect and
 * gRPC, port 0), with a real agent key: the deployed corpus (W1: role:security gets the 4
 * security SCDs and the 4 meta SCDs), refusals exiting 1 with the same code on every
 * protocol, usage errors (3) and closed ports (5).
 */
import { mkdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { publishCorpus, type PublishedCorpus } from '../fixtures/corpus.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { closedPort, sandbox } from './helpers.js';

vi.setConfig({ testTimeout: 240_000 });

const PROTOCOLS = ['rest', 'connect', 'grpc'] as const;
const esc = (v: string) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('svc context request', () => {
  const s = sandbox();
  let t: TestStack;
  let corpus: PublishedCorpus;
  let agentId: string;
  let apiKey: string;
  let env: Record<string, string>;
  const expected = () => [...corpus.metaScdIds, ...corpus.concernScds.security!].sort();

  beforeAll(async () => {
    t = await startTestStack({ services: ['api', 'context-grpc'] });
    corpus = await publishCorpus((svc, m, p, o) => t.call(svc, m, p, o), { workload: 'W1' });
    const tag = await t.call('api', 'POST', '/api/tags', { admin: true, body: { tag: `cli-ctx-${Date.now().toString(36)}:prod`, bundle_id: corpus.project.id, bundle_version: corpus.project.version } });
    expect(tag.status).toBe(201);
    const agent = await makeAgent(t, { role_id: 'role:security', allowed_intents: ['code_review'] });
    agentId = agent.agent_id;
    apiKey = (await issueKey(t, agentId)).api_key;
    env = { SVC_API_ENDPOINT: t.url('api'), SVC_CONTEXT_ENDPOINT: t.url('context-grpc'), SVC_AGENT_KEY: apiKey };
    mkdirSync(s.work, { recursive: true });
  });
  afterAll(async () => {
    await t?.close();
    s.cleanup();
  });

  it('answers over REST, Connect and gRPC: the same SCDs, text and -o json (REST body, proto message as JSON)', async () => {
    const text = await Promise.all(PROTOCOLS.map((p) => s.run(['context', 'request', 'code_review', '--protocol', p], { env })));
    for (const [i, r] of text.entries()) {
      expect(r.code, `${PROTOCOLS[i]}: ${r.stderr}`).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout).toMatch(/^request_id: +[0-9a-f-]{36}$/m);
      expect(r.stdout).toContain(`${agentId} (role:security)`);
      expect(r.stdout).toMatch(/^SCD +TITLE$/m);
      for (const id of expected()) expect(r.stdout).toMatch(new RegExp(`^${esc(id)}  `, 'm'));
      expect(r.stdout).not.toContain(apiKey);
    }
    const [rest, connect, grpc] = await Promise.all(PROTOCOLS.map((p) => s.run(['context', 'request', 'code_review', '--protocol', p, '-o', 'json', '--param', 'ticket=T-1'], { env })));
    expect(rest.code, rest.stderr).toBe(0);
    const a = JSON.parse(rest.stdout);
    const direct = await t.call('api', 'POST', '/api/context', { apiKey, body: { task_type: 'code_review', params: { ticket: 'T-1' } } });
    expect(direct.status).toBe(200);
    const volatile = ['request_id', 'timestamp', 'processing_time_ms', 'audit_leaf_index'];
    const strip = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([k]) => !volatile.includes(k)));
    expect(strip(a)).toEqual(strip(direct.body));
    expect(a.request_id).toMatch(UUID);
    for (const r of [connect, grpc]) {
      expect(r.code, r.stderr).toBe(0);
      const m = JSON.parse(r.stdout);
      expect(m).toMatchObject({ success: true, agentId, roleId: 'role:security', taskType: 'code_review', scdIds: a.scd_ids, contextBundleIds: a.context_bundle_ids, scdContent: a.scd_content });
      expect(m.requestId).toMatch(UUID);
      expect(Number(m.contentRevision)).toBe(a.content_revision);
    }
    // Every answer is a distinct audit record with the params recorded.
    const records = (await t.call('api', 'GET', `/api/audit/requests?agent_id=${encodeURIComponent(agentId)}&limit=1000`, { admin: true })).body.records;
    const ids = [a.request_id, JSON.parse(connect.stdout).requestId, JSON.parse(grpc.stdout).requestId];
    for (const id of ids) expect(records.find((x: any) => x.request_id === id)?.request_params).toEqual({ ticket: 'T-1' });
  });

  it('--explain says why each SCD was selected or left out, on every protocol; --content prints the YAML', async () => {
    const runs = await Promise.all(PROTOCOLS.map((p) => s.run(['context', 'request', 'code_review', '--protocol', p, '--explain'], { env })));
    for (const r of runs) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^SCD +REASON +FROM +VIA$/m);
      expect(r.stdout).toMatch(new RegExp(`^${esc(corpus.concernScds.security![0]!)} +role role:security +bundle:security:`, 'm'));
      expect(r.stdout).toMatch(new RegExp(`^${esc(corpus.metaScdIds[0]!)} +all_roles +bundle:meta:`, 'm'));
      expect(r.stdout).toMatch(/^Left out \(\d+\):$/m);
      expect(r.stdout).toMatch(/ other_role +roles role:/);
    }
    const [json, content] = await Promise.all([
      s.run(['context', 'request', 'code_review', '--explain', '-o', 'json'], { env }),
      s.run(['context', 'request', 'code_review', '--content', '--api-key', apiKey], { env: { ...env, SVC_AGENT_KEY: undefined } }),
    ]);
    const body = JSON.parse(json.stdout);
    expect(Object.keys(body.explanation.selected).sort()).toEqual(expected());
    expect(content.code, content.stderr).toBe(0);
    expect(content.stdout).toContain(`--- ${corpus.metaScdIds[0]}\nid: ${corpus.metaScdIds[0]}`);
  });

  it('a refusal exits 1 naming the error code, the same on every protocol; a revoked key is refused at once', async () => {
    const bad = 'sk_live_not_a_real_key_000000000000000000';
    const wrong = await Promise.all(PROTOCOLS.map((p) => s.run(['context', 'request', 'code_review', '--protocol', p], { env: { ...env, SVC_AGENT_KEY: bad } })));
    const intent = await Promise.all(PROTOCOLS.map((p) => s.run(['context', 'request', 'triage', '--protocol', p, '-o', 'json'], { env })));
    for (const [i, r] of wrong.entries()) {
      expect(r.code, PROTOCOLS[i]).toBe(1);
      expect(r.stderr).toMatch(/^svc: AUTH_FAILED: .+\(.*request_id [0-9a-f-]{36}\)$/m);
      expect(r.stderr).not.toContain(bad);
      expect(r.stdout).toBe('');
    }
    for (const [i, r] of intent.entries()) {
      expect(r.code, PROTOCOLS[i]).toBe(1);
      expect(r.stderr).toMatch(/^svc: INTENT_NOT_ALLOWED: /m);
      expect(r.stdout).toBe('');
    }
    expect(wrong[0]!.stderr).toContain('HTTP 401');
    expect(intent[0]!.stderr).toContain('HTTP 403');
    // A key revoked a moment ago: refused on the next request, every protocol.
    const k2 = await issueKey(t, agentId);
    const before = await s.run(['context', 'request', 'code_review', '--protocol', 'grpc'], { env: { ...env, SVC_AGENT_KEY: k2.api_key } });
    expect(before.code, before.stderr).toBe(0);
    expect((await t.call('api', 'DELETE', `/api/agents/${encodeURIComponent(agentId)}/api-keys/${k2.key_id}?revoked_by=cli-test`, { admin: true })).status).toBe(204);
    const revoked = await Promise.all(PROTOCOLS.map((p) => s.run(['context', 'request', 'code_review', '--protocol', p], { env: { ...env, SVC_AGENT_KEY: k2.api_key } })));
    for (const r of revoked) {
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('AUTH_FAILED');
    }
    // A revision the content has not reached: refused after the 2 s wait, on every protocol.
    const ahead = await Promise.all(PROTOCOLS.map((p) => s.run(['context', 'request', 'code_review', '--protocol', p, '--at-least-revision', '999999999'], { env })));
    for (const r of ahead) {
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^svc: REVISION_NOT_REACHED: /m);
    }
  });

  it('usage errors exit 3; a closed port exits 5 naming the endpoint; the context endpoint comes from flag, env or config', async () => {
    const port = await closedPort();
    const [nokey, proto, rev, param, fmt, restDown, grpcDown, viaConfig] = await Promise.all([
      s.run(['context', 'request', 'code_review'], { env: { ...env, SVC_AGENT_KEY: undefined } }),
      s.run(['context', 'request', 'code_review', '--protocol', 'smoke'], { env }),
      s.run(['context', 'request', 'code_review', '--at-least-revision', '-1'], { env }),
      s.run(['context', 'request', 'code_review', '--param', 'novalue'], { env }),
      s.run(['context', 'request', 'code_review', '-o', 'yaml'], { env }),
      s.run(['context', 'request', 'code_review', '--endpoint', `http://127.0.0.1:${port}`], { env }),
      s.run(['context', 'request', 'code_review', '--protocol', 'grpc', '--context-endpoint', `http://127.0.0.1:${port}`], { env }),
      // No flag, no SVC_CONTEXT_ENDPOINT: the API endpoint's host on port 8002 unless configured.
      s.run(['context', 'request', 'code_review', '--protocol', 'connect', '--endpoint', `http://127.0.0.2:${port}`], { env: { ...env, SVC_CONTEXT_ENDPOINT: undefined } }),
    ]);
    expect(nokey.code).toBe(3);
    expect(nokey.stderr).toContain('SVC_AGENT_KEY');
    for (const r of [proto, rev, param, fmt]) expect(r.code, r.stderr).toBe(3);
    expect(restDown.code).toBe(5);
    expect(restDown.stderr).toContain(`cannot reach http://127.0.0.1:${port}: connection refused`);
    expect(grpcDown.code).toBe(5);
    expect(grpcDown.stderr).toContain(`cannot reach http://127.0.0.1:${port}: connection refused`);
    // Unless something of this machine's listens on 8002 (then it answers, or refuses the key).
    if (viaConfig.code === 5) expect(viaConfig.stderr).toContain('cannot reach http://127.0.0.2:8002');
    else expect(viaConfig.code).toBe(1);
    const set = await s.run(['config', 'set', 'api.context_endpoint', t.url('context-grpc'), '--user']);
    expect(set.code, set.stderr).toBe(0);
    const configured = await s.run(['context', 'request', 'code_review', '--protocol', 'connect'], { env: { ...env, SVC_CONTEXT_ENDPOINT: undefined } });
    expect(configured.code, configured.stderr).toBe(0);
    expect(configured.stdout).toContain(`${agentId} (role:security)`);
  });
});
