/**
 * Audit routes over HTTP: filtered reads and paging, the SSE stream (live and resumed with
 * Last-Event-ID), and agent output logging (own requests only).
 */
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startTestStack, type TestStack } from '../../../test/harness.js';
import { issueKey, makeAgent } from '../../../test/identity/fixtures.js';
import { transparencyLog } from '../../core/tlog/log.js';

let t: TestStack;
let a: { agent: any; key: any };
let b: { agent: any; key: any };
const ids: { a: string[]; b: string[] } = { a: [], b: [] };

const ask = (apiKey: string, task_type: string, extra: Record<string, unknown> = {}) => t.call('api', 'POST', '/api/context', { apiKey, body: { task_type, ...extra } });

beforeAll(async () => {
  t = await startTestStack({ services: ['api'] });
  const mk = async () => {
    const agent = await makeAgent(t, { allowed_intents: ['triage', 'medication_review'] });
    return { agent, key: await issueKey(t, agent.agent_id) };
  };
  a = await mk();
  b = await mk();
  for (let i = 0; i < 5; i++) ids.a.push((await ask(a.key.api_key, i % 2 ? 'triage' : 'medication_review')).body.request_id);
  for (let i = 0; i < 3; i++) ids.b.push((await ask(b.key.api_key, i ? 'triage' : 'not_allowed')).body.request_id);
});
afterAll(async () => {
  await t?.close();
});

describe('GET /api/audit/requests', () => {
  it('filters by agent, task type and validity, in chain order', async () => {
    const r = await t.call('api', 'GET', `/api/audit/requests?agent_id=${a.agent.agent_id}`, { admin: true });
    expect(r.status).toBe(200);
    expect(r.body.records.map((x: any) => x.request_id)).toEqual(ids.a);
    expect(r.body.next_after_sequence).toBeNull();
    const seqs = r.body.records.map((x: any) => x.chain_sequence);
    expect(seqs).toEqual([...seqs].sort((x: number, y: number) => x - y));
    const rec = r.body.records[0];
    expect(rec).toMatchObject({ agent_id: a.agent.agent_id, intent_valid: true, record_hash: expect.stringMatching(/^[0-9a-f]{64}$/), content_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const t2 = await t.call('api', 'GET', `/api/audit/requests?agent_id=${a.agent.agent_id}&task_type=triage`, { admin: true });
    expect(t2.body.records).toHaveLength(2);
    const inv = await t.call('api', 'GET', `/api/audit/requests?agent_id=${b.agent.agent_id}&intent_valid=false`, { admin: true });
    expect(inv.body.records.map((x: any) => x.request_id)).toEqual([ids.b[0]]);
    expect(inv.body.records[0].validation_errors).toMatchObject({ error_code: 'INTENT_NOT_ALLOWED' });
  });

  it('pages with after_sequence and next_after_sequence, and filters by time', async () => {
    const p1 = await t.call('api', 'GET', `/api/audit/requests?agent_id=${a.agent.agent_id}&limit=2`, { admin: true });
    expect(p1.body.records).toHaveLength(2);
    expect(p1.body.next_after_sequence).toBe(p1.body.records[1].chain_sequence);
    const p2 = await t.call('api', 'GET', `/api/audit/requests?agent_id=${a.agent.agent_id}&limit=2&after_sequence=${p1.body.next_after_sequence}`, { admin: true });
    expect(p2.body.records.map((x: any) => x.request_id)).toEqual(ids.a.slice(2, 4));
    const first = p1.body.records[0].requested_at;
    const until = await t.call('api', 'GET', `/api/audit/requests?agent_id=${a.agent.agent_id}&until=${encodeURIComponent(first)}`, { admin: true });
    expect(until.body.records).toEqual([]);
    const since = await t.call('api', 'GET', `/api/audit/requests?agent_id=${a.agent.agent_id}&since=${encodeURIComponent(first)}`, { admin: true });
    expect(since.body.records).toHaveLength(5);
  });

  it('refuses bad parameters with 400 and a missing admin key with 401', async () => {
    expect((await t.call('api', 'GET', '/api/audit/requests?limit=0', { admin: true })).status).toBe(400);
    expect((await t.call('api', 'GET', '/api/audit/requests?since=yesterday', { admin: true })).status).toBe(400);
    expect((await t.call('api', 'GET', '/api/audit/requests')).status).toBe(401);
  });
});

/** Reads SSE events from a fetch response until `n` events arrived. */
async function readEvents(res: Response, n: number, ms = 5000): Promise<Array<{ id: string; event: string; data: any }>> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = '';
  const out: Array<{ id: string; event: string; data: any }> = [];
  const deadline = Date.now() + ms;
  while (out.length < n) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    const chunk = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), left))]);
    if (!chunk || chunk.done) break;
    buf += dec.decode(chunk.value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const f: Record<string, string> = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const c = line.indexOf(':');
        f[line.slice(0, c)] = line.slice(c + 2);
      }
      if (f.event) out.push({ id: f.id!, event: f.event, data: JSON.parse(f.data!) });
    }
  }
  await reader.cancel();
  return out;
}

