import { mkdirSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADMIN_KEY, startTestStack, type TestStack } from '../harness.js';
import { adminApi, closedPort, parsed, sandbox } from './helpers.js';

// Every check spawns the real bin (tsx start-up, ~1-3 s on a loaded machine).
vi.setConfig({ testTimeout: 240_000 });

/** `svc agents ...` and `svc keys ...` against the real API on port 0. */
describe('svc agents, svc keys', () => {
  const s = sandbox();
  const u = Date.now().toString(36);
  let t: TestStack;
  let env: Record<string, string>;
  const svc = (...args: string[]) => s.run(args, { env });
  const api = adminApi(() => t);
  const context = (apiKey: string, task_type = 'code_review') => t.call('api', 'POST', '/api/context', { apiKey, body: { task_type } });

  beforeAll(async () => {
    t = await startTestStack({ services: ['api'] });
    env = { SVC_API_ENDPOINT: t.url('api'), SVC_API_KEY: ADMIN_KEY };
    mkdirSync(s.work, { recursive: true });
  });
  afterAll(async () => {
    await t?.close();
    s.cleanup();
  });

  it('creates, lists, reads, updates, suspends, activates and revokes agents', async () => {
    const a = `agent:cli-a-${u}`;
    const b = `cli-b-${u}`; // the agent: prefix may be left out
    const made = await svc('agents', 'create', a, '--name', 'Reviewer', '--role', 'role:security', '--intent', 'code_review', '--intent', 'triage', '--owner', 'alice@example.com', '--description', 'reviews code');
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toBe(`agent ${a} created (role:security, active, intents code_review,triage, owner alice@example.com)\n`);
    const createdB = parsed(await svc('agents', 'create', b, '--name', '1.10', '--role', 'security', '--intent', '1.10', '-o', 'json'));
    const { api_keys: _none, ...readB } = await api('GET', `/api/agents/agent:${b}`);
    expect(createdB).toEqual(readB);
    expect(createdB).toMatchObject({ agent_id: `agent:${b}`, name: '1.10', role_id: 'role:security', allowed_intents: ['1.10'] });

    const [dup, noRole, noIntent, badOut, list, listJson, listActive, badStatus, getA, getJson, missing] = await Promise.all([
      svc('agents', 'create', a, '--name', 'X', '--role', 'role:security', '--intent', 'code_review'),
      svc('agents', 'create', `agent:x-${u}`, '--name', 'X', '--intent', 'code_review'),
      svc('agents', 'create', `agent:x-${u}`, '--name', 'X', '--role', 'role:security'),
      svc('agents', 'list', '-o', 'yaml'),
      svc('agents', 'list'),
      svc('agents', 'list', '-o', 'json'),
      svc('agents', 'list', '--status', 'active', '--role', 'role:security', '--limit', '1', '-o', 'json'),
      svc('agents', 'list', '--status', 'sleeping'),
      svc('agents', 'get', a),
      svc('agents', 'get', a, '-o', 'json'),
      svc('agents', 'get', `agent:nobody-${u}`),
    ]);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/^svc: conflict: .* \(HTTP 409\)$/m);
    expect(noRole.code).toBe(3);
    expect(noRole.stderr).toContain('--role is required');
    expect(noIntent.code).toBe(3);
    expect(noIntent.stderr).toContain('--intent is required');
    expect(badOut.code).toBe(3);
    expect(list.code).toBe(0);
    expect(list.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+ROLE\s+STATUS\s+INTENTS\s+OWNER$/);
    expect(list.stdout).toMatch(new RegExp(`^${a}\\s+Reviewer\\s+role:security\\s+active\\s+code_review,triage\\s+alice@example.com$`, 'm'));
    expect(JSON.parse(listJson.stdout)).toEqual((await api('GET', '/api/agents')).agents);
    expect(JSON.parse(listActive.stdout)).toEqual((await api('GET', '/api/agents?status=active&role_id=role:security&limit=1')).agents);
    expect(JSON.parse(listActive.stdout)).toHaveLength(1);
    expect(badStatus.code).toBe(3);
    expect(getA.stdout).toMatch(/^agent:\s+agent:cli-a-/m);
    expect(getA.stdout).toContain('(no keys: svc keys create)');
    expect(JSON.parse(getJson.stdout)).toEqual(await api('GET', `/api/agents/${a}`));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^svc: not_found: .*\(HTTP 404\)$/m);

    // update: read, compute the intents, PUT; an intent already there (or absent) is a no-op with a note
    const upd = parsed(await svc('agents', 'update', a, '--add-intent', 'deploy_staging', '--remove-intent', 'triage', '--name', 'Reviewer 2', '-o', 'json'));
    expect(upd.allowed_intents).toEqual(['code_review', 'deploy_staging']);
    const { api_keys: _k, ...readA } = await api('GET', `/api/agents/${a}`);
    expect(upd).toEqual(readA);
    const [same, noop, both, role, nothing, badRemove] = await Promise.all([
      svc('agents', 'update', a, '--add-intent', 'code_review', '--remove-intent', 'nope'),
      svc('agents', 'update', a, '--add-intent', 'code_review', '-o', 'json'),
      svc('agents', 'update', a, '--add-intent', 'x', '--remove-intent', 'x'),
      svc('agents', 'update', a, '--role', 'role:'),
      svc('agents', 'update', a),
      svc('agents', 'update', `agent:nobody-${u}`, '--remove-intent', 'x'),
    ]);
    expect(same.code).toBe(0);
    expect(same.stdout).toBe(`agent ${a} unchanged (intents code_review,deploy_staging)\n`);
    expect(same.stderr).toContain(`${a} already has intent code_review (nothing to do for it)`);
    expect(same.stderr).toContain(`${a} has no intent nope`);
    expect(JSON.parse(noop.stdout)).toEqual(readA); // nothing written: updated_at unchanged
    expect(both.code).toBe(3);
    expect(role.code).toBe(1); // the API refuses the malformed role (validation_error)
    expect(role.stderr).toContain('validation_error');
    expect(nothing.code).toBe(3);
    expect(badRemove.code).toBe(1);
    expect(badRemove.stderr).toContain('not_found');
    // overrides and restrictions: POST .../policy, after the PUT when both change
    const pol = parsed(await svc('agents', 'update', a, '--add-override', `scd:project:o-${u}`, '--add-restriction', `scd:project:r-${u}`, '--name', 'Reviewer 3', '-o', 'json'));
    expect(pol).toMatchObject({ name: 'Reviewer 3', overrides: [`scd:project:o-${u}`], restrictions: [`scd:project:r-${u}`] });
    expect(pol).toEqual((({ api_keys: _, ...x }) => x)(await api('GET', `/api/agents/${a}`)));
    const unpol = await svc('agents', 'update', a, '--remove-override', `scd:project:o-${u}`, '--add-restriction', `scd:project:r-${u}`);
    expect(unpol.stdout).toBe(`agent ${a} updated (overrides -)\n`);
    expect(unpol.stderr).toContain(`already has restriction scd:project:r-${u}`);
    expect((await svc('agents', 'update', a, '--add-override', 'x', '--remove-override', 'x')).code).toBe(3);
    // Another role: the agent.updated event records the move, and the next request gets the new role.
    const moved = await svc('agents', 'update', a, '--role', 'auditor');
    expect(moved.stdout).toBe(`agent ${a} updated (role_id)\n`);
    expect(await api('GET', `/api/agents/${a}`)).toMatchObject({ role_id: 'role:auditor' });
    const ev = (await api('GET', `/api/audit/events?resource_id=${encodeURIComponent(a)}&event_type=agent.updated`)).events[0];
    expect(ev).toMatchObject({ before: { role_id: 'role:security' }, after: { role_id: 'role:auditor' } });
    const ownerMove = await svc('agents', 'update', a, '--owner', 'bob@example.com', '--description', '');
    expect(ownerMove.stdout).toBe(`agent ${a} updated (description, owner_id)\n`);
    expect(await api('GET', `/api/agents/${a}`)).toMatchObject({ owner_id: 'bob@example.com', description: null });

    const key = await api('POST', `/api/agents/${a}/api-keys`, {});
    expect((await context(key.api_key)).status).toBe(200);
    const sus = await svc('agents', 'suspend', a);
    expect(sus.stdout).toBe(`agent ${a} suspended\n`);
    expect((await context(key.api_key)).body.error_code).toBe('AUTH_FAILED');
    const act = parsed(await svc('agents', 'activate', a, '-o', 'json'));
    expect(act).toEqual((({ api_keys: _, ...x }) => x)(await api('GET', `/api/agents/${a}`)));
    expect(act.status).toBe('active');
    expect((await context(key.api_key)).status).toBe(200);
    const del = await svc('agents', 'delete', a);
    expect(del.stdout).toBe(`agent ${a} revoked (1 active key revoked)\n`);
    expect((await context(key.api_key)).body.error_code).toBe('AUTH_FAILED');
    const again = parsed(await svc('agents', 'delete', a, '-o', 'json'));
    expect(again).toEqual({ agent: (({ api_keys: _, ...x }) => x)(await api('GET', `/api/agents/${a}`)), revoked_key_count: 0 });
    expect((await svc('agents', 'suspend', `agent:nobody-${u}`)).code).toBe(1);
  });

  it('issues a key printed once, lists keys without it, revokes it at once and rotates it', async () => {
    const a = `agent:cli-k-${u}`;
    await api('POST', '/api/agents', { agent_id: a, name: 'K', role_id: 'role:security', allowed_intents: ['code_review', 'triage'] });
    const made = await svc('keys', 'create', a, '--expires-in', '30d', '--scope', 'code_review', '--name', 'ci');
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/^sk_[A-Za-z0-9]{40,}\n$/);
    expect(made.stderr).toContain('store it now: it is not shown again');
    const plain = made.stdout.trim();
    expect((await context(plain)).status).toBe(200);
    expect((await context(plain, 'triage')).status).toBe(403); // the scope holds
    const listed = (await api('GET', `/api/agents/${a}/api-keys`)).api_keys;
    expect(listed).toHaveLength(1);
    const k1 = listed[0];
    expect(k1).toMatchObject({ name: 'ci', scopes: ['code_review'], key_prefix: plain.slice(0, 8) });
    expect(Math.round((Date.parse(k1.expires_at) - Date.parse(k1.created_at)) / 86_400_000)).toBe(30);

    const issued = parsed(await svc('keys', 'create', a, '--key-id', `key-${u}`, '-o', 'json'));
    expect(issued).toMatchObject({ key_id: `key-${u}`, agent_id: a, status: 'active', scopes: null });
    expect(issued.api_key).toMatch(/^sk_/);
    const [bad12h, badText, bad3600s, tooLong, dupId, noAgent, list, listJson, get, getJson, getMissing] = await Promise.all([
      svc('keys', 'create', a, '--expires-in', '12h'),
      svc('keys', 'create', a, '--expires-in', 'soon'),
      svc('keys', 'create', a, '--expires-in', '3600s'),
      svc('keys', 'create', a, '--expires-in', '3651d'),
      svc('keys', 'create', a, '--key-id', `key-${u}`),
      svc('keys', 'create', `agent:nobody-${u}`),
      svc('keys', 'list', a),
      svc('keys', 'list', a, '-o', 'json'),
      svc('keys', 'get', a, k1.key_id),
      svc('keys', 'get', a, `key-${u}`, '-o', 'json'),
      svc('keys', 'get', a, 'key_nothing'),
    ]);
    for (const r of [bad12h, badText, bad3600s, tooLong]) expect(r.code, r.stderr).toBe(3);
    expect(bad12h.stderr).toContain('whole days');
    expect(badText.stderr).toContain("--expires-in 'soon' is not a duration");
    expect(dupId.code).toBe(1);
    expect(dupId.stderr).toContain('conflict');
    expect(noAgent.code).toBe(1);
    expect(noAgent.stderr).toContain('not_found');
    expect(list.stdout.split('\n')[0]).toMatch(/^KEY_ID\s+PREFIX\s+STATUS\s+EXPIRES\s+LAST_USED\s+SCOPES\s+NAME\s+ROTATION$/);
    expect(list.stdout).toMatch(new RegExp(`^${k1.key_id}\\s+${k1.key_prefix}\\s+active\\s+\\S+\\s+\\S+\\s+code_review\\s+ci\\s+-$`, 'm'));
    // last_used_at is written in batches (every 5 s): it may move between the CLI's read and this one.
    const noUse = (keys: Array<Record<string, unknown>>) => keys.map(({ last_used_at: _u, ...k }) => k);
    expect(noUse(JSON.parse(listJson.stdout))).toEqual(noUse((await api('GET', `/api/agents/${a}/api-keys`)).api_keys));
    for (const r of [list, listJson, get, getJson]) {
      expect(r.stdout).not.toContain(plain);
      expect(r.stdout).not.toContain(issued.api_key);
    }
    expect(get.stdout).toMatch(/^status:\s+active$/m);
    expect(JSON.parse(getJson.stdout)).toEqual(await api('GET', `/api/agents/${a}/api-keys/key-${u}`));
    expect(getMissing.code).toBe(1);
    expect(getMissing.stderr).toContain('not_found');

    // revoke: refused from the very next request
    expect((await context(issued.api_key)).status).toBe(200);
    const rev = await svc('keys', 'revoke', a, `key-${u}`);
    expect(rev.code, rev.stderr).toBe(0);
    expect(rev.stdout).toBe(`key key-${u} of ${a} revoked\n`);
    const refused = await context(issued.api_key);
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ error_code: 'AUTH_FAILED', error_message: 'API key revoked' });
    const [revAgain, revJsonMissing] = await Promise.all([
      svc('keys', 'revoke', a, `key-${u}`),
      svc('keys', 'revoke', a, 'key_nothing', '-o', 'json'),
    ]);
    expect(revAgain.code).toBe(1);
    expect(revAgain.stderr).toMatch(/conflict: .*\(HTTP 409\)/);
    expect(revJsonMissing.code).toBe(1);
    expect(revJsonMissing.stdout).toBe('');

    // rotate with a grace: both keys work; without: the old one is refused at once
    const rot = await svc('keys', 'rotate', a, k1.key_id, '--grace', '1h');
    expect(rot.code, rot.stderr).toBe(0);
    const next = rot.stdout.trim();
    expect(next).toMatch(/^sk_[A-Za-z0-9]{40,}$/);
    expect(rot.stderr).toContain('store it now: it is not shown again');
    expect((await context(next)).status).toBe(200);
    expect((await context(plain)).status).toBe(200);
    const old = await api('GET', `/api/agents/${a}/api-keys/${k1.key_id}`);
    expect(Date.parse(old.grace_until) - Date.parse(old.rotated_to ? (await api('GET', `/api/agents/${a}/api-keys/${old.rotated_to}`)).created_at : '')).toBeGreaterThan(3_500_000);
    const newId = old.rotated_to;
    const rot2 = parsed(await svc('keys', 'rotate', a, newId, '-o', 'json'));
    expect(rot2).toMatchObject({ rotated_from: newId, agent_id: a, status: 'active' });
    expect((await context(next)).body.error_code).toBe('AUTH_FAILED');
    expect((await context(rot2.api_key)).status).toBe(200);
    const [rotAgain, graceLong, graceBad] = await Promise.all([
      svc('keys', 'rotate', a, newId),
      svc('keys', 'rotate', a, rot2.key_id, '--grace', '25h'),
      svc('keys', 'rotate', a, rot2.key_id, '--grace', '1y'),
    ]);
    expect(rotAgain.code).toBe(1);
    expect(rotAgain.stderr).toContain('conflict');
    expect(graceLong.code).toBe(3);
    expect(graceBad.code).toBe(3);
  });

  it('update: list edits are written with If-Match; a change made between its read and its write is kept (412, read again, recomputed)', async () => {
    const a = `agent:cli-race-${u}`;
    expect((await svc('agents', 'create', a, '--name', 'Race', '--role', 'security', '--intent', 'code_review')).code).toBe(0);
    // A proxy that, at the command's first write, lets another admin change the agent first.
    const target = new URL(t.url('api'));
    let sneaked = 0;
    const proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        if (req.method === 'PUT' && sneaked++ === 0) await api('PUT', `/api/agents/${a}`, { allowed_intents: ['code_review', 'sneaked_in'] });
        const fwd = httpRequest({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host, connection: 'close' } }, (up) => {
          res.writeHead(up.statusCode!, up.headers);
          up.pipe(res);
        });
        fwd.end(Buffer.concat(chunks));
      });
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    try {
      const endpoint = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const r = await s.run(['agents', 'update', a, '--add-intent', 'triage', '--add-override', 'scd:project:x', '-o', 'json', '--endpoint', endpoint], { env });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(`svc: note: ${a} changed while it was being updated; reading it again`);
      expect(JSON.parse(r.stdout)).toMatchObject({ allowed_intents: ['code_review', 'sneaked_in', 'triage'], overrides: ['scd:project:x'] });
      expect(sneaked).toBe(2);
    } finally {
      proxy.closeAllConnections();
      await new Promise((r) => proxy.close(r));
    }
    expect(await api('GET', `/api/agents/${a}`)).toMatchObject({ allowed_intents: ['code_review', 'sneaked_in', 'triage'], overrides: ['scd:project:x'] });
  });

  it('needs an admin key (exit 3), reports a wrong one (1) and an unreachable server (5)', async () => {
    const port = await closedPort();
    const [nokey, wrong, down, downKeys] = await Promise.all([
      s.run(['agents', 'list'], { env: { SVC_API_ENDPOINT: t.url('api') } }),
      s.run(['agents', 'list'], { env: { ...env, SVC_API_KEY: 'not-the-admin-key-0000' } }),
      svc('agents', 'list', '--endpoint', `http://127.0.0.1:${port}`),
      svc('keys', 'create', 'agent:x', '--endpoint', `http://127.0.0.1:${port}`),
    ]);
    expect(nokey.code).toBe(3);
    expect(nokey.stderr).toContain('api.key is not set');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('HTTP 401');
    expect(wrong.stderr).toContain('****0000');
    expect(wrong.stderr).not.toContain('not-the-admin-key');
    for (const r of [down, downKeys]) {
      expect(r.code).toBe(5);
      expect(r.stderr).toContain(`cannot reach http://127.0.0.1:${port}: connection refused`);
      expect(r.stdout).toBe('');
    }
  });
});
