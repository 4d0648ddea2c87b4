/**
 * Whole-server tests of the collector store (port 7002) through HTTP: the three collectors
 * configured on fixtures in the real formats and a fake compliance feed on loopback; the
 * API's contract; a restart and a rotation; a scan of the whole database for addresses.
 */
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, startTestStack, type TestDb, type TestStack } from '../harness.js';
import { loadOperations, type LoadedOp } from '../contract/operations.js';
import { activity, startFakeFeed, type Activity, type FakeFeed } from './fake-feed.js';
import { fixture, otlpLine, scanDatabase, tmpDir } from './helpers.js';
import { waitFor } from '../wait.js';

const SECRET = 'collector-api-test-secret-0123456789';
const hmac = (v: string) => 'hmac-sha256:' + createHmac('sha256', SECRET).update(v).digest('hex');
const COLUMNS = [
  'event_id', 'source_id', 'observed_at', 'correlation_id', 'session_id', 'actor_identity', 'event_name', 'event_type', 'tool_name',
  'mcp_server_scope', 'success', 'decision', 'decision_source', 'model', 'cost_usd', 'input_tokens', 'output_tokens', 'duration_ms',
  'error_message', 'redaction_masked_keys', 'redaction_masked_count', 'raw_attributes', 'ingested_at',
];

let dir: string;
let env: Record<string, string>;
let feed: FakeFeed;
let t: TestStack;
let ops: LoadedOp[];
let fresh: Activity;
let testDb: TestDb; // shared by both starts: the collector does not use it, and a migration per start is slow

async function get(p: string) {
  const r = await t.call('collector', 'GET', p);
  const op = ops.find((o) => o.service === 'collector' && o.op.method === 'get' && matches(o.op.path, p.split('?')[0]));
  expect(op, `an operation for ${p}`).toBeTruthy();
  const v = op!.api.validateResponse(r.body, op!.op, r.status);
  expect(v.errors ?? [], `${p} -> ${r.status} matches the contract`).toEqual([]);
  return r;
}
const matches = (tpl: string, p: string) => new RegExp('^' + tpl.replace(/\{[^}]+\}/g, '[^/]+') + '$').test(p);
const sources = async () => (await get('/api/activity-sources')).body.sources as Array<{ source_id: string; event_count: number }>;
const countOf = async (id: string) => (await sources()).find((s) => s.source_id === id)?.event_count ?? 0;

