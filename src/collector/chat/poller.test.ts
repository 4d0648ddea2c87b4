/** The chat collector against a fake Compliance API Activity Feed on 127.0.0.1. */
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { activity, startFakeFeed, type Activity, type FakeFeed } from '../../../test/collector/fake-feed.js';
import { fixture, personalDataIn, scanDatabase, tmpDir } from '../../../test/collector/helpers.js';
import { memoryLogger } from '../../shared/logger.js';
import { Redactor } from '../redact/redactor.js';
import { CollectorStore } from '../store/store.js';
import { CHAT_SOURCE_ID } from './normalize.js';
import { ChatPoller, OVERLAP_MS, type ChatCursor, type ChatPollerOptions } from './poller.js';

const SECRET = 'chat-test-secret';
const hmac = (v: string) => 'hmac-sha256:' + createHmac('sha256', SECRET).update(v).digest('hex');

let dir: string;
let dbPath: string;
let store: CollectorStore;
let feed: FakeFeed;
let now: Date;
let logger: ReturnType<typeof memoryLogger>;
const clock = { now: () => now };

function poller(over: Partial<ChatPollerOptions> = {}): ChatPoller {
  return new ChatPoller({
    store,
    redactor: new Redactor(SECRET),
    logger,
    clock,
    baseUrl: feed.url + '/',
    apiKey: feed.key,
    pollSeconds: 3600,
    backfillOnFirstRun: false,
    backoffBaseMs: 20,
    ...over,
  });
}
const rows = () => store.listObserved({ limit: 500, sourceId: CHAT_SOURCE_ID });
const ids = () => rows().map((r) => r.event_id).sort();
const cursor = () => store.getCursor<ChatCursor>(CHAT_SOURCE_ID);
const minutes = (n: number) => new Date(now.getTime() + n * 60_000);