describe('GET /api/audit/stream', () => {
  it('replays from after_sequence, then streams new records live', async () => {
    const all = await t.call('api', 'GET', `/api/audit/requests?agent_id=${b.agent.agent_id}`, { admin: true });
    const start = all.body.records[0].chain_sequence - 1;
    const res = await fetch(`${t.url('api')}/api/audit/stream?after_sequence=${start}`, { headers: { 'x-admin-key': ADMIN_KEY } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const live = (async () => {
      await new Promise((r) => setTimeout(r, 300));
      return (await ask(a.key.api_key, 'triage')).body.request_id as string;
    })();
    const events = await readEvents(res, 3 + 0 + 1 + 0, 8000);
    const liveId = await live;
    expect(events[0]!.event).toBe('audit-record');
    expect(Number(events[0]!.id)).toBe(start + 1);
    expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => start + 1 + i));
    expect(events.map((e) => e.data.request_id)).toContain(liveId);
    expect(events.every((e) => Number(e.id) === e.data.chain_sequence)).toBe(true);
  });

  it('resumes after Last-Event-ID (which wins over after_sequence)', async () => {
    const page = await t.call('api', 'GET', `/api/audit/requests?agent_id=${a.agent.agent_id}`, { admin: true });
    const third = page.body.records[2];
    const res = await fetch(`${t.url('api')}/api/audit/stream?after_sequence=0`, { headers: { 'x-admin-key': ADMIN_KEY, 'last-event-id': String(third.chain_sequence) } });
    const [first] = await readEvents(res, 1);
    expect(first!.data.chain_sequence).toBe(third.chain_sequence + 1);
  });

  it('opens with the id of the sequence it starts after, so a reconnect before any record resumes there', async () => {
    const newest = (await t.call('api', 'GET', '/api/audit/requests?order=desc&limit=1', { admin: true })).body.records[0].chain_sequence;
    for (const [query, after] of [['', newest], ['?after_sequence=2', 2]] as const) {
      const res = await fetch(`${t.url('api')}/api/audit/stream${query}`, { headers: { 'x-admin-key': ADMIN_KEY } });
      const reader = res.body!.getReader();
      let head = '';
      while (!head.includes('\n\n')) head += new TextDecoder().decode((await reader.read()).value);
      expect(head.slice(0, head.indexOf('\n\n') + 2)).toBe(`: stream open\nid: ${after}\n\n`);
      await reader.cancel();
    }
  });

  it('is admin-gated and refuses a bad Last-Event-ID', async () => {
    expect((await fetch(`${t.url('api')}/api/audit/stream`)).status).toBe(401);
    const bad = await fetch(`${t.url('api')}/api/audit/stream`, { headers: { 'x-admin-key': ADMIN_KEY, 'last-event-id': 'abc' } });
    expect(bad.status).toBe(400);
    await bad.body?.cancel();
  });
});

