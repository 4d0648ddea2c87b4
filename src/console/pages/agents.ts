/**
 * `/console/agents` (list: status, role, search, paging) and `/console/agents/{agent_id}` (its
 * fields, owner, keys by prefix, latest requests, ownership, management events), with the
 * admin's actions on it: suspend, activate, revoke a key, start a transfer, force-assign.
 * Every action is one domain verb given the signed-in key's name as actor; its forms are
 * shown to admin sessions only (adminAction refuses anyone else whatever the page shows).
 */
import { html } from 'hono/html';
import { listAgents, getAgent, type ListAgentsInput } from '../../core/agents/read-agents.js';
import { updateAgent } from '../../core/agents/update-agent.js';
import { listAuditRequests } from '../../core/audit/read.js';
import { listManagementEvents } from '../../core/audit/list-events.js';
import { revokeApiKey } from '../../core/keys/manage-keys.js';
import { forceAssignTransfer } from '../../core/ownership/force-assign.js';
import { listTransfers } from '../../core/ownership/list-transfers.js';
import { getOwnershipHistory } from '../../core/ownership/ownership-history.js';
import { requestTransfer } from '../../core/ownership/request-transfer.js';
import { AppError } from '../../shared/errors.js';
import { adminAction, badge, csrfField, fields, page, postButton, sessionOf, table, time, withQuery, type ConsoleContext, type ConsolePages, type Html } from '../kit.js';

const AGENT_STATUSES = ['active', 'suspended', 'revoked', 'inactive'] as const;
const ROLE_ID = /^role:[A-Za-z0-9._-]+$/;
const OWNER_ID = /^[A-Za-z0-9._:@-]+$/;
const PAGE_SIZE = 50;
const RECENT_REQUESTS = 20;
const EVENTS_SHOWN = 50;
const CONFIRM_SCRIPT = '/console/assets/console.js';

/** A 400 naming the field, as the API's validation errors do. */
export function invalid(name: string, message: string): AppError {
  return new AppError('validation_error', `${name} ${message}`, { details: { errors: [{ path: `/query/${name}`, rule: name, message }] } });
}

/** A whole number in [min, max] from the query, or `fallback` when absent. */
export function intParam(c: ConsoleContext, name: string, fallback: number, min: number, max: number): number {
  const v = c.req.query(name);
  if (v === undefined || v === '') return fallback;
  if (!/^\d{1,10}$/.test(v) || Number(v) < min || Number(v) > max) throw invalid(name, `must be a whole number from ${min} to ${max}`);
  return Number(v);
}

/** Previous / next links of a paged list. */
export function pager(path: string, q: Record<string, string | undefined>, offset: number, limit: number, total: number): Html {
  const prev = offset > 0 ? withQuery(path, { ...q, offset: Math.max(0, offset - limit), limit: limit === PAGE_SIZE ? undefined : limit }) : null;
  const next = offset + limit < total ? withQuery(path, { ...q, offset: offset + limit, limit: limit === PAGE_SIZE ? undefined : limit }) : null;
  return html`<div class="pager"><span class="muted">${total ? `${offset + 1}–${Math.min(offset + limit, total)} of ${total}` : '0 of 0'}</span>${prev ? html`<a href="${prev}" rel="prev">Previous</a>` : ''}${next ? html`<a href="${next}" rel="next">Next</a>` : ''}</div>`;
}

const agentPath = (agentId: string) => `/console/agents/${encodeURIComponent(agentId)}`;
export const agentLink = (agentId: string): Html => html`<a href="${agentPath(agentId)}">${agentId}</a>`;

function listInput(c: ConsoleContext): ListAgentsInput {
  const status = c.req.query('status') || undefined;
  if (status !== undefined && !(AGENT_STATUSES as readonly string[]).includes(status)) throw invalid('status', `must be one of ${AGENT_STATUSES.join(', ')}`);
  const role = c.req.query('role') || undefined;
  if (role !== undefined && (role.length > 256 || !ROLE_ID.test(role))) throw invalid('role', 'must be a role id (role:<name>)');
  const search = c.req.query('q') || undefined;
  if (search !== undefined && search.length > 200) throw invalid('q', 'must be at most 200 characters');
  return {
    status: status as ListAgentsInput['status'],
    role_id: role,
    search,
    limit: intParam(c, 'limit', PAGE_SIZE, 1, 1000),
    offset: intParam(c, 'offset', 0, 0, 2147483647),
  };
}

