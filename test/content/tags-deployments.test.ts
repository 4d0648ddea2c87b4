/**
 * Tags (every row of the tag behaviour: create, move, refusals) and deployments (create,
 * get, list, refusals, supersession), deep and wide import graphs, through HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { TAG_UPDATES_CHANNEL } from '../../src/shared/broker.js';
import { getTagContext } from '../../src/core/tags/tag-context.js';
import { createDeployment } from '../../src/core/deployments/deployment-service.js';
import { createAppContext } from '../../src/shared/app-context.js';
import { createMemoryBroker } from '../../src/shared/broker.js';
import { memoryLogger } from '../../src/shared/logger.js';
import { startTestStack, TEST_WHO, type TestStack } from '../harness.js';
import { bundle, concern, deploy, path, publish, uid } from './factories.js';

let t: TestStack;
const messages: string[] = [];
beforeAll(async () => {
  t = await startTestStack({ services: ['api'] });
  await t.broker.subscribe(TAG_UPDATES_CHANNEL, (m) => messages.push(m));
});
afterAll(async () => {
  await t?.close();
});

const call = (method: string, p: string, body?: unknown) => t.call('api', method, p, { admin: true, body });
const waitFor = async (pred: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!pred() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  return pred();
};
/** The tag updates received for one tag, oldest first (the broker may deliver another test's late). */
const updatesFor = (tag: string) => messages.map((m) => JSON.parse(m) as Record<string, unknown>).filter((m) => m.tag === tag);

/** project -> domain -> two concerns, plus a meta bundle; returns the ids. */
async function smallProject(u = uid()) {
  const meta = bundle(`bundle:meta-${u}`, 'meta', { scds: [`scd:meta:m-${u}`] });
  const a = concern(`a-${u}`, 2);
  const b = concern(`b-${u}`, 1);
  for (const x of [meta, a.body, b.body]) await publish(t, x);
  const dom = bundle(`bundle:dom-${u}`, 'domain', { imports: [`${a.id}:1.0.0`, b.id] });
  await publish(t, dom);
  const proj = bundle(`bundle:proj-${u}`, 'project', { imports: [`${meta.id}:1.0.0`, `${dom.id}:1.0.0`] });
  await publish(t, proj);
  return { u, meta: String(meta.id), a, b, dom: String(dom.id), proj: String(proj.id) };
}

