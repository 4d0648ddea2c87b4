import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ROOT, sandbox } from './helpers.js';

// Every test spawns the real bin (tsx start-up, ~1 s each on an idle machine): allow for a loaded one.
vi.setConfig({ testTimeout: 240_000 });

const KEY = 'admin_k3y_abcdefghijklmnopqrstuvwxyz_9876';

describe('svc init', () => {
  const s = sandbox();
  beforeAll(() => mkdirSync(join(s.work, 'proj'), { recursive: true }));
  afterAll(() => s.cleanup());

  it('creates .svc/ in an existing project, refuses to clobber it, replaces it with --force', async () => {
    const cwd = join(s.work, 'proj');
    const first = await s.run(['init'], { cwd });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('Initialized .svc/');
    expect(readFileSync(join(cwd, '.svc', 'config.yaml'), 'utf8')).toContain('name: proj');
    expect(readFileSync(join(cwd, '.svc', '.gitignore'), 'utf8')).toContain('credentials.yaml');

    writeFileSync(join(cwd, '.svc', 'config.yaml'), 'project:\n  name: edited\n');
    const again = await s.run(['init'], { cwd });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('.svc already exists; not overwriting it (use --force');
    expect(readFileSync(join(cwd, '.svc', 'config.yaml'), 'utf8')).toContain('edited');

    const forced = await s.run(['init', '--force', '--name', 'renamed'], { cwd });
    expect(forced.code).toBe(0);
    expect(readFileSync(join(cwd, '.svc', 'config.yaml'), 'utf8')).toContain('name: renamed');
  });

  it('fails on a directory that does not exist (exit 4)', async () => {
    const r = await s.run(['init', 'nope']);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('no such directory');
  });
});