const outcome = (r: { intent_valid: boolean; validation_errors: Record<string, unknown> | null }): Html =>
  r.intent_valid ? badge('accepted') : html`${badge('refused')} <code>${typeof r.validation_errors?.error_code === 'string' ? r.validation_errors.error_code : ''}</code>`;

/** A single-field admin form (owner id, optional reason). */
function ownerForm(c: ConsoleContext, action: string, title: string, field: string, button: string, confirm: string, reasonHint: string): Html {
  return html`<form method="post" action="${action}" class="stacked" data-confirm="${confirm}">
<strong>${title}</strong>
${csrfField(c)}
<label>Owner id <input name="${field}" required maxlength="256" pattern="[A-Za-z0-9._:@\\-]+" autocomplete="off"></label>
<label>Reason <input name="reason" maxlength="2048" placeholder="${reasonHint}" autocomplete="off"></label>
<button type="submit">${button}</button>
</form>`;
}

/** The owner id of a form field, or a 400 naming it. */
function ownerIdOf(form: Record<string, string>, name: string): string {
  const v = (form[name] ?? '').trim();
  if (!v || v.length > 256 || !OWNER_ID.test(v)) throw new AppError('validation_error', `${name} must be an owner id (1 to 256 of A-Z a-z 0-9 . _ : @ -)`, { details: { errors: [{ path: `/body/${name}`, rule: 'pattern', message: 'must be an owner id' }] } });
  return v;
}

/** The optional reason of a form (at most 2048 characters), or null. */
function reasonOf(form: Record<string, string>): string | null {
  const v = (form.reason ?? '').trim();
  if (v.length > 2048) throw new AppError('validation_error', 'reason must be at most 2048 characters', { details: { errors: [{ path: '/body/reason', rule: 'maxLength', message: 'at most 2048 characters' }] } });
  return v || null;
}

