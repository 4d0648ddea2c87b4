/**
 * Context selection (decisions.md): role-applicable SCDs of the active deployments, plus
 * those that govern them transitively, overrides added, restrictions removed (restriction
 * wins), deterministic order; and the materialization's freshness across processes.
 * Deployments of one database are united, so each test filters the result to its own ids.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAppContext, type AppContext } from '../../src/shared/app-context.js';
import { createMemoryBroker } from '../../src/shared/broker.js';
import { memoryLogger } from '../../src/shared/logger.js';
import { contentCache } from '../../src/core/graph/materialization.js';
import { scdContentJsonBytes, selectContext } from '../../src/core/graph/select.js';
import { startTestStack, type TestStack } from '../harness.js';
import { bundle, concern, deploy, publish, scdDoc, uid } from './factories.js';

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ services: ['api'] });
});
afterAll(async () => {
  await t?.close();
});

const select = async (roleId: string, u: string, overrides: string[] = [], restrictions: string[] = [], ctx: AppContext = t.ctx) => {
  const r = await selectContext(ctx, { roleId, overrides, restrictions });
  return r.scdIds.filter((id) => id.includes(u));
};

describe('selection', () => {
  it('role scoping, GOVERNED_BY closure (transitive, both directions of the SCS types), REFERENCES not followed', async () => {
    const u = uid();
    const [s1, s2, s3] = [`scd:standards:s1-${u}`, `scd:standards:s2-${u}`, `scd:standards:s3-${u}`];
    const std = bundle(`bundle:std-${u}`, 'standards', {
      applies_to: { roles: [`role:compliance-${u}`] },
      documents: [scdDoc(s1, { relationships: [{ type: 'satisfies', target: s2 }] }), scdDoc(s2), scdDoc(s3)],
    });
    await publish(t, std);
    const [x, y, z, w] = ['x', 'y', 'z', 'w'].map((n) => `scd:project:${n}-${u}`);
    const nurse = `role:nurse-${u}`;
    const c = bundle(`bundle:c-${u}`, 'concern', {
      applies_to: { roles: [nurse] },
      documents: [
        scdDoc(x, { relationships: [{ type: 'implements', target: s1 }, { type: 'depends-on', target: s3 }] }),
        scdDoc(y, { applies_to: { roles: [`role:doctor-${u}`] } }),
        scdDoc(z, { applies_to: { roles: [`role:doctor-${u}`] }, relationships: [{ type: 'constrains', target: x }] }),
        scdDoc(w, { applies_to: { roles: [`role:doctor-${u}`] } }),
      ],
    });
    await publish(t, c);
    const dom = bundle(`bundle:d-${u}`, 'domain', { imports: [`${c.id}:1.0.0`, `${std.id}:1.0.0`] });
    await publish(t, dom);
    await deploy(t, [[String(dom.id), '1.0.0']]);

    // nurse: x (role), z governs x (constrains), s1 governs x (implements), s2 governs s1 (satisfies); s3 only referenced.
    expect(await select(nurse, u)).toEqual([x, z, s1, s2]);
    expect(await select(`role:doctor-${u}`, u)).toEqual([y, z, w]);
    expect(await select(`role:compliance-${u}`, u)).toEqual([s1, s2, s3]);
    expect(await select(`role:other-${u}`, u)).toEqual([]);

    // Overrides add (deployed, in universe order), restrictions remove and win.
    expect(await select(nurse, u, [w, y])).toEqual([x, y, z, w, s1, s2]);
    expect(await select(nurse, u, [w], [s2, w])).toEqual([x, z, s1]);
    expect(await select(nurse, u, [], [x])).toEqual([z, s1, s2]);
    const full = await selectContext(t.ctx, { roleId: nurse, overrides: [], restrictions: [] });
    expect(full.bundleIds.filter((b) => b.includes(u))).toEqual([`${c.id}:1.0.0`, `${std.id}:1.0.0`]);
    expect(JSON.parse(scdContentJsonBytes(full).toString('utf8'))).toEqual(full.scdContent);
    expect(full.scdContent[x]).toContain(`id: ${x}`);
    expect(await selectContext(t.ctx, { roleId: nurse, overrides: [], restrictions: [] })).toBe(full); // cached
  });

  it('overrides outside the deployments come from the newest active version holding them; unknown ones are ignored', async () => {
    const u = uid();
    const dep = concern(`dep-${u}`, 1, { applies_to: { roles: [`role:r-${u}`] } });
    await publish(t, dep.body);
    await deploy(t, [[dep.id, '1.0.0']]);
    const name = `undeployed-${u}`;
    const o1 = concern(name, 1);
    await publish(t, o1.body);
    const newer = concern(name, 1, { version: '1.1.0', scds: o1.scds, documents: [scdDoc(o1.scds[0]!, { title: `newer ${u}` })] });
    await publish(t, newer.body);
    const unknown = `scd:project:nowhere-${u}`;
    const r = await selectContext(t.ctx, { roleId: `role:r-${u}`, overrides: [unknown, o1.scds[0]!], restrictions: [] });
    expect(r.scdIds.filter((i) => i.includes(u))).toEqual([dep.scds[0], o1.scds[0]]);
    expect(r.scdContent[o1.scds[0]!]).toContain(`newer ${u}`);
    expect(r.bundleIds).toContain(`bundle:${name}:1.1.0`);
    const restricted = await select(`role:r-${u}`, u, [o1.scds[0]!], [o1.scds[0]!]);
    expect(restricted).toEqual([dep.scds[0]]);
  });

  it('an SCD held unscoped by any deployed bundle applies to every role; the first occurrence gives the content', async () => {
    const u = uid();
    const shared = `scd:project:shared-${u}`;
    const a = bundle(`bundle:a-${u}`, 'concern', { applies_to: { roles: [`role:a-${u}`] }, documents: [scdDoc(shared, { title: `from a ${u}` })] });
    await publish(t, a);
    const b = bundle(`bundle:b-${u}`, 'concern', { scds: [shared], documents: [] });
    delete b.documents;
    await publish(t, b);
    const dom = bundle(`bundle:d-${u}`, 'domain', { imports: [`${a.id}:1.0.0`] });
    await publish(t, dom);
    await deploy(t, [[String(dom.id), '1.0.0']]);
    expect(await select(`role:z-${u}`, u)).toEqual([]);
    await deploy(t, [[String(b.id), '1.0.0']]);
    expect(await select(`role:z-${u}`, u)).toEqual([shared]);
    const r = await selectContext(t.ctx, { roleId: `role:z-${u}`, overrides: [], restrictions: [] });
    expect(r.scdContent[shared]).toContain(`from a ${u}`);
  });

  it('supersession replaces the old version content', async () => {
    const u = uid();
    const v1 = concern(`sup-${u}`, 1, { applies_to: { roles: [`role:s-${u}`] } });
    const v2 = concern(`sup-${u}`, 1, { version: '2.0.0', applies_to: { roles: [`role:s-${u}`] }, scds: [`scd:project:sup-${u}-v2`] });
    await publish(t, v1.body);
    await publish(t, v2.body);
    await deploy(t, [[v1.id, '1.0.0']]);
    expect(await select(`role:s-${u}`, u)).toEqual(v1.scds);
    await deploy(t, [[v1.id, '2.0.0']]);
    expect(await select(`role:s-${u}`, u)).toEqual(v2.scds);
  });
});

describe('freshness of the materialization across processes', () => {
  it('a second process without a broker link sees a deployment within the check period; with one, at once', async () => {
    const isolated = await createAppContext(t.config, { logger: memoryLogger(), db: t.testDb.db, broker: createMemoryBroker(), skipMigrations: true });
    const linked = await createAppContext(t.config, { logger: memoryLogger(), db: t.testDb.db, broker: t.broker, skipMigrations: true });
    try {
      const u = uid();
      const role = `role:fresh-${u}`;
      expect(await select(role, u, [], [], isolated)).toEqual([]);
      expect(await select(role, u, [], [], linked)).toEqual([]);
      const c = concern(`fresh-${u}`, 2, { applies_to: { roles: [role] } });
      await publish(t, c.body);
      await deploy(t, [[c.id, '1.0.0']]);
      // The writing process sees it immediately.
      expect(await select(role, u)).toEqual(c.scds);
      const t0 = Date.now();
      let linkedSeen = -1;
      let isolatedSeen = -1;
      while ((linkedSeen < 0 || isolatedSeen < 0) && Date.now() - t0 < 5000) {
        if (linkedSeen < 0 && (await select(role, u, [], [], linked)).length === 2) linkedSeen = Date.now() - t0;
        if (isolatedSeen < 0 && (await select(role, u, [], [], isolated)).length === 2) isolatedSeen = Date.now() - t0;
        await new Promise((r) => setTimeout(r, 5));
      }
      expect(linkedSeen).toBeGreaterThanOrEqual(0);
      expect(linkedSeen).toBeLessThan(500);
      expect(isolatedSeen).toBeGreaterThanOrEqual(0);
      expect(isolatedSeen).toBeLessThan(1500);
      expect(contentCache(isolated).builds).toBeGreaterThanOrEqual(2);
    } finally {
      await isolated.close();
      await linked.close();
    }
  });
});