describe('tags', () => {
  it('POST creates (201) with resolved ids and the flattened context, and publishes a tag update', async () => {
    const p = await smallProject();
    const tag = `med-${p.u}:prod`;
    const r = await call('POST', '/api/tags', { tag, bundle_id: p.proj, bundle_version: '1.0.0', description: 'production' });
    expect(r.status).toBe(201);
    const resolved = [`${p.proj}:1.0.0`, `${p.meta}:1.0.0`, `${p.dom}:1.0.0`, `${p.a.id}:1.0.0`, `${p.b.id}:1.0.0`];
    expect(r.body).toMatchObject({ tag, bundle_id: p.proj, bundle_version: '1.0.0', description: 'production', resolved_bundle_ids: resolved });
    expect(r.body.created_at).toBe(r.body.updated_at);
    const ctxDoc = YAML.parse(r.body.context_yaml);
    expect(ctxDoc.tag).toBe(tag);
    expect(ctxDoc.resolved_bundle_ids).toEqual(resolved);
    expect(ctxDoc.scds.map((s: any) => s.id)).toEqual([`scd:meta:m-${p.u}`, ...p.a.scds, ...p.b.scds]);
    expect(await waitFor(() => updatesFor(tag).length > 0)).toBe(true);
    expect(updatesFor(tag)).toEqual([{ tag, bundle_id: p.proj, bundle_version: '1.0.0', updated_at: r.body.updated_at }]);
    expect(Object.keys(updatesFor(tag)[0]!)).toEqual(['tag', 'bundle_id', 'bundle_version', 'updated_at']);

    // The write's answer adds the content revision it produced; the stored tag is the rest.
    const { content_revision: rev, ...stored } = r.body;
    expect(Number.isInteger(rev)).toBe(true);
    const g = await call('GET', `/api/tags/${tag}`);
    expect(g.body).toEqual(stored);
    const tc = await getTagContext(t.ctx, tag);
    expect(tc).toMatchObject({ tag, bundleId: p.proj, bundleVersion: '1.0.0', resolvedBundleIds: resolved, contextYaml: r.body.context_yaml });
    expect(tc!.scdIds).toEqual([`scd:meta:m-${p.u}`, ...p.a.scds, ...p.b.scds]);
    expect(tc!.scdContent[p.a.scds[0]!]).toContain(`id: ${p.a.scds[0]}`);
    expect(await getTagContext(t.ctx, `unknown-${p.u}:x`)).toBeNull();
  });

  it('refusals: existing tag 409, unknown version 404, deactivated version 409, bad name 400', async () => {
    const c = concern(`c-${uid()}`, 1);
    await publish(t, c.body);
    const tag = `t-${uid()}:prod`;
    expect((await call('POST', '/api/tags', { tag, bundle_id: c.id, bundle_version: '1.0.0' })).status).toBe(201);
    expect((await call('POST', '/api/tags', { tag, bundle_id: c.id, bundle_version: '1.0.0' })).status).toBe(409);
    const unknown = await call('POST', '/api/tags', { tag: `t-${uid()}:x`, bundle_id: c.id, bundle_version: '9.9.9' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.details.reference).toBe(`${c.id}:9.9.9`);
    const d = concern(`c-${uid()}`, 1);
    await publish(t, d.body);
    await call('DELETE', path(d.id, '1.0.0'));
    expect((await call('POST', '/api/tags', { tag: `t-${uid()}:x`, bundle_id: d.id, bundle_version: '1.0.0' })).status).toBe(409);
    expect((await call('POST', '/api/tags', { tag: 'no-label', bundle_id: c.id, bundle_version: '1.0.0' })).status).toBe(400);
    expect((await call('GET', `/api/tags/none-${uid()}:x`)).status).toBe(404);
  });

  it('PUT moves (200): resolved ids and context recomputed, updated_at advances, history kept, update published', async () => {
    const name = `c-${uid()}`;
    const v1 = concern(name, 1);
    const v2 = concern(name, 2, { version: '1.1.0', scds: [`scd:project:${name}-new0`, `scd:project:${name}-new1`] });
    await publish(t, v1.body);
    await publish(t, v2.body);
    const tag = `t-${uid()}:prod`;
    const created = await call('POST', '/api/tags', { tag, bundle_id: v1.id, bundle_version: '1.0.0', description: 'keep me' });
    // The creation's update may still be on its way (Redis): wait for it, so the move's is the second.
    expect(await waitFor(() => updatesFor(tag).length === 1)).toBe(true);
    const moved = await call('PUT', `/api/tags/${tag}`, { bundle_id: v2.id, bundle_version: '1.1.0' });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ tag, bundle_version: '1.1.0', resolved_bundle_ids: [`${v2.id}:1.1.0`], description: 'keep me', created_at: created.body.created_at });
    expect(Date.parse(moved.body.updated_at)).toBeGreaterThan(Date.parse(created.body.updated_at));
    expect(moved.body.context_yaml).toContain(`${name}-new1`);
    expect(moved.body.context_yaml).not.toContain(`${name}-0`);
    expect(await waitFor(() => updatesFor(tag).length === 2)).toBe(true);
    expect(updatesFor(tag)[1]).toEqual({ tag, bundle_id: v2.id, bundle_version: '1.1.0', updated_at: moved.body.updated_at });
    const tc = await getTagContext(t.ctx, tag);
    expect(tc!.scdIds).toEqual(v2.scds);

    // Repointing to the current target still publishes; description null clears it.
    const same = await call('PUT', `/api/tags/${tag}`, { bundle_id: v2.id, bundle_version: '1.1.0', description: null });
    expect(same.status).toBe(200);
    expect(same.body.description).toBeNull();
    expect(await waitFor(() => updatesFor(tag).length === 3)).toBe(true);
    expect(updatesFor(tag)[2]!.updated_at).toBe(same.body.updated_at);
    const hist = await t.ctx.db.query('SELECT bundle_version FROM tag_history WHERE tag_name = $1 ORDER BY id', [tag]);
    expect(hist.map((h) => h.bundle_version)).toEqual(['1.0.0', '1.1.0', '1.1.0']);
  });

  it('PUT refusals: unknown tag 404 (PUT does not create), unknown version 404, deactivated 409', async () => {
    const c = concern(`c-${uid()}`, 1);
    await publish(t, c.body);
    expect((await call('PUT', `/api/tags/none-${uid()}:x`, { bundle_id: c.id, bundle_version: '1.0.0' })).status).toBe(404);
    const tag = `t-${uid()}:prod`;
    await call('POST', '/api/tags', { tag, bundle_id: c.id, bundle_version: '1.0.0' });
    expect((await call('PUT', `/api/tags/${tag}`, { bundle_id: c.id, bundle_version: '3.0.0' })).status).toBe(404);
    const d = concern(`c-${uid()}`, 1);
    await publish(t, d.body);
    await call('DELETE', path(d.id, '1.0.0'));
    expect((await call('PUT', `/api/tags/${tag}`, { bundle_id: d.id, bundle_version: '1.0.0' })).status).toBe(409);
    expect((await call('GET', `/api/tags/${tag}`)).body.bundle_id).toBe(c.id);
  });

  it('lists tags by name with paging and without the heavy fields', async () => {
    const c = concern(`c-${uid()}`, 1);
    await publish(t, c.body);
    const u = uid();
    for (const l of ['b', 'a', 'c']) await call('POST', '/api/tags', { tag: `list-${u}:${l}`, bundle_id: c.id, bundle_version: '1.0.0' });
    const all = await call('GET', '/api/tags?limit=1000');
    const mine = all.body.tags.filter((x: any) => x.tag.startsWith(`list-${u}`));
    expect(mine.map((x: any) => x.tag)).toEqual([`list-${u}:a`, `list-${u}:b`, `list-${u}:c`]);
    expect(mine[0].context_yaml).toBeUndefined();
    expect(all.body.total).toBe(all.body.tags.length);
  });
});

