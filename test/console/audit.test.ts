/**
 * The console's audit log (/console/audit) and record page (/console/audit/{request_id}) over
 * HTTP, with real context requests (accepted and refused): newest first, filters, paging, every
 * field of a record, the embedded inclusion proof (checked here with Node's crypto, the
 * independent RFC 9162 verifier of test/tlog/rfc9162.ts and the note verifier of src/core/tlog),
 * the pending case, 404, escaping; the API's new listAuditRequests parameters. Then
 * assets/proof.js itself in Chromium (playwright-core): "ok" for the real page, "failed" for
 * pages altered on the way (a leaf byte, an audit path hash, a field shown). The Chromium part
 * is skipped, saying why, only when no Chromium is found.
 */
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import canonicalize from 'canonicalize';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startTestStack, TLOG_KEY, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { transparencyLog } from '../../src/core/tlog/log.js';
import { generateNoteKey, openNote, signNote } from '../../src/core/tlog/note.js';
import { parseCheckpoint } from '../../src/core/tlog/checkpoint.js';
import { rfcLeafHash, rfcVerifyInclusion } from '../tlog/rfc9162.js';
import { ConsoleClient } from './client.js';

const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => !!p && existsSync(p));
if (!CHROMIUM) console.warn('test/console/audit.test.ts: the Chromium part is skipped: no Chromium at $CHROMIUM_PATH, /usr/bin/chromium or /usr/bin/chromium-browser (make browser installs it)');

const AUDITOR_KEY = `audit_${randomBytes(24).toString('base64url')}`;
const EVIL = `<script>alert("x")</script>'q`;
let t: TestStack;
let admin: ConsoleClient;
let auditor: ConsoleClient;
let agentA: string;
let agentB: string;
let keyA: string;
let keyB: string;
/** Request ids in the order they were made. */
const made: Array<{ id: string; agent: string | null; task: string; ok: boolean; code?: string }> = [];

const ask = async (apiKey: string, body: Record<string, unknown>, agent: string | null) => {
  const r = await t.call('api', 'POST', '/api/context', { apiKey, body });
  made.push({ id: r.body.request_id, agent, task: String(body.task_type), ok: r.status === 200, code: r.body.error_code });
  return r;
};
const record = async (id: string) => (await t.call('api', 'GET', `/api/audit/requests?request_id=${id}`, { admin: true })).body.records[0];

/** The request ids of a console list page, in page order. */
const idsOn = (html: string) => [...html.matchAll(/href="\/console\/audit\/([^"]+)">Details</g)].map((m) => decodeURIComponent(m[1]!));
const unescape = (s: string) => s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
interface ProofData {
  request_id: string;
  leaf_index: number;
  leaf: string;
  tree_size: number | null;
  checkpoint: string | null;
  hashes: string[] | null;
  verifier_key: string;
}
const proofOf = (html: string): ProofData => JSON.parse(unescape(/id="proof-data" hidden data-proof="([^"]*)"/.exec(html)![1]!));
const stateOf = (html: string) => /id="proof-result" class="proof" role="status" data-state="([a-z]+)"/.exec(html)?.[1];

beforeAll(async () => {
  // No integration loop during the run: the tests decide when a checkpoint is signed.
  t = await startTestStack({ services: ['api'], env: { AUDITOR_API_KEYS: `compliance:${AUDITOR_KEY}`, TLOG_CHECKPOINT_INTERVAL_MS: '3600000' } });
  agentA = (await makeAgent(t, { allowed_intents: ['triage'] })).agent_id;
  agentB = (await makeAgent(t, { allowed_intents: ['medication_review'] })).agent_id;
  keyA = (await issueKey(t, agentA)).api_key;
  keyB = (await issueKey(t, agentB)).api_key;
  await ask(keyA, { task_type: 'triage', params: { note: EVIL } }, agentA);
  await ask(keyA, { task_type: 'not_allowed' }, agentA);
  await ask(keyB, { task_type: 'medication_review', chain_id: 'chain-1' }, agentB);
  await ask(keyA, { task_type: EVIL }, agentA);
  await ask(`svc_${randomBytes(16).toString('hex')}`, { task_type: 'triage' }, null);
  await ask(keyA, { task_type: 'triage' }, agentA);
  expect(made.map((m) => m.ok)).toEqual([true, false, true, false, false, true]);
  expect(made.map((m) => m.code)).toEqual([undefined, 'INTENT_NOT_ALLOWED', undefined, 'INTENT_NOT_ALLOWED', 'AUTH_FAILED', undefined]);
  expect(await transparencyLog(t.ctx).integrate()).not.toBeNull();
  admin = await ConsoleClient.signedIn(t, ADMIN_KEY);
  auditor = await ConsoleClient.signedIn(t, AUDITOR_KEY);
});
afterAll(async () => {
  await t?.close();
});

