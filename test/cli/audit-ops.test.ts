/**
 * `svc audit verify` (the server's verdict), `requests`, `events` and `tail` against the real
 * API on port 0: verify 0, then 1 naming what was tampered through the owner connection;
 * -o json equal to the API's; tail printing records made after it started, resuming after
 * the server drops the stream, ending on SIGINT with 0; exit 1, 3 and 5.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { auditStreams } from '../../src/api/audit/stream.js';
import { ADMIN_KEY, startTestStack, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { BIN, closedPort, sandbox } from './helpers.js';

vi.setConfig({ testTimeout: 240_000 });

/** A long-running `svc` (tail): its output as it comes, waited on by content, never by time. */
class Follower {
  stdout = '';
  stderr = '';
  code: number | null | undefined = undefined;
  readonly child: ChildProcessWithoutNullStreams;
  private waiters: Array<() => void> = [];
  constructor(args: string[], env: Record<string, string | undefined>, cwd: string, command?: string[], extraEnv: Record<string, string | undefined> = {}) {
    const e: Record<string, string | undefined> = { ...process.env, NO_COLOR: '1', ...env, ...extraEnv };
    this.child = command ? spawn(command[0]!, command.slice(1), { cwd, env: e as NodeJS.ProcessEnv }) : spawn(process.execPath, [BIN, ...args], { cwd, env: e as NodeJS.ProcessEnv });
    this.child.stdout.on('data', (d) => { this.stdout += d; this.kick(); });
    this.child.stderr.on('data', (d) => { this.stderr += d; this.kick(); });
    this.child.on('close', (code) => { this.code = code; this.kick(); });
  }
  private kick() { for (const w of this.waiters.splice(0)) w(); }
  /** Resolves when `pred` holds; fails (with the output so far) if the process ends first. */
  async until(pred: () => boolean, what: string): Promise<void> {
    while (!pred()) {
      if (this.code !== undefined) throw new Error(`svc ended (${this.code}) before ${what}\nstdout: ${this.stdout}\nstderr: ${this.stderr}`);
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }
  ended(): Promise<number | null> {
    return this.until(() => this.code !== undefined, 'its end').catch(() => undefined).then(() => this.code ?? null);
  }
}

describe('svc audit verify / requests / events / tail', () => {
  const s = sandbox();
  let t: TestStack;
  let env: Record<string, string>;
  let agentId: string;
  let apiKey: string;
  const followers: Follower[] = [];
  const ask = async (task = 'triage', key = apiKey) => {
    const r = await t.call('api', 'POST', '/api/context', { apiKey: key, body: { task_type: task } });
    expect(r.status).toBe(200);
    return r.body.request_id as string;
  };

  beforeAll(async () => {
    t = await startTestStack({ services: ['api'] });
    env = { SVC_API_ENDPOINT: t.url('api'), SVC_API_KEY: ADMIN_KEY };
    const agent = await makeAgent(t);
    agentId = agent.agent_id;
    apiKey = (await issueKey(t, agentId)).api_key;
    for (let i = 0; i < 3; i++) await ask(i % 2 ? 'triage' : 'medication_review');
    mkdirSync(s.work, { recursive: true });
  });
  afterAll(async () => {
    for (const f of followers) if (f.code === undefined) f.child.kill('SIGKILL');
    await Promise.all(followers.map((f) => f.ended()));
    await t?.close();
    s.cleanup();
  });

  it('verify: 0 with a verdict per part, -o json the API\'s; 1 naming the tampered request sequence and event', async () => {
    // The checkpoint is signed in the background: wait until it covers every leaf, so that the
    // CLI's answer and the API's, read one after the other, are about the same tree.
    for (let i = 0; i < 200; i++) {
      const tl = (await t.call('api', 'GET', '/api/audit/verify', { admin: true })).body.transparency_log;
      if (tl.checkpoint_tree_size === tl.leaf_count) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const [text, json] = await Promise.all([s.run(['audit', 'verify'], { env }), s.run(['audit', 'verify', '-o', 'json'], { env })]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^context requests: +ok {2}\d+ chained record/m);
    expect(text.stdout).toMatch(/^management events: +ok {2}\d+ event/m);
    expect(text.stdout).toMatch(/^transparency log: +ok {2}\d+ leaves/m);
    expect(text.stdout).toMatch(/^verdict: +ok \(verified at /m);
    expect(json.code).toBe(0);
    const api = (await t.call('api', 'GET', '/api/audit/verify', { admin: true })).body;
    const mine = JSON.parse(json.stdout);
    expect({ ...mine, last_verified_at: 'x' }).toEqual({ ...api, last_verified_at: 'x' });
    expect(mine.status).toBe('ok');

    // A context request record changed behind the service's back (the owner connection).
    const records = (await t.call('api', 'GET', `/api/audit/requests?agent_id=${encodeURIComponent(agentId)}`, { admin: true })).body.records;
    const target = records[1];
    const owner = t.testDb.owner;
    await owner.exec('ALTER TABLE agent_context_requests DISABLE TRIGGER USER');
    try {
      await owner.query(`UPDATE agent_context_requests SET task_type = 'tampered' WHERE chain_sequence = ${Number(target.chain_sequence)}`);
      const [bad, badJson] = await Promise.all([s.run(['audit', 'verify'], { env }), s.run(['audit', 'verify', '-o', 'json'], { env })]);
      expect(bad.code).toBe(1);
      expect(bad.stdout).toMatch(/^context requests: +TAMPERED/m);
      expect(bad.stderr).toContain(`svc: audit log tampered: context request chain at sequence ${target.chain_sequence} (record_hash)`);
      expect(badJson.code).toBe(1);
      expect(JSON.parse(badJson.stdout)).toMatchObject({ status: 'tampered', tampered_at_sequence: target.chain_sequence });
    } finally {
      await owner.query(`UPDATE agent_context_requests SET task_type = $1 WHERE chain_sequence = ${Number(target.chain_sequence)}`, [target.task_type]);
      await owner.exec('ALTER TABLE agent_context_requests ENABLE TRIGGER USER');
    }
    // A management event changed: named by its event_sequence.
    const ev = (await t.call('api', 'GET', '/api/audit/events?limit=1000', { admin: true })).body.events.at(-1);
    await owner.exec('ALTER TABLE audit_management_events DISABLE TRIGGER USER');
    try {
      await owner.exec(`UPDATE audit_management_events SET actor = 'someone-else' WHERE event_sequence = ${Number(ev.event_sequence)}`);
      const bad = await s.run(['audit', 'verify'], { env });
      expect(bad.code).toBe(1);
      expect(bad.stdout).toMatch(/^management events: +TAMPERED/m);
      expect(bad.stderr).toContain(`svc: audit log tampered: management events at event_sequence ${ev.event_sequence}`);
    } finally {
      await owner.exec(`UPDATE audit_management_events SET actor = '${String(ev.actor).replace(/'/g, "''")}' WHERE event_sequence = ${Number(ev.event_sequence)}`);
      await owner.exec('ALTER TABLE audit_management_events ENABLE TRIGGER USER');
    }
    expect((await s.run(['audit', 'verify'], { env })).code).toBe(0);
  });

  it('requests and events: tables, -o json equal to the API\'s (the array), filters and limits', async () => {
    const q = `agent_id=${encodeURIComponent(agentId)}`;
    const [reqText, reqJson, reqLim, evJson, evText, evLim] = await Promise.all([
      s.run(['audit', 'requests', '--agent', agentId], { env }),
      s.run(['audit', 'requests', '--agent', agentId, '-o', 'json', '--since', '1d'], { env }),
      s.run(['audit', 'requests', '--agent', agentId.replace(/^agent:/, ''), '-o', 'json', '--limit', '2'], { env }), // the agent: prefix may be left out
      s.run(['audit', 'events', '--resource-id', agentId, '-o', 'json'], { env }),
      s.run(['audit', 'events', '--resource-type', 'agent', '--type', 'agent.created'], { env }),
      s.run(['audit', 'events', '-o', 'json', '--limit', '1'], { env }),
    ]);
    const api = (await t.call('api', 'GET', `/api/audit/requests?${q}`, { admin: true })).body.records;
    expect(reqJson.code, reqJson.stderr).toBe(0);
    expect(JSON.parse(reqJson.stdout)).toEqual(api);
    expect(api.length).toBeGreaterThanOrEqual(3);
    expect(JSON.parse(reqLim.stdout)).toEqual(api.slice(0, 2));
    expect(reqText.code).toBe(0);
    expect(reqText.stdout).toMatch(/^SEQ +REQUESTED_AT +AGENT +TASK +RESULT +SCDS +REQUEST_ID$/m);
    for (const r of api) expect(reqText.stdout).toContain(r.request_id);
    const apiEv = (await t.call('api', 'GET', `/api/audit/events?resource_id=${encodeURIComponent(agentId)}`, { admin: true })).body.events;
    expect(evJson.code, evJson.stderr).toBe(0);
    expect(JSON.parse(evJson.stdout)).toEqual(apiEv);
    expect(apiEv.map((e: any) => e.event_type)).toContain('agent.created');
    expect(evText.code).toBe(0);
    expect(evText.stdout).toMatch(/^SEQ +OCCURRED_AT +ACTOR +EVENT +RESOURCE$/m);
    expect(evText.stdout).toContain(`agent.created  agent ${agentId}`);
    expect(JSON.parse(evLim.stdout)).toEqual((await t.call('api', 'GET', '/api/audit/events?limit=1', { admin: true })).body.events);
    // Nothing matches: an empty array, and a table's "(none)" line.
    const [none, noneText] = await Promise.all([
      s.run(['audit', 'requests', '--agent', 'agent:nobody-here', '-o', 'json'], { env }),
      s.run(['audit', 'events', '--actor', 'nobody-here'], { env }),
    ]);
    expect(JSON.parse(none.stdout)).toEqual([]);
    expect(noneText.stdout.trim()).toBe('(no management events)');
  });

  it('exit codes: 3 for bad options, 1 for a wrong admin key, 5 for a closed port', async () => {
    const port = await closedPort();
    const down = { ...env, SVC_API_ENDPOINT: `http://127.0.0.1:${port}` };
    const wrong = { ...env, SVC_API_KEY: 'not-the-admin-key-0000' };
    const runs = await Promise.all([
      s.run(['audit', 'requests', '--since', 'yesterday'], { env }),
      s.run(['audit', 'events', '--limit', '0'], { env }),
      s.run(['audit', 'tail', '--after', 'x'], { env }),
      s.run(['audit', 'verify', '--save'], { env }),
      s.run(['audit', 'verify', '-o', 'json', '--since', 'cp.json'], { env }),
      s.run(['audit', 'verify'], { env: wrong }),
      s.run(['audit', 'requests'], { env: wrong }),
      s.run(['audit', 'events'], { env: wrong }),
      s.run(['audit', 'tail'], { env: wrong }),
      s.run(['audit', 'verify'], { env: down }),
      s.run(['audit', 'requests'], { env: down }),
      s.run(['audit', 'events'], { env: down }),
      s.run(['audit', 'tail'], { env: down }),
    ]);
    expect(runs.map((r) => r.code)).toEqual([3, 3, 3, 3, 3, 1, 1, 1, 1, 5, 5, 5, 5]);
    for (const r of runs.slice(5, 9)) {
      expect(r.stderr).toContain('HTTP 401');
      expect(r.stderr).not.toContain('not-the-admin-key');
    }
    for (const r of runs.slice(9)) expect(r.stderr).toContain(`cannot reach http://127.0.0.1:${port}: connection refused`);
  });

  it('tail prints records made after it started, resumes after the server drops the stream, filters by agent, ends on SIGINT with 0', async () => {
    const other = await makeAgent(t);
    const otherKey = (await issueKey(t, other.agent_id)).api_key;
    // Started after the current end of the log: records made before the tails are connected are replayed, so none is missed.
    const all = (await t.call('api', 'GET', '/api/audit/requests?limit=1000', { admin: true })).body.records;
    const end = String(all.at(-1).chain_sequence);
    const text = new Follower(['audit', 'tail', '--agent', agentId, '--after', end], { SVC_CONFIG_HOME: s.home, ...env }, s.work);
    const json = new Follower(['audit', 'tail', '-o', 'json', '--after', end], { SVC_CONFIG_HOME: s.home, ...env }, s.work);
    // And one without --after: it starts at the end of the log once it says it is following.
    const plain = new Follower(['audit', 'tail'], { SVC_CONFIG_HOME: s.home, ...env }, s.work);
    followers.push(text, json, plain);
    await plain.until(() => plain.stderr.includes('svc: following '), 'the stream to open');
    expect(plain.stderr).toContain(`svc: following ${t.url('api')}/api/audit/stream from the end of the log (Ctrl-C to stop)`);
    const first = await ask('triage');
    await plain.until(() => plain.stdout.includes(first), 'a record made after it started');
    expect(plain.stdout.trim().split('\n')).toHaveLength(1);
    const mine = await ask('triage');
    const theirs = await ask('triage', otherKey);
    await json.until(() => json.stdout.includes(theirs) && json.stdout.includes(mine), 'both new records (json)');
    await text.until(() => text.stdout.includes(mine), 'the agent\'s record (text)');
    // Drop every stream from the server side, and make a record while the tails are away.
    auditStreams(t.ctx).closeAll();
    const during = await ask('triage');
    const after = await ask('medication_review');
    await json.until(() => json.stdout.includes(during) && json.stdout.includes(after), 'the records made during and after the drop');
    await text.until(() => text.stdout.includes(during) && text.stdout.includes(after), 'the records made during and after the drop (text)');
    expect(json.stderr).toMatch(/svc: the server ended the stream; reconnecting in 0\.25 s \(after sequence \d+\)/);
    expect(json.stderr).toMatch(/svc: reconnected, resuming after sequence \d+/);
    // JSON lines: each one record, exactly the API's, none twice, in chain order.
    const lines = json.stdout.trim().split('\n').map((l) => JSON.parse(l));
    const seqs = lines.map((r) => r.chain_sequence);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    const api = (await t.call('api', 'GET', `/api/audit/requests?after_sequence=${end}&limit=1000`, { admin: true })).body.records;
    expect(lines).toEqual(api.slice(0, lines.length));
    // The text tail shows only its agent's records, one line each.
    expect(text.stdout).not.toContain(theirs);
    expect(text.stdout).toMatch(new RegExp(`^#\\d+  \\S+  ${agentId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}  triage  ok  \\d+ scds  ${mine}$`, 'm'));
    text.child.kill('SIGINT');
    json.child.kill('SIGTERM');
    expect(await text.ended()).toBe(0);
    expect(await json.ended()).toBe(0);
    plain.child.kill('SIGINT');
    expect(await plain.ended()).toBe(0);
    expect(plain.stdout).toContain(after);
    expect(json.stderr).toContain(`svc: following ${t.url('api')}/api/audit/stream after sequence ${end} (Ctrl-C to stop)`);
  });

  it('tail without --after, dropped before any record came, resumes where it started: a record made meanwhile is printed', async () => {
    const fresh = new Follower(['audit', 'tail', '-o', 'json'], { SVC_CONFIG_HOME: s.home, ...env }, s.work);
    followers.push(fresh);
    await fresh.until(() => fresh.stderr.includes('svc: following '), 'the stream to open');
    const end = (await t.call('api', 'GET', '/api/audit/requests?order=desc&limit=1', { admin: true })).body.records[0].chain_sequence;
    auditStreams(t.ctx).closeAll();
    const during = await ask('triage');
    await fresh.until(() => fresh.stdout.includes(during), 'the record made while it was away');
    expect(fresh.stderr).toContain(`svc: reconnected, resuming after sequence ${end}`);
    fresh.child.kill('SIGINT');
    expect(await fresh.ended()).toBe(0);
  });

  it('tail ends with 0 when its reader goes away (| head -1), at its next record', async () => {
    const pipe = new Follower([], {}, s.work, ['bash', '-c', `"$0" "$1" audit tail -o json --after 0 | head -1; echo "svc exit \${PIPESTATUS[0]}" >&2`, process.execPath, BIN], { SVC_CONFIG_HOME: s.home, ...env });
    followers.push(pipe);
    await pipe.until(() => pipe.stdout.includes('\n'), 'the first line through head');
    // head has gone (or is going): the next write fails with EPIPE; a record or two makes one.
    while (pipe.code === undefined) {
      await ask();
      await Promise.race([pipe.ended(), new Promise((r) => setTimeout(r, 500))]);
    }
    expect(pipe.stderr).toContain('svc exit 0');
    expect(pipe.stderr).not.toMatch(/EPIPE|unexpected error|at /);
  });
});
