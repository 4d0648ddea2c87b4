/**
 * `/console/content`: bundles (grouped by id), tags and deployments, and a page for a bundle,
 * a bundle version, a tag (with its moves, from the management events) and a deployment.
 * Read-only: the same verbs as GET /api/bundles, /api/tags and /api/deployments.
 */
import { html } from 'hono/html';
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import type { components } from '../../../gen/openapi/control-plane.js';
import { getBundleVersion, listBundles } from '../../core/bundles/bundle-queries.js';
import { getTag, listTags } from '../../core/tags/tag-service.js';
import { getDeployment, listDeployments } from '../../core/deployments/deployment-service.js';
import { listManagementEvents } from '../../core/audit/list-events.js';
import { badge, fields, page, table, time, type ConsolePages, type Html, withQuery } from '../kit.js';

type BundleSummary = components['schemas']['BundleList']['bundles'][number];
type ManagementEvent = components['schemas']['ManagementEvent'];

/** Lists are read whole up to this many rows (10 pages of the API's maximum page). */
const MAX_ROWS = 10_000;
const PAGE = 1000;
/** Documents and context YAML longer than this are not shown inline. */
const MAX_INLINE = 64 * 1024;

const bundleHref = (id: string): string => `/console/content/bundles/${encodeURIComponent(id)}`;
const versionHref = (id: string, version: string): string => `${bundleHref(id)}/versions/${encodeURIComponent(version)}`;
const tagHref = (tag: string): string => `/console/content/tags/${encodeURIComponent(tag)}`;
const deploymentHref = (id: string): string => `/console/content/deployments/${encodeURIComponent(id)}`;

/** A bundle reference (`bundle:<name>` or `bundle:<name>:<X.Y.Z>`) as a link to its page. */
function refLink(ref: string): Html {
  const m = /^(.+):(\d+\.\d+\.\d+[^:]*)$/.exec(ref);
  return m ? html`<a href="${versionHref(m[1]!, m[2]!)}">${ref}</a>` : html`<a href="${bundleHref(ref)}">${ref}</a>`;
}

/** The console page of a management event's resource, when this module has one. */
export function contentHref(resourceType: string, resourceId: string): string | null {
  if (resourceType === 'bundle') return /:\d+\.\d+\.\d+[^:]*$/.test(resourceId) ? versionHref(resourceId.slice(0, resourceId.lastIndexOf(':')), resourceId.slice(resourceId.lastIndexOf(':') + 1)) : bundleHref(resourceId);
  if (resourceType === 'tag') return tagHref(resourceId);
  if (resourceType === 'deployment') return deploymentHref(resourceId);
  return null;
}

const refList = (refs: readonly string[]): Html => (refs.length ? html`<ul>${refs.map((r) => html`<li>${refLink(r)}</li>`)}</ul>` : html`<span class="muted">none</span>`);

/** Every bundle version (listBundles order: by id, then creation), read page by page. */
async function allBundleVersions(ctx: AppContext, type?: string): Promise<{ rows: BundleSummary[]; total: number }> {
  const rows: BundleSummary[] = [];
  let total = 0;
  for (let offset = 0; offset < MAX_ROWS; offset += PAGE) {
    const p = await listBundles(ctx, { type, limit: PAGE, offset });
    rows.push(...p.bundles);
    total = p.total;
    if (offset + PAGE >= p.total) break;
  }
  return { rows, total };
}

/** Newest event per resource id of one resource type (who moved a tag, and when). */
async function lastEventBy(ctx: AppContext, resourceType: string): Promise<Map<string, ManagementEvent>> {
  const { events } = await listManagementEvents(ctx, { resourceType, limit: PAGE });
  const out = new Map<string, ManagementEvent>();
  for (const e of events) if (!out.has(e.resource_id)) out.set(e.resource_id, e);
  return out;
}

/** The events of one resource, newest first. */
const eventsOf = async (ctx: AppContext, resourceType: string, resourceId: string): Promise<ManagementEvent[]> =>
  (await listManagementEvents(ctx, { resourceType, resourceId, limit: PAGE })).events;

