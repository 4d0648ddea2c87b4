/**
 * `/console`: the overview: requests and refusals per hour (the usage analytics), agents by status, the latest checkpoint of the transparency log
 * and its witnesses, and the audit log's verification (the last result in this process, and
 * a button to run it now: `POST /console/verify`, open to auditors since it changes nothing).
 */
import { html } from 'hono/html';
import type { AppContext } from '../../shared/app-context.js';
import { listAgents } from '../../core/agents/read-agents.js';
import { verifyAudit } from '../../core/audit/verify.js';
import { latestCheckpoint } from '../../core/tlog/log.js';
import { usageAnalytics } from '../../core/analytics/usage.js';
import { badge, fields, page, postButton, readerAction, table, time, type ConsolePages } from '../kit.js';

const STATUSES = ['active', 'suspended', 'revoked'] as const;

interface LastVerify {
  at: Date;
  by: string;
  status: string;
  records: number;
  failure: string | null;
  ms: number;
}

/** The last verification run from the console in this process. */
const lastVerify = (ctx: AppContext) => ctx.singleton('console-last-verify', () => ({ value: null as LastVerify | null }));

async function checkpointPart(ctx: AppContext) {
  const cp = await latestCheckpoint(ctx.db);
  if (!cp) return html`<p class="muted">No checkpoint signed yet.</p>`;
  const witnesses = await ctx.db.query<{ key_name: string; received_at: Date }>('SELECT key_name, received_at FROM audit_tlog_cosignatures WHERE tree_size = $1 ORDER BY key_name', [cp.treeSize]);
  const [signed] = await ctx.db.query<{ created_at: Date }>('SELECT created_at FROM audit_tlog_checkpoints WHERE tree_size = $1', [cp.treeSize]);
  const [witnessed] = await ctx.db.query<{ tree_size: number | string; n: number | string }>(
    'SELECT tree_size, count(*) AS n FROM audit_tlog_cosignatures GROUP BY tree_size ORDER BY tree_size DESC LIMIT 1',
  );
  const configured = ctx.config.tlog.witnessKeys.length;
  return html`${fields([
    ['Tree size', cp.treeSize],
    ['Root hash', html`<code>${cp.root.toString('base64')}</code>`],
    ['Signed', time(signed?.created_at)],
    ['Witnesses', `${witnesses.length} of ${configured} configured`],
    ['Latest witnessed', witnessed ? `tree size ${Number(witnessed.tree_size)} (${Number(witnessed.n)} cosignature${Number(witnessed.n) === 1 ? '' : 's'})` : 'none yet'],
  ])}
${table(witnesses, [
  ['Witness', (w) => w.key_name],
  ['Cosigned (received)', (w) => time(w.received_at)],
], 'No witness has cosigned this checkpoint yet.')}
<p><a href="/api/audit/tlog/checkpoint">The signed checkpoint</a> (text, public)</p>`;
}

