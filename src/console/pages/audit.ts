/**
 * `/console/audit`: the context requests' audit log (newest first, filtered, paged), and
 * `/console/audit/{request_id}`: one record, every field, and its inclusion proof in the
 * transparency log, checked in the browser by assets/proof.js (WebCrypto).
 */
import { html } from 'hono/html';
import { listAuditRequests, type AuditRecord } from '../../core/audit/read.js';
import { auditRecordProof } from '../../core/audit/record-proof.js';
import { canonicalJson } from '../../shared/canonical-json.js';
import { AppError } from '../../shared/errors.js';
import { badge, fields, page, table, time, withQuery, type ConsolePages, type Html } from '../kit.js';

const PAGE_SIZE = 50;
/** The refusal codes a record's validation_errors.error_code may hold (request-context.ts). */
const REFUSAL_CODES = ['AUTH_FAILED', 'INTENT_NOT_ALLOWED', 'VALIDATION_ERROR', 'INTERNAL_ERROR', 'REVISION_NOT_REACHED'];
/** The order of the record page's fields: the leaf's (canonical) key order. */
const FIELDS: ReadonlyArray<keyof AuditRecord> = [
  'request_id', 'requested_at', 'agent_id', 'task_type', 'intent_valid', 'validation_errors', 'request_params',
  'context_bundle_ids', 'context_scd_ids', 'processing_time_ms', 'chain_id', 'parent_request_id',
  'chain_sequence', 'previous_hash', 'record_hash', 'content_hash', 'leaf_index',
];

/** A datetime-local value (no zone) is UTC; anything else goes to the verb as given. */
function utc(v: string | undefined): string | undefined {
  if (!v) return undefined;
  return /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?$/.test(v) ? `${v}Z` : v;
}

function refusalCode(r: AuditRecord): string | null {
  const code = r.validation_errors?.error_code;
  return typeof code === 'string' ? code : null;
}

function outcome(r: AuditRecord): Html {
  const code = refusalCode(r);
  // A REVISION_NOT_REACHED refusal keeps intent_valid true (its intent had passed): refused all the same.
  return r.intent_valid && !code ? badge('accepted') : html`${badge('refused')}${code ? html` <code>${code}</code>` : ''}`;
}

const agentLink = (id: string | null): Html => (id ? html`<a href="/console/agents/${encodeURIComponent(id)}">${id}</a>` : html`<span class="muted">none</span>`);

/** A field's value as shown (its exact JSON is in data-value, which proof.js compares with the leaf). */
function shown(name: keyof AuditRecord, v: unknown): Html {
  if (v === null || v === undefined) return html`<span class="muted">none</span>`;
  if (name === 'agent_id') return agentLink(v as string);
  if (name === 'requested_at') return html`${time(v as string)} <code>${v as string}</code>`;
  if (name === 'intent_valid') return badge(v ? 'accepted' : 'refused');
  if (Array.isArray(v)) return v.length ? html`<span class="wrap">${v.join(', ')}</span>` : html`<span class="muted">empty</span>`;
  if (typeof v === 'object') return html`<pre>${canonicalJson(v)}</pre>`;
  return html`<code>${String(v)}</code>`;
}

