/**
 * Usage and adherence analytics (issue 24), end to end: the counts of GET /api/analytics/usage
 * and /adherence are checked against context requests made here through POST /api/context
 * (accepted, intent refused, unknown and missing key, revoked key, suspended agent), with
 * records both below the rollup's watermark and above it (the rollup is run in the middle,
 * the periodic job is held off), every group_by, hour and day buckets; two rollups at once do
 * not double count; bad parameters are 400 and change nothing. PGlite and PostgreSQL.
 */
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { issueKey, makeAgent, settableClock } from '../identity/fixtures.js';
import { pendingRecords, rollUpOnce } from '../../src/core/analytics/rollup.js';
import { SCHEMA_SQL } from '../../src/collector/store/schema.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
// Noon UTC three days ago: phase 1 there, phase 2 a day later (a whole UTC day of the
// adherence window), phase 3 a day after that.
const START = Math.floor(Date.now() / DAY) * DAY - 3 * DAY + 12 * HOUR;

interface Ev {
  agent: string | null;
  role: string | null;
  task: string;
  outcome: 'accepted' | 'refused';
  reason: string;
  at?: number;
}

let t: TestStack;
const clock = settableClock(START);
const events: Ev[] = [];
const A: Record<string, { id: string; role: string; key: string; keyId: string }> = {};

beforeAll(async () => {
  t = await startTestStack({ services: ['api'], clock, env: { ANALYTICS_ROLLUP_INTERVAL_SECONDS: '86400' } });
  for (const [name, role] of [['a', 'role:nurse'], ['b', 'role:doctor'], ['c', 'role:nurse'], ['d', 'role:doctor'], ['e', 'role:idle']] as const) {
    const ag = await makeAgent(t, { role_id: role, allowed_intents: ['triage'] });
    const k = await issueKey(t, ag.agent_id, name === 'e' ? { expires_in_days: 3 } : {});
    A[name] = { id: ag.agent_id, role, key: k.api_key, keyId: k.key_id };
  }
  // A key expiring later than 14 days is not listed.
  await issueKey(t, A.e!.id, { expires_in_days: 40 });
});
afterAll(async () => {
  await t?.close();
});

const UNKNOWN = 'sk_' + 'Q'.repeat(43);

async function ask(who: string | null, task: string, expected: Omit<Ev, 'task'>): Promise<void> {
  const apiKey = who === null ? undefined : who === 'unknown' ? UNKNOWN : A[who]!.key;
  const r = await t.call('api', 'POST', '/api/context', { apiKey, body: { task_type: task } });
  expect(r.status, JSON.stringify(r.body)).toBe(expected.outcome === 'accepted' ? 200 : expected.reason === 'intent_not_allowed' ? 403 : 401);
  events.push({ ...expected, task });
}
const ok = (n: string) => ({ agent: A[n]!.id, role: A[n]!.role, outcome: 'accepted' as const, reason: '' });
const no = (n: string | null, reason: string) => ({ agent: n && A[n]!.id, role: n && A[n]!.role, outcome: 'refused' as const, reason });

/** Attaches each event's requested_at, from the audit records (same order: chain order). */
async function stamp(): Promise<void> {
  const r = await t.call('api', 'GET', '/api/audit/requests?limit=1000', { admin: true });
  expect(r.status).toBe(200);
  expect(r.body.records).toHaveLength(events.length);
  r.body.records.forEach((rec: { agent_id: string | null; task_type: string; requested_at: string }, i: number) => {
    expect(rec.agent_id).toBe(events[i]!.agent);
    expect(rec.task_type).toBe(events[i]!.task);
    events[i]!.at = Date.parse(rec.requested_at);
  });
}

const floor = (x: number, u: number) => Math.floor(x / u) * u;
const GROUP = { agent: (e: Ev) => e.agent, role: (e: Ev) => e.role, task_type: (e: Ev) => e.task, outcome: (e: Ev) => e.outcome } as const;

function expectedUsage(bucket: 'hour' | 'day', groupBy: keyof typeof GROUP, from: number, to: number) {
  const u = bucket === 'hour' ? HOUR : DAY;
  const m = new Map<string, { bucket_start: string; key: string | null; accepted: number; refused: number }>();
  for (const e of events) {
    if (e.at! < from || e.at! >= to) continue;
    const b = new Date(floor(e.at!, u)).toISOString();
    const key = GROUP[groupBy](e);
    const id = `${b}|${key}`;
    const row = m.get(id) ?? { bucket_start: b, key, accepted: 0, refused: 0 };
    row[e.outcome]++;
    m.set(id, row);
  }
  return [...m.values()].sort((x, y) => x.bucket_start.localeCompare(y.bucket_start) || (x.key ?? '').localeCompare(y.key ?? ''));
}