describe('the API: listAuditRequests parameters the console uses', () => {
  it('order=desc, before_sequence, request_id and error_code', async () => {
    const asc = (await t.call('api', 'GET', '/api/audit/requests', { admin: true })).body.records.map((r: { request_id: string }) => r.request_id);
    expect(asc).toEqual(made.map((m) => m.id));
    const desc = await t.call('api', 'GET', '/api/audit/requests?order=desc&limit=2', { admin: true });
    expect(desc.body.records.map((r: { request_id: string }) => r.request_id)).toEqual([made[5]!.id, made[4]!.id]);
    const next = await t.call('api', 'GET', `/api/audit/requests?order=desc&limit=2&before_sequence=${desc.body.next_after_sequence}`, { admin: true });
    expect(next.body.records.map((r: { request_id: string }) => r.request_id)).toEqual([made[3]!.id, made[2]!.id]);
    const one = await t.call('api', 'GET', `/api/audit/requests?request_id=${made[2]!.id}`, { headers: { 'x-admin-key': AUDITOR_KEY } });
    expect(one.body.records.map((r: { task_type: string }) => r.task_type)).toEqual(['medication_review']);
    const auth = await t.call('api', 'GET', '/api/audit/requests?error_code=AUTH_FAILED', { admin: true });
    expect(auth.body.records.map((r: { request_id: string }) => r.request_id)).toEqual([made[4]!.id]);
    const bad = await t.call('api', 'GET', '/api/audit/requests?order=sideways', { admin: true });
    expect(bad.status).toBe(400);
  });
});

describe('/console/audit', () => {
  it('lists the records newest first, with time, agent link, task type, outcome and code, SCD count, leaf, detail link', async () => {
    const r = await admin.get('/console/audit');
    expect(r.status).toBe(200);
    expect(idsOn(r.text)).toEqual(made.map((m) => m.id).reverse());
    expect(r.text).toContain(`href="/console/agents/${encodeURIComponent(agentA)}"`);
    expect(r.text).toContain('<code>INTENT_NOT_ALLOWED</code>');
    expect(r.text).toContain('<code>AUTH_FAILED</code>');
    expect(r.text).toContain('aria-current="page"');
    const rec = await record(made[0]!.id);
    expect(r.text).toContain(`<td>${rec.leaf_index}</td>`);
  });

  it('escapes what requests wrote (a task type with markup and quotes)', async () => {
    const r = await admin.get('/console/audit');
    expect(r.text).not.toContain('<script>alert');
    expect(r.text).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;q');
  });

  it('filters: agent, task type, outcome, refusal code, since/until (UTC), combined', async () => {
    const ids = async (q: string) => idsOn((await admin.get(`/console/audit?${q}`)).text);
    const want = (f: (m: (typeof made)[number]) => boolean) => made.filter(f).map((m) => m.id).reverse();
    expect(await ids(`agent_id=${encodeURIComponent(agentA)}`)).toEqual(want((m) => m.agent === agentA));
    expect(await ids('task_type=triage')).toEqual(want((m) => m.task === 'triage'));
    expect(await ids('outcome=accepted')).toEqual(want((m) => m.ok));
    expect(await ids('outcome=refused')).toEqual(want((m) => !m.ok));
    expect(await ids('error_code=INTENT_NOT_ALLOWED')).toEqual(want((m) => m.code === 'INTENT_NOT_ALLOWED'));
    expect(await ids(`agent_id=${encodeURIComponent(agentA)}&outcome=refused`)).toEqual(want((m) => m.agent === agentA && !m.ok));
    const first = await record(made[0]!.id);
    const at = new Date(first.requested_at);
    expect(await ids(`since=${encodeURIComponent('2000-01-01T00:00')}`)).toEqual(want(() => true));
    expect(await ids(`until=${encodeURIComponent('2000-01-01T00:00:00')}`)).toEqual([]);
    expect(await ids(`since=${encodeURIComponent(new Date(at.getTime() + 3600_000).toISOString())}`)).toEqual([]);
    const page = await admin.get('/console/audit?outcome=refused');
    expect(page.text).toContain('<option value="refused" selected>');
    expect((await admin.get('/console/audit?task_type=nothing-like-this')).text).toContain('No audit record matches.');
  });

  it('bad filter values are a 400 page, not a 500', async () => {
    const since = await admin.get('/console/audit?since=yesterday');
    expect(since.status).toBe(400);
    expect(since.text).toContain('since is not a valid date-time');
    const before = await admin.get('/console/audit?before=-1');
    expect(before.status).toBe(400);
  });

  it('pages: 50 a page, "Older records" goes on with the same filters, "Newest records" back', async () => {
    const extra: string[] = [];
    for (let i = 0; i < 52; i++) extra.push((await ask(keyB, { task_type: 'medication_review' }, agentB)).body.request_id);
    const q = `agent_id=${encodeURIComponent(agentB)}`;
    const first = await admin.get(`/console/audit?${q}`);
    const all = [...extra].reverse().concat(made[2]!.id);
    expect(idsOn(first.text)).toEqual(all.slice(0, 50));
    const older = unescape(/href="([^"]+)">Older records</.exec(first.text)![1]!);
    expect(older).toContain(`agent_id=${encodeURIComponent(agentB)}`);
    const second = await admin.get(older);
    expect(idsOn(second.text)).toEqual(all.slice(50));
    expect(second.text).not.toContain('Older records');
    expect(second.text).toContain('Newest records');
  });

  it('an auditor session reads it', async () => {
    const r = await auditor.get('/console/audit?outcome=refused');
    expect(r.status).toBe(200);
    expect(idsOn(r.text)).toContain(made[1]!.id);
  });
});

