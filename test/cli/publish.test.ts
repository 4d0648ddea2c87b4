import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADMIN_KEY, startTestStack, type TestStack } from '../harness.js';
import { closedPort, sandbox } from './helpers.js';

// Every test spawns the real bin (tsx start-up, ~1 s each on an idle machine): allow for a loaded one.
vi.setConfig({ testTimeout: 240_000 });

/** `svc bundle publish` against the real API (POST /api/bundles), started in this process. */
describe('svc bundle publish', () => {
  const s = sandbox();
  const name = `pub${Date.now().toString(36)}`;
  const root = () => join(s.work, name);
  let t: TestStack;
  let env: Record<string, string>;
  beforeAll(async () => {
    t = await startTestStack({ services: ['api'] });
    env = { SVC_API_ENDPOINT: t.url('api'), SVC_API_KEY: ADMIN_KEY };
    mkdirSync(s.work, { recursive: true });
    expect((await s.run(['new', name, '--type', 'minimal'])).code).toBe(0);
  });
  afterAll(async () => {
    await t?.close();
    s.cleanup();
  });

  it('publishes a scaffolded project bottom-up, SCD documents included, and reports the server\'s answer', async () => {
    for (const f of ['meta-bundle.yaml', 'concerns/business-context.yaml', 'domains/general.yaml', 'project-bundle.yaml']) {
      const r = await s.run(['bundle', 'publish', f], { cwd: root(), env });
      expect(r.code, `${f}: ${r.stdout}${r.stderr}`).toBe(0);
      expect(r.stdout).toMatch(/^Published bundle:\S+ 0\.1\.0 to http:\/\/\S+ \(HTTP 201\): status published, validation_status valid$/m);
    }
    const stored = await t.call('api', 'GET', `/api/bundles/${encodeURIComponent(`bundle:${name}.business-context`)}/versions/0.1.0`, { admin: true });
    expect(stored.status).toBe(200);
    expect(stored.body.scds).toEqual([`scd:project:${name}.problem-definition`]);
    const meta = await s.run(['bundle', 'publish', 'meta-bundle.yaml', '-o', 'json'], { cwd: root(), env });
    expect(meta.code).toBe(1); // the same version again: the error on stderr, nothing on stdout
    expect(meta.stdout).toBe('');
    expect(meta.stderr).toMatch(/refused bundle:\S+ 0\.1\.0: HTTP 409 conflict: /);
    // -o json of a success is exactly the API's answer.
    const concern = readFileSync(join(root(), 'concerns/business-context.yaml'), 'utf8');
    writeFileSync(join(root(), 'concerns/business-context-0.2.0.yaml'), concern.replace(/^version: 0\.1\.0$/m, 'version: 0.2.0'));
    const next = await s.run(['bundle', 'publish', 'concerns/business-context-0.2.0.yaml', '-o', 'json'], { cwd: root(), env });
    expect(next.code, next.stderr).toBe(0);
    expect(JSON.parse(next.stdout)).toMatchObject({ bundle_id: `bundle:${name}.business-context`, version: '0.2.0', status: 'published', validation_status: 'valid' });
  });

  it('publishes every bundle of a healthcare project (standards, applies_to roles, relationships)', async () => {
    const hc = `${name}-hc`;
    expect((await s.run(['new', hc, '--type', 'healthcare'])).code).toBe(0);
    const order = ['meta-bundle.yaml', 'standards-bundle.yaml', 'concerns/security.yaml', 'concerns/compliance-governance.yaml',
      'concerns/ethics-ai-accountability.yaml', 'concerns/safety-risk.yaml', 'domains/clinical-care.yaml', 'project-bundle.yaml'];
    for (const f of order) {
      const r = await s.run(['bundle', 'publish', f], { cwd: join(s.work, hc), env });
      expect(r.code, `${f}: ${r.stdout}${r.stderr}`).toBe(0);
      expect(r.stdout).toContain('validation_status valid');
    }
  });

  it('reports a 400 with each validation issue the server names', async () => {
    writeFileSync(join(root(), 'orphan.yaml'), `id: bundle:${name}.orphan\ntype: domain\nversion: 0.1.0\ntitle: Orphan\ndescription: imports nothing that exists\nimports: [bundle:${name}.nowhere:9.9.9]\nscds: []\nprovenance: {created_by: me, created_at: "2026-01-01T00:00:00Z"}\n`);
    const r = await s.run(['bundle', 'publish', 'orphan.yaml'], { cwd: root(), env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`refused bundle:${name}.orphan 0.1.0: HTTP 400 validation_error`);
    expect(r.stderr).toMatch(new RegExp(`error /body/imports/0 \\[import_unresolved\\] .*\\(bundle:${name}\\.nowhere:9\\.9\\.9\\)`));
  });

  it('reports a wrong key (401), an unreachable server (exit 5), and a missing key (exit 3)', async () => {
    const closed = await closedPort();
    const [wrong, down, nokey] = await Promise.all([
      s.run(['bundle', 'publish', 'meta-bundle.yaml'], { cwd: root(), env: { ...env, SVC_API_KEY: 'not-the-admin-key-0000' } }),
      s.run(['bundle', 'publish', 'meta-bundle.yaml', '--endpoint', `http://127.0.0.1:${closed}`], { cwd: root(), env }),
      s.run(['bundle', 'publish', 'meta-bundle.yaml'], { cwd: root(), env: { SVC_API_ENDPOINT: t.url('api') } }),
    ]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('HTTP 401');
    expect(wrong.stderr).toContain('Invalid admin API key');
    expect(wrong.stderr).toContain('the key sent was ****0000');
    expect(wrong.stderr).not.toContain('not-the-admin-key');
    expect(down.code).toBe(5); // the server could not be reached (issue 23's exit codes)
    expect(down.stderr).toContain(`cannot reach http://127.0.0.1:${closed}: connection refused (ECONNREFUSED)`);
    expect(nokey.code).toBe(3);
    expect(nokey.stderr).toContain('api.key is not set');
  });
});
