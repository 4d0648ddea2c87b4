/**
 * Real corpus data through the HTTP API: publish (with the benchmarks.md corrections),
 * deploy, and check the resolved bundle set and the SCD set per role (W1); then the
 * corpus's known defects come back as validation errors naming the bundle and reference.
 * Always on the subset in test/fixtures/scs; again on the whole public corpus when
 * SVC_SCS_CORPUS names it (skipped, with a console line, otherwise).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { corpusBundlePayload, publishCorpus, readYaml, FIXTURE_SCS, WHOLE_SCS, wholeCorpusSkipNote, type PublishedCorpus } from '../fixtures/corpus.js';
import { selectContext } from '../../src/core/graph/select.js';
import { getTagContext } from '../../src/core/tags/tag-context.js';

interface Expected {
  resolvedBundles: string[];
  /** SCDs of the whole deployment (W2: every role's). */
  scdCount: number;
  /** Least bytes of the whole deployment's SCD content. */
  minBytes: number;
}

const WHOLE: Expected = {
  resolvedBundles: [
    'bundle:medication-adherence:0.1.0',
    'bundle:meta:0.2.0',
    'bundle:software-development:0.1.0',
    'bundle:architecture:0.1.0',
    'bundle:security:0.1.0',
    'bundle:performance-reliability:0.1.0',
    'bundle:usability-accessibility:0.1.0',
    'bundle:compliance-governance:0.1.0',
    'bundle:data-provenance:0.1.0',
    'bundle:testing-validation:0.1.0',
    'bundle:deployment-operations:0.1.0',
    'bundle:safety-risk:0.1.0',
    'bundle:ethics-ai-accountability:0.1.0',
    'bundle:business-context:0.2.0',
  ],
  scdCount: 43,
  minBytes: 40_000,
};

// The fixture subset: the meta bundle, security, compliance-governance and business-context.
const SUBSET: Expected = {
  resolvedBundles: [
    'bundle:medication-adherence:0.1.0',
    'bundle:meta:0.2.0',
    'bundle:software-development:0.1.0',
    'bundle:security:0.1.0',
    'bundle:compliance-governance:0.1.0',
    'bundle:business-context:0.2.0',
  ],
  scdCount: 4 + 4 + 4 + 6,
  minBytes: 40_000,
};

describe('the fixture subset (test/fixtures/scs)', () => {
  corpusSuites('the fixture subset', FIXTURE_SCS, SUBSET);
});
describe.skipIf(wholeCorpusSkipNote('test/content/corpus.test.ts, the whole public corpus'))('the whole public corpus', () => {
  corpusSuites('the whole corpus', WHOLE_SCS!, WHOLE);
});

