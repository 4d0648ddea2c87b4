/**
 * Explained answers on the med-adherence example (W1: each concern scoped to its role), REST
 * and gRPC against the real services (PGlite or PostgreSQL): every selected SCD says why,
 * and SCDs left out are explained by each reason (restriction, other_role, not_imported).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../../../test/harness.js';
import { issueKey, makeAgent } from '../../../test/identity/fixtures.js';
import { grpcClient, session } from '../../../test/context/fixtures.js';
import { corpusBundlePayload, publishCorpus, type PublishedCorpus } from '../../../test/fixtures/corpus.js';

let t: TestStack;
let corpus: PublishedCorpus;
let key: any;
let security: string[];
let other: string;
let projectRef: string;
/** An SCD only a newer, undeployed version of bundle:security holds. */
const newerOnly = `scd:project:explain-${randomUUID().slice(0, 8)}`;
/** An override stored nowhere. */
const nowhere = `scd:project:nowhere-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  t = await startTestStack({ services: ['api', 'context-grpc'] });
  corpus = await publishCorpus((s, m, p, o) => t.call(s, m, p, o), { workload: 'W1' });
  projectRef = `${corpus.project.id}:${corpus.project.version}`;
  security = corpus.concernScds.security!;
  other = corpus.concernScds[Object.keys(corpus.concernScds).find((n) => n !== 'security')!]![0]!;
  // A newer version of a deployed bundle, published but not deployed, with one SCD of its own.
  const payload = corpusBundlePayload('concerns/security.yaml');
  const extra = { ...payload.documents.find((d: any) => d.id === security[3]), id: newerOnly, title: 'Only in the newer version' };
  const r = await t.call('api', 'POST', '/api/bundles', { admin: true, body: { ...payload, version: '9.9.9', scds: [...payload.scds, newerOnly], documents: [...payload.documents, extra] } });
  expect(r.status).toBe(201);
  const agent = await makeAgent(t, { role_id: 'role:security', allowed_intents: ['code_review'], overrides: [other, security[1], nowhere], restrictions: [security[0]] });
  key = await issueKey(t, agent.agent_id);
});
afterAll(async () => {
  await t?.close();
});

const ctxCall = (body: unknown) => t.call('api', 'POST', '/api/context', { body, apiKey: key.api_key });

describe('POST /api/context with explain', () => {
  it('is off by default: no explanation, the same selection', async () => {
    const plain = await ctxCall({ task_type: 'code_review' });
    const off = await ctxCall({ task_type: 'code_review', explain: false });
    expect(plain.status).toBe(200);
    expect(plain.body).not.toHaveProperty('explanation');
    expect(off.body).not.toHaveProperty('explanation');
    expect(off.body.scd_ids).toEqual(plain.body.scd_ids);
  });

  it('explains every selected SCD and each kind of exclusion', async () => {
    const r = await ctxCall({ task_type: 'code_review', explain: true });
    expect(r.status).toBe(200);
    const { selected, excluded } = r.body.explanation;
    // Keyed by exactly the selected ids, and the selection is the same as without explain.
    expect(Object.keys(selected).sort()).toEqual([...r.body.scd_ids].sort());
    expect(r.body.scd_ids).toEqual((await ctxCall({ task_type: 'code_review' })).body.scd_ids);

    // The role's own SCDs: through the project bundle, the domain, then bundle:security.
    const s2 = selected[security[2]!];
    expect(s2).toMatchObject({ reason: 'role', role_id: 'role:security', bundle_id: 'bundle:security', override: false });
    expect(s2.import_path[0]).toBe(projectRef);
    expect(s2.import_path.at(-1)).toBe(corpus.concernBundles.security);
    expect(s2.import_path).toHaveLength(3);
    for (const ref of s2.import_path) expect(corpus.resolvedBundles).toContain(ref);
    // Both overridden and of the role: role, with override set.
    expect(selected[security[1]!]).toMatchObject({ reason: 'role', override: true });
    // The meta SCDs have no applies_to: every role.
    for (const id of corpus.metaScdIds) expect(selected[id]).toMatchObject({ reason: 'all_roles', bundle_id: 'bundle:meta', import_path: [projectRef, `bundle:meta:0.2.0`] });
    // Another role's SCD brought by an override.
    expect(selected[other]).toMatchObject({ reason: 'override', override: true });
    expect(selected[other].import_path[0]).toBe(projectRef);

    // Left out: the restriction (it wins over being the role's), another role's SCDs, and the
    // SCDs outside the import graph (a newer version's, an override stored nowhere).
    expect(excluded[security[0]!]).toMatchObject({ reason: 'restriction', bundle_id: 'bundle:security', override: false });
    const otherRole = Object.entries(excluded).filter(([, x]: [string, any]) => x.reason === 'other_role');
    expect(otherRole.length).toBeGreaterThan(0);
    const deployedNotSelected = Object.values(corpus.concernScds).flat().filter((id) => !r.body.scd_ids.includes(id) && id !== security[0]);
    expect(otherRole.map(([id]) => id).sort()).toEqual(deployedNotSelected.sort());
    for (const [, x] of otherRole as Array<[string, any]>) {
      expect(x.roles.length).toBeGreaterThan(0);
      expect(x.roles).not.toContain('role:security');
    }
    expect(excluded[newerOnly]).toEqual({ reason: 'not_imported', referenced_by: [], bundle_id: 'bundle:security', bundle_version: '9.9.9' });
    expect(excluded[nowhere]).toEqual({ reason: 'not_imported', override: true, referenced_by: [] });
    // Nothing is both selected and excluded.
    for (const id of Object.keys(excluded)) expect(selected).not.toHaveProperty(id);
  });

  it('is not stored in the audit record (request_params stay the params)', async () => {
    const r = await ctxCall({ task_type: 'code_review', explain: true, params: { pr: '7' } });
    const [rec] = await t.testDb.db.query<Record<string, any>>('SELECT request_params, context_scd_ids FROM agent_context_requests WHERE request_id = $1', [r.body.request_id]);
    expect(rec!.request_params).toEqual({ pr: '7' });
    expect(rec!.context_scd_ids).toEqual(r.body.scd_ids);
  });

  it('refuses a non-boolean explain with 400 VALIDATION_ERROR', async () => {
    const r = await ctxCall({ task_type: 'code_review', explain: 'yes' });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, error_code: 'VALIDATION_ERROR' });
  });
});

/** The REST explanation with proto3's defaults filled in, as a proto-loader client sees it. */
function withDefaults(e: { selected: Record<string, any>; excluded: Record<string, any> }) {
  const sel = Object.fromEntries(Object.entries(e.selected).map(([id, x]) => [id, { role_id: '', governs: [], ...x }]));
  const exc = Object.fromEntries(
    Object.entries(e.excluded).map(([id, x]) => [id, { roles: [], referenced_by: [], override: false, bundle_id: '', bundle_version: '', import_path: [], ...x }]),
  );
  return { selected: sel, excluded: exc };
}

describe('gRPC RequestContext with explain', () => {
  it('carries the same explanation as REST (grpc-js, the direct binary path)', async () => {
    const rest = await ctxCall({ task_type: 'code_review', explain: true });
    const res = await new Promise<any>((resolve, reject) => {
      const client = grpcClient(t);
      client.RequestContext({ api_key: key.api_key, task_type: 'code_review', explain: true }, (err: Error | null, v: any) => {
        client.close();
        if (err) reject(err);
        else resolve(v);
      });
    });
    expect(res.success).toBe(true);
    expect(res.scd_ids).toEqual(rest.body.scd_ids);
    expect(res.explanation).toEqual(withDefaults(rest.body.explanation));
    expect(res.explanation.excluded[security[0]!].reason).toBe('restriction');
  });

  it('carries it through the Connect router too (Connect JSON), and not when off', async () => {
    const { createClient } = await import('@connectrpc/connect');
    const node = await import('@connectrpc/connect-node');
    const { ContextService } = await import('../../../gen/proto/context_pb.js');
    const client = createClient(ContextService, node.createConnectTransport({ baseUrl: t.url('context-grpc'), httpVersion: '2', useBinaryFormat: false, sessionManager: session(t) }));
    const res = await client.requestContext({ apiKey: key.api_key, taskType: 'code_review', explain: true });
    const rest = await ctxCall({ task_type: 'code_review', explain: true });
    expect(Object.keys(res.explanation!.selected).sort()).toEqual([...rest.body.scd_ids].sort());
    expect(res.explanation!.selected[other]).toMatchObject({ reason: 'override', override: true });
    expect(res.explanation!.excluded[newerOnly]).toMatchObject({ reason: 'not_imported', bundleVersion: '9.9.9' });
    const off = await client.requestContext({ apiKey: key.api_key, taskType: 'code_review' });
    expect(off.explanation).toBeUndefined();
  });
});
