/**
 * What every console page and action uses: the Hono env, the layout, the CSRF field, the
 * admin-action wrapper, and small formatting helpers. Pages are server-rendered with
 * hono/html (every interpolated value is escaped; `raw` only for markup built here).
 */
import type { Context, Hono } from 'hono';
import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';
import type { AppContext } from '../shared/app-context.js';
import { AppError } from '../shared/errors.js';
import type { Who } from '../core/audit/events.js';
import { sameToken, type Session } from './session.js';

export type ConsoleEnv = { Variables: { session: Session | null; requestId: string; ctx: AppContext } };
export type ConsoleApp = Hono<ConsoleEnv>;
export type ConsoleContext = Context<ConsoleEnv>;
export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/** A page module: registers its routes on the console app (paths under /console). */
export type ConsolePages = (app: ConsoleApp) => void;

const NAV: Array<[string, string]> = [
  ['/console', 'Overview'],
  ['/console/agents', 'Agents'],
  ['/console/audit', 'Audit log'],
  ['/console/content', 'Bundles and tags'],
  ['/console/events', 'Events'],
  ['/console/transfers', 'Transfers'],
];

/** The signed-in session (pages behind the sign-in middleware always have one). */
export function sessionOf(c: ConsoleContext): Session {
  const s = c.get('session');
  if (!s) throw new AppError('auth_failed', 'Not signed in');
  return s;
}

/** The management events' actor: the signed-in key's name, and the request's id. */
function whoOf(c: ConsoleContext): Who {
  return { actor: sessionOf(c).name, request_id: c.get('requestId') };
}

/** The hidden CSRF field every form of a session carries. */
export function csrfField(c: ConsoleContext): Html {
  return html`<input type="hidden" name="_csrf" value="${sessionOf(c).csrf}">`;
}