function corpusSuites(label: string, root: string, want: Expected): void {
  let t: TestStack;
  let pub: PublishedCorpus;
  beforeAll(async () => {
    t = await startTestStack({ services: ['api'] });
    pub = await publishCorpus(t.call, { workload: 'W1', root });
  });
  afterAll(async () => {
    await t?.close();
  });

  describe(`${label}, corrected, W1`, () => {
    it('deploys with the whole import closure resolved', async () => {
      expect(pub.resolvedBundles).toEqual(want.resolvedBundles);
      const r = await t.call('api', 'GET', `/api/deployments/${pub.deploymentId}`, { admin: true });
      expect(r.status).toBe(200);
      expect(r.body.status).toBe('active');
    });

    it('role:security gets the 4 security SCDs and the 4 meta SCDs', async () => {
      const sel = await selectContext(t.ctx, { roleId: 'role:security', overrides: [], restrictions: [] });
      expect(sel.scdIds).toEqual([...pub.metaScdIds, ...pub.concernScds['security']!]);
      expect(sel.scdIds).toHaveLength(8);
      expect(sel.bundleIds).toEqual(['bundle:meta:0.2.0', 'bundle:security:0.1.0']);
      const bytes = Object.values(sel.scdContent).reduce((n, y) => n + Buffer.byteLength(y), 0);
      expect(bytes).toBeGreaterThan(5_000);
      expect(sel.scdContent['scd:project:authn-authz']).toContain('id: scd:project:authn-authz');
    });

    it('every concern role gets its own SCDs plus the meta SCDs', async () => {
      for (const [name, ids] of Object.entries(pub.concernScds)) {
        const sel = await selectContext(t.ctx, { roleId: `role:${name}`, overrides: [], restrictions: [] });
        expect(sel.scdIds).toEqual([...pub.metaScdIds, ...ids]);
      }
      const none = await selectContext(t.ctx, { roleId: 'role:nobody', overrides: [], restrictions: [] });
      expect(none.scdIds).toEqual(pub.metaScdIds);
    });

    it('a tag on the project carries the flattened graph', async () => {
      const c = await t.call('api', 'POST', '/api/tags', { admin: true, body: { tag: 'med-adherence:prod', bundle_id: pub.project.id, bundle_version: pub.project.version } });
      expect(c.status).toBe(201);
      expect(c.body.resolved_bundle_ids).toEqual(pub.resolvedBundles);
      const tc = await getTagContext(t.ctx, 'med-adherence:prod');
      expect(tc!.scdIds).toHaveLength(want.scdCount);
      expect(tc!.scdIds).toEqual(pub.allScdIds);
      expect(tc!.contextYaml).toContain('scd:project:threat-model');
    });
  });

  describe(`${label} as it is: known defects are validation errors`, () => {
    it('the project bundle imports bundle:meta:0.1.0 (meta is 0.2.0)', async () => {
      const r = await t.call('api', 'POST', '/api/bundles', { admin: true, body: { ...corpusBundlePayload('project-bundle.yaml', root), version: '0.9.0' } });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('validation_error');
      expect(r.body.message).toContain('bundle:medication-adherence');
      expect(r.body.message).toContain('bundle:meta:0.1.0');
      expect(r.body.details.bundle_id).toBe('bundle:medication-adherence');
      const refs = r.body.details.errors.map((e: any) => e.reference);
      expect(refs).toContain('bundle:meta:0.1.0');
      expect(refs).toContain('bundle:standards:0.1.0');
    });

    it('the standards bundle: missing hipaa SCDs, an invalid import, imports and SCDs at once', async () => {
      const r = await t.call('api', 'POST', '/api/bundles', { admin: true, body: corpusBundlePayload('standards-bundle.yaml', root) });
      expect(r.status).toBe(400);
      expect(r.body.message).toContain('bundle:standards');
      const errs = r.body.details.errors as Array<{ rule: string; reference?: string; message: string }>;
      const refs = errs.map((e) => e.reference);
      expect(refs).toContain('bundle:standards:soc2-type2:2023.1');
      for (const id of ['scd:standards:hipaa-privacy-rule', 'scd:standards:hipaa-security-rule', 'scd:standards:hipaa-breach-notification']) {
        expect(errs.find((e) => e.reference === id)?.rule).toBe('scd_unresolved');
      }
      expect(errs.some((e) => e.rule === 'xor_constraint')).toBe(true);
    });

    it('the domain bundle imports bundle:business-context:0.1.0 (it is 0.2.0)', async () => {
      const body = readYaml(`${root}/med-adherence/domains/software-development.yaml`);
      const r = await t.call('api', 'POST', '/api/bundles', { admin: true, body: { ...body, version: '0.9.0' } });
      expect(r.status).toBe(400);
      expect(r.body.message).toContain('bundle:software-development');
      const e = r.body.details.errors.find((x: any) => x.reference === 'bundle:business-context:0.1.0');
      expect(e.rule).toBe('import_unresolved');
      expect(e.message).toContain('0.2.0');
    });
  });

  describe(`${label}, corrected, W2 (no applies_to anywhere)`, () => {
    let t2: TestStack;
    let pub2: PublishedCorpus;
    beforeAll(async () => {
      t2 = await startTestStack({ services: ['api'] });
      pub2 = await publishCorpus(t2.call, { workload: 'W2', root });
    });
    afterAll(async () => {
      await t2?.close();
    });

    it(`every role receives all ${want.scdCount} SCDs, in resolution order`, async () => {
      expect(pub2.allScdIds).toHaveLength(want.scdCount);
      for (const roleId of ['role:security', 'role:anyone']) {
        const sel = await selectContext(t2.ctx, { roleId, overrides: [], restrictions: [] });
        expect(sel.scdIds).toEqual(pub2.allScdIds);
        const bytes = Object.values(sel.scdContent).reduce((n, y) => n + Buffer.byteLength(y), 0);
        expect(bytes).toBeGreaterThan(want.minBytes);
      }
    });

    it('publishing again redeploys (existing versions are taken as published)', async () => {
      const again = await publishCorpus(t2.call, { workload: 'W2', root });
      expect(again.deploymentId).not.toBe(pub2.deploymentId);
      const old = await t2.call('api', 'GET', `/api/deployments/${pub2.deploymentId}`, { admin: true });
      expect(old.body).toMatchObject({ status: 'superseded', superseded_by: again.deploymentId });
    });
  });
}
