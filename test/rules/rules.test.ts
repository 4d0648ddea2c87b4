/** The rules engine through HTTP (port 8001): schemas, rule sets, rules, operational edges. */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ services: ['rules'] });
});
afterAll(async () => {
  await t?.close();
});

const uid = () => randomUUID().slice(0, 8);
const post = (p: string, body: unknown) => t.call('rules', 'POST', p, { admin: true, body });
const get = (p: string) => t.call('rules', 'GET', p, { admin: true });

const formularySchema = {
  type: 'object',
  required: ['drug', 'plan', 'tier'],
  additionalProperties: false,
  properties: {
    drug: { type: 'string', minLength: 1 },
    plan: { type: 'string', minLength: 1 },
    tier: { type: 'integer', minimum: 1, maximum: 5 },
    'x-note': { type: 'string' },
  },
  'x-owner': 'pharmacy',
};

describe('rule schemas', () => {
  it('stores a compiling schema and reads it back; a second one with the id is 409', async () => {
    const id = `formulary-${uid()}`;
    const r = await post('/api/rules/schemas', { id, schema: formularySchema, edge: { type: 'ON_FORMULARY', from_field: 'drug', to_field: 'plan' } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ id, schema: formularySchema, edge: { type: 'ON_FORMULARY', from_field: 'drug', to_field: 'plan' } });
    expect((await get(`/api/rules/schemas/${id}`)).body).toEqual(r.body);
    const again = await post('/api/rules/schemas', { id, schema: { type: 'object' } });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('conflict');
  });

  it.each([
    ['an unknown keyword (typo)', { type: 'object', requried: ['a'] }],
    ['an unknown format', { type: 'string', format: 'not-a-format' }],
    ['an external $ref', { $ref: 'http://example.com/schema.json' }],
    ['an invalid type', { type: 'strang' }],
    ['another draft', { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' }],
    ['an async schema', { $async: true, type: 'object' }],
  ])('refuses %s with the compiler message (400)', async (_name, schema) => {
    const id = `bad-${uid()}`;
    const r = await post('/api/rules/schemas', { id, schema });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('validation_error');
    expect(r.body.details.schema_errors[0]).toEqual(expect.any(String));
    expect((await get(`/api/rules/schemas/${id}`)).status).toBe(404);
  });

  it('unknown schema is 404', async () => {
    expect((await get(`/api/rules/schemas/nope-${uid()}`)).status).toBe(404);
  });
});

describe('rule sets and rules', () => {
  it('validates rule data against the schema and writes the operational edge', async () => {
    const schemaId = `formulary-${uid()}`;
    await post('/api/rules/schemas', { id: schemaId, schema: formularySchema, edge: { type: 'ON_FORMULARY', from_field: 'drug', to_field: 'plan', from_label: 'drug', to_label: 'plan' } });
    const setId = `formulary-set-${uid()}`;
    const s = await post('/api/rules/rule-sets', { id: setId, version: '1.0.0', schema_id: schemaId });
    expect(s.status).toBe(201);
    expect(s.body).toMatchObject({ id: setId, version: '1.0.0', schema_id: schemaId });
    expect((await post('/api/rules/rule-sets', { id: setId, version: '1.0.0', schema_id: schemaId })).status).toBe(409);

    const ok = await post(`/api/rules/rule-sets/${setId}/rules`, { rule_id: 'r1', rule_data: { drug: 'metformin', plan: 'gold', tier: 1 } });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ rule_id: 'r1', rule_set_id: setId, rule_set_version: '1.0.0', rule_data: { drug: 'metformin', plan: 'gold', tier: 1 } });
    const edges = await t.ctx.db.query("SELECT edge_type, from_id, to_id, source, props FROM graph_edges WHERE source = $1", [`rule:${setId}:1.0.0:r1`]);
    expect(edges).toEqual([{ edge_type: 'ON_FORMULARY', from_id: 'drug:metformin', to_id: 'plan:gold', source: `rule:${setId}:1.0.0:r1`, props: { rule_set_id: setId, rule_set_version: '1.0.0', rule_id: 'r1' } }]);
    const nodes = await t.ctx.db.query("SELECT node_id, label FROM graph_nodes WHERE node_id IN ('drug:metformin', 'plan:gold') ORDER BY node_id");
    expect(nodes).toEqual([{ node_id: 'drug:metformin', label: 'Entity' }, { node_id: 'plan:gold', label: 'Entity' }]);

    const bad = await post(`/api/rules/rule-sets/${setId}/rules`, { rule_id: 'r2', rule_data: { drug: 'x', tier: 9, extra: true } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('validation_error');
    const paths = bad.body.details.violations.map((v: any) => v.path).sort();
    expect(paths).toEqual(['/extra', '/plan', '/tier']);
    const dup = await post(`/api/rules/rule-sets/${setId}/rules`, { rule_id: 'r1', rule_data: { drug: 'a', plan: 'b', tier: 2 } });
    expect(dup.status).toBe(409);

    const list = await get(`/api/rules/rule-sets/${setId}/rules`);
    expect(list.body.rules.map((r: any) => r.rule_id)).toEqual(['r1']);
  });

  it('a rule missing a mapped field is stored without an edge; the three edge types', async () => {
    for (const type of ['IN_NETWORK', 'REQUIRES_PRIOR_AUTH']) {
      const schemaId = `s-${uid()}`;
      await post('/api/rules/schemas', { id: schemaId, schema: { type: 'object' }, edge: { type, from_field: 'a', to_field: 'b' } });
      const setId = `set-${uid()}`;
      await post('/api/rules/rule-sets', { id: setId, version: '1.0.0', schema_id: schemaId });
      expect((await post(`/api/rules/rule-sets/${setId}/rules`, { rule_id: 'with', rule_data: { a: 'x', b: 7 } })).status).toBe(201);
      expect((await post(`/api/rules/rule-sets/${setId}/rules`, { rule_id: 'without', rule_data: { a: 'x' } })).status).toBe(201);
      expect((await post(`/api/rules/rule-sets/${setId}/rules`, { rule_id: 'object', rule_data: { a: 'x', b: { c: 1 } } })).status).toBe(201);
      const edges = await t.ctx.db.query('SELECT edge_type, from_id, to_id, source FROM graph_edges WHERE source LIKE $1 ORDER BY source', [`rule:${setId}:%`]);
      expect(edges).toEqual([{ edge_type: type, from_id: 'a:x', to_id: 'b:7', source: `rule:${setId}:1.0.0:with` }]);
    }
  });

  it('versions: default is the highest in semver order; unknown set or version is 404; list is ordered', async () => {
    const schemaId = `s-${uid()}`;
    await post('/api/rules/schemas', { id: schemaId, schema: { type: 'object', required: ['v'] } });
    const setId = `set-${uid()}`;
    for (const v of ['1.2.0', '1.10.0', '1.9.3']) expect((await post('/api/rules/rule-sets', { id: setId, version: v, schema_id: schemaId })).status).toBe(201);
    const r = await post(`/api/rules/rule-sets/${setId}/rules`, { rule_id: 'a', rule_data: { v: 1 } });
    expect(r.body.rule_set_version).toBe('1.10.0');
    const pinned = await post(`/api/rules/rule-sets/${setId}/rules?version=1.2.0`, { rule_id: 'a', rule_data: { v: 1 } });
    expect(pinned.body.rule_set_version).toBe('1.2.0');
    expect((await post(`/api/rules/rule-sets/${setId}/rules?version=3.0.0`, { rule_id: 'a', rule_data: { v: 1 } })).status).toBe(404);
    expect((await post(`/api/rules/rule-sets/nope-${uid()}/rules`, { rule_id: 'a', rule_data: { v: 1 } })).status).toBe(404);
    expect((await get(`/api/rules/rule-sets/nope-${uid()}/rules`)).status).toBe(404);
    expect((await get(`/api/rules/rule-sets/${setId}/rules?version=1.9.3`)).body).toEqual({ rules: [] });
    const all = (await get('/api/rules/rule-sets')).body.rule_sets.filter((s: any) => s.id === setId);
    expect(all.map((s: any) => [s.version, s.rule_count])).toEqual([['1.2.0', 1], ['1.9.3', 0], ['1.10.0', 1]]);
  });

  it('NUL characters are refused with 400, not stored', async () => {
    const r = await post('/api/rules/schemas', { id: `n-${uid()}`, schema: { type: 'object', description: 'a\u0000b' } });
    expect(r.status).toBe(400);
    expect(r.body.details.errors[0]).toMatchObject({ path: '/body/schema/description', rule: 'nul_character' });
  });

  it('a rule set on an unknown schema is 404', async () => {
    const r = await post('/api/rules/rule-sets', { id: `set-${uid()}`, version: '1.0.0', schema_id: `nope-${uid()}` });
    expect(r.status).toBe(404);
  });
});
