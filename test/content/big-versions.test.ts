/**
 * Bundle versions past 2^31-1, through HTTP: parts of up to 15 digits are published and
 * ordered numerically wherever a version is chosen (the publish check, the SQL import walk,
 * deploy and tag resolution, overrides taken from outside the deployments); longer parts and
 * pre-releases are refused by the contract (400). Each ordering read once cast the parts to
 * int4, so a version past 2^31-1 made it fail with a 500 on every later call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectContext } from '../../src/core/graph/select.js';
import { startTestStack, type TestStack } from '../harness.js';
import { bundle, concern, deploy, path, publish, scdDoc, uid } from './factories.js';

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ services: ['api'] });
});
afterAll(async () => {
  await t?.close();
});

const call = (method: string, p: string, body?: unknown) => t.call('api', method, p, { admin: true, body });

async function listsAnswer(): Promise<void> {
  for (const p of ['/api/bundles', '/api/deployments', '/api/tags']) expect((await call('GET', p)).status, p).toBe(200);
}

describe('bundle versions past 2^31-1', () => {
  it.each(['99999999999999999999.0.0', '1000000000000000.0.0', '1.0.1000000000000000', '1.0.0-rc.1', '1.0.0+build.1', '01.0.0'])(
    '%s is refused with 400 validation_error; nothing is stored and lists stay 200',
    async (version) => {
      const c = concern(`big-${uid()}`, 1, { version });
      const r = await call('POST', '/api/bundles', c.body);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ error: 'validation_error', message: expect.any(String), details: { errors: expect.arrayContaining([expect.objectContaining({ path: '/body/version' })]) } });
      expect((await call('GET', path(c.id, version))).status).toBe(400);
      expect((await call('POST', '/api/deploy', { project_bundles: [{ id: c.id, version }] })).status).toBe(400);
      await listsAnswer();
    },
  );

  it('are published and chosen in semver order by publish, deploy, tag and override selection', async () => {
    const u = uid();
    const name = `c-${u}`;
    const versions = ['1.0.0', '2147483647.0.0', '2147483648.0.0', '10.0.0', '4294967296.0.0', '999999999999999.0.0'];
    // One SCD id in every version, its title naming the version, so the chosen one shows.
    const scd = `scd:project:${name}-0`;
    for (const v of versions.slice(0, 4)) {
      await publish(t, concern(name, 1, { version: v, scds: [scd], documents: [scdDoc(scd, { title: `from ${v}` })] }).body);
    }
    const meta = bundle(`bundle:meta-${u}`, 'meta', { scds: [`scd:meta:m-${u}`] });
    await publish(t, meta);
    const dom = `bundle:d-${u}`;
    await publish(t, bundle(dom, 'domain', { imports: [`bundle:${name}`] }));
    const proj = `bundle:p-${u}`;
    await publish(t, bundle(proj, 'project', { imports: [`${meta.id}:1.0.0`, dom] }));

    // The project imports the domain unpinned, so a new domain version runs the SQL import
    // walk from it (cycle check), which resolves `bundle:<name>` by version order.
    await publish(t, bundle(dom, 'domain', { version: '1.1.0', imports: [`bundle:${name}`] }));
    const d1 = await deploy(t, [[proj, '1.0.0']]);
    expect(d1.resolved_bundles).toEqual([`${proj}:1.0.0`, `${meta.id}:1.0.0`, `${dom}:1.1.0`, `bundle:${name}:2147483648.0.0`]);

    for (const v of versions.slice(4)) {
      await publish(t, concern(name, 1, { version: v, scds: [scd], documents: [scdDoc(scd, { title: `from ${v}` })] }).body);
    }
    await publish(t, bundle(dom, 'domain', { version: '1.2.0', imports: [`bundle:${name}`] }));
    const tag = await call('POST', '/api/tags', { tag: `big-${u}:prod`, bundle_id: proj, bundle_version: '1.0.0' });
    expect(tag.status, JSON.stringify(tag.body)).toBe(201);
    expect(tag.body.resolved_bundle_ids).toEqual([`${proj}:1.0.0`, `${meta.id}:1.0.0`, `${dom}:1.2.0`, `bundle:${name}:999999999999999.0.0`]);

    const got = await call('GET', path(`bundle:${name}`, '999999999999999.0.0'));
    expect(got.status).toBe(200);
    expect(got.body.version).toBe('999999999999999.0.0');

    // An override outside the deployments comes from the newest version holding it (the
    // version orders the ties of published_at); here every version holds it.
    const other = `o-${u}`;
    const oscd = `scd:project:${other}-0`;
    for (const v of ['2147483648.0.0', '3.0.0']) {
      await publish(t, concern(other, 1, { version: v, scds: [oscd], documents: [scdDoc(oscd, { title: `override from ${v}` })] }).body);
    }
    const sel = await selectContext(t.ctx, { roleId: `role:none-${u}`, overrides: [oscd], restrictions: [] });
    expect(sel.scdIds.filter((i) => i.includes(other))).toEqual([oscd]);
    expect(sel.bundleIds).toContain(`bundle:${other}:3.0.0`);
    await listsAnswer();
  });
});
