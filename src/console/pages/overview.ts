/** `/console`: the overview. */
import { html } from 'hono/html';
import { listAgents } from '../../core/agents/read-agents.js';
import { badge, page, type ConsolePages } from '../kit.js';

const STATUSES = ['active', 'suspended', 'revoked'] as const;

export const overviewPages: ConsolePages = (app) => {
  app.get('/console', async (c) => {
    const ctx = c.get('ctx');
    const counts = await Promise.all(STATUSES.map(async (status) => [status, (await listAgents(ctx, { status, limit: 1 })).total] as const));
    return page(c, {
      title: 'Overview',
      section: '/console',
      body: html`<h2>Agents by status</h2>
<div class="cards">${counts.map(([status, n]) => html`<a class="card" href="/console/agents?status=${status}"><div class="big">${n}</div>${badge(status)}</a>`)}</div>`,
    });
  });
};