const eventLink = (e: ManagementEvent): Html => html`<a href="${withQuery('/console/events', { resource_type: e.resource_type, resource_id: e.resource_id })}">${e.event_type}</a>`;

function inlinePre(text: string, api: string): Html {
  return text.length <= MAX_INLINE ? html`<pre>${text}</pre>` : html`<p class="muted">${text.length} characters, too long to show here: read it with <code>GET ${api}</code>.</p>`;
}

const more = (shown: number, total: number): Html => (total > shown ? html`<p class="muted">Showing ${shown} of ${total}.</p>` : html``);

export const contentPages: ConsolePages = (app) => {
  app.get('/console/content', async (c) => {
    const ctx = c.get('ctx');
    const [versions, tagList, deps, tagEvents] = await Promise.all([
      allBundleVersions(ctx),
      listTags(ctx, { limit: PAGE, offset: 0 }),
      listDeployments(ctx, { limit: PAGE, offset: 0 }),
      lastEventBy(ctx, 'tag'),
    ]);
    const groups = new Map<string, BundleSummary[]>();
    for (const b of versions.rows) groups.set(b.id, [...(groups.get(b.id) ?? []), b]);
    const bundleRows = [...groups.values()].map((vs) => ({ first: vs[0]!, latest: vs[vs.length - 1]!, count: vs.length }));
    return page(c, {
      title: 'Bundles and tags',
      section: '/console/content',
      body: html`<h2 id="bundles">Bundles</h2>
${table(bundleRows, [
  ['Bundle', (r) => html`<a href="${bundleHref(r.first.id)}">${r.first.id}</a>`],
  ['Type', (r) => r.first.type],
  ['Title', (r) => html`<span class="wrap">${r.latest.title}</span>`],
  ['Latest version', (r) => html`<a href="${versionHref(r.latest.id, r.latest.version)}">${r.latest.version}</a>${r.latest.is_active ? '' : html` ${badge('deactivated')}`}`],
  ['Versions', (r) => r.count],
  ['Created', (r) => time(r.first.created_at)],
], 'No bundles published yet.')}
${more(versions.rows.length, versions.total)}
<h2 id="tags">Tags</h2>
${table(tagList.tags, [
  ['Tag', (r) => html`<a href="${tagHref(r.tag)}">${r.tag}</a>`],
  ['Points to', (r) => refLink(`${r.bundle_id}:${r.bundle_version}`)],
  ['Description', (r) => html`<span class="wrap">${r.description ?? ''}</span>`],
  ['Moved', (r) => time(r.updated_at)],
  ['By', (r) => tagEvents.get(r.tag)?.actor ?? html`<span class="muted">unknown</span>`],
], 'No tags yet.')}
${more(tagList.tags.length, tagList.total)}
<h2 id="deployments">Deployments</h2>
${table(deps.deployments, [
  ['Deployment', (r) => html`<a href="${deploymentHref(r.deployment_id)}">${r.deployment_id}</a>`],
  ['Project bundles', (r) => html`${r.project_bundles.map((p, i) => html`${i ? ', ' : ''}${refLink(p)}`)}`],
  ['Status', (r) => badge(r.status)],
  ['Created', (r) => time(r.created_at)],
], 'No deployments yet.')}
${more(deps.deployments.length, deps.total)}`,
    });
  });

  app.get('/console/content/bundles/:bundle_id', async (c) => {
    const id = c.req.param('bundle_id');
    const { rows } = await allBundleVersions(c.get('ctx'));
    const versions = rows.filter((b) => b.id === id).reverse();
    if (!versions.length) throw new AppError('not_found', `Bundle ${id} does not exist`);
    return page(c, {
      title: `Bundle ${id}`,
      section: '/console/content',
      body: html`${fields([['Id', id], ['Type', versions[0]!.type], ['Title', versions[0]!.title], ['Versions', versions.length]])}
<h2>Versions (newest first)</h2>
${table(versions, [
  ['Version', (r) => html`<a href="${versionHref(r.id, r.version)}">${r.version}</a>`],
  ['Title', (r) => html`<span class="wrap">${r.title}</span>`],
  ['Active', (r) => (r.is_active ? badge('active') : badge('deactivated'))],
  ['Validation', (r) => badge(r.validation_status)],
  ['Created', (r) => time(r.created_at)],
])}
<p><a href="/console/content">All bundles</a></p>`,
    });
  });

  app.get('/console/content/bundles/:bundle_id/versions/:version', async (c) => {
    const ctx = c.get('ctx');
    const b = await getBundleVersion(ctx, c.req.param('bundle_id'), c.req.param('version'));
    const docs = JSON.stringify(b.documents, null, 2);
    return page(c, {
      title: `${b.id} ${b.version}`,
      section: '/console/content',
      body: html`${fields([
  ['Bundle', html`<a href="${bundleHref(b.id)}">${b.id}</a>`],
  ['Version', b.version],
  ['Type', b.type],
  ['Title', b.title],
  ['Description', b.description],
  ['Active', b.is_active ? badge('active') : badge('deactivated')],
  ['Validation', badge(b.validation_status)],
  ['Schema version', b.schema_version],
  ['Applies to', b.applies_to ? JSON.stringify(b.applies_to) : null],
  ['Created', time(b.created_at)],
  ['Published', b.published_at ? time(b.published_at) : null],
  ['Created by', b.created_by],
])}
<h2>Imports</h2>
${refList(b.imports)}
<h2>SCDs (${b.scds.length})</h2>
${b.scds.length ? html`<ul>${b.scds.map((s) => html`<li><code>${s}</code></li>`)}</ul>` : html`<p class="muted">none</p>`}
<h2>Documents (${b.documents.length})</h2>
${b.documents.length ? inlinePre(docs, `/api/bundles/${encodeURIComponent(b.id)}/versions/${b.version}`) : html`<p class="muted">none</p>`}`,
    });
  });

  app.get('/console/content/tags/:tag', async (c) => {
    const ctx = c.get('ctx');
    const tag = await getTag(ctx, c.req.param('tag'));
    const history = await eventsOf(ctx, 'tag', tag.tag);
    return page(c, {
      title: `Tag ${tag.tag}`,
      section: '/console/content',
      body: html`${fields([
  ['Tag', tag.tag],
  ['Points to', refLink(`${tag.bundle_id}:${tag.bundle_version}`)],
  ['Description', tag.description],
  ['Created', time(tag.created_at)],
  ['Moved', time(tag.updated_at)],
])}
<h2>History (newest first)</h2>
${table(history, [
  ['When', (e) => time(e.occurred_at)],
  ['Event', (e) => eventLink(e)],
  ['By', (e) => e.actor],
  ['From', (e) => (e.before?.bundle_id ? refLink(`${String(e.before.bundle_id)}:${String(e.before.bundle_version)}`) : html`<span class="muted">none</span>`)],
  ['To', (e) => (e.after?.bundle_id ? refLink(`${String(e.after.bundle_id)}:${String(e.after.bundle_version)}`) : html`<span class="muted">none</span>`)],
], 'No recorded moves.')}
<h2>Resolved bundles</h2>
${refList(tag.resolved_bundle_ids)}
<h2>Context</h2>
${inlinePre(tag.context_yaml, `/api/tags/${encodeURIComponent(tag.tag)}`)}`,
    });
  });

  app.get('/console/content/deployments/:deployment_id', async (c) => {
    const ctx = c.get('ctx');
    const d = await getDeployment(ctx, c.req.param('deployment_id'));
    const history = await eventsOf(ctx, 'deployment', d.deployment_id);
    return page(c, {
      title: `Deployment ${d.deployment_id}`,
      section: '/console/content',
      body: html`${fields([
  ['Deployment', d.deployment_id],
  ['Status', badge(d.status)],
  ['Superseded by', d.superseded_by ? html`<a href="${deploymentHref(d.superseded_by)}">${d.superseded_by}</a>` : null],
  ['Created', time(d.created_at)],
  ['Created by', history.find((e) => e.event_type === 'deployment.created')?.actor ?? null],
])}
<h2>Project bundles</h2>
${refList(d.project_bundles)}
<h2>Resolved bundles (${d.resolved_bundles.length})</h2>
${refList(d.resolved_bundles)}`,
    });
  });
};