describe('deployments', () => {
  it('creates an active deployment with pinned project and resolved bundles; get and list', async () => {
    const p = await smallProject();
    const id = crypto.randomUUID();
    const d = await call('POST', '/api/deploy', { project_bundles: [{ id: p.proj, version: '1.0.0' }], deployment_id: id });
    expect(d.status).toBe(201);
    expect(d.body).toMatchObject({
      deployment_id: id,
      project_bundles: [`${p.proj}:1.0.0`],
      resolved_bundles: [`${p.proj}:1.0.0`, `${p.meta}:1.0.0`, `${p.dom}:1.0.0`, `${p.a.id}:1.0.0`, `${p.b.id}:1.0.0`],
      status: 'active',
      superseded_by: null,
    });
    const { content_revision: rev, ...stored } = d.body;
    expect(Number.isInteger(rev)).toBe(true);
    expect((await call('GET', `/api/deployments/${id}`)).body).toEqual(stored);
    expect((await call('GET', `/api/deployments/${id.toUpperCase()}`)).status).toBe(200);
    expect((await call('POST', '/api/deploy', { project_bundles: [{ id: p.proj, version: '1.0.0' }], deployment_id: id })).status).toBe(409);
    const list = await call('GET', '/api/deployments?status=active&limit=1000');
    expect(list.body.deployments.some((x: any) => x.deployment_id === id)).toBe(true);
    expect(list.body.deployments.every((x: any) => x.status === 'active')).toBe(true);
    expect((await call('GET', `/api/deployments/${crypto.randomUUID()}`)).status).toBe(404);
    expect((await call('GET', '/api/deployments/not-a-uuid')).status).toBe(400);
  });

  it('refusals: unknown version 404 and deactivated 409 with details.reference; duplicates 400', async () => {
    const c = concern(`c-${uid()}`, 1);
    await publish(t, c.body);
    const unknown = await call('POST', '/api/deploy', { project_bundles: [{ id: c.id, version: '4.0.0' }] });
    expect(unknown.status).toBe(404);
    expect(unknown.body.details.reference).toBe(`${c.id}:4.0.0`);
    const dup = await call('POST', '/api/deploy', { project_bundles: [{ id: c.id, version: '1.0.0' }, { id: c.id, version: '1.0.0' }] });
    expect(dup.status).toBe(400);
    await call('DELETE', path(c.id, '1.0.0'));
    const inactive = await call('POST', '/api/deploy', { project_bundles: [{ id: c.id, version: '1.0.0' }] });
    expect(inactive.status).toBe(409);
    expect(inactive.body.details.reference).toBe(`${c.id}:1.0.0`);
    expect((await call('POST', '/api/deploy', { project_bundles: [] })).status).toBe(400);
  });

  it('an import that resolves to no active version at deploy time is 409 naming it', async () => {
    const name = `c-${uid()}`;
    const c = concern(name, 1);
    await publish(t, c.body);
    const dom = bundle(`bundle:d-${uid()}`, 'domain', { imports: [c.id] });
    await publish(t, dom);
    await call('DELETE', path(c.id, '1.0.0'));
    const r = await call('POST', '/api/deploy', { project_bundles: [{ id: dom.id, version: '1.0.0' }] });
    expect(r.status).toBe(409);
    expect(r.body.details.reference).toBe(c.id);
  });

  it('unpinned imports resolve at deploy time to the highest active version and stay frozen', async () => {
    const name = `c-${uid()}`;
    await publish(t, concern(name, 1).body);
    await publish(t, concern(name, 1, { version: '1.10.0', scds: [`scd:project:${name}-b`] }).body);
    await publish(t, concern(name, 1, { version: '1.9.0', scds: [`scd:project:${name}-c`] }).body);
    const dom = bundle(`bundle:d-${uid()}`, 'domain', { imports: [`bundle:${name}`] });
    await publish(t, dom);
    const d1 = await deploy(t, [[String(dom.id), '1.0.0']]);
    expect(d1.resolved_bundles[1]).toBe(`bundle:${name}:1.10.0`);
    await publish(t, concern(name, 1, { version: '2.0.0', scds: [`scd:project:${name}-d`] }).body);
    expect((await call('GET', `/api/deployments/${d1.deployment_id}`)).body.resolved_bundles[1]).toBe(`bundle:${name}:1.10.0`);
    const d2 = await deploy(t, [[String(dom.id), '1.0.0']]);
    expect(d2.resolved_bundles[1]).toBe(`bundle:${name}:2.0.0`);
  });

  it('another process deploying sees versions published since its last resolution (no stale header copy)', async () => {
    const other = await createAppContext(t.config, { logger: memoryLogger(), db: t.testDb.db, broker: createMemoryBroker(), skipMigrations: true });
    try {
      const name = `x-${uid()}`;
      await publish(t, concern(name, 1).body);
      const dom = bundle(`bundle:d-${uid()}`, 'domain', { imports: [`bundle:${name}`] });
      await publish(t, dom);
      const d1 = await createDeployment(other, { project_bundles: [{ id: String(dom.id), version: '1.0.0' }] }, TEST_WHO);
      expect(d1.resolved_bundles[1]).toBe(`bundle:${name}:1.0.0`);
      await publish(t, concern(name, 1, { version: '1.1.0', scds: [`scd:project:${name}-b`] }).body);
      const d2 = await createDeployment(other, { project_bundles: [{ id: String(dom.id), version: '1.0.0' }] }, TEST_WHO);
      expect(d2.resolved_bundles[1]).toBe(`bundle:${name}:1.1.0`);
      await call('DELETE', path(`bundle:${name}`, '1.0.0'));
      await call('DELETE', path(`bundle:${name}`, '1.1.0')).then((r) => expect(r.status).toBe(409)); // deployed by d2
    } finally {
      await other.close();
    }
  });

  it('a new deployment of the same bundle id supersedes the old one; other deployments stay active', async () => {
    const a = concern(`a-${uid()}`, 1);
    const a2 = concern(a.id.slice(7), 1, { version: '2.0.0', scds: [`scd:project:${a.id.slice(7)}-two`] });
    const b = concern(`b-${uid()}`, 1);
    for (const x of [a.body, a2.body, b.body]) await publish(t, x);
    const d1 = await deploy(t, [[a.id, '1.0.0']]);
    const other = await deploy(t, [[b.id, '1.0.0']]);
    const d2 = await deploy(t, [[a.id, '2.0.0']]);
    const old = await call('GET', `/api/deployments/${d1.deployment_id}`);
    expect(old.body).toMatchObject({ status: 'superseded', superseded_by: d2.deployment_id });
    expect((await call('GET', `/api/deployments/${other.deployment_id}`)).body.status).toBe('active');
    const sup = await call('GET', '/api/deployments?status=superseded&limit=1000');
    expect(sup.body.deployments.map((x: any) => x.deployment_id)).toContain(d1.deployment_id);
    // The superseded deployment no longer holds the old version: it can be deactivated.
    expect((await call('DELETE', path(a.id, '1.0.0'))).status).toBe(204);
  });
});