export const auditPages: ConsolePages = (app) => {
  app.get('/console/audit', async (c) => {
    const q = c.req.query();
    const before = q.before ? q.before : undefined;
    if (before !== undefined && !/^\d{1,15}$/.test(before)) {
      throw new AppError('validation_error', 'before must be a chain_sequence (a non-negative integer)');
    }
    const outcomeFilter = q.outcome === 'accepted' ? true : q.outcome === 'refused' ? false : undefined;
    const filters = {
      agent_id: q.agent_id || undefined,
      task_type: q.task_type || undefined,
      outcome: outcomeFilter === undefined ? undefined : q.outcome,
      error_code: q.error_code || undefined,
      since: q.since || undefined,
      until: q.until || undefined,
    };
    const res = await listAuditRequests(c.get('ctx'), {
      agentId: filters.agent_id,
      taskType: filters.task_type,
      intentValid: outcomeFilter,
      errorCode: filters.error_code,
      since: utc(filters.since),
      until: utc(filters.until),
      beforeSequence: before === undefined ? undefined : Number(before),
      order: 'desc',
      limit: PAGE_SIZE,
    });
    const selected = (a: string | undefined, b: string) => (a === b ? html` selected` : '');
    const form = html`<form method="get" action="/console/audit" class="filters">
<label>Agent <input name="agent_id" value="${filters.agent_id ?? ''}" placeholder="agent:…"></label>
<label>Task type <input name="task_type" value="${filters.task_type ?? ''}"></label>
<label>Outcome <select name="outcome"><option value="">any</option><option value="accepted"${selected(filters.outcome, 'accepted')}>accepted</option><option value="refused"${selected(filters.outcome, 'refused')}>refused</option></select></label>
<label>Refusal code <select name="error_code"><option value="">any</option>${REFUSAL_CODES.map((code) => html`<option${selected(filters.error_code, code)}>${code}</option>`)}</select></label>
<label>Since (UTC) <input name="since" type="datetime-local" step="1" value="${filters.since ?? ''}"></label>
<label>Until (UTC) <input name="until" type="datetime-local" step="1" value="${filters.until ?? ''}"></label>
<button type="submit">Filter</button> <a href="/console/audit">Clear</a>
</form>`;
    const rows = table(
      res.records,
      [
        ['Time', (r) => time(r.requested_at)],
        ['Agent', (r) => agentLink(r.agent_id)],
        ['Task type', (r) => r.task_type],
        ['Outcome', (r) => outcome(r)],
        ['SCDs', (r) => r.context_scd_ids?.length ?? 0],
        ['Leaf', (r) => r.leaf_index],
        ['', (r) => html`<a href="/console/audit/${encodeURIComponent(r.request_id)}">Details</a>`],
      ],
      'No audit record matches.',
    );
    const older = res.next_after_sequence === null ? '' : html`<a href="${withQuery('/console/audit', { ...filters, before: res.next_after_sequence })}">Older records</a>`;
    const newest = before === undefined ? '' : html`<a href="${withQuery('/console/audit', filters)}">Newest records</a>`;
    return page(c, { title: 'Audit log', section: '/console/audit', body: html`${form}${rows}<div class="pager">${newest}${older}</div>` });
  });

  app.get('/console/audit/:request_id', async (c) => {
    const p = await auditRecordProof(c.get('ctx'), c.req.param('request_id'));
    const r = p.record;
    const dl = html`<dl class="fields" id="record">${FIELDS.map((name) => html`<dt>${name}</dt><dd data-field="${name}" data-value="${canonicalJson(r[name] ?? null)}">${shown(name, r[name])}</dd>`)}</dl>`;
    const data = {
      request_id: r.request_id,
      leaf_index: r.leaf_index,
      leaf: p.leaf.toString('base64'),
      tree_size: p.checkpoint?.treeSize ?? null,
      checkpoint: p.checkpoint?.note ?? null,
      hashes: p.proof?.map((h) => h.toString('base64')) ?? null,
      verifier_key: p.verifierKey,
    };
    const pending = !p.proof;
    const proof = html`<h2>Inclusion in the transparency log</h2>
<p id="proof-result" class="proof" role="status" data-state="${pending ? 'pending' : 'checking'}">${
      pending
        ? p.checkpoint
          ? `Pending: leaf ${r.leaf_index} is not yet covered by the latest checkpoint (tree size ${p.checkpoint.treeSize}); reload in a moment.`
          : `Pending: the log has no checkpoint yet; reload in a moment.`
        : 'Checking the inclusion proof in this browser… (needs JavaScript with WebCrypto Ed25519)'
    }</p>
<div id="proof-data" hidden data-proof="${JSON.stringify(data)}"></div>
<details><summary>Proof data</summary>${fields([
      ['Leaf data (what the log hashes)', html`<pre>${p.leaf.toString('utf8')}</pre>`],
      ['Audit path', p.proof ? html`<pre>${p.proof.map((h) => h.toString('base64')).join('\n')}</pre>` : null],
      ['Checkpoint', p.checkpoint ? html`<pre>${p.checkpoint.note}</pre>` : null],
      ['Log key', html`<code>${p.verifierKey}</code>`],
    ])}</details>`;
    return page(c, {
      title: `Audit record ${r.request_id}`,
      section: '/console/audit',
      body: html`<p><a href="/console/audit">Back to the audit log</a></p>${dl}${proof}`,
      scripts: pending ? [] : ['/console/assets/proof.js'],
    });
  });
};
