/**
 * License enforcement: start-up (spec 3.5) with keypairs generated here and
 * LICENSE_PUBLIC_KEY, and the agent cap on POST /api/agents (spec 7.3, 8; 402 body of
 * decisions.md), including two concurrent creates at cap - 1.
 */
import { importSPKI, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, REAL, startTestStack, testEnv, type TestDb, type TestStack, TEST_WHO } from '../../../test/harness.js';
import { agentId, licenseAuthority, makeAgent, type LicenseAuthority } from '../../../test/identity/fixtures.js';
import { createAppContext } from '../../shared/app-context.js';
import { loadConfig } from '../../shared/config.js';
import { EMBEDDED_LICENSE_PUBLIC_KEY, LicenseError, LICENSE_ISSUER } from '../../shared/license.js';
import { memoryLogger } from '../../shared/logger.js';
import { createAgent } from './create-agent.js';

let authority: LicenseAuthority;
let tdb: TestDb;
beforeAll(async () => {
  authority = await licenseAuthority();
  tdb = await createTestDb();
});
afterAll(async () => {
  await tdb?.close();
});

const DAY = 86_400;

async function boot(env: Record<string, string | undefined>) {
  const logger = memoryLogger();
  const config = loadConfig(testEnv(env));
  const ctx = await createAppContext(config, { logger, db: tdb.db, skipMigrations: true });
  await ctx.close();
  return { ctx, lines: logger.lines.map((l) => JSON.parse(l)) };
}

async function bootError(env: Record<string, string | undefined>): Promise<Error> {
  try {
    await boot(env);
  } catch (e) {
    return e as Error;
  }
  throw new Error('start-up was expected to fail');
}

