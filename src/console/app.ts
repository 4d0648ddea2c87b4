/**
 * The compliance console (issue 24): server-rendered pages at /console on the API's port,
 * for compliance officers (auditor keys, read-only) and admins. It is a browser UI beside
 * the API, not part of the API contract: its pages call the same domain verbs (src/core) the
 * REST handlers call, and its actions record the same management events, with the signed-in
 * key's name as actor.
 *
 * Invariants:
 * - every asset is served from here (no CDN, no other host); the Content-Security-Policy
 *   allows only this origin, so a page can load nothing else even by mistake;
 * - the key is read once, at sign-in, and never stored or sent back; the browser holds only
 *   an HttpOnly, SameSite=Strict session cookie (Secure behind TLS);
 * - every POST carries the session's CSRF token; without it, or from an auditor session, it
 *   is 403 and changes nothing;
 * - a page without a session redirects to the sign-in form; an error is a page with the
 *   error's status, never a stack.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { html } from 'hono/html';
import { routePath } from 'hono/route';
import type { AppContext } from '../shared/app-context.js';
import { AppError } from '../shared/errors.js';
import { httpRouteTimer } from '../shared/metrics.js';
import { requestIdOf } from '../shared/request-id.js';
import { errorPage, formOf, page, type ConsoleApp, type ConsoleContext, type ConsoleEnv, type ConsolePages } from './kit.js';
import { endSession, openSession, randomToken, readSession, roleOfKey, sameToken, sweepSessions } from './session.js';

const ASSETS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'assets');
const SESSION_COOKIE = 'svc_console';
const LOGIN_COOKIE = 'svc_console_login';

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** The console's assets (every file of assets/), read once: name to bytes, type and ETag. */
function loadAssets(): Map<string, { body: Uint8Array<ArrayBuffer>; type: string; etag: string }> {
  const types: Record<string, string> = { '.css': 'text/css; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.svg': 'image/svg+xml' };
  const out = new Map<string, { body: Uint8Array<ArrayBuffer>; type: string; etag: string }>();
  for (const name of readdirSync(ASSETS_DIR)) {
    const type = types[path.extname(name)];
    if (!type) continue;
    const body = new Uint8Array(readFileSync(path.join(ASSETS_DIR, name)));
    out.set(name, { body, type, etag: `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"` });
  }
  return out;
}

/** Behind TLS (directly, or Caddy's X-Forwarded-Proto): the cookies are Secure. */
const overTls = (c: ConsoleContext) => new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto') === 'https';

/** Where to go after sign-in: a console path only (never another site). */
function nextPath(v: unknown): string {
  return typeof v === 'string' && /^\/console(\/[A-Za-z0-9._~%:@/?=&+-]*)?$/.test(v) && !v.startsWith('//') ? v : '/console';
}

