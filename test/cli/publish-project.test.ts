/**
 * `svc publish DIR --tag TAG [--deploy]` against a real API on port 0: a scaffolded
 * healthcare project in one command, the second run changing nothing, a changed bundle
 * refused by name and field, release manifests (ok, mismatch, missing, malformed), the
 * context of the deployed tag, and the exit codes (1, 3, 4, 5).
 */
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADMIN_KEY, startTestStack, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { compareStored, publishOrder, type LocalBundle } from '../../cli/commands/publish.js';
import { describeProblem, verifyManifests } from '../../cli/lib/manifest.js';
import { parse as parseYaml } from 'yaml';
import { BIN, closedPort, pty, ROOT, sandbox } from './helpers.js';

vi.setConfig({ testTimeout: 240_000 });

const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');

describe('svc publish', () => {
  const s = sandbox();
  const name = `hc${Date.now().toString(36)}`;
  const root = () => join(s.work, name);
  let t: TestStack;
  let env: Record<string, string>;
  beforeAll(async () => {
    t = await startTestStack({ services: ['api'] });
    env = { SVC_API_ENDPOINT: t.url('api'), SVC_API_KEY: ADMIN_KEY };
    mkdirSync(s.work, { recursive: true });
    expect((await s.run(['new', name, '--type', 'healthcare'])).code).toBe(0);
  });
  afterAll(async () => {
    await t?.close();
    s.cleanup();
  });

  it('publishes the healthcare project in one command, tags and deploys it; a second run changes nothing; the deployed context is served', async () => {
    const first = await s.run(['publish', name, '--tag', `${name}:prod`, '--deploy', '-o', 'json'], { env });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toBe(''); // progress lines only on a terminal
    const summary = JSON.parse(first.stdout);
    expect(summary.bundles).toHaveLength(8);
    expect(summary.bundles.every((b: { action: string }) => b.action === 'published')).toBe(true);
    const ids = summary.bundles.map((b: { id: string }) => b.id);
    expect(ids[0]).toBe(`bundle:${name}.meta`);
    expect(ids[7]).toBe(`bundle:${name}`);
    // Imports before importers: the domain bundle after every concern it imports.
    expect(ids.indexOf(`bundle:${name}.clinical-care`)).toBeGreaterThan(ids.indexOf(`bundle:${name}.security`));
    expect(summary.tag).toEqual({ tag: `${name}:prod`, bundle_id: `bundle:${name}`, bundle_version: '0.1.0', action: 'created' });
    expect(summary.deployment.action).toBe('deployed');

    const tag = await t.call('api', 'GET', `/api/tags/${name}:prod`, { admin: true });
    expect(tag.status).toBe(200);
    expect([tag.body.bundle_id, tag.body.bundle_version]).toEqual([`bundle:${name}`, '0.1.0']);
    expect(tag.body.resolved_bundle_ids).toHaveLength(8);
    const dep = await t.call('api', 'GET', `/api/deployments/${summary.deployment.deployment_id}`, { admin: true });
    expect(dep.body.status).toBe('active');
    expect(dep.body.project_bundles).toEqual([`bundle:${name}:0.1.0`]);
    expect(summary.deployment.project_bundles).toEqual(dep.body.project_bundles);
    const stored = await t.call('api', 'GET', `/api/bundles/bundle:${name}.standards/versions/0.1.0`, { admin: true });
    expect(stored.body.documents.map((d: { id: string }) => d.id)).toEqual(stored.body.scds);
    expect(stored.body.documents[0]).toEqual(JSON.parse(JSON.stringify((await import('yaml')).parse(readFileSync(join(root(), 'context/standards/hipaa-privacy-rule.yaml'), 'utf8')))));

    const [again, json, staging] = await Promise.all([
      s.run(['publish', name, '--tag', `${name}:prod`, '--deploy'], { env }),
      s.run(['publish', name, '--tag', `${name}:prod`, '--deploy', '-o', 'json'], { env }),
      s.run(['publish', name, '--tag', `${name}:staging`, '-o', 'json'], { env }),
    ]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.trim()).toBe(`nothing changed: 8 bundles unchanged, tag ${name}:prod already at bundle:${name}:0.1.0, deployment ${summary.deployment.deployment_id} already active`);
    expect(json.code).toBe(0);
    const j = JSON.parse(json.stdout);
    expect(j.bundles.map((b: { action: string }) => b.action)).toEqual(Array(8).fill('unchanged'));
    expect(j.tag.action).toBe('unchanged');
    expect(j.deployment).toMatchObject({ deployment_id: summary.deployment.deployment_id, action: 'unchanged' });
    expect(staging.code, staging.stderr).toBe(0);
    expect(JSON.parse(staging.stdout)).toMatchObject({ tag: { tag: `${name}:staging`, action: 'created' }, deployment: null });
    // On a terminal, progress lines go to stderr (the pty merges both streams).
    const tty = await pty([process.execPath, BIN, 'publish', name, '--tag', `${name}:prod`], s.work, { ...s.env, ...env, NO_COLOR: '1' }, []);
    expect(tty.code).toBe(0);
    expect(tty.output).toContain(`publishing bundle:${name}.meta 0.1.0 ... unchanged`);
    expect(tty.output).toContain(`tag ${name}:prod -> bundle:${name}:0.1.0 ... unchanged`);
    const deps = await t.call('api', 'GET', '/api/deployments?status=active', { admin: true });
    expect(deps.body.deployments).toHaveLength(1); // no second deployment

    const agent = await makeAgent(t, { allowed_intents: ['triage'] });
    const key = (await issueKey(t, agent.agent_id)).api_key;
    const ctx = await t.call('api', 'POST', '/api/context', { apiKey: key, body: { task_type: 'triage' } });
    expect(ctx.status, JSON.stringify(ctx.body)).toBe(200);
    expect(ctx.body.scd_ids).toContain(`scd:standards:${name}.hipaa-privacy-rule`);
    expect(ctx.body.scd_ids).toContain(`scd:project:${name}.phi-protection`);
  });

  it('publishes a project that imports bundles published before (pinned or unpinned), and refuses an import the server does not hold either', async () => {
    // A second project: only its project bundle, importing the first project's bundles from the server.
    const app = join(s.work, `${name}-app`);
    mkdirSync(join(app, '.svc'), { recursive: true });
    cpSync(join(root(), '.svc/config.yaml'), join(app, '.svc/config.yaml'));
    const manifest = (imports: string[]) => [
      `id: bundle:${name}-app`, 'type: project', 'version: 0.1.0', 'title: An app on published bundles',
      'description: imports bundles another project published', 'imports:', ...imports.map((i) => `  - ${i}`), 'scds: []',
      'provenance: {created_by: me, created_at: "2026-01-01T00:00:00Z"}', '',
    ].join('\n');
    const good = [`bundle:${name}.meta:0.1.0`, `bundle:${name}.standards`, `bundle:${name}.clinical-care:0.1.0`];
    writeFileSync(join(app, 'project-bundle.yaml'), manifest([...good, `bundle:${name}.nowhere:0.1.0`]));
    const refused = await s.run(['publish', `${name}-app`, '--tag', `${name}-app:prod`], { env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('[import_unresolved]');
    expect(refused.stderr).toContain(`bundle:${name}.nowhere`);
    expect(refused.stderr).not.toContain(`bundle:${name}.meta:0.1.0, but`);
    expect((await t.call('api', 'GET', `/api/bundles/bundle:${name}-app/versions/0.1.0`, { admin: true })).status).toBe(404);

    writeFileSync(join(app, 'project-bundle.yaml'), manifest(good));
    const r = await s.run(['publish', `${name}-app`, '--tag', `${name}-app:prod`, '-o', 'json'], { env });
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary.bundles).toEqual([{ id: `bundle:${name}-app`, version: '0.1.0', type: 'project', action: 'published', validation_status: 'valid' }]);
    expect(summary.tag).toMatchObject({ bundle_id: `bundle:${name}-app`, action: 'created' });
    const tag = await t.call('api', 'GET', `/api/tags/${name}-app:prod`, { admin: true });
    expect(tag.body.resolved_bundle_ids).toHaveLength(8);
    rmSync(app, { recursive: true });
  });

  it('refuses a bundle or SCD changed without a new version, naming the bundle, the version and the field; nothing is sent', async () => {
    const file = join(root(), 'concerns/security.yaml');
    const scdFile = join(root(), 'context/project/phi-protection.yaml');
    const original = readFileSync(file, 'utf8');
    const originalScd = readFileSync(scdFile, 'utf8');
    try {
      writeFileSync(file, original.replace(/^description: .*$/m, 'description: "Changed without a version bump"'));
      const r = await s.run(['publish', name, '--tag', `${name}:prod`], { env });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`bundle:${name}.security 0.1.0`);
      expect(r.stderr).toMatch(/already published with other content: description \(published ".*", local "Changed without a version bump"\)/);
      expect(r.stderr).toContain('Nothing was published');
      expect(r.stdout).toBe('');
      writeFileSync(file, original);
      writeFileSync(scdFile, originalScd.replace(/^title: .*$/m, 'title: "A retitled SCD"'));
      const scd = await s.run(['publish', name, '--tag', `${name}:prod`], { env });
      expect(scd.code).toBe(1);
      expect(scd.stderr).toMatch(new RegExp(`bundle:${name}\\.security 0\\.1\\.0 .*the SCD scd:project:${name}\\.phi-protection: title`));
    } finally {
      writeFileSync(file, original);
      writeFileSync(scdFile, originalScd);
    }
    // The way out the refusal names: lock a new version; only that version is published.
    writeFileSync(file, original.replace(/^description: .*$/m, 'description: "Changed with a version bump"'));
    const locked = await s.run(['bundle', 'version', 'concerns/security.yaml', '--version', '0.2.0', '--rationale', 'new description'], { cwd: root() });
    expect(locked.code, locked.stderr).toBe(0);
    writeFileSync(file, original);
    const bumped = await s.run(['publish', name, '--tag', `${name}:prod`, '-o', 'json'], { env });
    expect(bumped.code, bumped.stderr).toBe(0);
    const actions = JSON.parse(bumped.stdout).bundles.map((b: { id: string; version: string; action: string }) => `${b.id} ${b.version} ${b.action}`);
    expect(actions).toContain(`bundle:${name}.security 0.2.0 published`);
    expect(actions.filter((a: string) => a.endsWith(' published'))).toHaveLength(1);
    expect(JSON.parse(bumped.stdout).tag.action).toBe('unchanged');
    expect((await t.call('api', 'GET', `/api/bundles/bundle:${name}.security/versions/0.2.0`, { admin: true })).body.description).toBe('Changed with a version bump');

    // A project that does not validate strictly is refused before anything is sent.
    const broken = join(root(), 'concerns/broken.yaml');
    writeFileSync(broken, `id: bundle:${name}.broken\ntype: concern\nversion: 0.2.0\ntitle: Broken\ndescription: lists an SCD that does not exist\nimports: []\nscds: [scd:project:${name}.nowhere]\nprovenance: {created_by: me, created_at: "2026-01-01T00:00:00Z"}\n`);
    try {
      const r = await s.run(['publish', name, '--tag', `${name}:prod`], { env });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('does not validate strictly');
      expect((await t.call('api', 'GET', `/api/bundles/bundle:${name}.broken/versions/0.2.0`, { admin: true })).status).toBe(404);
    } finally {
      rmSync(broken);
    }
    // Warnings under strict validation (a depends-on cycle between two SCDs) are exit 2.
    const copy = join(s.work, `${name}-warn`);
    cpSync(root(), copy, { recursive: true });
    const dependsOn = (file: string, target: string) => {
      const p = join(copy, 'context/project', file);
      writeFileSync(p, readFileSync(p, 'utf8').replace(/^relationships:\n/m, `relationships:\n  - type: depends-on\n    target: ${target}\n`));
    };
    dependsOn('phi-protection.yaml', `scd:project:${name}.access-control`);
    dependsOn('access-control.yaml', `scd:project:${name}.phi-protection`);
    const warned = await s.run(['publish', `${name}-warn`, '--tag', `${name}:prod`], { env });
    expect(warned.code, warned.stderr).toBe(2);
    expect(warned.stderr).toContain('[depends_on_cycle]');
    expect(warned.stderr).toContain('0 error(s), 1 warning(s)');
    rmSync(copy, { recursive: true });
  });

  it('checks release manifests: ok, mismatch (both digests), missing file, malformed line; in publish and validate', async () => {
    const sums = join(root(), 'SHA256SUMS');
    const meta = join(root(), 'meta-bundle.yaml');
    const project = join(root(), 'project-bundle.yaml');
    const ok = `${sha(meta)}  meta-bundle.yaml\n${sha(project)} *project-bundle.yaml\n`;
    try {
      writeFileSync(sums, ok);
      writeFileSync(join(root(), 'concerns', 'security.yaml.sha256'), `${sha(join(root(), 'concerns', 'security.yaml'))}\n`);
      const [pub, val] = await Promise.all([
        s.run(['publish', name, '--tag', `${name}:prod`], { env }),
        s.run(['validate', name, '--strict', '-o', 'json']),
      ]);
      expect(pub.code, pub.stderr).toBe(0);
      expect(pub.stdout).toContain('nothing changed');
      expect(val.code).toBe(0);
      expect(JSON.parse(val.stdout).manifests).toEqual({ files: [`${name}/SHA256SUMS`, `${name}/concerns/security.yaml.sha256`], verified: 3 });

      const bad = '0'.repeat(64);
      writeFileSync(sums, `${bad}  meta-bundle.yaml\n`);
      const [mis, misVal, misFile, otherFile] = await Promise.all([
        s.run(['publish', name, '--tag', `${name}:prod`], { env }),
        s.run(['validate', name, '--strict']),
        s.run(['validate', `${name}/meta-bundle.yaml`, '--strict']),
        s.run(['validate', `${name}/project-bundle.yaml`, '--strict']),
      ]);
      expect(misFile.code).toBe(1); // one file: the manifests of its directory that list it
      expect(misFile.stdout).toContain('[release_manifest_mismatch]');
      expect(otherFile.stdout).not.toContain('release_manifest');
      expect(mis.code).toBe(1);
      expect(mis.stderr).toContain(`${name}/SHA256SUMS:1: ${name}/meta-bundle.yaml does not match its digest: manifest sha256 ${bad}, file sha256 ${sha(meta)}`);
      expect(misVal.code).toBe(1);
      expect(misVal.stdout).toContain(`[release_manifest_mismatch] ${name}/meta-bundle.yaml does not match its digest: manifest sha256 ${bad}, file sha256 ${sha(meta)}`);

      writeFileSync(sums, `${ok}${sha(meta)}  gone.yaml\n`);
      const missing = await s.run(['publish', name, '--tag', `${name}:prod`], { env });
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain(`${name}/SHA256SUMS:3: ${name}/gone.yaml is listed but missing`);

      writeFileSync(sums, `${ok}not a digest line\n`);
      const [malformed, malVal] = await Promise.all([
        s.run(['publish', name, '--tag', `${name}:prod`], { env }),
        s.run(['validate', name, '--strict']),
      ]);
      expect(malformed.code).toBe(1);
      expect(malformed.stderr).toContain(`${name}/SHA256SUMS:3: malformed manifest line 'not a digest line'`);
      expect(malVal.code).toBe(1);
      expect(malVal.stdout).toContain('[release_manifest_malformed]');
    } finally {
      rmSync(sums, { force: true });
      rmSync(join(root(), 'concerns', 'security.yaml.sha256'), { force: true });
    }
  });

  it('publishes a project that declares SCS 0.1.0 under the 0.1.0 rules: each bundle says schema_version 0.1.0, so the API judges it as validate does', async () => {
    cpSync(join(ROOT, 'test/fixtures/validate/scs-0.1.0'), join(s.work, 'v01'), { recursive: true });
    const first = await s.run(['publish', 'v01', '--tag', 'clinic:prod', '-o', 'json'], { env });
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout).bundles.map((b: { id: string; action: string }) => [b.id, b.action])).toEqual([
      ['bundle:meta', 'published'], ['bundle:architecture', 'published'], ['bundle:clinic', 'published'],
    ]);
    const stored = await t.call('api', 'GET', `/api/bundles/${encodeURIComponent('bundle:architecture')}/versions/1.0.0`, { admin: true });
    expect(stored.body.schema_version).toBe('0.1.0');
    const again = await s.run(['publish', 'v01', '--tag', 'clinic:prod'], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('nothing changed: 3 bundles unchanged');
    // Without it, the API would judge the 0.1.0 domain bundle (a container of SCDs) by the 0.3.0 rules.
    const doc = parseYaml(readFileSync(join(s.work, 'v01/bundles/domains/architecture.yaml'), 'utf8'));
    const bare = await t.call('api', 'POST', '/api/bundles', { admin: true, body: { ...doc, version: '1.0.1' } });
    expect(bare.status).toBe(400);
  });

  it('exit codes: bundle publish DIR (3), usage (3), no directory (4), a closed port (5)', async () => {
    const closed = await closedPort();
    const [dir, noTag, badTag, envOpt, nowhere, down, badOut, wrongKey] = await Promise.all([
      s.run(['bundle', 'publish', name], { env }),
      s.run(['publish', name], { env }),
      s.run(['publish', name, '--tag', 'no-label'], { env }),
      s.run(['publish', name, '--tag', `${name}:prod`, '--environment', 'prod'], { env }),
      s.run(['publish', 'no-such-dir', '--tag', `${name}:prod`], { env }),
      s.run(['publish', name, '--tag', `${name}:prod`, '--endpoint', `http://127.0.0.1:${closed}`], { env }),
      s.run(['publish', name, '--tag', `${name}:prod`, '-o', 'yaml'], { env }),
      s.run(['publish', name, '--tag', `${name}:prod`], { env: { ...env, SVC_API_KEY: 'not-the-admin-key-0000' } }),
    ]);
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toContain('(HTTP 401)');
    expect(wrongKey.stderr).toContain('****0000');
    expect(wrongKey.stderr).not.toContain('not-the-admin-key');
    expect(dir.code).toBe(3);
    expect(dir.stderr).toContain(`${name} is a directory: use \`svc publish ${name} --tag TAG\` to publish a project`);
    expect(dir.stderr).not.toContain('EISDIR');
    expect(noTag.code).toBe(3);
    expect(noTag.stderr).toContain('--tag <name:label> is required');
    expect(badTag.code).toBe(3);
    expect(badTag.stderr).toContain("--tag 'no-label' is not a tag name");
    expect(envOpt.code).toBe(3);
    expect(envOpt.stderr).toContain('--environment is not supported');
    expect(nowhere.code).toBe(4);
    expect(down.code).toBe(5);
    expect(down.stderr).toContain(`cannot reach http://127.0.0.1:${closed}: connection refused`);
    expect(badOut.code).toBe(3);
  });
});

