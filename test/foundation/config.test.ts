import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { generateNoteKey } from '../../src/core/tlog/note.js';
import { generateWitnessKey } from '../../src/core/tlog/cosignature.js';
import { adminKeyProblem, ConfigError, configWarnings, estimatedBits, isPatterned, isWeakSecret, loadConfig, urlPassword } from '../../src/shared/config.js';

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cfg-'));
const STRONG = 'k9T2vQx7Lm4Rz8Wp1Ys6Nb3Hc5Jd0Fg2Ae7';
const TLOG_SIGNING_KEY = generateNoteKey('svc.example/audit-log').signerKey;

describe('embedded mode', () => {
  it('generates missing secrets once, 0600, and reads them back', () => {
    const dir = tmp();
    const a = loadConfig({ SVC_DATA_DIR: dir });
    expect(a.mode).toBe('embedded');
    expect(a.generated.sort()).toEqual(['ADMIN_API_KEY', 'COLLECTOR_HMAC_SECRET', 'DEPLOYMENT_ID', 'JWT_SECRET', 'TLOG_SIGNING_KEY']);
    expect(a.adminApiKey).toMatch(/^admin_/);
    const st = fs.statSync(path.join(dir, 'secrets.json'));
    expect(st.mode & 0o777).toBe(0o600);
    const b = loadConfig({ SVC_DATA_DIR: dir });
    expect(b.generated).toEqual([]);
    expect(b.adminApiKey).toBe(a.adminApiKey);
    expect(b.jwtSecret).toBe(a.jwtSecret);
    expect(b.deploymentId).toBe(a.deploymentId);
    expect(b.tlog.signingKey).toBe(a.tlog.signingKey);
    expect(a.tlog.signingKey).toMatch(/^PRIVATE\+KEY\+svc\.localhost\/audit-log\+[0-9a-f]{8}\+/);
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
    const c = loadConfig({ DATABASE_URL: 'postgres://svc_app@127.0.0.1/db', JWT_SECRET: STRONG, DB_PASSWORD: 'p'.repeat(24), DEPLOYMENT_ID: '0b1d6a8e-4a4e-4d38-9d0e-3f3b7a1c2d4e', ADMIN_API_KEY: '', TLOG_SIGNING_KEY });
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

const DEPLOYMENT_ID = '0b1d6a8e-4a4e-4d38-9d0e-3f3b7a1c2d4e';
/** A complete production configuration but for what each test sets. */
const prod = (extra: Record<string, string>) => ({ DATABASE_URL: 'postgres://svc_app@127.0.0.1/db', JWT_SECRET: STRONG, DB_PASSWORD: 'p'.repeat(24), DEPLOYMENT_ID, TLOG_SIGNING_KEY, ...extra });
function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
  return [];
}

describe('production: ADMIN_API_KEY', () => {
  const WEAK = ['admin', 'a', 'ADMIN', 'Password', 'changeme', 'secret', 'test', '1234', '123456789', 'x'.repeat(31), 'k9T2vQx7Lm4Rz8Wp1Ys6Nb3Hc5', 'a'.repeat(48), 'abc'.repeat(16), 'ab12'.repeat(12), 'password' + '1'.repeat(32), 'changeme'.repeat(5), 'secret' + '!'.repeat(30), 'Admin' + '1234567890'.repeat(4)];
  it.each(WEAK)('%s is refused, and the message never carries the value', (key) => {
    const p = problems(prod({ ADMIN_API_KEY: key }));
    expect(p).toHaveLength(1);
    // The whole message is fixed text (and a length): it cannot carry the key.
    expect(p[0]).toMatch(
      /^ADMIN_API_KEY (is a known-weak value|is shorter than 32 characters \(\d+\)|is patterned \(a repeated character or run, or a padded common word\)): use at least 32 random characters \(for example admin_ followed by 24 random bytes in base64url\), or leave it empty to turn the admin API off$/,
    );
  });
  it('both problems are listed with the others (every bad field at once)', () => {
    const p = problems(prod({ NODE_ENV: 'production', ADMIN_API_KEY: 'admin', JWT_SECRET: 'ab12'.repeat(12), DB_PASSWORD: '' })).join('\n');
    expect(p).toMatch(/ADMIN_API_KEY/);
    expect(p).toMatch(/JWT_SECRET is too weak/);
    expect(p).toMatch(/DB_PASSWORD is required/);
  });
  it('a random 48-character key and the recommended admin_ form are accepted', () => {
    for (let i = 0; i < 50; i++) {
      for (const key of [randomBytes(36).toString('base64url'), `admin_${randomBytes(24).toString('base64url')}`, randomBytes(24).toString('hex')]) {
        expect(adminKeyProblem(key)).toBeNull();
        expect(loadConfig(prod({ ADMIN_API_KEY: key })).adminApiKey).toBe(key);
      }
    }
  });
  it('empty still means "admin API off" (503), not a refusal', () => {
    expect(loadConfig(prod({ ADMIN_API_KEY: '' })).adminApiKey).toBe('');
    expect(loadConfig(prod({})).adminApiKey).toBe('');
  });
  it('embedded mode accepts a weak key the user set, with a warning that does not carry it', () => {
    const c = loadConfig({ SVC_DATA_DIR: tmp(), ADMIN_API_KEY: 'admin', JWT_SECRET: STRONG });
    expect(c.adminApiKey).toBe('admin');
    const w = configWarnings(c);
    expect(w).toEqual(['ADMIN_API_KEY is a known-weak value: accepted in embedded mode, refused in production']);
    // A generated key draws no warning.
    expect(configWarnings(loadConfig({ SVC_DATA_DIR: tmp() }))).toEqual([]);
  });
});

describe('production: patterned JWT_SECRET', () => {
  const PATTERNED = ['z'.repeat(40), 'abcabcabcabcabcabcabcabcabcabcabc', 'ab12ab12ab12ab12ab12ab12ab12ab12', 'Qwerty' + '1234567890'.repeat(3), 'letmein' + '!'.repeat(30), 'Xk9Xk9Xk9Xk9Xk9Xk9Xk9Xk9Xk9Xk9Xk9Xk9', 'welcome2026welcome2026welcome2026'];
  it.each(PATTERNED)('%s is refused in production, accepted with a warning in embedded mode', (s) => {
    expect(isPatterned(s)).toBe(true);
    const p = problems(prod({ JWT_SECRET: s })).join('\n');
    expect(p).toMatch(/JWT_SECRET is (patterned|too weak)/);
    expect(p).not.toContain(s);
  });
  it('a patterned secret that passes the old checks is refused in production only', () => {
    // 40 characters, 8 distinct, no placeholder word: the old checks pass it.
    const s = 'Xk9#Lm2@'.repeat(5);
    expect(isWeakSecret(s)).toBe(false);
    expect(problems(prod({ JWT_SECRET: s }))).toEqual(['JWT_SECRET is patterned (a repeated character or run, or a padded common word): use at least 32 random characters']);
    const c = loadConfig({ SVC_DATA_DIR: tmp(), JWT_SECRET: s });
    expect(configWarnings(c)).toEqual(['JWT_SECRET is patterned: accepted in embedded mode, refused in production']);
  });
  it('random secrets of 32 hex, base64 and base64url characters score well above the bar', () => {
    for (let i = 0; i < 200; i++) {
      for (const v of [randomBytes(16).toString('hex'), randomBytes(32).toString('base64'), randomBytes(48).toString('base64url')]) {
        expect(estimatedBits(v)).toBeGreaterThan(80);
        expect(isPatterned(v)).toBe(false);
      }
    }
  });
});

describe('ADMIN_API_KEYS (named admin keys)', () => {
  it('takes name:key entries, comma-separated, each held to the admin key rules in production; a bare key is named by its position', () => {
    const a = randomBytes(36).toString('base64url');
    const b = `admin_${randomBytes(24).toString('base64url')}`;
    expect(loadConfig(prod({ ADMIN_API_KEYS: ` ops:${a} ,${b},` })).adminApiKeys).toEqual([{ name: 'ops', key: a }, { name: 'key-2', key: b }]);
    expect(loadConfig(prod({})).adminApiKeys).toEqual([]);
    const p = problems(prod({ ADMIN_API_KEYS: `ops:${a},alice:admin,bob:${'x'.repeat(12)}` }));
    expect(p).toEqual([
      'ADMIN_API_KEYS entry 2 (alice) is a known-weak value: use at least 32 random characters per key',
      'ADMIN_API_KEYS entry 3 (bob) is a known-weak value: use at least 32 random characters per key',
    ]);
    expect(p.join('\n')).not.toContain(a);
  });
  it('refuses a bad or repeated name, and admin while ADMIN_API_KEY is set', () => {
    const k = () => randomBytes(36).toString('base64url');
    const p = problems(prod({ ADMIN_API_KEY: k(), ADMIN_API_KEYS: `ops:${k()},ops:${k()},admin:${k()},bad name:${k()},empty:` }));
    expect(p).toEqual([
      'ADMIN_API_KEYS entry 2: the name ops is used twice (ADMIN_API_KEY is named admin)',
      'ADMIN_API_KEYS entry 3: the name admin is used twice (ADMIN_API_KEY is named admin)',
      "ADMIN_API_KEYS entry 4: the name must be 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit",
      'ADMIN_API_KEYS entry 5 (empty) has no key',
    ]);
  });
  it('keeps digests by name: a presented key gives its name, any other nothing', () => {
    const a = randomBytes(36).toString('base64url');
    const c = loadConfig(prod({ ADMIN_API_KEY: randomBytes(36).toString('base64url'), ADMIN_API_KEYS: `ops:${a}` }));
    expect(c.adminKeyring.names).toEqual(['admin', 'ops']);
    expect(c.adminKeyring.match(a)).toBe('ops');
    expect(c.adminKeyring.match(c.adminApiKey)).toBe('admin');
    expect(c.adminKeyring.match(`${a}x`)).toBeNull();
    expect(c.adminKeyring.match(undefined)).toBeNull();
  });
  it('AUDITOR_API_KEYS: named read-only keys, held to the same rules, named apart from the admin keys and never an admin key', () => {
    const k = () => randomBytes(36).toString('base64url');
    const [admin, ops, aud] = [k(), k(), k()];
    const c = loadConfig(prod({ ADMIN_API_KEY: admin, ADMIN_API_KEYS: `ops:${ops}`, AUDITOR_API_KEYS: `compliance:${aud}` }));
    expect(c.auditorApiKeys).toEqual([{ name: 'compliance', key: aud }]);
    expect(c.auditorKeyring.match(aud)).toBe('compliance');
    expect(c.auditorKeyring.match(admin)).toBeNull();
    expect(c.adminKeyring.match(aud)).toBeNull();
    expect(loadConfig(prod({ AUDITOR_API_KEYS: aud })).auditorApiKeys).toEqual([{ name: 'auditor-1', key: aud }]);
    const p = problems(prod({ ADMIN_API_KEY: admin, ADMIN_API_KEYS: `ops:${ops}`, AUDITOR_API_KEYS: `ops:${k()},admin:${k()},dup:${ops},weak:changeme` }));
    expect(p).toEqual([
      'AUDITOR_API_KEYS entry 1: the name ops is used twice (admin and auditor keys are named apart)',
      'AUDITOR_API_KEYS entry 2: the name admin is used twice (admin and auditor keys are named apart)',
      'AUDITOR_API_KEYS entry 4 (weak) is a known-weak value: use at least 32 random characters per key',
      'AUDITOR_API_KEYS entry 3 (dup) is also an admin key: an auditor key must be its own',
    ]);
    expect(p.join('\n')).not.toContain(ops);
  });
  it('embedded mode accepts a weak entry with a warning', () => {
    const c = loadConfig({ SVC_DATA_DIR: tmp(), JWT_SECRET: STRONG, ADMIN_API_KEYS: 'changeme' });
    expect(c.adminApiKeys).toEqual([{ name: 'key-1', key: 'changeme' }]);
    expect(configWarnings(c)).toEqual(['ADMIN_API_KEYS entry 1 (key-1) is a known-weak value: accepted in embedded mode, refused in production']);
  });
});

describe('production: the database password', () => {
  it('DB_PASSWORD is required in production, even when DATABASE_URL carries a password (decisions.md)', () => {
    expect(problems(prod({ DB_PASSWORD: '' }))).toEqual(['DB_PASSWORD is required in production and must not be empty']);
    expect(problems(prod({ DATABASE_URL: 'postgres://svc_app:s3cr%40t@127.0.0.1/db', DB_PASSWORD: '' }))).toEqual(['DB_PASSWORD is required in production and must not be empty']);
  });
  it("a URL's own password is read (it wins over DB_PASSWORD for that connection)", () => {
    const env = prod({ DATABASE_URL: 'postgres://svc_app:s3cr%40t@127.0.0.1/db' });
    expect(loadConfig(env).dbPassword).toBe('p'.repeat(24));
    expect(urlPassword(env.DATABASE_URL)).toBe('s3cr@t');
    expect(urlPassword('postgres://svc_app@127.0.0.1/db')).toBeNull();
    expect(urlPassword(null)).toBeNull();
  });
  it('is accepted from DB_PASSWORD when the URL carries none', () => {
    expect(loadConfig(prod({})).dbPassword).toBe('p'.repeat(24));
  });
});

describe('COLLECTOR_PSEUDONYMIZE_ATTRIBUTES', () => {
  it('defaults to the identifiers, takes a comma-separated list, and empty means none', () => {
    expect(loadConfig({ SVC_DATA_DIR: tmp() }).collector.pseudonymizeAttributes).toEqual(['user.id', 'user.account_uuid', 'user.account_id', 'actor_identity', 'organization.id']);
    expect(loadConfig({ SVC_DATA_DIR: tmp(), COLLECTOR_PSEUDONYMIZE_ATTRIBUTES: ' user.id , enduser.id,' }).collector.pseudonymizeAttributes).toEqual(['user.id', 'enduser.id']);
    expect(loadConfig({ SVC_DATA_DIR: tmp(), COLLECTOR_PSEUDONYMIZE_ATTRIBUTES: '' }).collector.pseudonymizeAttributes).toEqual([]);
  });
  it('refuses what is not an attribute name', () => {
    expect(problems({ SVC_DATA_DIR: tmp(), COLLECTOR_PSEUDONYMIZE_ATTRIBUTES: 'user.id,bad name' })).toEqual([
      'COLLECTOR_PSEUDONYMIZE_ATTRIBUTES must list attribute names (letters, digits, _ . : -), comma-separated (got "bad name")',
    ]);
  });
});

describe('transparency log settings', () => {
  it('production requires TLOG_SIGNING_KEY and refuses a malformed one, never printing it', () => {
    const { TLOG_SIGNING_KEY: _omit, ...rest } = prod({});
    expect(problems(rest as Record<string, string>)).toEqual([expect.stringMatching(/^TLOG_SIGNING_KEY is required/)]);
    const bad = 'PRIVATE+KEY+x+00000000+c2VjcmV0LXNlZWQ=';
    const p = problems(prod({ TLOG_SIGNING_KEY: bad }));
    expect(p).toEqual([expect.stringMatching(/^TLOG_SIGNING_KEY is not a note signer key/)]);
    expect(p.join('\n')).not.toContain('c2VjcmV0LXNlZWQ');
  });
  it('reads the origin, interval, export dir, webhook, public flag and witness keys; refuses bad ones', () => {
    const w = generateWitnessKey('witness.example/w');
    const c = loadConfig(prod({ TLOG_ORIGIN: 'svc.example/log', TLOG_CHECKPOINT_INTERVAL_MS: '250', TLOG_EXPORT_DIR: '/tmp/cp', TLOG_CHECKPOINT_WEBHOOK: 'https://a.example/cp', TLOG_PUBLIC: '1', TLOG_WITNESS_KEYS: ` ${w.verifierKey} ` }));
    expect(c.tlog).toMatchObject({ origin: 'svc.example/log', checkpointIntervalMs: 250, exportDir: '/tmp/cp', checkpointWebhook: 'https://a.example/cp', public: true, witnessKeys: [w.verifierKey] });
    const p = problems(prod({ TLOG_WITNESS_KEYS: 'nope', TLOG_CHECKPOINT_WEBHOOK: 'ftp://x', TLOG_CHECKPOINT_INTERVAL_MS: '0', TLOG_ORIGIN: 'a\nb' }));
    expect(p).toHaveLength(4);
    // A log key is not a witness key (cosignature/v1 is its own key type).
    expect(problems(prod({ TLOG_WITNESS_KEYS: generateNoteKey('x').verifierKey }))).toHaveLength(1);
  });
});