describe('agent outputs', () => {
  const output = { text: 'Dose adjusted', items: [{ b: 2, a: 1 }], 'é': true };

  it('logs an output against the agent’s own request and reads it back', async () => {
    const r = await t.call('api', 'POST', '/api/audit/output', { apiKey: a.key.api_key, body: { request_id: ids.a[0], output, output_type: 'summary' } });
    expect(r.status).toBe(201);
    const canonical = '{"items":[{"a":1,"b":2}],"text":"Dose adjusted","é":true}';
    expect(r.body).toMatchObject({ request_id: ids.a[0], agent_id: a.agent.agent_id, output_hash: createHash('sha256').update(canonical).digest('hex') });
    const g = await t.call('api', 'GET', `/api/audit/output/${r.body.output_id}`, { apiKey: a.key.api_key });
    expect(g.status).toBe(200);
    expect(g.body).toEqual({ ...r.body, output, output_type: 'summary' });
    // Another agent sees nothing of it.
    expect((await t.call('api', 'GET', `/api/audit/output/${r.body.output_id}`, { apiKey: b.key.api_key })).status).toBe(404);
  });

  it('refuses another agent’s request and unknown ids with 404, bad keys with 401, bad bodies with 400', async () => {
    expect((await t.call('api', 'POST', '/api/audit/output', { apiKey: b.key.api_key, body: { request_id: ids.a[0], output } })).status).toBe(404);
    expect((await t.call('api', 'POST', '/api/audit/output', { apiKey: a.key.api_key, body: { request_id: randomUUID(), output } })).status).toBe(404);
    expect((await t.call('api', 'GET', `/api/audit/output/${randomUUID()}`, { apiKey: a.key.api_key })).status).toBe(404);
    const noKey = await t.call('api', 'POST', '/api/audit/output', { body: { request_id: ids.a[0], output } });
    expect(noKey.status).toBe(401);
    expect(noKey.body.error).toBe('auth_failed');
    expect((await t.call('api', 'POST', '/api/audit/output', { body: { nope: 1 } })).status).toBe(401);
    expect((await t.call('api', 'POST', '/api/audit/output', { apiKey: a.key.api_key, body: { request_id: ids.a[0] } })).status).toBe(400);
    expect((await t.call('api', 'POST', '/api/audit/output', { apiKey: a.key.api_key, body: { request_id: ids.a[0], output: { t: 'a\u0000b' } } })).status).toBe(400);
    expect((await t.call('api', 'GET', '/api/audit/output/not-a-uuid', { apiKey: a.key.api_key })).status).toBe(400);
  });

  it('output records are immutable', async () => {
    await expect(t.testDb.owner.query(`UPDATE agent_output_logs SET output_type = 'x'`)).rejects.toThrow('Audit records are immutable');
  });
});

describe('GET /api/audit/verify', () => {
  it('answers the fields of 4.5 plus the genesis', async () => {
    // A checkpoint covers the records (the loop signs one within a second; without this the
    // call could come first, and checkpoint_tree_size be null: seen in CI on PostgreSQL).
    await transparencyLog(t.ctx).integrate();
    const v = await t.call('api', 'GET', '/api/audit/verify', { admin: true });
    expect(v.status).toBe(200);
    expect(v.body).toEqual({
      status: 'ok',
      record_count: expect.any(Number),
      legacy_record_count: 0,
      first_chained_sequence: 1,
      last_verified_at: expect.any(String),
      tampered_at_sequence: null,
      tampered_field_chain: null,
      error: null,
      genesis_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      deployment_id: t.config.deploymentId,
      initialized_at: expect.any(String),
      transparency_log: { status: 'ok', leaf_count: expect.any(Number), tree_size: expect.any(Number), checkpoint_tree_size: expect.any(Number), tampered_at_leaf: null, error: null },
      management_events: { status: 'ok', event_count: expect.any(Number), tampered_at_sequence: null, error: null },
    });
    expect(v.body.management_events.event_count).toBeGreaterThan(0);
    expect((await t.call('api', 'GET', '/api/audit/verify')).status).toBe(401);
  });
});