async function checkUsage(): Promise<void> {
  const from = START - 5 * HOUR + 17_000; // not aligned: rounded down
  const to = clock.now().getTime() + 60_000;
  for (const bucket of ['hour', 'day'] as const) {
    for (const groupBy of ['agent', 'role', 'task_type', 'outcome'] as const) {
      const q = `from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}&bucket=${bucket}&group_by=${groupBy}`;
      const r = await t.call('api', 'GET', `/api/analytics/usage?${q}`, { admin: true });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const u = bucket === 'hour' ? HOUR : DAY;
      const [f, tt] = [floor(from, u), Math.ceil(to / u) * u];
      expect(r.body.from).toBe(new Date(f).toISOString());
      expect(r.body.to).toBe(new Date(tt).toISOString());
      const want = expectedUsage(bucket, groupBy, f, tt);
      const sortKey = (x: { bucket_start: string; key: string | null }) => `${x.bucket_start}|${x.key ?? ''}`;
      expect([...r.body.series].sort((x, y) => sortKey(x).localeCompare(sortKey(y))), `${bucket} ${groupBy}`).toEqual(want);
      expect(r.body.totals).toEqual({ accepted: events.filter((e) => e.outcome === 'accepted').length, refused: events.filter((e) => e.outcome === 'refused').length });
    }
  }
}