describe('deep and wide import graphs', () => {
  it('a chain of 60 standards bundles resolves in order and deploys', async () => {
    const u = uid();
    const ids: string[] = [];
    await publish(t, bundle(`bundle:s-${u}-0`, 'standards', { scds: [`scd:standards:s-${u}-0`] }));
    ids.push(`bundle:s-${u}-0`);
    for (let i = 1; i < 60; i++) {
      const id = `bundle:s-${u}-${i}`;
      await publish(t, bundle(id, 'standards', { imports: [i % 2 ? ids[i - 1]! : `${ids[i - 1]}:1.0.0`] }));
      ids.push(id);
    }
    const d = await deploy(t, [[ids[59]!, '1.0.0']]);
    expect(d.resolved_bundles).toEqual([...ids].reverse().map((x) => `${x}:1.0.0`));
  });

  it('a domain importing 300 concerns (and a diamond) resolves each once', async () => {
    const u = uid();
    const refs: string[] = [];
    for (let i = 0; i < 300; i++) {
      const c = concern(`w-${u}-${i}`, 1);
      await publish(t, c.body);
      refs.push(`${c.id}:1.0.0`);
    }
    const d1 = bundle(`bundle:d1-${u}`, 'domain', { imports: refs });
    const d2 = bundle(`bundle:d2-${u}`, 'domain', { imports: [...refs].reverse().slice(0, 50) });
    await publish(t, d1);
    await publish(t, d2);
    const proj = bundle(`bundle:p-${u}`, 'project', { imports: [`${d1.id}:1.0.0`, `${d2.id}:1.0.0`] });
    await publish(t, proj);
    const d = await deploy(t, [[String(proj.id), '1.0.0']]);
    expect(d.resolved_bundles).toEqual([`${proj.id}:1.0.0`, `${d1.id}:1.0.0`, ...refs, `${d2.id}:1.0.0`]);
  });
});
