/**
 * `/console/events`: management events (who did what, when), newest first, filtered and paged
 * by cursor like GET /api/audit/events (the same verb). Each row expands to the whole event,
 * with its hashes and its leaf index in the transparency log.
 */
import { html } from 'hono/html';
import type { components } from '../../../gen/openapi/control-plane.js';
import { AppError } from '../../shared/errors.js';
import { listManagementEvents } from '../../core/audit/list-events.js';
import { fields, page, table, time, withQuery, type ConsolePages, type Html } from '../kit.js';
import { contentHref } from './content.js';

type ManagementEvent = components['schemas']['ManagementEvent'];

const PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 1000;
/** A value in the compact before -> after column is cut to this many characters. */
const SHORT = 60;

const FILTERS = [
  ['event_type', 'Event type', 'tag.moved'],
  ['actor', 'Actor', 'alice'],
  ['resource_type', 'Resource type', 'agent'],
  ['resource_id', 'Resource id', ''],
  ['since', 'Since (ISO time)', '2026-01-01T00:00:00Z'],
  ['until', 'Until (ISO time)', ''],
] as const;

type FilterName = (typeof FILTERS)[number][0];

function resourceHref(e: ManagementEvent): string | null {
  if (e.resource_type === 'agent') return `/console/agents/${encodeURIComponent(e.resource_id)}`;
  return contentHref(e.resource_type, e.resource_id);
}

const short = (v: unknown): string => {
  const s = v === undefined ? 'null' : JSON.stringify(v);
  return s.length > SHORT ? `${s.slice(0, SHORT - 1)}…` : s;
};

/** The changed fields as `field: before → after`, one per line. */
function changes(e: ManagementEvent): Html {
  const keys = [...new Set([...Object.keys(e.before ?? {}), ...Object.keys(e.after ?? {})])];
  if (!keys.length) return html`<span class="muted">none</span>`;
  return html`<span class="wrap">${keys.map((k, i) => html`${i ? html`<br>` : ''}<code>${k}</code>: ${e.before ? short(e.before[k]) : html`<span class="muted">—</span>`} → ${e.after ? short(e.after[k]) : html`<span class="muted">—</span>`}`)}</span>`;
}

function details(e: ManagementEvent): Html {
  return html`<details><summary>Event ${e.event_sequence}</summary>${fields([
    ['Event id', html`<code>${e.event_id}</code>`],
    ['Sequence', e.event_sequence],
    ['Occurred', time(e.occurred_at)],
    ['Actor', e.actor],
    ['Request id', e.request_id],
    ['Resource', html`${e.resource_type} <code>${e.resource_id}</code>`],
    ['Before', e.before ? html`<pre>${JSON.stringify(e.before, null, 2)}</pre>` : null],
    ['After', e.after ? html`<pre>${JSON.stringify(e.after, null, 2)}</pre>` : null],
    ['Previous hash', html`<code>${e.previous_hash}</code>`],
    ['Record hash', html`<code>${e.record_hash}</code>`],
    ['Leaf index', e.leaf_index],
  ])}</details>`;
}

export const eventsPages: ConsolePages = (app) => {
  app.get('/console/events', async (c) => {
    const q: Partial<Record<FilterName | 'cursor', string>> = {};
    for (const name of [...FILTERS.map((f) => f[0]), 'cursor'] as const) {
      const v = c.req.query(name)?.trim();
      if (v) q[name] = v;
    }
    const limitText = c.req.query('limit')?.trim() || String(PAGE_SIZE);
    const limit = /^[0-9]{1,4}$/.test(limitText) ? Number(limitText) : NaN;
    if (!(limit >= 1 && limit <= MAX_PAGE_SIZE)) throw new AppError('validation_error', `limit must be a whole number from 1 to ${MAX_PAGE_SIZE}`);
    const { events, next_cursor } = await listManagementEvents(c.get('ctx'), {
      eventType: q.event_type,
      actor: q.actor,
      resourceType: q.resource_type,
      resourceId: q.resource_id,
      since: q.since,
      until: q.until,
      cursor: q.cursor,
      limit,
    });
    const { cursor: _cursor, ...rest } = q;
    const filters = { ...rest, limit: limit === PAGE_SIZE ? undefined : limit };
    return page(c, {
      title: 'Management events',
      section: '/console/events',
      body: html`<form method="get" action="/console/events" class="filters">
${FILTERS.map(([name, label, hint]) => html`<label>${label}<input name="${name}" value="${q[name] ?? ''}" placeholder="${hint}"></label>`)}
${limit === PAGE_SIZE ? '' : html`<input type="hidden" name="limit" value="${limit}">`}<button type="submit">Filter</button> <a href="/console/events">Clear</a>
</form>
${table(events, [
  ['Time', (e) => time(e.occurred_at)],
  ['Actor', (e) => html`<a href="${withQuery('/console/events', { actor: e.actor })}">${e.actor}</a>`],
  ['Event', (e) => html`<a href="${withQuery('/console/events', { event_type: e.event_type })}">${e.event_type}</a>`],
  ['Resource', (e) => {
    const href = resourceHref(e);
    return html`${e.resource_type} ${href ? html`<a href="${href}">${e.resource_id}</a>` : html`<code>${e.resource_id}</code>`}`;
  }],
  ['Changes', (e) => changes(e)],
  ['Details', (e) => details(e)],
], 'No events match.')}
<p class="pager">${q.cursor ? html`<a href="${withQuery('/console/events', filters)}">Newest</a>` : ''}${next_cursor ? html`<a href="${withQuery('/console/events', { ...filters, cursor: next_cursor })}" rel="next">Older</a>` : ''}</p>`,
    });
  });
};