describe.sequential('analytics', () => {
  it('phase 1, rolled up: counts are exact', async () => {
    const first = await ask('a', 'triage', ok('a'));
    void first;
    await ask('a', 'triage', ok('a'));
    await ask('a', 'triage', ok('a'));
    await ask('a', 'deploy_prod', no('a', 'intent_not_allowed'));
    await ask('unknown', 'triage', no(null, 'unknown_key'));
    await ask('unknown', 'triage', no(null, 'unknown_key'));
    await ask(null, 'triage', no(null, 'missing_key'));
    await ask('b', 'triage', ok('b'));
    await stamp();
    const run = await rollUpOnce(t.ctx);
    expect(run.rolled).toBe(events.length);
    expect(await pendingRecords(t.ctx.db)).toBe(0);
    await checkUsage();
  });

  it('phase 2 above the watermark (not rolled up): rollups plus the tail are exact', async () => {
    clock.advance(DAY + HOUR);
    await ask('b', 'triage', ok('b'));
    await ask('b', 'triage', ok('b'));
    expect((await t.call('api', 'DELETE', `/api/agents/${A.d!.id}/api-keys/${A.d!.keyId}?revoked_by=test`, { admin: true })).status).toBe(204);
    await ask('d', 'triage', no('d', 'revoked_key'));
    await t.call('api', 'PUT', `/api/agents/${A.c!.id}`, { admin: true, body: { status: 'suspended' } });
    await ask('c', 'triage', no('c', 'agent_suspended'));
    await ask('a', 'triage', ok('a'));
    await ask('a', 'x'.repeat(128), no('a', 'intent_not_allowed'));
    await stamp();
    expect(await pendingRecords(t.ctx.db)).toBe(6);
    await checkUsage();
    // Rolled up in the middle of the tail: still exact.
    expect((await rollUpOnce(t.ctx, 4)).rolled).toBe(4);
    expect(await pendingRecords(t.ctx.db)).toBe(2);
    await checkUsage();
  });

  it('two rollups at once do not double count', async () => {
    clock.advance(DAY);
    for (let i = 0; i < 5; i++) await ask('a', 'triage', ok('a'));
    await ask('b', 'forbidden_task', no('b', 'intent_not_allowed'));
    await stamp();
    const runs = await Promise.all([rollUpOnce(t.ctx), rollUpOnce(t.ctx), rollUpOnce(t.ctx)]);
    expect(runs.reduce((s, r) => s + r.rolled, 0)).toBe(8);
    expect(await pendingRecords(t.ctx.db)).toBe(0);
    const [h] = await t.ctx.db.query<{ n: string }>('SELECT sum(count) AS n FROM analytics_hourly');
    const [d] = await t.ctx.db.query<{ n: string }>('SELECT sum(count) AS n FROM analytics_daily');
    const [ha] = await t.ctx.db.query<{ n: string }>('SELECT sum(count) AS n FROM analytics_hourly_agents');
    const [w] = await t.ctx.db.query<{ last_sequence: string }>('SELECT last_sequence FROM analytics_watermark');
    expect([Number(h!.n), Number(d!.n), Number(ha!.n), Number(w!.last_sequence)]).toEqual([events.length, events.length, events.length, events.length]);
    await checkUsage();
  });

  it('adherence: per agent, dormant agents, key refusals, expiring keys, observed activity', async () => {
    // Phase 1 at day-3 12:00+, phase 2 at day-2 13:00+ (a whole UTC day), phase 3 at day-1 13:00+.
    const from = START - 6 * HOUR + 1000;
    const to = clock.now().getTime() + 1000;
    const check = async (f: number, tt: number) => {
      const r = await t.call('api', 'GET', `/api/analytics/adherence?from=${new Date(f).toISOString()}&to=${new Date(tt).toISOString()}`, { admin: true });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const [ef, et] = [floor(f, HOUR), Math.ceil(tt / HOUR) * HOUR];
      expect([r.body.from, r.body.to]).toEqual([new Date(ef).toISOString(), new Date(et).toISOString()]);
      const inWin = events.filter((e) => e.at! >= ef && e.at! < et);
      for (const name of ['a', 'b', 'c', 'd', 'e']) {
        const mine = inWin.filter((e) => e.agent === A[name]!.id);
        const byReason: Record<string, number> = {};
        for (const e of mine) if (e.outcome === 'refused') byReason[e.reason] = (byReason[e.reason] ?? 0) + 1;
        const got = r.body.agents.find((x: { agent_id: string }) => x.agent_id === A[name]!.id);
        expect(got, name).toMatchObject({
          role_id: A[name]!.role,
          owner_id: 'org-admin',
          requests: mine.length,
          accepted: mine.filter((e) => e.outcome === 'accepted').length,
          refused: mine.filter((e) => e.outcome === 'refused').length,
          refused_by_reason: byReason,
          last_request_at: mine.length ? new Date(Math.max(...mine.map((e) => e.at!))).toISOString() : null,
        });
      }
      const keyReasons = new Set(['missing_key', 'unknown_key', 'revoked_key', 'expired_key', 'agent_suspended', 'agent_revoked']);
      const want = new Map<string, { agent_id: string | null; reason: string; count: number; last_at: string }>();
      for (const e of inWin.filter((x) => keyReasons.has(x.reason))) {
        const k = `${e.agent}|${e.reason}`;
        const row = want.get(k) ?? { agent_id: e.agent, reason: e.reason, count: 0, last_at: '' };
        row.count++;
        const at = new Date(e.at!).toISOString();
        if (at > row.last_at) row.last_at = at;
        want.set(k, row);
      }
      const sortK = (x: { agent_id: string | null; reason: string }) => `${x.agent_id ?? ''}|${x.reason}`;
      expect([...r.body.key_refusals].sort((x, y) => sortK(x).localeCompare(sortK(y)))).toEqual([...want.values()].sort((x, y) => sortK(x).localeCompare(sortK(y))));
      return r.body;
    };
    const all = await check(from, to);
    // e: active, no request: dormant; c is suspended, so not dormant.
    expect(all.dormant_agents).toContain(A.e!.id);
    expect(all.dormant_agents).not.toContain(A.c!.id);
    expect(all.dormant_agents).not.toContain(A.a!.id);
    const e = all.agents.find((x: { agent_id: string }) => x.agent_id === A.e!.id);
    expect(e.keys_expiring_soon.map((k: { key_id: string }) => k.key_id)).toEqual([A.e!.keyId]);
    expect(e.keys_expiring_soon[0].key_prefix).toMatch(/^sk_/);
    expect(JSON.stringify(all)).not.toContain(A.e!.key);
    expect(all.observed).toBeNull();
    expect(all.observed_reason).toMatch(/collector/);
    // Phase 1 left out (from after it, mid-hour): only the whole day and the later edge.
    await check(START + 3 * HOUR + 5000, to);
    // Only phase 2's day, from the edges alone (no whole day).
    await check(START + 20 * HOUR, START + 30 * HOUR);
    // Above the watermark too.
    await ask('a', 'triage', ok('a'));
    await stamp();
    await check(from, clock.now().getTime() + 1000);

    // A collector store on this host: its activity per platform and user pseudonym.
    const db = new Database(t.config.collector.dbPath);
    try {
      db.exec(SCHEMA_SQL);
      const ins = db.prepare(
        `INSERT INTO observed_activity_log (event_id, source_id, observed_at, actor_identity, event_name, event_type, raw_attributes, ingested_at) VALUES (?, ?, ?, ?, 'x', 'prompt', '{}', ?)`,
      );
      const at = (ms: number) => new Date(ms).toISOString();
      ins.run('e1', 'chat', at(START + 1000), 'u_1', at(START));
      ins.run('e2', 'chat', at(START + 2000), 'u_1', at(START));
      ins.run('e3', 'code-cli', at(START + 3000), 'u_2', at(START));
      ins.run('e4', 'chat', at(START - 10 * DAY), 'u_3', at(START)); // outside the window
    } finally {
      db.close();
    }
    const withObserved = await check(from, clock.now().getTime() + 1000);
    expect(withObserved.observed_reason).toBeNull();
    expect(withObserved.observed).toEqual([
      { platform: 'chat', user_pseudonym: 'u_1', events: 2, last_observed_at: new Date(START + 2000).toISOString() },
      { platform: 'code-cli', user_pseudonym: 'u_2', events: 1, last_observed_at: new Date(START + 3000).toISOString() },
    ]);
    fs.rmSync(t.config.collector.dbPath);
  });

  it('bad parameters: 400 validation_error, nothing changed; no admin key: 401', async () => {
    const [before] = await t.ctx.db.query<{ n: string }>('SELECT count(*) AS n FROM agent_context_requests');
    const now = clock.now().getTime();
    const iso = (ms: number) => new Date(ms).toISOString();
    const bad: string[] = [
      '/api/analytics/usage?bucket=week',
      '/api/analytics/usage?group_by=owner',
      '/api/analytics/usage?from=yesterday',
      '/api/analytics/usage?to=2026-13-45T00:00:00Z',
      `/api/analytics/usage?from=${iso(now)}&to=${iso(now - HOUR)}`,
      `/api/analytics/usage?from=${iso(now)}&to=${iso(now)}`,
      `/api/analytics/usage?bucket=hour&from=${iso(now - 40 * DAY)}&to=${iso(now)}`,
      `/api/analytics/usage?bucket=day&from=${iso(now - 800 * DAY)}&to=${iso(now)}`,
      '/api/analytics/usage?from=1960-01-01T00:00:00Z',
      '/api/analytics/usage?to=9999-06-01T00:00:00Z',
      '/api/analytics/adherence?from=0000-01-01T00:00:00Z&to=0000-01-02T00:00:00Z',
      '/api/analytics/adherence?from=nope',
      `/api/analytics/adherence?from=${iso(now)}&to=${iso(now - DAY)}`,
      `/api/analytics/adherence?from=${iso(now - 400 * DAY)}&to=${iso(now)}`,
    ];
    for (const p of bad) {
      const r = await t.call('api', 'GET', p, { admin: true });
      expect(r.status, p).toBe(400);
      expect(r.body.error, p).toBe('validation_error');
      expect(r.body.details.errors.length, p).toBeGreaterThan(0);
    }
    const big = await t.call('api', 'GET', `/api/analytics/usage?bucket=hour&from=${iso(now - 40 * DAY)}&to=${iso(now)}`, { admin: true });
    expect(big.body.message).toMatch(/too large for hour buckets: at most 744 hours/);
    // 31 days of hour buckets is allowed.
    expect((await t.call('api', 'GET', `/api/analytics/usage?bucket=hour&from=${iso(now - 31 * DAY + HOUR)}&to=${iso(now - HOUR)}`, { admin: true })).status).toBe(200);
    for (const p of ['/api/analytics/usage', '/api/analytics/adherence']) {
      expect((await t.call('api', 'GET', p)).status).toBe(401);
      expect((await t.call('api', 'GET', p, { headers: { 'x-admin-key': 'admin_wrong' } })).status).toBe(401);
      expect((await t.call('api', 'GET', p, { apiKey: A.a!.key })).status).toBe(401);
    }
    const [after] = await t.ctx.db.query<{ n: string }>('SELECT count(*) AS n FROM agent_context_requests');
    expect(after!.n).toEqual(before!.n);
  });
});
