/**
 * Bundles through HTTP: every row of the bundle state table (spec 3.4), immutability,
 * DRAFT, validation (rejections and stored findings), import resolution and cycles, the
 * graph written on publish. Runs on PGlite, and on PostgreSQL with SVC_TEST_REAL=1.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REAL, startTestStack, type TestStack } from '../harness.js';
import { bundle, concern, deploy, path, publish, scdDoc, uid } from './factories.js';

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ services: ['api'] });
});
afterAll(async () => {
  await t?.close();
});

const get = (p: string) => t.call('api', 'GET', p, { admin: true });
const del = (p: string) => t.call('api', 'DELETE', p, { admin: true });
const post = (body: unknown) => t.call('api', 'POST', '/api/bundles', { admin: true, body });

describe('bundle states (spec 3.4)', () => {
  it('(none) -> published on POST; the version is immutable from then on (409)', async () => {
    const c = concern(`c-${uid()}`, 2, { applies_to: { roles: ['role:nurse'] } });
    const created = await publish(t, c.body);
    expect(created).toEqual({ bundle_id: c.id, version: '1.0.0', status: 'published', validation_status: 'valid', validation_errors: null, content_revision: expect.any(Number) });
    const again = await post(c.body);
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('conflict');
    expect(again.body.message).toContain('immutable');
    const changed = await post({ ...c.body, title: 'Changed' });
    expect(changed.status).toBe(409);
    const g = await get(path(c.id, '1.0.0'));
    expect(g.status).toBe(200);
    expect(g.body).toMatchObject({
      id: c.id,
      type: 'concern',
      version: '1.0.0',
      title: `Bundle ${c.id}`,
      scds: c.scds,
      imports: [],
      applies_to: { roles: ['role:nurse'] },
      validation_status: 'valid',
      validation_errors: null,
      is_active: true,
      created_by: 'tests@example.com',
      schema_version: null,
    });
    expect(g.body.published_at).toEqual(g.body.created_at);
    expect(g.body.manifest.documents).toBeUndefined();
    expect(g.body.manifest.scds).toEqual(c.scds);
  });

  it('published -> deactivated on DELETE (204), idempotent, still readable, never re-publishable', async () => {
    const c = concern(`c-${uid()}`, 1);
    await publish(t, c.body);
    expect((await del(path(c.id, '1.0.0'))).status).toBe(204);
    const g = await get(path(c.id, '1.0.0'));
    expect(g.body.is_active).toBe(false);
    expect((await del(path(c.id, '1.0.0'))).status).toBe(204);
    const again = await post(c.body);
    expect(again.status).toBe(409);
  });

  it('unknown versions are 404 for GET and DELETE', async () => {
    expect((await get(path(`bundle:nope-${uid()}`, '1.0.0'))).status).toBe(404);
    expect((await del(path(`bundle:nope-${uid()}`, '1.0.0'))).status).toBe(404);
  });

  it('path ids may be sent with a literal or an encoded colon', async () => {
    const c = concern(`c-${uid()}`, 1);
    await publish(t, c.body);
    expect((await get(`/api/bundles/${c.id}/versions/1.0.0`)).status).toBe(200);
    expect((await get(`/api/bundles/${c.id.replace(':', '%3A')}/versions/1.0.0`)).status).toBe(200);
    expect((await get(`/api/bundles/${c.id.replace(':', '%3a')}/versions/1.0.0`)).status).toBe(200);
  });

  it('a version in use cannot be deactivated: tagged (409 naming the tag) or deployed (409 naming the deployment)', async () => {
    const c = concern(`c-${uid()}`, 1);
    await publish(t, c.body);
    const tag = `t-${uid()}:prod`;
    expect((await t.call('api', 'POST', '/api/tags', { admin: true, body: { tag, bundle_id: c.id, bundle_version: '1.0.0' } })).status).toBe(201);
    const r = await del(path(c.id, '1.0.0'));
    expect(r.status).toBe(409);
    expect(r.body.details.tags).toEqual([tag]);

    const d = concern(`c-${uid()}`, 1);
    await publish(t, d.body);
    const dom = bundle(`bundle:dom-${uid()}`, 'domain', { imports: [`${d.id}:1.0.0`] });
    await publish(t, dom);
    const dep = await deploy(t, [[dom.id as string, '1.0.0']]);
    const r2 = await del(path(d.id, '1.0.0')); // held through an import
    expect(r2.status).toBe(409);
    expect(r2.body.details.deployments).toEqual([dep.deployment_id]);
  });
});

describe('DRAFT', () => {
  it('is stored as a draft, replaced by a second POST, never picked by an unpinned import', async () => {
    const name = `c-${uid()}`;
    const first = concern(name, 1, { version: 'DRAFT' });
    expect(await publish(t, first.body)).toMatchObject({ status: 'draft', version: 'DRAFT' });
    let g = await get(path(first.id, 'DRAFT'));
    expect(g.body.published_at).toBeNull();
    const second = concern(name, 3, { version: 'DRAFT' });
    expect(await publish(t, second.body)).toMatchObject({ status: 'draft' });
    g = await get(path(first.id, 'DRAFT'));
    expect(g.body.scds).toEqual(second.scds);
    const contains = await t.ctx.db.query("SELECT to_id FROM graph_edges WHERE source = $1 AND edge_type = 'CONTAINS' ORDER BY to_id", [`${first.id}:DRAFT`]);
    expect(contains.map((e) => e.to_id)).toEqual([...second.scds].sort());

    const dom = await post(bundle(`bundle:dom-${uid()}`, 'domain', { imports: [first.id] }));
    expect(dom.status).toBe(400);
    expect(dom.body.details.errors[0]).toMatchObject({ rule: 'import_unresolved', reference: first.id });
    const tag = await t.call('api', 'POST', '/api/tags', { admin: true, body: { tag: `d-${uid()}:x`, bundle_id: first.id, bundle_version: 'DRAFT' } });
    expect(tag.status).toBe(400);
  });
});

describe('validation: rejections (400, nothing stored, bundle and reference named)', () => {
  const rejected = async (body: Record<string, unknown>, rule: string, reference?: string) => {
    const r = await post(body);
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toBe('validation_error');
    expect(r.body.message).toContain(String(body.id));
    expect(r.body.details.bundle_id).toBe(body.id);
    const e = r.body.details.errors.find((x: any) => x.rule === rule);
    expect(e, JSON.stringify(r.body.details.errors)).toBeDefined();
    if (reference) expect(e.reference).toBe(reference);
    expect((await get(path(String(body.id), String(body.version)))).status).toBe(404);
    return r.body;
  };

  it('bundle-type constraints', async () => {
    const c = concern(`c-${uid()}`, 1);
    await publish(t, c.body);
    await rejected({ ...concern(`c-${uid()}`, 1).body, imports: [`${c.id}:1.0.0`] }, 'bundle_type');
    await rejected(bundle(`bundle:c-${uid()}`, 'concern'), 'bundle_type');
    await rejected(bundle(`bundle:d-${uid()}`, 'domain', { imports: [`${c.id}:1.0.0`], scds: [c.scds[0]!] }), 'bundle_type');
    await rejected(bundle(`bundle:d-${uid()}`, 'domain'), 'bundle_type');
    await rejected(bundle(`bundle:p-${uid()}`, 'project'), 'bundle_type');
    await rejected(bundle(`bundle:m-${uid()}`, 'meta'), 'bundle_type');
    await rejected(bundle(`bundle:s-${uid()}`, 'standards'), 'xor_constraint');
    const std = bundle(`bundle:s-${uid()}`, 'standards', { scds: [`scd:standards:x-${uid()}`] });
    await publish(t, std);
    await rejected(bundle(`bundle:s-${uid()}`, 'standards', { imports: [`${std.id}:1.0.0`], scds: [`scd:standards:y-${uid()}`] }), 'xor_constraint');
  });

  it('SCD tiers must match the bundle type', async () => {
    const id = `scd:meta:m-${uid()}`;
    await rejected(bundle(`bundle:c-${uid()}`, 'concern', { scds: [id] }), 'scd_tier', id);
  });

  it('the import hierarchy, by the imported version type', async () => {
    const c = concern(`c-${uid()}`, 1);
    await publish(t, c.body);
    const dom = bundle(`bundle:d-${uid()}`, 'domain', { imports: [`${c.id}:1.0.0`] });
    await publish(t, dom);
    const proj = bundle(`bundle:p-${uid()}`, 'project', { imports: [`${dom.id}:1.0.0`] });
    await publish(t, proj);
    await rejected(bundle(`bundle:d-${uid()}`, 'domain', { imports: [`${c.id}:1.0.0`, `${proj.id}:1.0.0`] }), 'import_hierarchy', `${proj.id}:1.0.0`);
    await rejected(bundle(`bundle:p-${uid()}`, 'project', { imports: [String(proj.id)] }), 'import_hierarchy', String(proj.id));
    await rejected(bundle(`bundle:s-${uid()}`, 'standards', { imports: [`${dom.id}:1.0.0`] }), 'import_hierarchy');
  });

  it('references that must exist', async () => {
    const missing = `scd:project:missing-${uid()}`;
    await rejected(bundle(`bundle:c-${uid()}`, 'concern', { scds: [missing], documents: [] }), 'scd_unresolved', missing);
    const ghost = `bundle:ghost-${uid()}`;
    await rejected(bundle(`bundle:d-${uid()}`, 'domain', { imports: [`${ghost}:1.0.0`] }), 'import_unresolved', `${ghost}:1.0.0`);
    await rejected(bundle(`bundle:d-${uid()}`, 'domain', { imports: [ghost] }), 'import_unresolved', ghost);
    const c = concern(`c-${uid()}`, 1);
    await publish(t, c.body);
    const wrongVersion = await rejected(bundle(`bundle:d-${uid()}`, 'domain', { imports: [`${c.id}:2.0.0`] }), 'import_unresolved', `${c.id}:2.0.0`);
    expect(wrongVersion.message).toContain('stored versions: 1.0.0');
  });

  it('documents: listed, unique', async () => {
    const a = `scd:project:a-${uid()}`;
    const b = `scd:project:b-${uid()}`;
    await rejected(bundle(`bundle:c-${uid()}`, 'concern', { scds: [a], documents: [scdDoc(a), scdDoc(b)] }), 'document_unlisted', b);
    await rejected(bundle(`bundle:c-${uid()}`, 'concern', { scds: [a], documents: [scdDoc(a), scdDoc(a)] }), 'duplicate_document', a);
  });

  it('a bundle cannot import itself', async () => {
    const c = concern(`c-${uid()}`, 1);
    await publish(t, c.body);
    const s = bundle(`bundle:s-${uid()}`, 'standards', { scds: [`scd:standards:s-${uid()}`] });
    await publish(t, s);
    await rejected(bundle(String(s.id), 'standards', { version: '2.0.0', imports: [String(s.id)] }), 'self_import');
  });

  it('deactivated versions cannot be newly imported; unpinned imports skip them', async () => {
    const name = `c-${uid()}`;
    const v1 = concern(name, 1);
    const v2 = concern(name, 1, { version: '2.0.0', scds: [`scd:project:${name}-v2`] });
    await publish(t, v1.body);
    await publish(t, v2.body);
    expect((await del(path(v2.id, '2.0.0'))).status).toBe(204);
    await rejected(bundle(`bundle:d-${uid()}`, 'domain', { imports: [`${v2.id}:2.0.0`] }), 'import_inactive', `${v2.id}:2.0.0`);
    const dom = bundle(`bundle:d-${uid()}`, 'domain', { imports: [v1.id] });
    await publish(t, dom);
    const edge = await t.ctx.db.query("SELECT to_id, props FROM graph_edges WHERE source = $1 AND edge_type = 'IMPORTS'", [`${dom.id}:1.0.0`]);
    expect(edge).toEqual([{ to_id: `${v1.id}:1.0.0`, props: { ref: v1.id, pinned: false } }]);
    expect((await del(path(v1.id, '1.0.0'))).status).toBe(204);
    await rejected(bundle(`bundle:d-${uid()}`, 'domain', { imports: [v1.id] }), 'import_inactive', v1.id);
  });

  it('a body that fails the contract is reported with every problem, naming the bundle and references', async () => {
    const bad = `scd:project:missing-${uid()}`;
    const id = `bundle:s-${uid()}`;
    const r = await post({ ...bundle(id, 'standards', { scds: [bad], documents: [] }), imports: ['bundle:x:not-a-version'] });
    expect(r.status).toBe(400);
    expect(r.body.message).toContain(id);
    const refs = r.body.details.errors.map((e: any) => e.reference);
    expect(refs).toEqual(expect.arrayContaining(['bundle:x:not-a-version', bad]));
    const junk = await post('[1,2,3]');
    expect(junk.status).toBe(400);
    expect(junk.body.details).toMatchObject({ bundle_id: null, version: null });
    const notJson = await t.call('api', 'POST', '/api/bundles', { admin: true, body: '{"id": ' });
    expect(notJson.status).toBe(400);
    const nul = await post(bundle(`bundle:c-${uid()}`, 'concern', { documents: [scdDoc(`scd:project:n-${uid()}`, { content: { a: 'x\u0000y' } })] }));
    expect(nul.status).toBe(400);
    expect(nul.body.details.errors[0]).toMatchObject({ path: '/body/documents/0/content/a', rule: 'nul_character' });
  });
});

describe('validation: stored findings (201)', () => {
  it('strict SCS problems make validation_status invalid; unresolved relationship targets are warnings', async () => {
    const a = `scd:project:a-${uid()}`;
    const { title: _t, ...noTitle } = scdDoc(a);
    const r = await publish(t, bundle(`bundle:c-${uid()}`, 'concern', { documents: [noTitle] }));
    expect(r.validation_status).toBe('invalid');
    expect(r.validation_errors.some((f: any) => f.severity === 'error' && f.path.startsWith('/body/documents/0'))).toBe(true);

    const b = `scd:project:b-${uid()}`;
    const target = `scd:project:later-${uid()}`;
    const w = await publish(t, bundle(`bundle:c-${uid()}`, 'concern', { documents: [scdDoc(b, { relationships: [{ type: 'depends-on', target }] })] }));
    expect(w.validation_status).toBe('valid');
    expect(w.validation_errors).toEqual([expect.objectContaining({ rule: 'relationship_unresolved', severity: 'warning', reference: target })]);
  });

  it('an SCD already stored can be listed without its document: its content is snapshotted', async () => {
    const c = concern(`c-${uid()}`, 2);
    await publish(t, c.body);
    const reuse = bundle(`bundle:c-${uid()}`, 'concern', { scds: [c.scds[1]!], documents: [] });
    delete reuse.documents;
    await publish(t, reuse);
    const rows = await t.ctx.db.query('SELECT content_yaml FROM bundle_scds WHERE bundle_id = $1', [reuse.id]);
    expect(rows[0]!.content_yaml).toContain(`id: ${c.scds[1]}`);
  });
});

describe('import cycles (400, the cycle spelled in the message)', () => {
  it('two bundles closing a cycle through unpinned imports', async () => {
    const a = `bundle:a-${uid()}`;
    const b = `bundle:b-${uid()}`;
    await publish(t, bundle(b, 'standards', { scds: [`scd:standards:b-${uid()}`] }));
    await publish(t, bundle(a, 'standards', { imports: [b] }));
    const r = await post(bundle(b, 'standards', { version: '2.0.0', imports: [a] }));
    expect(r.status).toBe(400);
    expect(r.body.message).toContain(`Import cycle: ${b}:2.0.0 -> ${a}:1.0.0 -> ${b}:2.0.0`);
    expect(r.body.details.errors[0].rule).toBe('import_cycle');
    expect((await get(path(b, '2.0.0'))).status).toBe(404);
  });

  it('a longer cycle', async () => {
    const [a, b, c] = [`bundle:a-${uid()}`, `bundle:b-${uid()}`, `bundle:c-${uid()}`];
    await publish(t, bundle(c, 'standards', { scds: [`scd:standards:c-${uid()}`] }));
    await publish(t, bundle(b, 'standards', { imports: [c] }));
    await publish(t, bundle(a, 'standards', { imports: [`${b}:1.0.0`] }));
    const r = await post(bundle(c, 'standards', { version: '1.1.0', imports: [a] }));
    expect(r.status).toBe(400);
    expect(r.body.message).toContain(`Import cycle: ${c}:1.1.0 -> ${a}:1.0.0 -> ${b}:1.0.0 -> ${c}:1.1.0`);
  });
});

describe('the graph written on publish', () => {
  it('CONTAINS, IMPORTS, APPLIES_TO (SCD wins over bundle), GOVERNED_BY, REFERENCES, Role nodes', async () => {
    const u = uid();
    const std = `scd:standards:hipaa-${u}`;
    await publish(t, bundle(`bundle:std-${u}`, 'standards', { scds: [std] }));
    const [x, y, z] = [`scd:project:x-${u}`, `scd:project:y-${u}`, `scd:project:z-${u}`];
    const id = `bundle:c-${u}`;
    await publish(
      t,
      bundle(id, 'concern', {
        applies_to: { roles: ['role:nurse'] },
        documents: [
          scdDoc(x, { relationships: [{ type: 'satisfies', target: std }, { type: 'depends-on', target: y }, { type: 'refines', target: y }] }),
          scdDoc(y, { applies_to: { roles: ['role:doctor', 'role:auditor'] }, relationships: [{ type: 'constrains', target: z }] }),
          scdDoc(z, { relationships: [{ type: 'implements', target: std }] }),
        ],
      }),
    );
    const edges = await t.ctx.db.query('SELECT edge_type, from_id, to_id, props FROM graph_edges WHERE source = $1 ORDER BY edge_type, from_id, to_id', [`${id}:1.0.0`]);
    const simple = edges.map((e) => `${e.edge_type} ${e.from_id} ${e.to_id}`);
    expect(simple).toEqual(
      [
        `APPLIES_TO ${x} role:nurse`,
        `APPLIES_TO ${y} role:auditor`,
        `APPLIES_TO ${y} role:doctor`,
        `APPLIES_TO ${z} role:nurse`,
        `CONTAINS ${id}:1.0.0 ${x}`,
        `CONTAINS ${id}:1.0.0 ${y}`,
        `CONTAINS ${id}:1.0.0 ${z}`,
        `GOVERNED_BY ${x} ${std}`,
        `GOVERNED_BY ${z} ${std}`,
        `GOVERNED_BY ${z} ${y}`,
        `REFERENCES ${x} ${y}`,
      ].sort(),
    );
    expect(edges.find((e) => e.edge_type === 'REFERENCES')!.props).toEqual({ type: 'depends-on', types: ['depends-on', 'refines'] });
    const roles = await t.ctx.db.query("SELECT node_id FROM graph_nodes WHERE label = 'Role' AND node_id IN ('role:nurse', 'role:doctor', 'role:auditor') ORDER BY node_id");
    expect(roles.map((r) => r.node_id)).toEqual(['role:auditor', 'role:doctor', 'role:nurse']);
    const nodes = await t.ctx.db.query('SELECT label FROM graph_nodes WHERE node_id = $1', [`${id}:1.0.0`]);
    expect(nodes).toEqual([{ label: 'Bundle' }]);
  });
});

describe('listing', () => {
  it('filters by type, pages with limit/offset and answers the total', async () => {
    const u = uid();
    for (let i = 0; i < 3; i++) await publish(t, bundle(`bundle:m-${u}-${i}`, 'meta', { scds: [`scd:meta:m-${u}-${i}`] }));
    const all = await get('/api/bundles?type=meta&limit=1000');
    const mine = all.body.bundles.filter((b: any) => b.id.includes(u));
    expect(mine.map((b: any) => b.id)).toEqual([0, 1, 2].map((i) => `bundle:m-${u}-${i}`));
    expect(all.body.bundles.every((b: any) => b.type === 'meta')).toBe(true);
    const page = await get('/api/bundles?type=meta&limit=2&offset=1');
    expect(page.body).toMatchObject({ limit: 2, offset: 1, total: all.body.total });
    expect(page.body.bundles).toEqual(all.body.bundles.slice(1, 3));
    const beyond = await get(`/api/bundles?type=meta&offset=${all.body.total + 5}`);
    expect(beyond.body).toMatchObject({ bundles: [], total: all.body.total });
    expect((await get('/api/bundles?type=nope')).status).toBe(400);
    expect((await get('/api/bundles')).body.limit).toBe(100);
  });
});

describe.runIf(REAL)('concurrent publishes (PostgreSQL)', () => {
  it('the same version posted concurrently: exactly one 201, the others 409', async () => {
    const c = concern(`c-${uid()}`, 3);
    const rs = await Promise.all(Array.from({ length: 6 }, () => post(c.body)));
    expect(rs.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
  });
  it('two versions that would close a cycle, posted concurrently: one is refused', async () => {
    const [a, b] = [`bundle:a-${uid()}`, `bundle:b-${uid()}`];
    await publish(t, bundle(a, 'standards', { scds: [`scd:standards:a-${uid()}`] }));
    await publish(t, bundle(b, 'standards', { scds: [`scd:standards:b-${uid()}`] }));
    const rs = await Promise.all([post(bundle(a, 'standards', { version: '2.0.0', imports: [b] })), post(bundle(b, 'standards', { version: '2.0.0', imports: [a] }))]);
    expect(rs.map((r) => r.status).sort()).toEqual([201, 400]);
  });
});