beforeEach(async () => {
  dir = tmpDir();
  dbPath = path.join(dir, 'collector.sqlite');
  store = new CollectorStore(dbPath);
  feed = await startFakeFeed();
  now = new Date('2026-03-02T12:00:00.000Z');
  logger = memoryLogger();
});
afterEach(async () => {
  store.close();
  await feed.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('chat collector', () => {
  it('stores the allowlisted fixture activities, hashed, with the user id as actor', async () => {
    feed.add(...(JSON.parse(fs.readFileSync(fixture('chat-activities.json'), 'utf8')) as Activity[]));
    const p = poller({ backfillOnFirstRun: true });
    p.init();
    await p.poll();
    const byId = Object.fromEntries(rows().map((r) => [r.event_id, r]));
    expect(Object.keys(byId).sort()).toEqual(
      ['5', '7', '8', '9', 'C', 'D'].map((s) => `activity_01SYNTH${s.padStart(17, '0')}`).sort(),
    );
    expect(store.counters(CHAT_SOURCE_ID)).toMatchObject({ activities_not_allowlisted: 3, events_ingested: 6 });
    const d = byId.activity_01SYNTH0000000000000000D;
    expect(d).toMatchObject({
      source_id: CHAT_SOURCE_ID,
      observed_at: '2026-03-02T10:16:02.000Z',
      // The user id and the organization ids are pseudonymized (COLLECTOR_PSEUDONYMIZE_ATTRIBUTES' default).
      actor_identity: hmac('user_01SYNTHUSER0000000000000'),
      event_name: 'vendor_chat_created',
      event_type: 'unknown',
      redaction_masked_keys: '["actor.email_address","actor.ip_address","actor.user_id","organization_id","organization_uuid"]',
      redaction_masked_count: 5,
    });
    expect(d.raw_attributes).toMatchObject({
      vendor_chat_id: 'vendor_chat_01SYNTHCHAT000000000000',
      organization_id: hmac('org_01SYNTHORG00000000000000'),
      organization_uuid: hmac('00000000-0000-4000-8000-000000000001'),
      actor: { type: 'user_actor', email_address: hmac('dana@example.com'), ip_address: hmac('198.51.100.7'), user_id: hmac('user_01SYNTHUSER0000000000000'), user_agent: 'Mozilla/5.0 (synthetic)' },
    });
    for (const r of rows()) expect(JSON.stringify(r)).not.toMatch(/user_01SYNTHUSER|org_01SYNTHORG|00000000-0000-4000-8000-000000000001/);
    const unauth = byId.activity_01SYNTH00000000000000009;
    expect(unauth).toMatchObject({ event_type: 'error', error_message: 'not_shared', actor_identity: null });
    expect((unauth.raw_attributes.actor as Record<string, unknown>).unauthenticated_email_address).toBe(hmac('eve.outsider@example.net'));
    expect((unauth.raw_attributes.actor as Record<string, unknown>).ip_address).toBe(hmac('2001:db8::bad:1'));
    const frank = byId.activity_01SYNTH00000000000000007;
    // The address pattern is greedy: `.txt` reads as part of the domain, so more is masked, never less.
    expect(frank.raw_attributes.filename).toBe(`notes for ${hmac('frank@example.com.txt')}`);
    expect(frank.redaction_masked_keys).toBe('["actor.email_address","actor.ip_address","actor.user_id","filename","organization_id"]');
    // vendor_actor: e-mail is null; only the organization id is pseudonymized.
    expect(byId.activity_01SYNTH00000000000000008.redaction_masked_keys).toBe('["organization_id"]');
    store.db.pragma('wal_checkpoint(TRUNCATE)');
    expect(scanDatabase(dbPath)).toEqual([]);
    expect(feed.requests[0].headers['x-api-key']).toBe(feed.key);
    expect(logger.lines.join('\n')).not.toContain(feed.key);
  });

  it('starts at "now" on first run: older activity is never read, newer is', async () => {
    feed.add(activity(minutes(-30)), activity(minutes(-1)));
    const p = poller();
    p.init();
    await p.poll();
    expect(rows()).toHaveLength(0);
    expect(cursor()!.floor).toBe(now.toISOString());
    const late = activity(minutes(1));
    now = minutes(2);
    feed.add(late, activity(minutes(-5)));
    await p.poll();
    expect(ids()).toEqual([late.id]);
    const q = feed.requests.at(-1)!.url.searchParams;
    expect(q.get('created_at.gte')).toBe('2026-03-02T12:00:00.000Z'); // never before the floor
    expect(q.get('created_at.lt')).toBe(now.toISOString());
  });

  it('walks the whole history page by page with BACKFILL_ON_FIRST_RUN', async () => {
    const history = Array.from({ length: 25 }, (_, k) => activity(new Date(now.getTime() - (k + 1) * 3_600_000)));
    feed.add(...history);
    const p = poller({ backfillOnFirstRun: true, pageLimit: 10 });
    p.init();
    await p.poll();
    expect(ids()).toEqual(history.map((a) => a.id).sort());
    expect(feed.requests.map((r) => r.url.searchParams.get('after_id'))).toEqual([null, history[9].id, history[19].id]);
    expect(feed.requests[0].url.searchParams.has('created_at.gte')).toBe(false);
    expect(cursor()).toEqual({ floor: null, done_until: now.toISOString(), window: null });
    expect(store.listSources()[0]).toMatchObject({ event_count: 25, last_event_at: history[0].created_at.replace('Z', '.000Z') });
  });

  it('persists the cursor: a restart neither re-reads history nor misses what came meanwhile', async () => {
    const p = poller();
    p.init();
    await p.poll();
    const a1 = activity(minutes(1));
    feed.add(a1);
    now = minutes(2);
    await p.poll();
    await p.stop();
    const a2 = activity(minutes(1)); // created while the collector was down
    feed.add(a2);
    now = minutes(10);
    const again = poller({ backfillOnFirstRun: true }); // ignored: not a first run
    again.init();
    await again.poll();
    expect(ids()).toEqual([a1.id, a2.id].sort());
    const q = feed.requests.at(-1)!.url.searchParams;
    expect(q.get('created_at.gte')).toBe(new Date(Date.parse('2026-03-02T12:02:00.000Z') - OVERLAP_MS).toISOString());
    expect(store.counters(CHAT_SOURCE_ID).events_duplicate).toBe(1); // a1 re-read in the overlap, not re-inserted
  });

  it('resumes a window at the last committed page after a failure', async () => {
    const history = Array.from({ length: 6 }, (_, k) => activity(new Date(now.getTime() - (k + 1) * 60_000)));
    feed.add(...history);
    const p = poller({ backfillOnFirstRun: true, pageLimit: 2 });
    p.init();
    feed.script.push({ status: 200, body: { data: history.slice(0, 2), has_more: true, first_id: history[0].id, last_id: history[1].id } }, { status: 403 });
    await p.poll();
    expect(ids()).toEqual([history[0].id, history[1].id].sort());
    expect(cursor()!.window).toMatchObject({ after_id: history[1].id, gte: null });
    expect(logger.lines.some((l) => l.includes('compliance feed refused the request') && l.includes('403'))).toBe(true);
    await poller({ pageLimit: 2 }).poll();
    expect(ids()).toEqual(history.map((a) => a.id).sort());
    expect(feed.requests.at(-3)!.url.searchParams.get('after_id')).toBe(history[1].id);
    expect(cursor()!.window).toBeNull();
  });

  it('answers 429 by waiting for retry-after, without moving the cursor', async () => {
    const p = poller();
    p.init();
    const before = cursor();
    feed.script.push({ status: 429, headers: { 'retry-after': '1' } });
    const a = activity(minutes(0.5));
    feed.add(a);
    now = minutes(1);
    const polling = p.poll();
    await new Promise((r) => setTimeout(r, 300));
    expect(cursor()).toEqual(before); // not advanced during the wait
    await polling;
    const [r429, r200] = feed.requests.slice(-2);
    expect(r429.status).toBe(429);
    expect(r200.at - r429.at).toBeGreaterThanOrEqual(950);
    expect(r200.url.search).toBe(r429.url.search); // the same request again
    expect(ids()).toEqual([a.id]);
  });

  it('backs off exponentially on 5xx and 429 without retry-after; stops on x-should-retry false', async () => {
    const p = poller();
    p.init();
    feed.script.push({ status: 503 }, { status: 429 }, { status: 529 }, { status: 502 });
    now = minutes(1);
    await p.poll();
    const gaps = feed.requests.slice(1).map((r, k) => r.at - feed.requests[k].at);
    expect(feed.requests.map((r) => r.status)).toEqual([503, 429, 529, 502, 200]);
    expect(gaps[0]).toBeGreaterThanOrEqual(15);
    expect(gaps[3]).toBeGreaterThanOrEqual(150); // 20, 40, 80, 160 ms
    const doneUntil = now.toISOString();
    expect(cursor()!.done_until).toBe(doneUntil);

    const n = feed.requests.length;
    feed.script.push({ status: 500, headers: { 'x-should-retry': 'false' } });
    now = minutes(2);
    await p.poll();
    expect(feed.requests.length).toBe(n + 1);
    expect(cursor()!.done_until).toBe(doneUntil); // unchanged
  });

  it('does not retry a refused key and never logs it', async () => {
    const p = poller({ apiKey: 'sk-vnd-api01-wrong' });
    p.init();
    now = minutes(1);
    await p.poll();
    expect(feed.requests.map((r) => r.status)).toEqual([401]);
    expect(logger.lines.some((l) => l.includes('authentication_error'))).toBe(true);
    expect(logger.lines.join('\n')).not.toContain('sk-vnd-api01-wrong');
  });

  it('stops promptly during a backoff wait', async () => {
    const p = poller();
    p.init();
    feed.script.push({ status: 429, headers: { 'retry-after': '60' } });
    now = minutes(1);
    p.start();
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    await p.stop();
    expect(Date.now() - t0).toBeLessThan(500);
  });

  it('keeps no address anywhere, with many actors', async () => {
    const p = poller({ backfillOnFirstRun: true });
    p.init();
    feed.add(...Array.from({ length: 40 }, (_, k) => activity(minutes(-k - 1), { filename: `f${k}@example.org 10.0.0.${k}` })));
    await p.poll();
    expect(rows()).toHaveLength(40);
    for (const r of rows()) expect(personalDataIn(JSON.stringify(r))).toEqual([]);
    store.db.pragma('wal_checkpoint(TRUNCATE)');
    expect(scanDatabase(dbPath)).toEqual([]);
  });
});
