/**
 * The console's sign-in, sessions and CSRF over HTTP (a real server on port 0; the browser
 * suite is browser.test.ts): admin and auditor keys open a server-side session, any other key
 * does not; the cookie is HttpOnly and SameSite=Strict (Secure behind TLS) and holds no key;
 * pages without a session go to the sign-in form; a POST without the session's CSRF token is
 * 403 and changes nothing; sign-out ends the session; an idle session ends.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startTestStack, type TestStack } from '../harness.js';
import { settableClock } from '../identity/fixtures.js';
import { ConsoleClient } from './client.js';

const AUDITOR_KEY = `audit_${randomBytes(24).toString('base64url')}`;
let t: TestStack;
const clock = settableClock();

beforeAll(async () => {
  t = await startTestStack({ services: ['api'], clock, env: { AUDITOR_API_KEYS: `compliance:${AUDITOR_KEY}`, CONSOLE_IDLE_MINUTES: '30' } });
});
afterAll(async () => {
  await t?.close();
});

const sessions = () => t.testDb.owner.query(`SELECT key_name, role, token_hash FROM console_sessions ORDER BY created_at`);

describe('sign-in', () => {
  it('a page without a session redirects to the sign-in form, keeping where it was going', async () => {
    const c = ConsoleClient.for(t);
    const r = await c.get('/console/agents?status=active');
    expect(r.status).toBe(303);
    expect(r.location).toBe(`/console/login?next=${encodeURIComponent('/console/agents?status=active')}`);
    const form = await c.get(r.location!);
    expect(form.status).toBe(200);
    expect(form.text).toContain('name="key"');
    expect(form.headers.get('content-security-policy')).toContain("default-src 'none'");
  });

  it('an admin key opens a session: HttpOnly, SameSite=Strict cookie without the key; the key is stored nowhere', async () => {
    const c = ConsoleClient.for(t);
    const r = await c.signIn(ADMIN_KEY);
    expect(r.status).toBe(303);
    expect(r.location).toBe('/console');
    const cookie = r.headers.getSetCookie().find((x) => x.startsWith('svc_console='))!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Path=\/console/);
    expect(cookie).not.toMatch(/Secure/); // plain http here; see the TLS case below
    expect(cookie).not.toContain(ADMIN_KEY);
    const home = await c.get('/console');
    expect(home.status).toBe(200);
    expect(home.text).toContain('admin <small>(admin)</small>');
    const rows = await sessions();
    expect(rows.at(-1)).toMatchObject({ key_name: 'admin', role: 'admin' });
    expect(JSON.stringify(rows)).not.toContain(ADMIN_KEY);
    expect(t.logs.join('\n')).not.toContain(ADMIN_KEY);
    const events = await t.call('api', 'GET', '/api/audit/events?event_type=console.signed_in', { admin: true });
    expect(events.body.events.at(-1)).toMatchObject({ actor: 'admin', resource_type: 'console_session', after: { role: 'admin' } });
  });

  it('an auditor key opens a read-only session; any other key is refused and opens none', async () => {
    const c = await ConsoleClient.signedIn(t, AUDITOR_KEY);
    expect((await c.get('/console')).text).toContain('compliance <small>(auditor)</small>');
    const before = (await sessions()).length;
    const other = ConsoleClient.for(t);
    const r = await other.signIn(`admin_${randomBytes(24).toString('base64url')}`);
    expect(r.status).toBe(401);
    expect(r.text).toContain('neither an admin key nor an auditor key');
    expect(other.cookies.has('svc_console')).toBe(false);
    expect((await sessions()).length).toBe(before);
  });

  it('the sign-in form needs its own CSRF token (a login CSRF guard)', async () => {
    const c = ConsoleClient.for(t);
    await c.get('/console/login');
    const r = await c.post('/console/login', { key: ADMIN_KEY });
    expect(r.status).toBe(403);
    expect(c.cookies.has('svc_console')).toBe(false);
    const stranger = ConsoleClient.for(t);
    expect((await stranger.post('/console/login', { key: ADMIN_KEY, _csrf: 'x'.repeat(43) })).status).toBe(403);
  });

  it('behind TLS (X-Forwarded-Proto: https from the proxy) the cookie is Secure', async () => {
    const c = ConsoleClient.for(t);
    const form = await c.get('/console/login');
    const r = await c.post('/console/login', { _csrf: ConsoleClient.csrfOf(form.text), key: ADMIN_KEY }, { 'x-forwarded-proto': 'https' });
    expect(r.headers.getSetCookie().find((x) => x.startsWith('svc_console='))).toMatch(/Secure/);
  });

  it('never redirects after sign-in to another site', async () => {
    const c = ConsoleClient.for(t);
    const form = await c.get('/console/login');
    const r = await c.post('/console/login', { _csrf: ConsoleClient.csrfOf(form.text), key: ADMIN_KEY, next: '//evil.example/console' });
    expect(r.location).toBe('/console');
  });
});

describe('sessions', () => {
  it('sign-out needs the CSRF token, then ends the session (the cookie no longer opens pages)', async () => {
    const c = ConsoleClient.for(t);
    await c.signIn(ADMIN_KEY);
    const token = c.cookies.get('svc_console')!;
    expect((await c.post('/console/logout', {})).status).toBe(403);
    expect((await c.get('/console')).status).toBe(200);
    const out = await c.post('/console/logout', { _csrf: await c.csrf() });
    expect(out.status).toBe(303);
    const again = new ConsoleClient(c.base);
    again.cookies.set('svc_console', token);
    expect((await again.get('/console')).status).toBe(303);
  });

  it('a session idle longer than CONSOLE_IDLE_MINUTES ends', async () => {
    const c = ConsoleClient.for(t);
    await c.signIn(ADMIN_KEY);
    clock.advance(29 * 60_000);
    expect((await c.get('/console')).status).toBe(200);
    clock.advance(29 * 60_000); // the view above counted as use
    expect((await c.get('/console')).status).toBe(200);
    clock.advance(31 * 60_000);
    expect((await c.get('/console')).status).toBe(303);
  });

  it('a forged or oversized cookie is no session', async () => {
    const c = ConsoleClient.for(t);
    c.cookies.set('svc_console', 'x'.repeat(43));
    expect((await c.get('/console')).status).toBe(303);
    c.cookies.set('svc_console', 'x'.repeat(5000));
    expect((await c.get('/console')).status).toBe(303);
  });
});

describe('assets and errors', () => {
  it('serves its own stylesheet and script, and a page for an unknown path', async () => {
    const c = ConsoleClient.for(t);
    const css = await c.get('/console/assets/console.css');
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toContain('text/css');
    expect((await c.get('/console/assets/nope.js')).status).toBe(404);
    await c.signIn(ADMIN_KEY);
    const missing = await c.get('/console/no/such/page');
    expect(missing.status).toBe(404);
    expect(missing.text).toContain('No such page');
  });
  it('a form in another media type or over the size limit is refused, not a 500', async () => {
    const c = ConsoleClient.for(t);
    await c.signIn(ADMIN_KEY);
    const res = await fetch(`${c.base}/console/logout`, { method: 'POST', headers: { cookie: `svc_console=${c.cookies.get('svc_console')}`, 'content-type': 'application/json', connection: 'close' }, body: '{}' });
    expect(res.status).toBe(415);
    const big = await c.post('/console/logout', { _csrf: 'x', pad: 'y'.repeat(70_000) });
    expect(big.status).toBe(413);
  });
  it('the API is served beside the console as before', async () => {
    expect((await t.call('api', 'GET', '/api/agents', { admin: true })).status).toBe(200);
  });
});