describe('svc config', () => {
  const s = sandbox();
  const proj = () => join(s.work, 'proj');
  beforeAll(async () => {
    mkdirSync(proj(), { recursive: true });
    await s.run(['init'], { cwd: proj() });
  });
  afterAll(() => s.cleanup());

  it('stores api.key with mode 0600 and masks it in show; get prints it', async () => {
    const set = await s.run(['config', 'set', 'api.key', KEY, '--user'], { cwd: proj() });
    expect(set.code, set.stderr).toBe(0);
    const file = join(s.home, 'credentials.yaml');
    expect(set.stdout).toContain(`api.key set in ${file} (mode 0600)`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(existsSync(join(s.home, 'config.yaml'))).toBe(false); // the key is not in the plain config

    const show = await s.run(['config', 'show'], { cwd: proj() });
    expect(show.code).toBe(0);
    expect(show.stdout).toContain(`api.key = ****9876    [user ${file}]`);
    expect(show.stdout).not.toContain(KEY);
    const json = JSON.parse((await s.run(['config', 'show', '-o', 'json'], { cwd: proj() })).stdout);
    expect(JSON.stringify(json)).not.toContain(KEY);
    expect(json.files.user).toBe(s.home);

    const get = await s.run(['config', 'get', 'api.key'], { cwd: proj() });
    expect(get.stdout.trim()).toBe(KEY);
  });

  it('writes the project scope by default inside a project; project beats user; env beats both', async () => {
    await s.run(['config', 'set', 'api.endpoint', 'https://user.example.com', '--user'], { cwd: proj() });
    const set = await s.run(['config', 'set', 'api.endpoint', 'https://project.example.com'], { cwd: proj() });
    expect(set.code).toBe(0);
    expect(set.stdout).toContain('api.endpoint set in .svc/config.yaml');
    expect(readFileSync(join(proj(), '.svc', 'config.yaml'), 'utf8')).toContain('endpoint: https://project.example.com');
    const [inProject, outside, env] = await Promise.all([
      s.run(['config', 'get', 'api.endpoint'], { cwd: proj() }),
      s.run(['config', 'get', 'api.endpoint'], { cwd: s.work }),
      s.run(['config', 'get', 'api.endpoint'], { cwd: proj(), env: { SVC_API_ENDPOINT: 'https://env.example.com' } }),
    ]);
    expect(inProject.stdout.trim()).toBe('https://project.example.com');
    expect(outside.stdout.trim()).toBe('https://user.example.com');
    expect(env.stdout.trim()).toBe('https://env.example.com');

    // A key written into the project scope still lands in a 0600 credentials file.
    await s.run(['config', 'set', 'api.key', KEY], { cwd: proj() });
    expect(statSync(join(proj(), '.svc', 'credentials.yaml')).mode & 0o777).toBe(0o600);
    const unset = await s.run(['config', 'unset', 'api.key', '--project'], { cwd: proj() });
    expect(unset.code).toBe(0);
  });

  it('rejects unknown keys and bad values (exit 3); get of an unset key is exit 1', async () => {
    const [unknown, badUrl, badTimeout, unset, noProject] = await Promise.all([
      s.run(['config', 'set', 'api.nope', 'x']),
      s.run(['config', 'set', 'api.endpoint', 'not a url', '--user']),
      s.run(['config', 'set', 'api.timeout_ms', '-5', '--user']),
      s.run(['config', 'get', 'api.key'], { cwd: s.work, env: { SVC_CONFIG_HOME: join(s.dir, 'empty') } }),
      s.run(['config', 'set', 'author', 'me', '--project'], { cwd: s.work }),
    ]);
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toContain("unknown configuration key 'api.nope'; known keys: api.endpoint, api.key");
    expect(badUrl.code).toBe(3);
    expect(badUrl.stderr).toContain('invalid value for api.endpoint: must be an http(s) URL');
    expect(badTimeout.code).toBe(3);
    expect(unset.code).toBe(1);
    expect(unset.stderr).toContain('api.key is not set (svc config set api.key <value>)');
    expect(noProject.code).toBe(1);
    expect(noProject.stderr).toContain('not inside an svc project');
    const sub = await s.run(['config', 'frobnicate']);
    expect(sub.code).toBe(3);
    expect(sub.stderr).toContain("svc config: unknown command 'frobnicate'");
  });
});

describe('svc --version, --help, info', () => {
  const s = sandbox();
  beforeAll(() => mkdirSync(s.work, { recursive: true }));
  afterAll(() => s.cleanup());

  it('prints the version, the help of the tool and of each command', async () => {
    const [v, short, help, validateHelp, versionHelp, bundleHelp, unknown] = await Promise.all([
      s.run(['--version']), s.run(['-v']), s.run(['--help']), s.run(['validate', '--help']),
      s.run(['bundle', 'version', '--help']), s.run(['bundle', '--help']), s.run(['frobnicate']),
    ]);
    expect(v.stdout.trim()).toBe('0.3.0');
    expect(short.stdout.trim()).toBe('0.3.0');
    for (const c of ['new <project-name>', 'init [dir]', 'bundle create', 'bundle version <bundle-path>', 'bundle publish <bundle-path>', 'validate [...paths]', 'config show', 'config set <key> <value>', 'config get <key>', 'info']) {
      expect(help.stdout).toContain(c);
    }
    expect(help.stdout).toContain('-v, --version');
    expect(validateHelp.code).toBe(0);
    expect(validateHelp.stdout).toContain('--strict');
    expect(validateHelp.stdout).toContain('-o, --output <format>');
    expect(versionHelp.stdout).toContain('$ svc bundle version <bundle-path>');
    expect(versionHelp.stdout).toContain('--version <semver>');
    expect(bundleHelp.stdout).toMatch(/^ {2}svc bundle publish <bundle-path> +Send a bundle and its SCD documents/m);
    // A command's help says first what it does (cac itself shows no description there).
    expect(validateHelp.stdout.split('\n')[0]).toBe('svc validate: Validate bundles, SCDs and domain manifests (a file, a directory, or several)');
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toContain("unknown command 'frobnicate'");
  });

  it('svc info shows version, runtime, install path and configuration locations', async () => {
    const r = await s.run(['info', '-o', 'json']);
    expect(r.code).toBe(0);
    const info = JSON.parse(r.stdout);
    expect(info).toMatchObject({ version: '0.3.0', node: process.version, install_path: ROOT.replace(/\/$/, ''), user_config: s.home, project_config: null });
    const text = await s.run(['info']);
    expect(text.stdout).toContain('svc 0.3.0');
    expect(text.stdout).toContain(`install path:   ${ROOT.replace(/\/$/, '')}`);
  });
});
