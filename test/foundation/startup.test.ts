/** The real process: `tsx src/main.ts` refuses bad configurations with a message and exit 1. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openConfiguredDb, StartupError } from '../../src/shared/app-context.js';
import { loadConfig } from '../../src/shared/config.js';
import { memoryLogger } from '../../src/shared/logger.js';
import { createTestDb, REAL, TLOG_KEY } from '../harness.js';
import { spawnApi } from '../audit/server-process.js';

const root = path.resolve(__dirname, '../..');
function runMain(env: Record<string, string>) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', 'api'], {
    cwd: root,
    env: { PATH: process.env.PATH!, HOME: os.tmpdir(), ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('start-up refusals', () => {
  it('production without JWT_SECRET and DB_PASSWORD exits 1 naming both', () => {
    const r = runMain({ NODE_ENV: 'production', SVC_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'svc-s-')), DEPLOYMENT_ID: '0b1d6a8e-4a4e-4d38-9d0e-3f3b7a1c2d4e' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/JWT_SECRET is required/);
    expect(r.stderr).toMatch(/DB_PASSWORD is required/);
  });
  it('a weak JWT_SECRET exits 1', () => {
    const r = runMain({ NODE_ENV: 'production', JWT_SECRET: 'secretsecretsecretsecretsecretsecret', DB_PASSWORD: 'x'.repeat(24), DEPLOYMENT_ID: '0b1d6a8e-4a4e-4d38-9d0e-3f3b7a1c2d4e', SVC_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'svc-s-')) });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/JWT_SECRET is too weak/);
  });
  it.each([
    ['admin', 'is a known-weak value'],
    ['Tr0ub4dor&3', 'is shorter than 32 characters (11)'],
  ])('ADMIN_API_KEY=%s in production exits 1 naming the variable, never printing the key', (key, why) => {
    const r = runMain({ NODE_ENV: 'production', ADMIN_API_KEY: key, JWT_SECRET: 'k9T2vQx7Lm4Rz8Wp1Ys6Nb3Hc5Jd0Fg2Ae7', TLOG_SIGNING_KEY: TLOG_KEY.signerKey, DB_PASSWORD: 'x'.repeat(24), DEPLOYMENT_ID: '0b1d6a8e-4a4e-4d38-9d0e-3f3b7a1c2d4e', SVC_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'svc-s-')) });
    expect(r.status).toBe(1);
    // Exactly the fixed message: no other output, so the key is nowhere in it.
    expect(r.stderr).toBe(`invalid configuration:\n  - ADMIN_API_KEY ${why}: use at least 32 random characters (for example admin_ followed by 24 random bytes in base64url), or leave it empty to turn the admin API off\n`);
    expect(r.stdout).toBe('');
  });
  it('production refuses an empty DB_PASSWORD even when DATABASE_URL carries a password (decisions.md)', () => {
    const r = runMain({
      DATABASE_URL: 'postgres://svc_app:url-password-0000@127.0.0.1:1/none',
      DB_PASSWORD: '',
      JWT_SECRET: 'k9T2vQx7Lm4Rz8Wp1Ys6Nb3Hc5Jd0Fg2Ae7', TLOG_SIGNING_KEY: TLOG_KEY.signerKey,
      DEPLOYMENT_ID: '0b1d6a8e-4a4e-4d38-9d0e-3f3b7a1c2d4e',
      SVC_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'svc-s-')),
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('invalid configuration:\n  - DB_PASSWORD is required in production and must not be empty\n');
  });
  it.runIf(REAL)("production connects with the password DATABASE_URL carries when DB_PASSWORD is another", async () => {
    const testDb = await createTestDb();
    try {
      const u = new URL(testDb.appUrl!);
      u.password = 'svc-test-only-password-0000';
      const p = await spawnApi(u.toString(), '0b1d6a8e-4a4e-4d38-9d0e-3f3b7a1c2d4e', { DB_PASSWORD: 'not-the-url-password-but-set-0000', DATABASE_MIGRATION_URL: testDb.ownerUrl! });
      try {
        expect((await fetch(`${p.url}/health`)).status).toBe(200);
        expect(p.output()).not.toContain('DB_PASSWORD');
      } finally {
        await p.stop();
      }
    } finally {
      await testDb.close();
    }
  }, 180_000);
  it.runIf(REAL)('connecting as a PostgreSQL superuser is refused', async () => {
    const config = loadConfig({ DATABASE_URL: process.env.DATABASE_MIGRATION_URL || process.env.DATABASE_URL!, JWT_SECRET: 'k9T2vQx7Lm4Rz8Wp1Ys6Nb3Hc5Jd0Fg2Ae7', TLOG_SIGNING_KEY: TLOG_KEY.signerKey, DB_PASSWORD: 'x'.repeat(24), DEPLOYMENT_ID: '0b1d6a8e-4a4e-4d38-9d0e-3f3b7a1c2d4e' });
    await expect(openConfiguredDb(config, memoryLogger())).rejects.toThrow(StartupError);
    await expect(openConfiguredDb(config, memoryLogger())).rejects.toThrow(/superuser/);
  });
});

describe('graceful stop', () => {
  it('SIGTERM stops accepting, finishes, and exits 0', async () => {
    const { spawn } = await import('node:child_process');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-stop-'));
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'api'], {
      cwd: root,
      env: { PATH: process.env.PATH!, HOME: os.tmpdir(), SVC_DATA_DIR: dir, API_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no listening line: ${err}`)), 90_000);
      child.stderr.on('data', (d) => {
        err += d;
        const line = err
          .split('\n')
          .slice(0, -1) // complete lines only
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as { msg?: string; service?: string; url?: string })
          .find((l) => l.msg === 'listening' && l.service === 'api');
        if (line?.url) {
          clearTimeout(timer);
          resolve(line.url);
        }
      });
    });
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(200);
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
    const lines = err.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg?: string; signal?: string });
    expect(lines.filter((l) => l.msg === 'stopping' || l.msg === 'stopped').map((l) => [l.msg, l.signal])).toEqual([['stopping', 'SIGTERM'], ['stopped', 'SIGTERM']]);
    await expect(fetch(`${url}/health`)).rejects.toThrow();
    // The embedded secrets were generated once, 0600, and the admin key was never logged.
    const secrets = JSON.parse(fs.readFileSync(path.join(dir, 'secrets.json'), 'utf8'));
    expect(err).not.toContain(secrets.ADMIN_API_KEY);
  }, 120_000);
});
