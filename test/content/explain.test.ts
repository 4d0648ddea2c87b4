/**
 * explainSelection on small content (the verb, against a migrated database): the reasons of
 * selection (role, governs, all_roles, override) and of exclusion, import paths through pinned
 * and unpinned imports, SCDs named by relationships but not imported, and agreement with the
 * selection it explains. Deployments of one database are united, so each test filters by its ids.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectContext } from '../../src/core/graph/select.js';
import { explainSelection } from '../../src/core/graph/explain.js';
import { startTestStack, type TestStack } from '../harness.js';
import { bundle, deploy, publish, scdDoc, uid } from './factories.js';

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ services: ['api'] });
});
afterAll(async () => {
  await t?.close();
});

const mine = <V>(o: Record<string, V>, u: string): Record<string, V> => Object.fromEntries(Object.entries(o).filter(([id]) => id.includes(u)));

async function explain(roleId: string, overrides: string[] = [], restrictions: string[] = []) {
  const want = { roleId, overrides, restrictions };
  const selected = await selectContext(t.ctx, want);
  const e = await explainSelection(t.ctx, selected, want);
  expect(Object.keys(e.selected)).toEqual(selected.scdIds);
  return e;
}

describe('explainSelection', () => {
  it('says why, with import paths, for each reason', async () => {
    const u = uid();
    const [s1, s2, s3] = [`scd:standards:s1-${u}`, `scd:standards:s2-${u}`, `scd:standards:s3-${u}`];
    const compliance = `role:compliance-${u}`;
    const std = bundle(`bundle:std-${u}`, 'standards', {
      applies_to: { roles: [compliance] },
      documents: [scdDoc(s1, { relationships: [{ type: 'satisfies', target: s2 }] }), scdDoc(s2), scdDoc(s3)],
    });
    await publish(t, std);
    // Stored, never imported: named by x's relationship.
    const e = `scd:project:e-${u}`;
    const ext = bundle(`bundle:ext-${u}`, 'concern', { documents: [scdDoc(e)] });
    await publish(t, ext);
    const [x, y, z, g] = ['x', 'y', 'z', 'g'].map((n) => `scd:project:${n}-${u}`);
    const nurse = `role:nurse-${u}`;
    const doctor = `role:doctor-${u}`;
    const c = bundle(`bundle:c-${u}`, 'concern', {
      applies_to: { roles: [nurse] },
      documents: [
        scdDoc(x, { relationships: [{ type: 'implements', target: s1 }, { type: 'depends-on', target: e }] }),
        scdDoc(y, { applies_to: { roles: [doctor] } }),
        scdDoc(z, { applies_to: { roles: [doctor] }, relationships: [{ type: 'constrains', target: x }] }),
      ],
    });
    await publish(t, c);
    const dom = bundle(`bundle:d-${u}`, 'domain', { imports: [`${c.id}:1.0.0`, String(std.id)] });
    await publish(t, dom);
    // An unscoped SCD, imported by the project bundle directly.
    const all = bundle(`bundle:all-${u}`, 'concern', { documents: [scdDoc(g)] });
    await publish(t, all);
    const proj = bundle(`bundle:p-${u}`, 'project', { imports: [`${dom.id}:1.0.0`, `${all.id}:1.0.0`] });
    await publish(t, proj);
    await deploy(t, [[String(proj.id), '1.0.0']]);
    const [P, D, C, S, A] = [proj, dom, c, std, all].map((b) => `${b.id}:1.0.0`);

    const nurseWhy = await explain(nurse);
    expect(mine(nurseWhy.selected, u)).toEqual({
      [g]: { reason: 'all_roles', bundle_id: all.id, bundle_version: '1.0.0', import_path: [P, A], override: false },
      [x]: { reason: 'role', role_id: nurse, bundle_id: c.id, bundle_version: '1.0.0', import_path: [P, D, C], override: false },
      [z]: { reason: 'governs', governs: [x], bundle_id: c.id, bundle_version: '1.0.0', import_path: [P, D, C], override: false },
      // Through the domain's unpinned import of the standards bundle.
      [s1]: { reason: 'governs', governs: [x], bundle_id: std.id, bundle_version: '1.0.0', import_path: [P, D, S], override: false },
      [s2]: { reason: 'governs', governs: [s1], bundle_id: std.id, bundle_version: '1.0.0', import_path: [P, D, S], override: false },
    });
    expect(mine(nurseWhy.excluded, u)).toEqual({
      [y]: { reason: 'other_role', roles: [doctor], bundle_id: c.id, bundle_version: '1.0.0', import_path: [P, D, C] },
      [s3]: { reason: 'other_role', roles: [compliance], bundle_id: std.id, bundle_version: '1.0.0', import_path: [P, D, S] },
      [e]: { reason: 'not_imported', referenced_by: [x], bundle_id: ext.id, bundle_version: '1.0.0' },
    });

    // A restriction wins over the role and over an override; the governing SCDs stay (governance is of the role's SCDs).
    const restricted = await explain(nurse, [y, s3], [x, s3]);
    expect(mine(restricted.selected, u)[y]).toMatchObject({ reason: 'override', override: true, import_path: [P, D, C] });
    expect(mine(restricted.selected, u)[z]).toMatchObject({ reason: 'governs', governs: [x] });
    expect(mine(restricted.excluded, u)[x]).toEqual({ reason: 'restriction', bundle_id: c.id, bundle_version: '1.0.0', import_path: [P, D, C], override: false });
    expect(mine(restricted.excluded, u)[s3]).toEqual({ reason: 'restriction', bundle_id: std.id, bundle_version: '1.0.0', import_path: [P, D, S], override: true });

    // An override outside the deployments is taken from the newest version holding it: no import path.
    const outside = await explain(doctor, [e]);
    expect(mine(outside.selected, u)[e]).toEqual({ reason: 'override', bundle_id: ext.id, bundle_version: '1.0.0', import_path: [], override: true });
    expect(mine(outside.selected, u)[y]).toMatchObject({ reason: 'role', role_id: doctor });
    expect(mine(outside.excluded, u)).not.toHaveProperty(e);

    // Cached with the snapshot, like the selection.
    const want = { roleId: nurse, overrides: [], restrictions: [] };
    const sel = await selectContext(t.ctx, want);
    expect(await explainSelection(t.ctx, sel, want)).toBe(await explainSelection(t.ctx, sel, want));
  });
});