export function createConsole(ctx: AppContext, pages: readonly ConsolePages[]): ConsoleApp {
  const app: ConsoleApp = new Hono<ConsoleEnv>();
  const assets = loadAssets();
  const logger = ctx.logger.child({ service: 'api' });
  let lastSweep = 0;

  app.use('*', async (c, next) => {
    const startedAt = performance.now();
    const requestId = requestIdOf(c.req.header('x-request-id') ?? null);
    c.set('requestId', requestId);
    c.set('ctx', ctx);
    c.set('session', null);
    await next();
    c.res.headers.set('x-request-id', requestId);
    c.res.headers.set('content-security-policy', CSP);
    c.res.headers.set('x-content-type-options', 'nosniff');
    c.res.headers.set('referrer-policy', 'no-referrer');
    c.res.headers.set('x-frame-options', 'DENY');
    if (!c.res.headers.has('cache-control')) c.res.headers.set('cache-control', 'no-store');
    const ms = performance.now() - startedAt;
    const t = httpRouteTimer('api', c.req.method, routePath(c) || '/console/*');
    t.observe(c.res.status, ms);
    logger.info('request', { method: t.method, route: t.route, status: c.res.status, duration_ms: Math.round(ms * 100) / 100, request_id: requestId });
  });
  app.use('*', bodyLimit({ maxSize: 64 * 1024, onError: (c) => errorPage(c as ConsoleContext, new AppError('payload_too_large', 'The form is too large')) }));
  app.onError((e, c) => errorPage(c as ConsoleContext, e));
  app.notFound((c) => errorPage(c as ConsoleContext, new AppError('not_found', 'No such page')));

  app.get('/console/assets/:file', (c) => {
    const a = assets.get(c.req.param('file'));
    if (!a) throw new AppError('not_found', 'No such asset');
    if (c.req.header('if-none-match') === a.etag) return c.body(null, 304, { etag: a.etag });
    return c.body(a.body, 200, { 'content-type': a.type, etag: a.etag, 'cache-control': 'no-cache' });
  });

  // Sign-in: the form carries a token also set in a short-lived cookie (a login CSRF guard:
  // another site cannot sign a browser in with a key of its own).
  const loginForm = (c: ConsoleContext, status: number, problem?: string) => {
    const token = randomToken();
    setCookie(c, LOGIN_COOKIE, token, { httpOnly: true, sameSite: 'Strict', path: '/console/login', maxAge: 600, secure: overTls(c) });
    return page(c, {
      title: 'Sign in',
      status,
      body: html`${problem ? html`<p class="problem" role="alert">${problem}</p>` : ''}
<form method="post" action="/console/login" class="login">
<input type="hidden" name="_csrf" value="${token}">
<input type="hidden" name="next" value="${nextPath(c.req.query('next'))}">
<label for="key">Admin or auditor key</label>
<input id="key" name="key" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button>
<p class="muted">An admin key (ADMIN_API_KEY, ADMIN_API_KEYS) can act; an auditor key (AUDITOR_API_KEYS) can only read. The key is checked once and never kept: the session lasts until you sign out or leave it idle for ${ctx.config.console.idleMinutes} minutes.</p>
</form>`,
    });
  };
  app.get('/console/login', async (c) => {
    if (await readSession(ctx, getCookie(c, SESSION_COOKIE))) return c.redirect('/console', 303);
    return loginForm(c, 200);
  });
  app.post('/console/login', async (c) => {
    const form = await formOf(c);
    const expected = getCookie(c, LOGIN_COOKIE);
    if (!expected || !sameToken(expected, form._csrf)) throw new AppError('forbidden', 'The sign-in form is missing its CSRF token, or it is stale: reload the page and try again');
    const who = roleOfKey(ctx, form.key ?? '');
    if (!who) return loginForm(c, 401, 'That key is neither an admin key nor an auditor key.');
    const { token } = await openSession(ctx, who, c.get('requestId'));
    deleteCookie(c, LOGIN_COOKIE, { path: '/console/login' });
    setCookie(c, SESSION_COOKIE, token, { httpOnly: true, sameSite: 'Strict', path: '/console', secure: overTls(c) });
    return c.redirect(nextPath(form.next), 303);
  });

  // Everything else needs a session: a page redirects to the sign-in form, a POST is 403.
  app.use('*', async (c, next) => {
    if (Date.now() - lastSweep > 600_000) {
      lastSweep = Date.now();
      sweepSessions(ctx).catch((e) => logger.warn('console session sweep failed', { error: (e as Error).message }));
    }
    const session = await readSession(ctx, getCookie(c, SESSION_COOKIE));
    if (!session) {
      if (c.req.method === 'GET' || c.req.method === 'HEAD') return c.redirect(`/console/login?next=${encodeURIComponent(nextPath(c.req.path + (new URL(c.req.url).search)))}`, 303);
      throw new AppError('forbidden', 'Sign in first');
    }
    c.set('session', session);
    await next();
  });

  app.post('/console/logout', async (c) => {
    const s = c.get('session')!;
    const form = await formOf(c);
    if (!sameToken(s.csrf, form._csrf)) throw new AppError('forbidden', 'The form is missing its CSRF token, or it is stale: reload the page and try again');
    await endSession(ctx, s, { actor: s.name, request_id: c.get('requestId') });
    deleteCookie(c, SESSION_COOKIE, { path: '/console' });
    return c.redirect('/console/login', 303);
  });

  for (const register of pages) register(app);
  return app;
}