describe('license at start-up (spec 3.5)', () => {
  it('unset: a warning, and the service runs uncapped', async () => {
    const { ctx, lines } = await boot({ LICENSE_KEY: undefined });
    expect(ctx.license).toBeNull();
    expect(lines).toContainEqual(expect.objectContaining({ level: 'warn', msg: expect.stringMatching(/LICENSE_KEY is not set/) }));
  });

  it('valid: claims held in process, no expiry warning; the license itself is never logged', async () => {
    const token = await authority.mint({ agent_cap: 7, tier: 'regulated' });
    const { ctx, lines } = await boot({ LICENSE_KEY: token, LICENSE_PUBLIC_KEY: authority.publicKeyPem });
    expect(ctx.license).toMatchObject({ agent_cap: 7, tier: 'regulated', iss: LICENSE_ISSUER });
    expect(lines.some((l) => /fewer than 30 days/.test(l.msg))).toBe(false);
    expect(JSON.stringify(lines)).not.toContain(token.split('.')[2]);
  });

  it('forged: signed by another key than LICENSE_PUBLIC_KEY, start-up refused', async () => {
    const forger = await licenseAuthority();
    const e = await bootError({ LICENSE_KEY: await forger.mint({ agent_cap: 0 }), LICENSE_PUBLIC_KEY: authority.publicKeyPem });
    expect(e).toBeInstanceOf(LicenseError);
    expect(e.message).toMatch(/LICENSE_KEY/);
  });

  it('forged against the embedded key (no LICENSE_PUBLIC_KEY): refused', async () => {
    const e = await bootError({ LICENSE_KEY: await authority.mint(), LICENSE_PUBLIC_KEY: undefined });
    expect(e).toBeInstanceOf(LicenseError);
    expect(EMBEDDED_LICENSE_PUBLIC_KEY).not.toBe(authority.publicKeyPem);
  });

  it('tampered payload (claims changed after signing): refused', async () => {
    const token = await authority.mint({ agent_cap: 1 });
    const [h, p, s] = token.split('.');
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    claims.agent_cap = 0;
    const forged = [h, Buffer.from(JSON.stringify(claims)).toString('base64url'), s].join('.');
    expect(await bootError({ LICENSE_KEY: forged, LICENSE_PUBLIC_KEY: authority.publicKeyPem })).toBeInstanceOf(LicenseError);
  });

  it('not RS256 (HS256 or alg none): refused', async () => {
    const hs = await new SignJWT({ sub: 's', deployment_id: 'd', agent_cap: 0, tier: 'standard', iss: LICENSE_ISSUER })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuedAt()
      .setExpirationTime('1y')
      .sign(new TextEncoder().encode('x'.repeat(64)));
    expect(await bootError({ LICENSE_KEY: hs, LICENSE_PUBLIC_KEY: authority.publicKeyPem })).toBeInstanceOf(LicenseError);
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${hs.split('.')[1]}.`;
    expect(await bootError({ LICENSE_KEY: none, LICENSE_PUBLIC_KEY: authority.publicKeyPem })).toBeInstanceOf(LicenseError);
    expect(await bootError({ LICENSE_KEY: 'not a jwt', LICENSE_PUBLIC_KEY: authority.publicKeyPem })).toBeInstanceOf(LicenseError);
  });

  it('wrong issuer: refused, naming the issuer', async () => {
    const e = await bootError({ LICENSE_KEY: await authority.mint({ iss: 'someone-else' }), LICENSE_PUBLIC_KEY: authority.publicKeyPem });
    expect(e).toBeInstanceOf(LicenseError);
    expect(e.message).toMatch(/issuer/);
  });

  it.each(['sub', 'deployment_id', 'agent_cap', 'tier', 'iss', 'iat', 'exp'])('missing claim %s: refused', async (claim) => {
    const e = await bootError({ LICENSE_KEY: await authority.mint({}, { omit: [claim] }), LICENSE_PUBLIC_KEY: authority.publicKeyPem });
    expect(e).toBeInstanceOf(LicenseError);
    // iss missing fails the issuer check; the others are named.
    if (claim !== 'iss') expect(e.message).toContain(claim);
  });

  it.each([
    ['agent_cap', -1],
    ['agent_cap', 1.5],
    ['agent_cap', '10'],
    ['tier', 'gold'],
  ])('invalid claim %s=%j: refused', async (claim, value) => {
    const e = await bootError({ LICENSE_KEY: await authority.mint({ [claim]: value }), LICENSE_PUBLIC_KEY: authority.publicKeyPem });
    expect(e).toBeInstanceOf(LicenseError);
    expect(e.message).toContain(claim);
  });

  it('expired: start-up aborted with a message', async () => {
    const now = Math.floor(Date.now() / 1000);
    const e = await bootError({ LICENSE_KEY: await authority.mint({ iat: now - 400 * DAY, exp: now - 60 }), LICENSE_PUBLIC_KEY: authority.publicKeyPem });
    expect(e).toBeInstanceOf(LicenseError);
    expect(e.message).toMatch(/expired/);
  });

  it('expires in under 30 days: a warning at every start, and the service runs', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await authority.mint({ exp: now + 10 * DAY });
    for (let i = 0; i < 2; i++) {
      const { ctx, lines } = await boot({ LICENSE_KEY: token, LICENSE_PUBLIC_KEY: authority.publicKeyPem });
      expect(ctx.license).not.toBeNull();
      expect(lines).toContainEqual(expect.objectContaining({ level: 'warn', msg: expect.stringMatching(/fewer than 30 days/) }));
    }
  });

  it('a bad LICENSE_PUBLIC_KEY is refused', async () => {
    const e = await bootError({ LICENSE_KEY: await authority.mint(), LICENSE_PUBLIC_KEY: 'not a pem' });
    expect(e).toBeInstanceOf(LicenseError);
  });

  it('the embedded public key is a real RSA key and no private key is in the repository', async () => {
    await expect(importSPKI(EMBEDDED_LICENSE_PUBLIC_KEY, 'RS256')).resolves.toBeTruthy();
    const { execSync } = await import('node:child_process');
    const marker = ['PRIVATE', 'KEY-----'].join(' '); // built here so this file does not match itself
    const hits = execSync(`git grep -l -e "${marker}" -- . ':!node_modules' || true`, { encoding: 'utf8' });
    expect(hits.trim()).toBe('');
  });
});

describe('agent cap on POST /api/agents', () => {
  let t: TestStack;
  const CAP = 3;
  beforeAll(async () => {
    // A database of its own: the cap counts every non-revoked agent of the deployment.
    t = await startTestStack({ services: ['api'], env: { LICENSE_KEY: await authority.mint({ agent_cap: CAP }), LICENSE_PUBLIC_KEY: authority.publicKeyPem } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('402 license_limit with {agent_cap, current} at the cap; nothing stored; revoked agents free a slot; un-revoking counts', async () => {
    const made = [];
    for (let i = 0; i < CAP; i++) made.push(await makeAgent(t, { status: i === 0 ? 'suspended' : 'active' }));
    const id = agentId('over');
    const over = await t.call('api', 'POST', '/api/agents', { admin: true, body: { agent_id: id, name: 'n', role_id: 'role:r', allowed_intents: [] } });
    expect(over.status).toBe(402);
    expect(over.body).toEqual({ error: 'license_limit', message: expect.stringMatching(/upgrade/i), details: { agent_cap: CAP, current: CAP } });
    expect(await t.testDb.owner.query(`SELECT 1 FROM agents WHERE agent_id = $1`, [id])).toHaveLength(0);

    await t.call('api', 'DELETE', `/api/agents/${made[1].agent_id}`, { admin: true });
    const fits = await t.call('api', 'POST', '/api/agents', { admin: true, body: { agent_id: id, name: 'n', role_id: 'role:r', allowed_intents: [] } });
    expect(fits.status).toBe(201);

    const back = await t.call('api', 'PUT', `/api/agents/${made[1].agent_id}`, { admin: true, body: { status: 'active' } });
    expect(back.status).toBe(402);
    expect(back.body.details).toEqual({ agent_cap: CAP, current: CAP });
    // Suspending or renaming an agent at the cap is not adding one.
    expect((await t.call('api', 'PUT', `/api/agents/${made[2].agent_id}`, { admin: true, body: { status: 'suspended' } })).status).toBe(200);
    expect((await t.call('api', 'PUT', `/api/agents/${made[0].agent_id}`, { admin: true, body: { status: 'active', name: 'x' } })).status).toBe(200);
    // Free everything for the race below.
    for (const a of [made[0], made[2], { agent_id: id }]) await t.call('api', 'DELETE', `/api/agents/${a.agent_id}`, { admin: true });
  });

  it(`concurrent creates at cap - 1: exactly one succeeds${REAL ? ' (PostgreSQL)' : ' (PGlite serializes; the PostgreSQL run is the real race)'}`, async () => {
    for (let i = 0; i < CAP - 1; i++) await makeAgent(t);
    const N = 12;
    const results = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        t.call('api', 'POST', '/api/agents', { admin: true, body: { agent_id: agentId(`race${i}`), name: 'n', role_id: 'role:r', allowed_intents: [] } }),
      ),
    );
    const codes = results.map((r) => r.status).sort();
    expect(codes.filter((c) => c === 201)).toHaveLength(1);
    expect(codes.filter((c) => c === 402)).toHaveLength(N - 1);
    const [{ n }] = await t.testDb.owner.query(`SELECT count(*)::int AS n FROM agents WHERE status <> 'revoked'`);
    expect(n).toBe(CAP);
  });
});

describe('agent cap at the verb, on separate connections', () => {
  it('two contexts (two processes) creating at cap - 1 at once: one wins', async () => {
    const own = await createTestDb();
    const token = await authority.mint({ agent_cap: 1 });
    const env = { LICENSE_KEY: token, LICENSE_PUBLIC_KEY: authority.publicKeyPem };
    const c1 = await createAppContext(loadConfig(testEnv(env)), { logger: memoryLogger(), db: own.db, skipMigrations: true });
    // On PostgreSQL each transaction holds its own connection of the pool: a real race.
    const c2 = await createAppContext(loadConfig(testEnv(env)), { logger: memoryLogger(), db: own.db, skipMigrations: true });
    try {
      const body = (i: number) => ({ agent_id: agentId(`p${i}`), name: 'n', role_id: 'role:r', allowed_intents: [] }) as any;
      const settled = await Promise.allSettled([createAgent(c1, body(1), TEST_WHO), createAgent(c2, body(2), TEST_WHO), createAgent(c1, body(3), TEST_WHO), createAgent(c2, body(4), TEST_WHO)]);
      expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(1);
      for (const s of settled) if (s.status === 'rejected') expect((s.reason as any).code).toBe('license_limit');
    } finally {
      await c1.close();
      await c2.close();
      await own.close();
    }
  });
});
