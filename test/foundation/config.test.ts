import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, isWeakSecret, loadConfig } from '../../src/shared/config.js';

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cfg-'));
const STRONG = 'k9T2vQx7Lm4Rz8Wp1Ys6Nb3Hc5Jd0Fg2Ae7';

describe('embedded mode', () => {
  it('generates missing secrets once, 0600, and reads them back', () => {
    const dir = tmp();
    const a = loadConfig({ SVC_DATA_DIR: dir });
    expect(a.mode).toBe('embedded');
    expect(a.generated.sort()).toEqual(['ADMIN_API_KEY', 'COLLECTOR_HMAC_SECRET', 'DEPLOYMENT_ID', 'JWT_SECRET']);
    expect(a.adminApiKey).toMatch(/^admin_/);
    const st = fs.statSync(path.join(dir, 'secrets.json'));
    expect(st.mode & 0o777).toBe(0o600);
    const b = loadConfig({ SVC_DATA_DIR: dir });
    expect(b.generated).toEqual([]);
    expect(b.adminApiKey).toBe(a.adminApiKey);
    expect(b.jwtSecret).toBe(a.jwtSecret);
    expect(b.deploymentId).toBe(a.deploymentId);
  });
  it('never generates a secret that is set, even to the empty string (no open mode)', () => {
    const c = loadConfig({ SVC_DATA_DIR: tmp(), ADMIN_API_KEY: '' });
    expect(c.adminApiKey).toBe('');
    expect(c.generated).not.toContain('ADMIN_API_KEY');
  });
});

describe('production mode', () => {
  it('lists every bad field at once', () => {
    try {
      loadConfig({ DATABASE_URL: 'postgres://x@127.0.0.1/db', JWT_SECRET: 'short', DEPLOYMENT_ID: 'nope', API_PORT: 'abc', DB_SSL_MODE: 'maybe' });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const p = (e as ConfigError).problems.join('\n');
      expect(p).toMatch(/JWT_SECRET/);
      expect(p).toMatch(/DB_PASSWORD/);
      expect(p).toMatch(/DEPLOYMENT_ID/);
      expect(p).toMatch(/API_PORT/);
      expect(p).toMatch(/DB_SSL_MODE/);
    }
  });
  it('refuses a missing JWT_SECRET and generates nothing', () => {
    const dir = tmp();
    expect(() => loadConfig({ NODE_ENV: 'production', SVC_DATA_DIR: dir, DB_PASSWORD: 'x'.repeat(24), DEPLOYMENT_ID: '0b1d6a8e-4a4e-4d38-9d0e-3f3b7a1c2d4e' })).toThrow(/JWT_SECRET is required/);
    expect(fs.existsSync(path.join(dir, 'secrets.json'))).toBe(false);
  });
  it('accepts a complete configuration; an empty admin key means 503, not a failure', () => {
    const c = loadConfig({ DATABASE_URL: 'postgres://svc_app@127.0.0.1/db', JWT_SECRET: STRONG, DB_PASSWORD: 'p'.repeat(24), DEPLOYMENT_ID: '0b1d6a8e-4a4e-4d38-9d0e-3f3b7a1c2d4e', ADMIN_API_KEY: '' });
    expect(c.mode).toBe('production');
    expect(c.adminApiKey).toBe('');
    expect(c.ports.api).toBe(8000);
    expect(c.agentKeyTtlDays).toBe(90);
  });
});

describe('weak secrets', () => {
  it.each(['', 'short', 'a'.repeat(40), 'changemechangemechangemechangeme12', 'my-super-secret-value-for-jwt-signing-1234', 'Password1234567890Password1234567890'])('%s is weak', (s) => {
    expect(isWeakSecret(s)).toBe(true);
  });
  it('a random 32+ character value is strong', () => {
    expect(isWeakSecret(STRONG)).toBe(false);
  });
});
