/**
 * The console's content pages over HTTP: bundles (grouped by id, with their versions), a
 * version's metadata, SCDs, imports and documents, tags (with who moved them, from the
 * management events), deployments; data published through the API by a named admin key; an
 * auditor session reads every page; text is escaped; unknown ids are 404 pages.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { bundle, concern, uid } from '../content/factories.js';
import { ConsoleClient } from './client.js';

const ALICE_KEY = `alice_${randomBytes(24).toString('base64url')}`;
const AUDITOR_KEY = `audit_${randomBytes(24).toString('base64url')}`;
const EVIL = `<script>alert("x")</script> & 'q'`;
const EVIL_ESCAPED = '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;';

let t: TestStack;
let auditor: ConsoleClient;
const u = uid();
const conc = concern(`c-${u}`, 2);
const proj = `bundle:proj-${u}`;
const tag = `proj-${u}:prod`;
const depId = randomUUID();
const dep2Id = randomUUID();

async function alice(method: string, path: string, body: unknown): Promise<any> {
  const r = await t.call('api', method, path, { headers: { 'x-admin-key': ALICE_KEY }, body });
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  return r.body;
}

beforeAll(async () => {
  t = await startTestStack({ services: ['api'], env: { ADMIN_API_KEYS: `alice:${ALICE_KEY}`, AUDITOR_API_KEYS: `compliance:${AUDITOR_KEY}` } });
  await alice('POST', '/api/bundles', conc.body);
  await alice('POST', '/api/bundles', bundle(conc.id, 'concern', { version: '1.1.0', scds: conc.scds, documents: [] }));
  await alice('POST', '/api/bundles', bundle(proj, 'project', { imports: [`${conc.id}:1.0.0`], title: EVIL }));
  await alice('POST', '/api/bundles', bundle(proj, 'project', { version: '1.1.0', imports: [conc.id] }));
  await alice('POST', '/api/tags', { tag, bundle_id: proj, bundle_version: '1.0.0', description: EVIL });
  await alice('PUT', `/api/tags/${encodeURIComponent(tag)}`, { bundle_id: proj, bundle_version: '1.1.0' });
  await alice('POST', '/api/deploy', { deployment_id: depId, project_bundles: [{ id: proj, version: '1.0.0' }] });
  await alice('POST', '/api/deploy', { deployment_id: dep2Id, project_bundles: [{ id: proj, version: '1.1.0' }] });
  auditor = await ConsoleClient.signedIn(t, AUDITOR_KEY);
});
afterAll(async () => {
  await t?.close();
});

const enc = encodeURIComponent;
const rowOf = (page: string, needle: string): string => {
  const row = page.split('<tr>').find((r) => r.includes(needle));
  expect(row, `a row with ${needle}`).toBeDefined();
  return row!;
};

describe('/console/content', () => {
  it('lists bundles by id (latest version, versions count), tags (target, who moved it) and deployments (status)', async () => {
    const r = await auditor.get('/console/content');
    expect(r.status).toBe(200);
    expect(r.text).toContain('aria-current="page">Bundles and tags');
    const c = rowOf(r.text, `href="/console/content/bundles/${enc(conc.id)}"`);
    expect(c).toContain(`href="/console/content/bundles/${enc(conc.id)}/versions/1.1.0">1.1.0</a>`);
    expect(c).toContain('<td>2</td>');
    expect(c).toContain('<td>concern</td>');
    const tr = rowOf(r.text, `href="/console/content/tags/${enc(tag)}"`);
    expect(tr).toContain(`${proj}:1.1.0</a>`);
    expect(tr).toContain('<td>alice</td>');
    expect(tr).toContain(EVIL_ESCAPED);
    expect(rowOf(r.text, `href="/console/content/deployments/${depId}"`)).toContain('badge-superseded');
    expect(rowOf(r.text, `href="/console/content/deployments/${dep2Id}"`)).toContain('badge-active');
    expect(r.text).not.toContain('<script>alert');
  });

  it('a bundle page lists its versions, newest first; an unknown bundle is a 404 page', async () => {
    const r = await auditor.get(`/console/content/bundles/${enc(proj)}`);
    expect(r.status).toBe(200);
    expect(r.text.indexOf('>1.1.0</a>')).toBeGreaterThan(0);
    expect(r.text.indexOf('>1.1.0</a>')).toBeLessThan(r.text.indexOf('>1.0.0</a>'));
    expect(r.text).toContain(EVIL_ESCAPED);
    expect(r.text).not.toContain('<script>alert');
    const missing = await auditor.get(`/console/content/bundles/${enc(`bundle:none-${u}`)}`);
    expect(missing.status).toBe(404);
    expect(missing.text).toContain(`Bundle bundle:none-${u} does not exist`);
  });

  it('a version page shows its metadata, imports, SCD ids and documents; an unknown version is a 404 page', async () => {
    const r = await auditor.get(`/console/content/bundles/${enc(conc.id)}/versions/1.0.0`);
    expect(r.status).toBe(200);
    for (const s of conc.scds) expect(r.text).toContain(`<code>${s}</code>`);
    expect(r.text).toContain(`Summary of ${conc.scds[0]}`); // the documents, in a <pre>
    const p = await auditor.get(`/console/content/bundles/${enc(proj)}/versions/1.0.0`);
    expect(p.status).toBe(200);
    expect(p.text).toContain(`<a href="/console/content/bundles/${enc(conc.id)}/versions/1.0.0">${conc.id}:1.0.0</a>`);
    expect(p.text).toContain(EVIL_ESCAPED);
    expect(p.text).not.toContain('<script>alert');
    const unpinned = await auditor.get(`/console/content/bundles/${enc(proj)}/versions/1.1.0`);
    expect(unpinned.text).toContain(`<a href="/console/content/bundles/${enc(conc.id)}">${conc.id}</a>`);
    expect((await auditor.get(`/console/content/bundles/${enc(proj)}/versions/9.9.9`)).status).toBe(404);
  });

  it('a tag page shows its target, its moves with who made them, and its context; an unknown tag is a 404 page', async () => {
    const r = await auditor.get(`/console/content/tags/${enc(tag)}`);
    expect(r.status).toBe(200);
    const moved = rowOf(r.text, '>tag.moved</a>');
    expect(moved).toContain('<td>alice</td>');
    expect(moved.indexOf(`${proj}:1.0.0</a>`)).toBeLessThan(moved.indexOf(`${proj}:1.1.0</a>`));
    expect(rowOf(r.text, '>tag.created</a>')).toContain('<td>alice</td>');
    expect(r.text.indexOf('>tag.moved</a>')).toBeLessThan(r.text.indexOf('>tag.created</a>'));
    expect(r.text).toContain(`resolved_bundle_ids:`); // the context YAML
    expect(r.text).toContain(EVIL_ESCAPED);
    expect(r.text).not.toContain('<script>alert');
    const missing = await auditor.get(`/console/content/tags/${enc(`none-${u}:prod`)}`);
    expect(missing.status).toBe(404);
  });

  it('a deployment page shows its bundles, status, successor and who created it; an unknown one is a 404 page', async () => {
    const r = await auditor.get(`/console/content/deployments/${depId}`);
    expect(r.status).toBe(200);
    expect(r.text).toContain('badge-superseded');
    expect(r.text).toContain(`<a href="/console/content/deployments/${dep2Id}">${dep2Id}</a>`);
    expect(r.text).toContain(`${proj}:1.0.0</a>`);
    expect(r.text).toContain(`${conc.id}:1.0.0</a>`);
    expect(r.text).toContain('<dd>alice</dd>');
    expect((await auditor.get(`/console/content/deployments/${randomUUID()}`)).status).toBe(404);
  });

  it('needs a session', async () => {
    const r = await ConsoleClient.for(t).get('/console/content');
    expect(r.status).toBe(303);
  });
});
