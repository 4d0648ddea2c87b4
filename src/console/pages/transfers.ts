/** `/console/transfers`: every agent's ownership transfers, pending first, filtered by status, paged. */
import { html } from 'hono/html';
import { listTransfers } from '../../core/ownership/list-transfers.js';
import { TRANSFER_STATUSES } from '../../core/db/schema/agent-ownership-transfers.js';
import { badge, page, table, time, type ConsolePages } from '../kit.js';
import { agentLink, intParam, invalid, pager } from './agents.js';

const PAGE_SIZE = 50;

export const transferPages: ConsolePages = (app) => {
  app.get('/console/transfers', async (c) => {
    const status = c.req.query('status') || undefined;
    if (status !== undefined && !(TRANSFER_STATUSES as readonly string[]).includes(status)) throw invalid('status', `must be one of ${TRANSFER_STATUSES.join(', ')}`);
    const limit = intParam(c, 'limit', PAGE_SIZE, 1, 1000);
    const offset = intParam(c, 'offset', 0, 0, 2147483647);
    const list = await listTransfers(c.get('ctx'), { status: status as (typeof TRANSFER_STATUSES)[number] | undefined, limit, offset });
    return page(c, {
      title: 'Ownership transfers',
      section: '/console/transfers',
      body: html`<form method="get" action="/console/transfers" class="filters">
<label>Status <select name="status"><option value="">any</option>${TRANSFER_STATUSES.map((s) => html`<option value="${s}"${s === status ? html` selected` : ''}>${s}</option>`)}</select></label>
<button type="submit">Filter</button>
</form>
${table(
  list.transfers,
  [
    ['Agent', (x) => agentLink(x.agent_id)],
    ['Status', (x) => badge(x.status)],
    ['From', (x) => x.from_owner_id],
    ['To', (x) => x.to_owner_id],
    ['Reason', (x) => html`<span class="wrap">${x.reason}</span>`],
    ['Initiated', (x) => html`${time(x.initiated_at)} by ${x.initiated_by}`],
    ['Expires', (x) => (x.status === 'pending' ? time(x.expires_at) : '')],
    ['Resolved', (x) => (x.resolved_at ? html`${time(x.resolved_at)} by ${x.resolved_by}` : '')],
  ],
  'No transfer.',
)}
${pager('/console/transfers', { status }, offset, limit, list.total)}`,
    });
  });
};