/** A whole page: header, navigation (the current section marked), an optional notice, the body. */
export function page(c: ConsoleContext, opts: { title: string; section?: string; body: Html | Html[]; status?: number; scripts?: string[] }): Response | Promise<Response> {
  const s = c.get('session');
  const notice = c.req.query('done');
  const problem = c.req.query('error');
  const nav = s
    ? html`<nav aria-label="Sections">${NAV.map(([href, label]) => html`<a href="${href}"${opts.section === href ? raw(' aria-current="page"') : ''}>${label}</a>`)}</nav>
        <form method="post" action="/console/logout" class="signout"><span class="who">${s.name} <small>(${s.role})</small></span>${csrfField(c)}<button type="submit">Sign out</button></form>`
    : '';
  const body = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${opts.title} · svc console</title>
<link rel="stylesheet" href="/console/assets/console.css">
${(opts.scripts ?? []).map((src) => html`<script src="${src}" defer></script>`)}
</head>
<body>
<header><a class="brand" href="/console">svc console</a>${nav}</header>
<main>
<h1>${opts.title}</h1>
${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
${problem ? html`<p class="problem" role="alert">${problem}</p>` : ''}
${opts.body}
</main>
</body>
</html>`;
  return c.html(body, (opts.status ?? 200) as 200);
}

/** The error page for an AppError (its status and message) or anything else (500, opaque). */
export function errorPage(c: ConsoleContext, e: unknown): Response | Promise<Response> {
  if (e instanceof AppError && e.code !== 'internal_error') {
    return page(c, { title: e.status === 404 ? 'Not found' : e.status === 403 ? 'Forbidden' : 'Refused', body: html`<p class="problem" role="alert">${e.message}</p><p><a href="/console">Back to the overview</a></p>`, status: e.status });
  }
  c.get('ctx').logger.error('console error', { request_id: c.get('requestId'), path: c.req.path, error: e as Error });
  return page(c, { title: 'Error', body: html`<p class="problem" role="alert">Internal error (request ${c.get('requestId')})</p>`, status: 500 });
}

/** The form fields of a POST (urlencoded or multipart), as strings. */
export async function formOf(c: ConsoleContext): Promise<Record<string, string>> {
  const type = c.req.header('content-type') ?? '';
  if (!type.startsWith('application/x-www-form-urlencoded') && !type.startsWith('multipart/form-data')) throw new AppError('unsupported_media_type', 'A console form is sent as application/x-www-form-urlencoded');
  const body = await c.req.parseBody();
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(body)) if (typeof v === 'string') out[k] = v;
  return out;
}

/**
 * An admin's action: a POST with the session's CSRF token, from an admin session. Without
 * the token, with a wrong one, or from an auditor, 403 and nothing is done. `run` does the
 * change (one domain verb, its management event with the key's name as actor) and returns
 * where to go next, with the notice to show there.
 */
export function adminAction(run: ActionRun) {
  return sessionAction(run, 'admin');
}

/** A POST any session may send (it changes nothing: running verify), with the same CSRF check. */
export function readerAction(run: ActionRun) {
  return sessionAction(run, 'any');
}

type ActionRun = (c: ConsoleContext, form: Record<string, string>, who: Who) => Promise<{ to: string; done: string }>;

function sessionAction(run: ActionRun, needs: 'admin' | 'any') {
  return async (c: ConsoleContext): Promise<Response> => {
    const s = c.get('session');
    if (!s) throw new AppError('forbidden', 'Sign in first');
    const form = await formOf(c);
    if (!sameToken(s.csrf, form._csrf)) throw new AppError('forbidden', 'The form is missing its CSRF token, or it is stale: reload the page and try again');
    if (needs === 'admin' && s.role !== 'admin') throw new AppError('forbidden', 'An auditor session is read-only');
    const { to, done } = await run(c, form, whoOf(c));
    return c.redirect(withQuery(to, { done }), 303);
  };
}

/** A path with query parameters added. */
export function withQuery(to: string, q: Record<string, string | number | undefined | null>): string {
  const u = new URL(to, 'http://console.invalid');
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== null && v !== '') u.searchParams.set(k, String(v));
  return u.pathname + u.search;
}

/** An ISO time shown as `YYYY-MM-DD HH:MM:SS UTC`, with the full value on hover. */
export function time(t: string | Date | null | undefined): Html {
  if (!t) return html`<span class="muted">never</span>`;
  const iso = typeof t === 'string' ? t : t.toISOString();
  return html`<time datetime="${iso}" title="${iso}">${iso.slice(0, 19).replace('T', ' ')} UTC</time>`;
}

/** A table from rows; `empty` when there are none. */
export function table<T>(rows: readonly T[], cols: Array<[string, (r: T) => unknown]>, empty = 'Nothing yet.'): Html {
  if (!rows.length) return html`<p class="muted">${empty}</p>`;
  return html`<div class="scroll"><table><thead><tr>${cols.map(([h]) => html`<th>${h}</th>`)}</tr></thead><tbody>${rows.map((r) => html`<tr>${cols.map(([, f]) => html`<td>${f(r)}</td>`)}</tr>`)}</tbody></table></div>`;
}

/** A definition list of fields. */
export function fields(items: Array<[string, unknown]>): Html {
  return html`<dl class="fields">${items.map(([k, v]) => html`<dt>${k}</dt><dd>${v ?? html`<span class="muted">none</span>`}</dd>`)}</dl>`;
}

/** A status word as a badge. */
export function badge(text: string): Html {
  return html`<span class="badge badge-${text.replace(/[^a-z_]/g, '')}">${text}</span>`;
}

/** A POST button form (with the CSRF field and, when `confirm` is set, a confirmation step in the browser). */
export function postButton(c: ConsoleContext, action: string, label: string, opts: { confirm?: string; hidden?: Record<string, string>; danger?: boolean } = {}): Html {
  return html`<form method="post" action="${action}" class="inline"${opts.confirm ? html` data-confirm="${opts.confirm}"` : ''}>${csrfField(c)}${Object.entries(opts.hidden ?? {}).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}<button type="submit"${opts.danger ? raw(' class="danger"') : ''}>${label}</button></form>`;
}
