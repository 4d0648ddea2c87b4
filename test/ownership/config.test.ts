/** The ownership settings (README: Ownership transfers): defaults and validation. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/shared/config.js';
import { generateNoteKey } from '../../src/core/tlog/note.js';

const base = {
  DATABASE_URL: 'postgres://svc_app@127.0.0.1/db',
  JWT_SECRET: 'k9T2vQx7Lm4Rz8Wp1Ys6Nb3Hc5Jd0Fg2Ae7',
  DB_PASSWORD: 'p'.repeat(24),
  DEPLOYMENT_ID: '0b1d6a8e-4a4e-4d38-9d0e-3f3b7a1c2d4e',
  TLOG_SIGNING_KEY: generateNoteKey('svc.example/audit-log').signerKey,
};

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
}

describe('ownership settings', () => {
  it('default to org-admin, a 72-hour window and a 300-second expiry job', () => {
    expect(loadConfig(base).ownership).toEqual({ orgAdminOwnerId: 'org-admin', transferWindowHours: 72, expiryIntervalSeconds: 300, webhook: null });
  });
  it('take set values', () => {
    const c = loadConfig({ ...base, ORG_ADMIN_OWNER_ID: 'it-ops@example.org', TRANSFER_WINDOW_HOURS: '24', TRANSFER_EXPIRY_INTERVAL_SECONDS: '60', OWNERSHIP_WEBHOOK: 'https://tickets.example.org/hook' });
    expect(c.ownership).toEqual({ orgAdminOwnerId: 'it-ops@example.org', transferWindowHours: 24, expiryIntervalSeconds: 60, webhook: 'https://tickets.example.org/hook' });
  });
  it('list every bad value', () => {
    const p = problems({ ...base, ORG_ADMIN_OWNER_ID: 'has space', TRANSFER_WINDOW_HOURS: '0', TRANSFER_EXPIRY_INTERVAL_SECONDS: 'soon', OWNERSHIP_WEBHOOK: 'mailto:x' });
    expect(p).toHaveLength(4);
    expect(p).toContain('OWNERSHIP_WEBHOOK must be an http or https URL');
    expect(p.join('\n')).toMatch(/ORG_ADMIN_OWNER_ID[\s\S]*TRANSFER_WINDOW_HOURS|TRANSFER_WINDOW_HOURS[\s\S]*ORG_ADMIN_OWNER_ID/);
    expect(p.some((x) => x.startsWith('TRANSFER_EXPIRY_INTERVAL_SECONDS'))).toBe(true);
  });
});
