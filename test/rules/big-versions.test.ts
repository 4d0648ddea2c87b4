/**
 * Rule set versions past 2^31-1 (schemathesis found one turning every list into a 500: the
 * ordering cast each part to int4). Components of up to 15 digits are stored and ordered
 * numerically; longer ones, and pre-releases, are refused by the contract (400) and never
 * reach the database. After each attempt the service still answers its lists with 200.
 */
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

describe('rule set versions past 2^31-1', () => {
  it('are stored and ordered numerically up to 15 digits per part; the default is the highest', async () => {
    const schemaId = `s-${uid()}`;
    expect((await post('/api/rules/schemas', { id: schemaId, schema: { type: 'object' } })).status).toBe(201);
    const setId = `big-${uid()}`;
    const versions = ['2147483648.0.0', '2147483647.0.0', '999999999999999.0.0', '10.0.0', '1.2147483648.0', '1.0.4294967296', '1.0.9'];
    for (const version of versions) {
      const r = await post('/api/rules/rule-sets', { id: setId, version, schema_id: schemaId });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      expect(r.body.version).toBe(version);
    }
    const list = await get('/api/rules/rule-sets');
    expect(list.status).toBe(200);
    expect(list.body.rule_sets.filter((s: any) => s.id === setId).map((s: any) => s.version)).toEqual([
      '1.0.9', '1.0.4294967296', '1.2147483648.0', '10.0.0', '2147483647.0.0', '2147483648.0.0', '999999999999999.0.0',
    ]);
    const rule = await post(`/api/rules/rule-sets/${setId}/rules`, { rule_id: 'r', rule_data: {} });
    expect(rule.status).toBe(201);
    expect(rule.body.rule_set_version).toBe('999999999999999.0.0');
    const pinned = await get(`/api/rules/rule-sets/${setId}/rules?version=2147483648.0.0`);
    expect(pinned.status).toBe(200);
    expect((await get(`/api/rules/rule-sets/${setId}/rules`)).body.rules.map((r: any) => r.rule_id)).toEqual(['r']);
  });

  it.each(['99999999999999999999.0.0', '1.1000000000000000.0', '1.0.1000000000000000', '1.0.0-rc.1', '01.0.0'])(
    'refuses %s with 400 validation_error; nothing is stored and lists stay 200',
    async (version) => {
      const schemaId = `s-${uid()}`;
      expect((await post('/api/rules/schemas', { id: schemaId, schema: { type: 'object' } })).status).toBe(201);
      const setId = `big-${uid()}`;
      const r = await post('/api/rules/rule-sets', { id: setId, version, schema_id: schemaId });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ error: 'validation_error', message: expect.any(String), details: { errors: [expect.objectContaining({ path: '/body/version' })] } });
      const q = await get(`/api/rules/rule-sets/${setId}/rules?version=${encodeURIComponent(version)}`);
      expect(q.status).toBe(400);
      const list = await get('/api/rules/rule-sets');
      expect(list.status).toBe(200);
      expect(list.body.rule_sets.some((s: any) => s.id === setId)).toBe(false);
    },
  );
});
