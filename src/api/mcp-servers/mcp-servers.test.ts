/** MCP server registry through HTTP (spec 2.5, 4.3). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../../../test/harness.js';

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ services: ['api'] });
});
afterAll(async () => {
  await t?.close();
});

const create = async (body: Record<string, unknown>) => {
  const r = await t.call('api', 'POST', '/api/mcp-servers', { admin: true, body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};

describe('MCP servers', () => {
  it('create: 200, generated mcp_<32 hex> id, status active, owner unverified, created_by default admin', async () => {
    const s = await create({ name: 'filesystem', description: 'fs tools', owner_name: 'Ada', owner_verified: false });
    expect(s.server_id).toMatch(/^mcp_[0-9a-f]{32}$/);
    expect(s).toMatchObject({ name: 'filesystem', description: 'fs tools', status: 'active', owner_name: 'Ada', owner_verified: false, created_by: 'admin' });
    expect(s.created_at).toBe(s.updated_at);
    const other = await create({ name: 'filesystem', created_by: 'ops' });
    expect(other.server_id).not.toBe(s.server_id);
    expect(other).toMatchObject({ description: null, owner_name: null, created_by: 'ops' });
    expect((await t.call('api', 'GET', `/api/mcp-servers/${s.server_id}`, { admin: true })).body).toEqual(s);
  });

  it('create errors: owner_verified true, missing name, unknown field, server_id given are 400', async () => {
    for (const body of [{ name: 'x', owner_verified: true }, {}, { name: '' }, { name: 'x', colour: 1 }, { name: 'x', server_id: 'mcp_1' }]) {
      const r = await t.call('api', 'POST', '/api/mcp-servers', { admin: true, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe('validation_error');
    }
  });

  it('update: partial, any status from any status, owner_verified stays false', async () => {
    const s = await create({ name: 'db', owner_name: 'Ada' });
    await new Promise((r) => setTimeout(r, 5));
    for (const status of ['deprecated', 'inactive', 'active', 'deprecated']) {
      const r = await t.call('api', 'PUT', `/api/mcp-servers/${s.server_id}`, { admin: true, body: { status } });
      expect(r.status).toBe(200);
      expect(r.body.status).toBe(status);
    }
    const r = await t.call('api', 'PUT', `/api/mcp-servers/${s.server_id}`, { admin: true, body: { owner_name: 'Grace', description: 'x' } });
    expect(r.body).toMatchObject({ name: 'db', owner_name: 'Grace', owner_verified: false, description: 'x', status: 'deprecated' });
    expect(r.body.updated_at > s.updated_at).toBe(true);
    const v = await t.call('api', 'PUT', `/api/mcp-servers/${s.server_id}`, { admin: true, body: { owner_verified: true } });
    expect(v.status).toBe(400);
    expect(v.body.details.errors[0].rule).toBe('owner_unverifiable');
    expect((await t.call('api', 'GET', `/api/mcp-servers/${s.server_id}`, { admin: true })).body.owner_verified).toBe(false);
    for (const body of [{}, { status: 'retired' }, { server_id: 'mcp_x' }, { name: null }]) {
      expect((await t.call('api', 'PUT', `/api/mcp-servers/${s.server_id}`, { admin: true, body })).status, JSON.stringify(body)).toBe(400);
    }
  });

  it('delete: 200 with the record as it was; then 404 everywhere', async () => {
    const s = await create({ name: 'gone' });
    const d = await t.call('api', 'DELETE', `/api/mcp-servers/${s.server_id}`, { admin: true });
    expect(d.status).toBe(200);
    expect(d.body).toEqual(s);
    for (const [m, body] of [['GET'], ['DELETE'], ['PUT', { name: 'x' }]] as const) {
      const r = await t.call('api', m, `/api/mcp-servers/${s.server_id}`, { admin: true, body });
      expect(r.status).toBe(404);
      expect(r.body.error).toBe('not_found');
    }
  });

  it('malformed server id is 400', async () => {
    for (const id of ['mcp_XYZ', 'server-1', `mcp_${'0'.repeat(31)}`]) {
      expect((await t.call('api', 'GET', `/api/mcp-servers/${id}`, { admin: true })).status).toBe(400);
    }
  });

  it('list: status filter, paging default 50 max 100, total independent of paging, created order', async () => {
    const marker = `page-${Date.now()}`;
    const mine: string[] = [];
    for (let i = 0; i < 55; i++) mine.push((await create({ name: marker, description: String(i) })).server_id);
    await t.call('api', 'PUT', `/api/mcp-servers/${mine[0]}`, { admin: true, body: { status: 'inactive' } });
    const all = await t.call('api', 'GET', '/api/mcp-servers', { admin: true });
    expect(all.status).toBe(200);
    expect(all.body.limit).toBe(50);
    expect(all.body.servers).toHaveLength(50);
    expect(all.body.total).toBeGreaterThanOrEqual(55);
    const big = await t.call('api', 'GET', '/api/mcp-servers?limit=100', { admin: true });
    const ids = big.body.servers.map((s: any) => s.server_id).filter((id: string) => mine.includes(id));
    expect(ids).toEqual(mine.filter((id) => ids.includes(id))); // created order
    expect((await t.call('api', 'GET', '/api/mcp-servers?limit=101', { admin: true })).status).toBe(400);
    expect((await t.call('api', 'GET', '/api/mcp-servers?limit=0', { admin: true })).status).toBe(400);
    expect((await t.call('api', 'GET', '/api/mcp-servers?status=gone', { admin: true })).status).toBe(400);
    const inactive = await t.call('api', 'GET', '/api/mcp-servers?status=inactive', { admin: true });
    expect(inactive.body.servers.map((s: any) => s.server_id)).toContain(mine[0]);
    expect(inactive.body.servers.every((s: any) => s.status === 'inactive')).toBe(true);
    const page = await t.call('api', 'GET', `/api/mcp-servers?limit=2&offset=1`, { admin: true });
    expect(page.body).toMatchObject({ limit: 2, offset: 1, total: all.body.total });
    expect(page.body.servers.map((s: any) => s.server_id)).toEqual(big.body.servers.slice(1, 3).map((s: any) => s.server_id));
  });
});