describe('/console/audit/{request_id}', () => {
  it('shows every field of the record as the API returns it', async () => {
    const id = made[0]!.id;
    const rec = await record(id);
    const r = await auditor.get(`/console/audit/${id}`);
    expect(r.status).toBe(200);
    const shown = Object.fromEntries([...r.text.matchAll(/<dd data-field="([a-z_]+)" data-value="([^"]*)"/g)].map((m) => [m[1], JSON.parse(unescape(m[2]!))]));
    expect(shown).toEqual(rec);
    expect(Object.keys(shown).sort()).toEqual(Object.keys(rec).sort());
    expect(r.text).toContain(`<code>${rec.record_hash}</code>`);
    expect(r.text).not.toContain('<script>alert');
    expect(r.text).toContain('&lt;script&gt;alert');
    expect(r.text).toContain('<script src="/console/assets/proof.js" defer></script>');
  });

  it('embeds a correct inclusion proof to the latest signed checkpoint (checked here with Node)', async () => {
    for (const m of [made[0]!, made[3]!, made[4]!]) {
      const rec = await record(m.id);
      const p = proofOf((await admin.get(`/console/audit/${m.id}`)).text);
      // The leaf is the record as the read endpoint returns it (RFC 8785), leaf_index included.
      const leaf = Buffer.from(p.leaf, 'base64');
      expect(leaf.equals(Buffer.from((canonicalize as unknown as (x: unknown) => string)(rec), 'utf8'))).toBe(true);
      expect(p.request_id).toBe(m.id);
      expect(p.leaf_index).toBe(rec.leaf_index);
      // The note: signed by the log's key, a checkpoint of the served log.
      expect(p.verifier_key).toBe(TLOG_KEY.verifierKey);
      expect(p.checkpoint).toBe((await t.call('api', 'GET', '/api/audit/tlog/checkpoint')).body);
      const opened = openNote(p.checkpoint!, [TLOG_KEY.verifierKey]);
      expect(opened.verified.map((v) => v.name)).toEqual(['svc.test/audit-log']);
      const cp = parseCheckpoint(opened.text);
      expect(cp.size).toBe(p.tree_size);
      const hashes = p.hashes!.map((h) => Buffer.from(h, 'base64'));
      expect(rfcVerifyInclusion(rfcLeafHash(leaf), BigInt(p.leaf_index), BigInt(cp.size), hashes, Buffer.from(cp.root))).toBe(true);
      // And not for another leaf.
      expect(rfcVerifyInclusion(rfcLeafHash(Buffer.concat([leaf, Buffer.from(' ')])), BigInt(p.leaf_index), BigInt(cp.size), hashes, Buffer.from(cp.root))).toBe(false);
    }
  });

  it('a record the latest checkpoint does not cover yet is pending, with no proof', async () => {
    const r = await ask(keyA, { task_type: 'triage' }, agentA);
    const page = await admin.get(`/console/audit/${r.body.request_id}`);
    expect(page.status).toBe(200);
    expect(stateOf(page.text)).toBe('pending');
    expect(page.text).toContain(`Pending: leaf ${r.body.audit_leaf_index} is not yet covered by the latest checkpoint`);
    expect(proofOf(page.text).hashes).toBeNull();
    expect(page.text).not.toContain('proof.js');
    await transparencyLog(t.ctx).integrate();
    const after = await admin.get(`/console/audit/${r.body.request_id}`);
    expect(stateOf(after.text)).toBe('checking');
    expect(proofOf(after.text).hashes).not.toBeNull();
  });

  it('an unknown request_id is a 404 page', async () => {
    const r = await admin.get('/console/audit/00000000-0000-4000-8000-000000000000');
    expect(r.status).toBe(404);
    expect(r.text).toContain('No audit record has this request_id');
    expect((await admin.get(`/console/audit/${encodeURIComponent(EVIL)}`)).status).toBe(404);
  });
});

describe.skipIf(!CHROMIUM)('proof.js in Chromium', () => {
  let browser: Browser;
  let page: Page;
  let id: string;

  beforeAll(async () => {
    id = made[0]!.id;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    page = await browser.newPage();
    await page.goto(`${t.url('api')}/console/login`);
    await page.fill('input[name="key"]', AUDITOR_KEY);
    await Promise.all([page.waitForURL(/\/console$/), page.click('button[type="submit"]')]);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
  });

  /** Opens the record page (its HTML changed by `alter`, if given) and waits for proof.js's verdict. */
  async function verdict(alter?: (html: string) => string): Promise<{ state: string; text: string }> {
    const url = `${t.url('api')}/console/audit/${id}`;
    await page.unrouteAll();
    if (alter) {
      await page.route(url, async (route) => {
        const res = await route.fetch();
        const body = alter(await res.text());
        await route.fulfill({ response: res, body });
      });
    }
    await page.goto(url);
    await page.waitForSelector('#proof-result:not([data-state="checking"])');
    const el = page.locator('#proof-result');
    return { state: (await el.getAttribute('data-state'))!, text: (await el.textContent())! };
  }

  /** The page with its proof data changed by `f`. */
  const withProof = (f: (p: ProofData) => void) => (html: string) => {
    const p = proofOf(html);
    f(p);
    const attr = JSON.stringify(p).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    return html.replace(/data-proof="[^"]*"/, `data-proof="${attr}"`);
  };

  it('the real page: ok, naming the leaf index, tree size, root and key', async () => {
    const rec = await record(id);
    const v = await verdict();
    expect(v.state).toBe('ok');
    const cp = parseCheckpoint(openNote((await t.call('api', 'GET', '/api/audit/tlog/checkpoint')).body, [TLOG_KEY.verifierKey]).text);
    expect(v.text).toContain(`leaf ${rec.leaf_index}`);
    expect(v.text).toContain(`tree of size ${cp.size}`);
    expect(v.text).toContain(Buffer.from(cp.root).toString('base64'));
    expect(v.text).toContain('svc.test/audit-log');
  });

  it('a log key whose base64 holds "+" (the key string is not split on every "+"): ok', async () => {
    let key = generateNoteKey('svc.test/other-log');
    while (!key.verifierKey.split('+').slice(2).join('+').includes('+')) key = generateNoteKey('svc.test/other-log');
    const v = await verdict(
      withProof((p) => {
        p.checkpoint = signNote(openNote(p.checkpoint!, [TLOG_KEY.verifierKey]).text, key.signerKey);
        p.verifier_key = key.verifierKey;
      }),
    );
    expect(v.state).toBe('ok');
    expect(v.text).toContain('svc.test/other-log');
  });

  it('one leaf byte changed: failed', async () => {
    const v = await verdict(
      withProof((p) => {
        const leaf = Buffer.from(p.leaf, 'base64');
        const at = leaf.indexOf('"triage"') + 1;
        leaf[at] = 'T'.charCodeAt(0);
        p.leaf = leaf.toString('base64');
      }),
    );
    expect(v.state).toBe('failed');
    expect(v.text).toContain('task_type');
  });

  it('one audit path byte changed: failed (the root differs)', async () => {
    const v = await verdict(
      withProof((p) => {
        const h = Buffer.from(p.hashes![0]!, 'base64');
        h[0] ^= 1;
        p.hashes![0] = h.toString('base64');
      }),
    );
    expect(v.state).toBe('failed');
    expect(v.text).toContain('the proof gives the root');
  });

  it('the checkpoint root changed: failed (the signature does not verify)', async () => {
    const v = await verdict(
      withProof((p) => {
        const lines = p.checkpoint!.split('\n');
        const root = Buffer.from(lines[2]!, 'base64');
        root[0] ^= 1;
        lines[2] = root.toString('base64');
        p.checkpoint = lines.join('\n');
      }),
    );
    expect(v.state).toBe('failed');
    expect(v.text).toContain('does not verify');
  });

  it('a field shown changed (the page shows one record, proves another): failed', async () => {
    const v = await verdict((html) => html.replace(/(<dd data-field="task_type" data-value=")&quot;triage&quot;/, '$1&quot;triage2&quot;'));
    expect(v.state).toBe('failed');
    expect(v.text).toContain('task_type');
  });

  it('the proof of another record: failed', async () => {
    const other = proofOf((await admin.get(`/console/audit/${made[2]!.id}`)).text);
    const v = await verdict(withProof((p) => Object.assign(p, { leaf: other.leaf, leaf_index: other.leaf_index, hashes: other.hashes })));
    expect(v.state).toBe('failed');
  });
});