beforeAll(async () => {
  ops = await loadOperations();
  dir = tmpDir();
  fs.mkdirSync(path.join(dir, 'cowork'));
  fs.mkdirSync(path.join(dir, 'cli'));
  fs.copyFileSync(fixture('cowork.jsonl'), path.join(dir, 'cowork', 'data.json'));
  fs.copyFileSync(fixture('code-cli.jsonl'), path.join(dir, 'cli', 'data.json'));
  // History before the first start: not read (the cursor starts at "now").
  feed = await startFakeFeed({ activities: JSON.parse(fs.readFileSync(fixture('chat-activities.json'), 'utf8')) as Activity[] });
  env = {
    COLLECTOR_DB_PATH: path.join(dir, 'store', 'collector.sqlite'),
    COLLECTOR_COWORK_FILE: path.join(dir, 'cowork', 'data.json'),
    COLLECTOR_CODE_CLI_FILE: path.join(dir, 'cli', 'data.json'),
    COLLECTOR_CHAT_BASE_URL: feed.url,
    COLLECTOR_CHAT_API_KEY: feed.key,
    COLLECTOR_CHAT_POLL_SECONDS: '1',
    COLLECTOR_TAIL_INTERVAL_MS: '50',
    COLLECTOR_HMAC_SECRET: SECRET,
  };
  testDb = await createTestDb();
  t = await startTestStack({ services: ['collector'], env, testDb });
  fresh = activity(new Date(), { actor: { type: 'user_actor', email_address: 'Dana@Example.com', user_id: 'user_01SYNTHUSER0000000000000', ip_address: '198.51.100.7' } });
  feed.add(fresh);
  await waitFor(async () => (await countOf('vendor-enterprise-cowork')) === 9 && (await countOf('vendor-code-cli')) === 11 && (await countOf('vendor-enterprise-chat')) === 1, {
    what: 'the three collectors to ingest their fixtures',
    timeoutMs: 60_000,
  });
});
afterAll(async () => {
  await t?.close();
  await testDb?.close();
  await feed?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('collector store API', () => {
  it('listens on loopback and answers health', async () => {
    expect(t.stack.services.collector!.host).toBe('127.0.0.1');
    expect((await get('/health')).body).toEqual({ status: 'ok', service: 'collector', version: '0.3.0' });
  });

  it('lists one row per collector with true statistics', async () => {
    const list = (await get('/api/activity-sources')).body.sources;
    expect(list.map((s: { source_id: string }) => s.source_id)).toEqual(['vendor-code-cli', 'vendor-enterprise-chat', 'vendor-enterprise-cowork']);
    const db = new Database(env.COLLECTOR_DB_PATH, { readonly: true });
    try {
      for (const s of list) {
        const truth = db
          .prepare('SELECT count(*) AS n, min(observed_at) AS first, max(observed_at) AS last FROM observed_activity_log WHERE source_id = ?')
          .get(s.source_id) as { n: number; first: string; last: string };
        expect(s).toMatchObject({ event_count: truth.n, first_event_at: truth.first, last_event_at: truth.last });
        expect(typeof s.description).toBe('string');
      }
    } finally {
      db.close();
    }
  });

  it('serves each coverage manifest; 404 for an unknown source, 400 for a malformed id', async () => {
    for (const id of ['vendor-enterprise-cowork', 'vendor-code-cli', 'vendor-enterprise-chat']) {
      const r = await get(`/api/activity-sources/${id}/coverage`);
      expect(r.status).toBe(200);
      expect(r.body.source_id).toBe(id);
      for (const part of ['captures', 'does_not_capture', 'caveats']) expect(r.body[part].length).toBeGreaterThan(0);
    }
    const missing = await get('/api/activity-sources/vendor-nope/coverage');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe('not_found');
    expect((await get('/api/activity-sources/bad%20id!/coverage')).status).toBe(400);
  });

  it('lists observed activity newest first, every column, raw_attributes parsed', async () => {
    const r = await get('/api/activity/observed');
    expect(r.body.limit).toBe(50);
    const events = r.body.events as Array<Record<string, any>>;
    expect(events).toHaveLength(21);
    for (const e of events) {
      expect(Object.keys(e).sort()).toEqual([...COLUMNS].sort());
      expect(typeof e.raw_attributes).toBe('object');
    }
    const keys = events.map((e) => [e.observed_at, e.event_id]);
    const sorted = [...keys].sort((a, b) => (a[0] < b[0] ? 1 : a[0] > b[0] ? -1 : a[1] < b[1] ? 1 : -1));
    expect(keys).toEqual(sorted);
    const chat = events.find((e) => e.source_id === 'vendor-enterprise-chat')!;
    // The user id is pseudonymized, the same in the chat feed and in the CLI's export: one user, one pseudonym.
    const pseudonym = hmac('user_01SYNTHUSER0000000000000');
    expect(chat).toMatchObject({ event_id: fresh.id, actor_identity: pseudonym, redaction_masked_keys: '["actor.email_address","actor.ip_address","actor.user_id","organization_id"]' });
    expect(chat.raw_attributes.actor).toMatchObject({ email_address: hmac('dana@example.com'), ip_address: hmac('198.51.100.7'), user_id: pseudonym });
    const model = events.find((e) => e.source_id === 'vendor-code-cli' && e.model === 'vendor-model-1')!;
    expect(model).toMatchObject({ event_type: 'model_call', cost_usd: 0.1068, input_tokens: 1200, output_tokens: 350, duration_ms: 5321, actor_identity: pseudonym });
    expect(model.raw_attributes['user.account_id']).toBe(pseudonym);
    expect(model.raw_attributes['organization.id']).toBe(hmac('0b1c2d3e-0000-4000-8000-00000000abcd'));
    // No identifier verbatim anywhere in what the unauthenticated API answers.
    expect(JSON.stringify(r.body)).not.toMatch(/user_01SYNTHUSER|7a8b9c0d-0000-4000-8000-000000001234|0b1c2d3e-0000-4000-8000-00000000abcd|org_01SYNTHORG/);
  });

  it('clamps limit to 1..500 and refuses a non-integer', async () => {
    expect((await get('/api/activity/observed?limit=0')).body).toMatchObject({ limit: 1, events: [expect.any(Object)] });
    expect((await get('/api/activity/observed?limit=-7')).body.limit).toBe(1);
    expect((await get('/api/activity/observed?limit=100000')).body.limit).toBe(500);
    expect((await get('/api/activity/observed?limit=3')).body.events).toHaveLength(3);
    for (const bad of ['abc', '2.5', '']) {
      const r = await get(`/api/activity/observed?limit=${bad}`);
      if (bad === '') continue; // an empty value reads as absent or as an error; both are declared
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('validation_error');
    }
  });

  it('filters by source_id', async () => {
    const r = await get('/api/activity/observed?source_id=vendor-enterprise-cowork&limit=500');
    expect(r.body.events).toHaveLength(9);
    expect(new Set(r.body.events.map((e: { source_id: string }) => e.source_id))).toEqual(new Set(['vendor-enterprise-cowork']));
    expect((await get('/api/activity/observed?source_id=vendor-unknown')).body.events).toEqual([]);
    expect((await get('/api/activity/observed?source_id=no%20spaces')).status).toBe(400);
  });

  it('computes stats over every row', async () => {
    const r = await get('/api/activity/stats');
    const db = new Database(env.COLLECTOR_DB_PATH, { readonly: true });
    try {
      const truth = db
        .prepare(
          'SELECT count(*) AS total_events, count(DISTINCT actor_identity) AS unique_users, count(DISTINCT tool_name) AS unique_tools, total(redaction_masked_count) AS fr FROM observed_activity_log',
        )
        .get() as { total_events: number; unique_users: number; unique_tools: number; fr: number };
      expect(r.body).toEqual({ total_events: 21, unique_users: truth.unique_users, unique_tools: truth.unique_tools, fields_redacted: truth.fr });
      expect(truth.total_events).toBe(21);
      expect(r.body.fields_redacted).toBeGreaterThan(20);
    } finally {
      db.close();
    }
  });

  it('writes no e-mail or IP address anywhere in the database', async () => {
    expect(scanDatabase(env.COLLECTOR_DB_PATH)).toEqual([]);
  });
});

describe('collector restart and rotation (whole server)', () => {
  it('resumes every collector after a restart: nothing twice, nothing lost, rotation followed', async () => {
    await t.close();
    const cli = env.COLLECTOR_CODE_CLI_FILE;
    const cw = env.COLLECTOR_COWORK_FILE;
    // While the service is down: more lines, a rotation of the cowork export, chat activity.
    fs.appendFileSync(cli, otlpLine(1000, 3) + '\n' + otlpLine(1003, 1).slice(0, 50)); // plus a partial line
    fs.appendFileSync(cw, otlpLine(2000, 2) + '\n');
    fs.renameSync(cw, path.join(path.dirname(cw), 'data-2026-11-22T00-00-00.000.json'));
    fs.writeFileSync(cw, otlpLine(2002, 2) + '\n');
    // Stamped now, not in the past: the first run's cursor floor ("now" at first start) may be
    // under a second old on a fast run, and activity before the floor is by design not read.
    const meanwhile = activity(new Date());
    feed.add(meanwhile);
    t = await startTestStack({ services: ['collector'], env, testDb });
    await waitFor(async () => (await countOf('vendor-code-cli')) === 14 && (await countOf('vendor-enterprise-cowork')) === 13 && (await countOf('vendor-enterprise-chat')) === 2, {
      what: 'the collectors to catch up after the restart',
      timeoutMs: 150_000, // generous: worker threads start slowly on a loaded 2-core machine
    }).catch(async (e) => {
      throw new Error(`${(e as Error).message}: ${JSON.stringify(await sources())}\n${t.logs.filter((l) => /warn|error/.test(l)).join('\n')}`);
    });
    // The partial line completes later.
    fs.appendFileSync(cli, otlpLine(1003, 1).slice(50) + '\n');
    await waitFor(async () => (await countOf('vendor-code-cli')) === 15, { what: 'the completed line', timeoutMs: 60_000 });
    await new Promise((r) => setTimeout(r, 1500)); // a few more passes and one more poll
    expect(await countOf('vendor-code-cli')).toBe(15);
    expect(await countOf('vendor-enterprise-cowork')).toBe(13);
    expect(await countOf('vendor-enterprise-chat')).toBe(2);
    const stats = (await get('/api/activity/stats')).body;
    expect(stats.total_events).toBe(30);
    const db = new Database(env.COLLECTOR_DB_PATH, { readonly: true });
    try {
      const dup = db.prepare("SELECT coalesce(sum(value), 0) AS n FROM collector_counters WHERE name = 'events_duplicate' AND source_id != 'vendor-enterprise-chat'").get() as { n: number };
      expect(dup.n).toBe(0); // the file collectors resumed at their offsets: no replay at all
    } finally {
      db.close();
    }
    expect(scanDatabase(env.COLLECTOR_DB_PATH)).toEqual([]);
    expect(t.logs.join('\n')).not.toContain(feed.key);
  }, 300_000);
});