/** Requests and refusals per hour over the last 24 hours (the usage analytics), as an SVG bar chart. */
async function activityChart(ctx: AppContext) {
  const usage = await usageAnalytics(ctx, { bucket: 'hour', group_by: 'outcome' });
  const hours = new Map<string, { accepted: number; refused: number }>();
  for (let t = Date.parse(usage.from); t < Date.parse(usage.to); t += 3_600_000) hours.set(new Date(t).toISOString(), { accepted: 0, refused: 0 });
  for (const s of usage.series) {
    const h = hours.get(new Date(s.bucket_start).toISOString());
    if (h) {
      h.accepted += s.accepted;
      h.refused += s.refused;
    }
  }
  const bars = [...hours];
  const max = Math.max(1, ...bars.map(([, h]) => h.accepted + h.refused));
  const W = 720;
  const H = 160;
  const step = W / Math.max(1, bars.length);
  const bw = Math.max(2, step * 0.7);
  const y = (n: number) => (n / max) * (H - 20);
  return html`<div class="chart" id="activity-chart" data-accepted="${usage.totals.accepted}" data-refused="${usage.totals.refused}">
<svg viewBox="0 0 ${W} ${H + 18}" role="img" aria-label="Context requests per hour, last 24 hours: ${usage.totals.accepted} accepted, ${usage.totals.refused} refused">
${bars.map(([at, h], i) => {
  const x = i * step + (step - bw) / 2;
  const a = y(h.accepted);
  const r = y(h.refused);
  return html`<g><title>${at.slice(11, 16)} UTC: ${h.accepted} accepted, ${h.refused} refused</title><rect x="${x.toFixed(1)}" y="${(H - a).toFixed(1)}" width="${bw.toFixed(1)}" height="${a.toFixed(1)}" fill="#2f7d4f"></rect><rect x="${x.toFixed(1)}" y="${(H - a - r).toFixed(1)}" width="${bw.toFixed(1)}" height="${r.toFixed(1)}" fill="#c4443a"></rect>${i % 6 === 0 ? html`<text x="${x.toFixed(1)}" y="${H + 14}" font-size="11" fill="#667085">${at.slice(11, 16)}</text>` : ''}</g>`;
})}
<line x1="0" y1="${H}" x2="${W}" y2="${H}" stroke="#d8dce4"></line>
<text x="${W - 4}" y="12" font-size="11" fill="#667085" text-anchor="end">max ${max}/h</text>
</svg>
<div class="legend"><span><span class="swatch swatch-accepted"></span>accepted: ${usage.totals.accepted}</span><span><span class="swatch swatch-refused"></span>refused: ${usage.totals.refused}</span><span>last 24 hours, UTC</span></div>
</div>`;
}

export const overviewPages: ConsolePages = (app) => {
  app.get('/console', async (c) => {
    const ctx = c.get('ctx');
    const counts = await Promise.all(STATUSES.map(async (status) => [status, (await listAgents(ctx, { status, limit: 1 })).total] as const));
    const v = lastVerify(ctx).value;
    return page(c, {
      title: 'Overview',
      section: '/console',
      body: html`<h2>Context requests, last 24 hours</h2>
${await activityChart(ctx)}
<h2>Agents by status</h2>
<div class="cards">${counts.map(([status, n]) => html`<a class="card" href="/console/agents?status=${status}"><div class="big">${n}</div>${badge(status)}</a>`)}</div>
<h2>Audit log verification</h2>
<div id="verify">${
        v
          ? fields([
              ['Result', badge(v.status)],
              ['Records checked', v.records],
              ['First failure', v.failure ?? 'none'],
              ['Run', html`${time(v.at)} by ${v.by}, ${v.ms} ms`],
            ])
          : html`<p class="muted">Not verified from the console since this process started.</p>`
      }</div>
<div class="actions">${postButton(c, '/console/verify', 'Verify the audit log now')}</div>
<h2>Transparency log</h2>
${await checkpointPart(ctx)}`,
    });
  });

  app.post(
    '/console/verify',
    readerAction(async (c, _form, who) => {
      const ctx = c.get('ctx');
      const started = performance.now();
      const r = await verifyAudit(ctx);
      const failure = r.status === 'ok' ? null : describeFailure(r);
      lastVerify(ctx).value = { at: ctx.clock.now(), by: who.actor, status: r.status, records: r.record_count, failure, ms: Math.round(performance.now() - started) };
      return { to: '/console', done: r.status === 'ok' ? `The audit log verifies: ${r.record_count} records checked.` : `The audit log does NOT verify: ${failure}` };
    }),
  );
};

/** One line for a failed verification: where it first fails. */
function describeFailure(r: Awaited<ReturnType<typeof verifyAudit>>): string {
  const parts: string[] = [];
  if (r.tampered_at_sequence != null) parts.push(`context requests: record ${r.tampered_at_sequence}${r.tampered_field_chain ? ` (${r.tampered_field_chain})` : ''}${r.error ? `: ${r.error}` : ''}`);
  if (r.management_events?.status !== 'ok') parts.push('management events');
  if (r.transparency_log?.status !== 'ok') parts.push('transparency log');
  return parts.join('; ') || 'tampered';
}