export const agentPages: ConsolePages = (app) => {
  app.get('/console/agents', async (c) => {
    const input = listInput(c);
    const list = await listAgents(c.get('ctx'), input);
    const q = { status: input.status, role: input.role_id, q: input.search };
    return page(c, {
      title: 'Agents',
      section: '/console/agents',
      body: html`<form method="get" action="/console/agents" class="filters" role="search">
<label>Status <select name="status"><option value="">any</option>${AGENT_STATUSES.map((s) => html`<option value="${s}"${s === input.status ? html` selected` : ''}>${s}</option>`)}</select></label>
<label>Role <input name="role" value="${input.role_id ?? ''}" placeholder="role:nurse" maxlength="256"></label>
<label>Search <input name="q" type="search" value="${input.search ?? ''}" placeholder="id or name" maxlength="200"></label>
<button type="submit">Filter</button>
</form>
${table(
  list.agents,
  [
    ['Agent', (a) => agentLink(a.agent_id)],
    ['Name', (a) => a.name],
    ['Role', (a) => a.role_id],
    ['Status', (a) => badge(a.status)],
    ['Owner', (a) => a.owner_id],
    ['Intents', (a) => html`<span class="wrap">${a.allowed_intents.join(', ')}</span>`],
    ['Created', (a) => time(a.created_at)],
  ],
  'No agent matches.',
)}
${pager('/console/agents', q, list.offset, list.limit, list.total)}`,
    });
  });

  app.get('/console/agents/:agent_id', async (c) => {
    const ctx = c.get('ctx');
    const agentId = c.req.param('agent_id');
    const agent = await getAgent(ctx, agentId);
    const [requests, history, events] = await Promise.all([
      listAuditRequests(ctx, { agentId, order: 'desc', limit: RECENT_REQUESTS }).then((p) => p.records),
      getOwnershipHistory(ctx, agentId),
      listManagementEvents(ctx, { resourceId: agentId, limit: EVENTS_SHOWN }),
    ]);
    const admin = sessionOf(c).role === 'admin';
    const self = agentPath(agentId);
    const actions = admin
      ? html`<h2>Actions</h2>
<div class="actions">
${agent.status === 'active' ? postButton(c, `${self}/suspend`, 'Suspend', { confirm: `Suspend ${agentId}? Its keys are refused until it is activated.`, danger: true }) : ''}
${agent.status === 'suspended' ? postButton(c, `${self}/activate`, 'Activate', { confirm: `Activate ${agentId}?` }) : ''}
</div>
<div class="cards">
${ownerForm(c, `${self}/transfer`, 'Start a transfer', 'to_owner_id', 'Start transfer', `Start a transfer of ${agentId}? The incoming owner must accept it with the token.`, 'why (recorded)')}
${ownerForm(c, `${self}/force-assign`, 'Force-assign', 'owner_id', 'Force-assign', `Assign ${agentId} without the owner's acceptance? This is recorded as force_assigned.`, 'why (recorded)')}
</div>`
      : '';
    return page(c, {
      title: agent.name,
      section: '/console/agents',
      scripts: admin ? [CONFIRM_SCRIPT] : [],
      body: html`${fields([
        ['Agent id', agent.agent_id],
        ['Name', agent.name],
        ['Description', agent.description],
        ['Role', agent.role_id],
        ['Status', badge(agent.status)],
        ['Allowed intents', agent.allowed_intents.join(', ')],
        ['Created', html`${time(agent.created_at)} by ${agent.created_by}`],
        ['Updated', time(agent.updated_at)],
      ])}
<h2>Owner</h2>
${fields([
  ['Owner id', agent.owner_id],
  ['Owner name', agent.owner_name],
  ['Verified', agent.owner_verified ? 'yes' : 'no'],
])}
${actions}
<h2>Keys</h2>
${table(
  agent.api_keys,
  [
    ['Key id', (k) => k.key_id],
    ['Prefix', (k) => html`<code>${k.key_prefix}</code>`],
    ['Status', (k) => badge(k.status)],
    ['Scopes', (k) => (k.scopes ? k.scopes.join(', ') : html`<span class="muted">all allowed intents</span>`)],
    ['Expires', (k) => time(k.expires_at)],
    ['Last used', (k) => time(k.last_used_at)],
    ...(admin
      ? ([['', (k) => (k.status === 'active' ? postButton(c, `${self}/keys/${encodeURIComponent(k.key_id)}/revoke`, 'Revoke', { confirm: `Revoke key ${k.key_prefix}…? Requests with it are refused at once.`, danger: true }) : '')]] as Array<[string, (k: (typeof agent.api_keys)[number]) => unknown]>)
      : []),
  ],
  'No key issued.',
)}
<h2>Latest requests</h2>
${table(
  requests,
  [
    ['Time', (r) => html`<a href="/console/audit/${encodeURIComponent(r.request_id)}">${time(r.requested_at)}</a>`],
    ['Task type', (r) => r.task_type],
    ['Outcome', (r) => outcome(r)],
  ],
  'No request yet.',
)}
<h2>Ownership</h2>
${table(
  history.holders,
  [
    ['Owner', (h) => h.owner_id],
    ['From', (h) => time(h.from)],
    ['Until', (h) => (h.until ? time(h.until) : html`<span class="muted">now</span>`)],
    ['Acquired', (h) => badge(h.acquired_via)],
    ['Reason', (h) => html`<span class="wrap">${h.reason ?? ''}</span>`],
  ],
)}
<h3>Transfers</h3>
${table(
  [...history.transfers].reverse(),
  [
    ['Initiated', (x) => time(x.initiated_at)],
    ['From', (x) => x.from_owner_id],
    ['To', (x) => x.to_owner_id],
    ['Status', (x) => badge(x.status)],
    ['Reason', (x) => html`<span class="wrap">${x.reason}</span>`],
    ['By', (x) => x.initiated_by],
    ['Resolved', (x) => (x.resolved_at ? html`${time(x.resolved_at)} by ${x.resolved_by}` : '')],
    ...(admin
      ? ([['', (x) => (x.status === 'pending' || x.status === 'expired' ? postButton(c, `${self}/force-assign`, 'Force-assign', { confirm: `Assign ${agentId} to ${x.to_owner_id} without acceptance?`, hidden: { owner_id: x.to_owner_id } }) : '')]] as Array<[string, (x: (typeof history.transfers)[number]) => unknown]>)
      : []),
  ],
  'No transfer.',
)}
<h2>Management events</h2>
${table(
  events.events,
  [
    ['Time', (e) => time(e.occurred_at)],
    ['Event', (e) => e.event_type],
    ['Actor', (e) => e.actor],
    ['Changed', (e) => html`<span class="wrap">${e.after ? Object.keys(e.after).join(', ') : ''}</span>`],
  ],
  'No event.',
)}`,
    });
  });

  app.post(
    '/console/agents/:agent_id/suspend',
    adminAction(async (c, _form, who) => {
      const id = c.req.param('agent_id')!;
      await updateAgent(c.get('ctx'), id, { status: 'suspended' }, who);
      return { to: agentPath(id), done: `${id} is suspended: its keys are refused until it is activated.` };
    }),
  );

  app.post(
    '/console/agents/:agent_id/activate',
    adminAction(async (c, _form, who) => {
      const ctx = c.get('ctx');
      const id = c.req.param('agent_id')!;
      // The console activates a suspended agent; un-revoking stays an API operation (PUT).
      if ((await getAgent(ctx, id)).status === 'revoked') throw new AppError('conflict', `${id} is revoked: the console activates suspended agents only`, { details: { status: 'revoked' } });
      await updateAgent(ctx, id, { status: 'active' }, who);
      return { to: agentPath(id), done: `${id} is active.` };
    }),
  );

  app.post(
    '/console/agents/:agent_id/keys/:key_id/revoke',
    adminAction(async (c, _form, who) => {
      const id = c.req.param('agent_id')!;
      const keyId = c.req.param('key_id')!;
      await revokeApiKey(c.get('ctx'), id, keyId, who.actor, who);
      return { to: agentPath(id), done: `Key ${keyId} is revoked.` };
    }),
  );

  app.post(
    '/console/agents/:agent_id/transfer',
    adminAction(async (c, form, who) => {
      const id = c.req.param('agent_id')!;
      const to = ownerIdOf(form, 'to_owner_id');
      const reason = reasonOf(form) ?? `Started in the console by ${who.actor}`;
      const t = await requestTransfer(c.get('ctx'), id, { to_owner_id: to, reason }, who);
      // The acceptance token is a secret and never reaches a page: a transfer started here is
      // completed by force-assign (or started through the API, whose answer carries the token).
      return { to: agentPath(id), done: `Transfer ${t.transfer_id} to ${to} is pending until ${t.expires_at}.` };
    }),
  );

  app.post(
    '/console/agents/:agent_id/force-assign',
    adminAction(async (c, form, who) => {
      const ctx = c.get('ctx');
      const id = c.req.param('agent_id')!;
      const owner = ownerIdOf(form, 'owner_id');
      const reason = reasonOf(form);
      // A pending (or expired) transfer to that owner is completed; with none, the owner is
      // reassigned directly (as PUT /api/agents does: a transfer recorded as force_assigned).
      const open = (await listTransfers(ctx, { agentId: id, limit: 1000, offset: 0 })).transfers.find((x) => (x.status === 'pending' || x.status === 'expired') && x.to_owner_id === owner);
      if (open) await forceAssignTransfer(ctx, id, open.transfer_id, reason ? { reason } : undefined, who);
      else await updateAgent(ctx, id, { owner_id: owner }, who);
      return { to: agentPath(id), done: `${id} is assigned to ${owner} (force_assigned).` };
    }),
  );
};
