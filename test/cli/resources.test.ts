import { mkdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bundle, deploy, publish, uid } from '../content/factories.js';
import { ADMIN_KEY, startTestStack, type TestStack } from '../harness.js';
import { adminApi, closedPort, parsed, sandbox } from './helpers.js';

// Every check spawns the real bin (tsx start-up, ~1-3 s on a loaded machine).
vi.setConfig({ testTimeout: 240_000 });

/** `svc mcp ...`, `svc tags ...`, `svc deployments ...` against the real API on port 0. */
describe('svc mcp, svc tags, svc deployments', () => {
  const s = sandbox();
  let t: TestStack;
  let env: Record<string, string>;
  const svc = (...args: string[]) => s.run(args, { env });
  const api = adminApi(() => t);

  beforeAll(async () => {
    t = await startTestStack({ services: ['api'] });
    env = { SVC_API_ENDPOINT: t.url('api'), SVC_API_KEY: ADMIN_KEY };
    mkdirSync(s.work, { recursive: true });
  });
  afterAll(async () => {
    await t?.close();
    s.cleanup();
  });

  it('creates, lists, reads, updates and deletes MCP servers', async () => {
    const made = await svc('mcp', 'create', '--name', 'github-tools', '--owner', 'Alice Example', '--description', 'GitHub connector');
    expect(made.code, made.stderr).toBe(0);
    const m = /^mcp server (mcp_[0-9a-f]{32}) created \(github-tools, active\)$/.exec(made.stdout.trim());
    expect(m, made.stdout).not.toBeNull();
    const id = m![1]!;
    const second = parsed(await svc('mcp', 'create', '--name', '2.10', '-o', 'json'));
    expect(second).toEqual(await api('GET', `/api/mcp-servers/${second.server_id}`));
    expect(second.name).toBe('2.10');

    const [noName, list, listJson, page, get, getJson, missing, badStatus, nothing] = await Promise.all([
      svc('mcp', 'create'),
      svc('mcp', 'list'),
      svc('mcp', 'list', '-o', 'json'),
      svc('mcp', 'list', '--limit', '1', '--offset', '1', '-o', 'json'),
      svc('mcp', 'get', id),
      svc('mcp', 'get', id, '-o', 'json'),
      svc('mcp', 'get', `mcp_${'0'.repeat(32)}`),
      svc('mcp', 'list', '--status', 'retired'),
      svc('mcp', 'update', id),
    ]);
    expect(noName.code).toBe(3);
    expect(list.stdout.split('\n')[0]).toMatch(/^SERVER_ID\s+NAME\s+STATUS\s+OWNER\s+CREATED\s+DESCRIPTION$/);
    expect(list.stdout).toMatch(new RegExp(`^${id}\\s+github-tools\\s+active\\s+Alice Example\\s+\\S+\\s+GitHub connector$`, 'm'));
    expect(JSON.parse(listJson.stdout)).toEqual((await api('GET', '/api/mcp-servers')).servers);
    expect(JSON.parse(page.stdout)).toEqual((await api('GET', '/api/mcp-servers?limit=1&offset=1')).servers);
    expect(JSON.parse(page.stdout)).toHaveLength(1);
    expect(get.stdout).toMatch(/^owner:\s+Alice Example \(not verified\)$/m);
    expect(JSON.parse(getJson.stdout)).toEqual(await api('GET', `/api/mcp-servers/${id}`));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^svc: not_found: .*\(HTTP 404\)$/m);
    expect(badStatus.code).toBe(3);
    expect(nothing.code).toBe(3);

    const upd = parsed(await svc('mcp', 'update', id, '--status', 'deprecated', '--description', '', '-o', 'json'));
    expect(upd).toEqual(await api('GET', `/api/mcp-servers/${id}`));
    expect(upd).toMatchObject({ status: 'deprecated', description: null });
    const filtered = parsed(await svc('mcp', 'list', '--status', 'deprecated', '-o', 'json'));
    expect(filtered.map((x: { server_id: string }) => x.server_id)).toEqual([id]);
    const before = await api('GET', `/api/mcp-servers/${second.server_id}`);
    const del = await svc('mcp', 'delete', second.server_id);
    expect(del.stdout).toBe(`mcp server ${second.server_id} deleted (2.10)\n`);
    expect((await t.call('api', 'GET', `/api/mcp-servers/${second.server_id}`, { admin: true })).status).toBe(404);
    const delJson = parsed(await svc('mcp', 'delete', id, '-o', 'json'));
    expect(delJson).toEqual({ ...upd });
    const again = await svc('mcp', 'delete', id);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('not_found');
    expect(before.server_id).toBe(second.server_id);

    // every page by default: more servers than one page of the API (100) holds
    await Promise.all(Array.from({ length: 101 }, (_, i) => api('POST', '/api/mcp-servers', { name: `bulk-${i}` })));
    const all = parsed(await svc('mcp', 'list', '-o', 'json'));
    const [p1, p2] = await Promise.all([api('GET', '/api/mcp-servers?limit=100&offset=0'), api('GET', '/api/mcp-servers?limit=100&offset=100')]);
    expect(p1.total).toBe(101);
    expect(all).toEqual([...p1.servers, ...p2.servers]);
    expect(all).toHaveLength(101);
  });

  it('creates, lists, reads and moves tags, and lists and reads deployments', async () => {
    const u = uid();
    const id = `bundle:cli-${u}`;
    await publish(t, bundle(id, 'concern', { version: '1.0.0', scds: [`scd:project:cli-${u}-a`] }));
    await publish(t, bundle(id, 'concern', { version: '1.10.0', scds: [`scd:project:cli-${u}-a`] }));
    const tag = `cli-${u}:prod`;
    const made = await svc('tags', 'create', tag, '--bundle', `cli-${u}`, '--version', '1.0.0', '--description', 'production');
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toBe(`tag ${tag} created: ${id} 1.0.0 (1 bundle resolved)\n`);
    const [dup, noVersion, unknownVersion, list, listJson, get, getJson, missing] = await Promise.all([
      svc('tags', 'create', tag, '--bundle', id, '--version', '1.0.0'),
      svc('tags', 'create', `cli-${u}:dev`, '--bundle', id),
      svc('tags', 'create', `cli-${u}:dev`, '--bundle', id, '--version', '9.9.9'),
      svc('tags', 'list'),
      svc('tags', 'list', '-o', 'json'),
      svc('tags', 'get', tag),
      svc('tags', 'get', tag, '-o', 'json'),
      svc('tags', 'get', `cli-${u}:nope`),
    ]);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain('conflict');
    expect(noVersion.code).toBe(3);
    expect(noVersion.stderr).toContain('--version is required');
    expect(unknownVersion.code).toBe(1);
    expect(unknownVersion.stderr).toContain('not_found');
    expect(list.stdout.split('\n')[0]).toMatch(/^TAG\s+BUNDLE\s+VERSION\s+UPDATED\s+DESCRIPTION$/);
    expect(list.stdout).toMatch(new RegExp(`^${tag}\\s+${id}\\s+1\\.0\\.0\\s+\\S+\\s+production$`, 'm'));
    expect(JSON.parse(listJson.stdout)).toEqual((await api('GET', '/api/tags')).tags);
    expect(get.stdout).toMatch(new RegExp(`^resolved:\\s+${id}:1\\.0\\.0$`, 'm'));
    expect(JSON.parse(getJson.stdout)).toEqual(await api('GET', `/api/tags/${tag}`));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('not_found');

    // --version 1.10.0 must reach the API as typed (mri alone would read 1.10 as 1.1)
    const moved = await svc('tags', 'move', tag, '--bundle', id, '--version', '1.10.0');
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stdout).toBe(`tag ${tag} moved to ${id} 1.10.0 (was ${id} 1.0.0)\n`);
    const back = parsed(await svc('tags', 'move', tag, '--bundle', id, '--version', '1.0.0', '-o', 'json'));
    const { content_revision: _rev, ...movedBody } = back;
    expect(movedBody).toEqual(await api('GET', `/api/tags/${tag}`));
    expect(back.bundle_version).toBe('1.0.0');
    const [moveMissing, moveUnknown] = await Promise.all([
      svc('tags', 'move', `cli-${u}:nope`, '--bundle', id, '--version', '1.0.0'),
      svc('tags', 'move', tag, '--bundle', id, '--version', '3.0.0'),
    ]);
    expect(moveMissing.code).toBe(1);
    expect(moveMissing.stderr).toContain('not_found');
    expect(moveUnknown.code).toBe(1);

    const d1 = await deploy(t, [[id, '1.0.0']]);
    const d2 = await deploy(t, [[id, '1.10.0']]);
    const [dlist, dlistJson, dactive, dget, dgetJson, dmissing, dbad] = await Promise.all([
      svc('deployments', 'list'),
      svc('deployments', 'list', '-o', 'json'),
      svc('deployments', 'list', '--status', 'active', '-o', 'json'),
      svc('deployments', 'get', d1.deployment_id),
      svc('deployments', 'get', d2.deployment_id, '-o', 'json'),
      svc('deployments', 'get', '00000000-0000-4000-8000-000000000000'),
      svc('deployments', 'list', '--status', 'gone'),
    ]);
    expect(dlist.stdout.split('\n')[0]).toMatch(/^DEPLOYMENT_ID\s+STATUS\s+PROJECT_BUNDLES\s+BUNDLES\s+CREATED\s+SUPERSEDED_BY$/);
    expect(dlist.stdout).toMatch(new RegExp(`^${d1.deployment_id}\\s+superseded\\s+${id}:1\\.0\\.0\\s+1\\s+\\S+\\s+${d2.deployment_id}$`, 'm'));
    expect(JSON.parse(dlistJson.stdout)).toEqual((await api('GET', '/api/deployments')).deployments);
    expect(JSON.parse(dactive.stdout)).toEqual((await api('GET', '/api/deployments?status=active')).deployments);
    expect(dget.stdout).toMatch(new RegExp(`^superseded by:\\s+${d2.deployment_id}$`, 'm'));
    expect(JSON.parse(dgetJson.stdout)).toEqual(await api('GET', `/api/deployments/${d2.deployment_id}`));
    expect(dmissing.code).toBe(1);
    expect(dmissing.stderr).toContain('not_found');
    expect(dbad.code).toBe(3);
  });

  it('reports an unreachable server with exit 5 and a missing admin key with exit 3', async () => {
    const port = await closedPort();
    const down = (...a: string[]) => svc(...a, '--endpoint', `http://127.0.0.1:${port}`);
    const runs = await Promise.all([down('mcp', 'list'), down('tags', 'get', 'a:b'), down('deployments', 'list')]);
    for (const r of runs) {
      expect(r.code).toBe(5);
      expect(r.stderr).toContain('connection refused');
    }
    const nokey = await s.run(['tags', 'list'], { env: { SVC_API_ENDPOINT: t.url('api') } });
    expect(nokey.code).toBe(3);
  });
});
