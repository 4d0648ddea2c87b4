/**
 * The shared admin-auth suite over every route of the agent, key and MCP server areas:
 * missing or wrong X-Admin-Key is 401 'Invalid admin API key', an unset ADMIN_API_KEY is 503
 * 'Admin API not configured', before any handler logic (nothing is created).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';

const A = 'agent:auth-probe';
const ROUTES: Array<[string, string, unknown?]> = [
  ['POST', '/api/agents', { agent_id: A, name: 'n', role_id: 'role:r', allowed_intents: [] }],
  ['GET', '/api/agents'],
  ['GET', `/api/agents/${A}`],
  ['PUT', `/api/agents/${A}`, { name: 'x' }],
  ['DELETE', `/api/agents/${A}`],
  ['GET', `/api/agents/${A}/api-keys`],
  ['POST', `/api/agents/${A}/api-keys`, {}],
  ['DELETE', `/api/agents/${A}/api-keys/k1?revoked_by=x`],
  ['POST', `/api/agents/${A}/policy`, { overrides: [] }],
  ['POST', '/api/mcp-servers', { name: 'x' }],
  ['GET', '/api/mcp-servers'],
  ['GET', `/api/mcp-servers/mcp_${'0'.repeat(32)}`],
  ['PUT', `/api/mcp-servers/mcp_${'0'.repeat(32)}`, { name: 'x' }],
  ['DELETE', `/api/mcp-servers/mcp_${'0'.repeat(32)}`],
];

let t: TestStack;
let unset: TestStack;
beforeAll(async () => {
  t = await startTestStack({ services: ['api'] });
  unset = await startTestStack({ services: ['api'], env: { ADMIN_API_KEY: '' } });
});
afterAll(async () => {
  await t?.close();
  await unset?.close();
});

describe.each(ROUTES)('%s %s', (method, path, body) => {
  it('missing key: 401', async () => {
    const r = await t.call('api', method, path, { body });
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ error: 'auth_failed', message: 'Invalid admin API key' });
  });
  it('wrong key (also an agent key in its place): 401', async () => {
    const variants: Record<string, string>[] = [{ 'x-admin-key': 'admin_wrong' }, { 'x-admin-key': '' }, { 'x-api-key': 'sk_' + 'a'.repeat(40) }];
    for (const headers of variants) {
      const r = await t.call('api', method, path, { body, headers });
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ error: 'auth_failed', message: 'Invalid admin API key' });
    }
  });
  it('unset ADMIN_API_KEY: 503, whatever the header', async () => {
    const variants: Record<string, string>[] = [{}, { 'x-admin-key': '' }, { 'x-admin-key': 'anything' }];
    for (const headers of variants) {
      const r = await unset.call('api', method, path, { body, headers });
      expect(r.status).toBe(503);
      expect(r.body).toEqual({ error: 'unavailable', message: 'Admin API not configured' });
    }
  });
});

it('nothing was created by refused requests', async () => {
  for (const s of [t, unset]) {
    expect(await s.testDb.owner.query(`SELECT 1 FROM agents WHERE agent_id = $1`, [A])).toHaveLength(0);
    expect(await s.testDb.owner.query(`SELECT 1 FROM mcp_servers`)).toHaveLength(0);
  }
});