describe('publishOrder', () => {
  const b = (id: string, type: string, imports: string[], version = '1.0.0'): LocalBundle => ({ id, version, type, file: `${id}.yaml`, manifest: { id, type, version, imports }, documents: [], notLocal: [] });
  it('puts imports first, bottom-up by type among independent bundles, and names a cycle', () => {
    const order = publishOrder([
      b('bundle:p', 'project', ['bundle:d:1.0.0', 'bundle:m:1.0.0']),
      b('bundle:d', 'domain', ['bundle:c']),
      b('bundle:c', 'concern', []),
      b('bundle:m', 'meta', []),
      b('bundle:s', 'standards', ['bundle:m:1.0.0', 'bundle:elsewhere:1.0.0']),
    ]).map((x) => x.id);
    expect(order).toEqual(['bundle:m', 'bundle:s', 'bundle:c', 'bundle:d', 'bundle:p']);
    expect(() => publishOrder([b('bundle:a', 'standards', ['bundle:b:1.0.0']), b('bundle:b', 'standards', ['bundle:a'])]))
      .toThrow('import cycle: bundle:a:1.0.0 -> bundle:b:1.0.0 -> bundle:a:1.0.0');
  });
});

describe('release manifests (cli/lib/manifest.ts)', () => {
  it('reads sha256sum, BSD and bare-digest files and the SCS version manifest; refuses paths outside the directory', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-manifest-'));
    try {
      mkdirSync(join(dir, 'sub'));
      writeFileSync(join(dir, 'a.yaml'), 'a: 1\n');
      writeFileSync(join(dir, 'sub', 'b c.yaml'), 'b: 2\n');
      const a = sha(join(dir, 'a.yaml'));
      const b = sha(join(dir, 'sub', 'b c.yaml'));
      writeFileSync(join(dir, 'SHA256SUMS'), `# release 1.0.0\n\n${a}  a.yaml\nSHA256 (sub/b c.yaml) = ${b.toUpperCase()}\n`);
      writeFileSync(join(dir, 'sub', 'b c.yaml.sha256sum'), `${b}\n`);
      writeFileSync(join(dir, 'sub', 'VERSION-1.0.0-MANIFEST.yaml'), `version: 1.0.0\nbundle:\n  id: bundle:x\n  file: ../a.yaml\n  sha256: ${a}\n`);
      const ok = verifyManifests(dir);
      expect(ok.problems).toEqual([]);
      expect(ok.verified).toBe(4);
      expect(ok.manifests).toHaveLength(3);

      writeFileSync(join(dir, 'sub', 'VERSION-1.0.0-MANIFEST.yaml'), `version: 1.0.0\nbundle:\n  file: ../../escape.yaml\n  sha256: ${a}\n`);
      writeFileSync(join(dir, 'sub', 'b c.yaml.sha256sum'), `${b.slice(1)}\n`);
      const bad = verifyManifests(dir).problems.map(describeProblem);
      expect(bad).toHaveLength(2);
      expect(bad.join('\n')).toMatch(/VERSION-1\.0\.0-MANIFEST\.yaml:4: malformed manifest line '.*escape\.yaml': .*escape\.yaml is outside/);
      expect(bad.join('\n')).toMatch(/b c\.yaml\.sha256sum:1: malformed manifest line/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('compareStored ignores key order and names the first differing field', () => {
    const local: LocalBundle = { id: 'bundle:x', version: '1.0.0', type: 'concern', file: 'x.yaml', manifest: { id: 'bundle:x', version: '1.0.0', provenance: { created_by: 'me', created_at: 't' } }, documents: [{ id: 'scd:project:a', content: { k: [1, 2] } }], notLocal: [] };
    const stored = (manifest: unknown, documents: unknown[]) => ({ manifest, documents }) as unknown as Parameters<typeof compareStored>[1];
    expect(compareStored(local, stored({ provenance: { created_at: 't', created_by: 'me' }, version: '1.0.0', id: 'bundle:x' }, [{ content: { k: [1, 2] }, id: 'scd:project:a' }]))).toBeNull();
    expect(compareStored(local, stored({ id: 'bundle:x', version: '1.0.0', provenance: { created_by: 'you', created_at: 't' } }, []))).toBe('provenance.created_by (published "you", local "me")');
    expect(compareStored(local, stored(local.manifest, [{ id: 'scd:project:a', content: { k: [1, 3] } }]))).toBe('the SCD scd:project:a: content.k[1] (published 3, local 2)');
    expect(compareStored(local, stored({ ...local.manifest, extra: true }, local.documents))).toBe('extra (published true, local (absent))');
  });
});
