/**
 * deploy/systemd: one unit per service, each running an existing service with the
 * environment file, a dedicated user, hardening and restart on failure; `systemd-analyze
 * verify` accepts them (skipped, saying why, where systemd-analyze is missing); a unit's own
 * command line starts its service and SIGTERM stops it with exit 0; deploy/svc.env.example
 * names only variables the configuration reads.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SERVICE_NAMES } from '../../src/shared/service.js';
import { ADMIN_KEY, JWT_SECRET } from '../harness.js';
import { SERVER_ENV } from '../audit/server-process.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const UNITS = path.join(ROOT, 'deploy/systemd');
const ANALYZE = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((p) => existsSync(p));
if (!ANALYZE) console.warn('test/deploy/systemd.test.ts: systemd-analyze verify skipped: no systemd-analyze (Debian\'s systemd package)');

const unitFile = (service: string) => path.join(UNITS, `svc-${service}.service`);

/** The unit's `Key=value` lines (comments and sections dropped); repeated keys in order. */
function keys(file: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (m) out.set(m[1]!, [...(out.get(m[1]!) ?? []), m[2]!]);
  }
  return out;
}

describe('deploy/systemd units', () => {
  it('one unit per service, and no unit for anything else', () => {
    const units = readdirSync(UNITS).filter((f) => f.endsWith('.service')).sort();
    expect(units).toEqual(SERVICE_NAMES.map((s) => `svc-${s}.service`).sort());
  });

  it.each(SERVICE_NAMES)('svc-%s.service: runs that service as svc with the environment file, hardened, restarted on failure', (service) => {
    const k = keys(unitFile(service));
    const one = (name: string) => k.get(name)?.[0];
    expect(one('ExecStart')).toBe(`/usr/bin/node --max-semi-space-size=16 --heap-growing-percent=100 dist/src/main.js ${service}`);
    expect(k.get('Environment')).toEqual(Object.entries(SERVER_ENV).map(([name, value]) => `${name}=${value}`));
    expect({ user: one('User'), group: one('Group'), env: one('EnvironmentFile'), restart: one('Restart'), dir: one('WorkingDirectory') }).toEqual({
      user: 'svc',
      group: 'svc',
      env: '/etc/svc/svc.env',
      restart: 'on-failure',
      dir: '/opt/svc',
    });
    for (const [name, value] of [
      ['NoNewPrivileges', 'yes'],
      ['ProtectSystem', 'strict'],
      ['PrivateTmp', 'yes'],
      ['PrivateDevices', 'yes'],
      ['ReadWritePaths', '/var/lib/svc'],
      ['StateDirectory', 'svc'],
      ['RestrictAddressFamilies', 'AF_INET AF_INET6 AF_UNIX'],
      ['CapabilityBoundingSet', ''],
    ]) {
      expect({ service, name, value: one(name!) }).toEqual({ service, name, value });
    }
    expect(['yes', 'read-only']).toContain(one('ProtectHome'));
  });

  it.skipIf(!ANALYZE)('systemd-analyze verify accepts every unit (and does complain about a broken copy)', () => {
    const files = [...SERVICE_NAMES.map(unitFile), path.join(UNITS, 'svc.target')];
    const ok = spawnSync(ANALYZE!, ['verify', ...files], { encoding: 'utf8' });
    expect({ status: ok.status, out: (ok.stdout + ok.stderr).trim() }).toEqual({ status: 0, out: '' });
    // The same check sees a misspelt directive and a missing program.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-units-'));
    try {
      const broken = path.join(dir, 'svc-api.service');
      copyFileSync(unitFile('api'), broken);
      copyFileSync(path.join(UNITS, 'svc.target'), path.join(dir, 'svc.target'));
      writeFileSync(broken, readFileSync(broken, 'utf8').replace('NoNewPrivileges=yes', 'NoNewPrivilege=yes').replace('/usr/bin/node ', '/usr/bin/no-such-node '));
      const bad = spawnSync(ANALYZE!, ['verify', broken], { encoding: 'utf8' });
      expect(bad.stdout + bad.stderr).toContain('NoNewPrivilege');
      expect(bad.stdout + bad.stderr).toContain('no-such-node');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a unit\'s command line starts its service, and SIGTERM stops it with exit 0', async () => {
    const exec = keys(unitFile('context-webhook')).get('ExecStart')![0]!.split(' ');
    const data = mkdtempSync(path.join(os.tmpdir(), 'svc-unit-run-'));
    try {
      const child = spawn(process.execPath, exec.slice(1), {
        cwd: ROOT,
        // Embedded mode on a free port: what the unit runs, without PostgreSQL.
        env: { PATH: process.env.PATH, SVC_DATA_DIR: data, CONTEXT_WEBHOOK_PORT: '0', ADMIN_API_KEY: ADMIN_KEY, JWT_SECRET, DEPLOYMENT_ID: '0b8f2f8e-7c1a-4d47-9a3e-2f0f6f7f2a11', COLLECTOR_HMAC_SECRET: JWT_SECRET },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(`exit ${code ?? signal}`)));
      const listening = await new Promise<boolean>((resolve) => {
        const check = () => {
          if (/"listening"/.test(out) && /context-webhook/.test(out)) resolve(true);
        };
        child.stdout.on('data', check);
        child.stderr.on('data', check);
        void exited.then(() => resolve(false));
        check();
      });
      expect({ listening, out: listening ? '' : out }).toEqual({ listening: true, out: '' });
      child.kill('SIGTERM');
      const exit = await exited;
      expect(`${exit}\n${out}`).toMatch(/^exit 0\n/);
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('deploy/svc.env.example', () => {
  it('names only variables the configuration reads, and sets the production ones', () => {
    const text = readFileSync(path.join(ROOT, 'deploy/svc.env.example'), 'utf8');
    const names = [...text.matchAll(/^#?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]!);
    const config = readFileSync(path.join(ROOT, 'src/shared/config.ts'), 'utf8');
    const unknown = names.filter((n) => n !== 'NODE_ENV' && !config.includes(`'${n}'`));
    expect(unknown).toEqual([]);
    for (const required of ['NODE_ENV', 'DATABASE_URL', 'DB_PASSWORD', 'REDIS_URL', 'ADMIN_API_KEY', 'JWT_SECRET', 'DEPLOYMENT_ID', 'SVC_DATA_DIR']) {
      expect(text).toMatch(new RegExp(`^${required}=`, 'm'));
    }
  });
});
