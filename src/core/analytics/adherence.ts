/**
 * Adherence analytics (GET /api/analytics/adherence): per agent, its requests in the window
 * (accepted, refused by reason, last one), its keys expiring soon and its owner; the dormant
 * agents; the refusals for a bad key; and beside them the activity the collector store of
 * this host observed, so that unsanctioned AI use shows next to governed use.
 *
 * The window is aligned to UTC hours: whole days are read from the daily rollup, the partial
 * days at its edges from the hourly one, and records above the watermark from the log, in
 * one statement (one snapshot).
 */
import fs from 'node:fs';
import Database from 'better-sqlite3';
import type { AppContext } from '../../shared/app-context.js';
import type { components, operations } from '../../../gen/openapi/control-plane.js';
import { classifiedRecords } from './rollup.js';
import { catchUp, tailWhere } from './usage.js';
import { alignedWindow, DAY_MS } from './window.js';

export type AdherenceQuery = NonNullable<operations['getAdherenceAnalytics']['parameters']['query']>;
export type AdherenceAnalytics = components['schemas']['AdherenceAnalytics'];
type AgentAdherence = components['schemas']['AgentAdherence'];
type KeyRefusal = components['schemas']['KeyRefusalCount'];
type ObservedUsage = components['schemas']['ObservedUsage'];

const MAX_HOURS = 366 * 24;
/** Keys expiring within this long are listed. */
const EXPIRING_WITHIN_MS = 14 * DAY_MS;
const KEY_REASONS = new Set<string>(['missing_key', 'unknown_key', 'revoked_key', 'expired_key', 'agent_suspended', 'agent_revoked', 'auth_other']);
/** Most (platform, user) rows of observed activity. */
const MAX_OBSERVED = 1000;

export async function adherenceAnalytics(ctx: AppContext, q: AdherenceQuery = {}): Promise<AdherenceAnalytics> {
  const now = ctx.clock.now();
  const w = alignedWindow(q, now, 'hour', 30 * DAY_MS, MAX_HOURS);
  const from = w.from.getTime();
  const to = w.to.getTime();
  // Whole UTC days inside the window come from the daily rollup; none: all from the hourly one.
  let d0 = Math.ceil(from / DAY_MS) * DAY_MS;
  let d1 = Math.floor(to / DAY_MS) * DAY_MS;
  if (d0 >= d1) d0 = d1 = to;
  const lower = await catchUp(ctx);
  const counts = await ctx.db.query<{ agent_id: string; outcome: string; reason: string; n: number | string; last_at: Date | string }>(
    `WITH x AS (
       SELECT agent_id, outcome, reason, count AS n, last_at FROM analytics_daily WHERE bucket >= $3 AND bucket < $4
       UNION ALL
       SELECT agent_id, outcome, reason, count, last_at FROM analytics_hourly
        WHERE (bucket >= $1 AND bucket < $3) OR (bucket >= $4 AND bucket < $2)
       UNION ALL
       SELECT agent_id, outcome, reason, count(*), max(requested_at)
         FROM (${classifiedRecords(tailWhere(5))}) c
        GROUP BY 1, 2, 3
     )
     SELECT agent_id, outcome, reason, sum(n) AS n, max(last_at) AS last_at FROM x GROUP BY 1, 2, 3`,
    [w.from, w.to, new Date(d0), new Date(d1), lower],
  );
  const agentRows = await ctx.db.query<{ agent_id: string; name: string; role_id: string; status: AgentAdherence['status']; owner_id: string; owner_name: string | null }>(
    'SELECT agent_id, name, role_id, status, owner_id, owner_name FROM agents ORDER BY agent_id',
  );
  const keyRows = await ctx.db.query<{ agent_id: string; key_id: string; key_prefix: string; expires_at: Date | string }>(
    `SELECT agent_id, key_id, key_prefix, expires_at FROM agent_api_keys
      WHERE status = 'active' AND expires_at > $1 AND expires_at <= $2 ORDER BY expires_at, key_id`,
    [now, new Date(now.getTime() + EXPIRING_WITHIN_MS)],
  );

  const byAgent = new Map<string, AgentAdherence>();
  for (const a of agentRows) {
    byAgent.set(a.agent_id, {
      agent_id: a.agent_id,
      name: a.name,
      role_id: a.role_id,
      status: a.status,
      owner_id: a.owner_id,
      owner_name: a.owner_name,
      requests: 0,
      accepted: 0,
      refused: 0,
      refused_by_reason: {},
      last_request_at: null,
      keys_expiring_soon: [],
    });
  }
  for (const k of keyRows) byAgent.get(k.agent_id)?.keys_expiring_soon.push({ key_id: k.key_id, key_prefix: k.key_prefix, expires_at: new Date(k.expires_at).toISOString() });

  const keyRefusals: KeyRefusal[] = [];
  for (const c of counts) {
    const n = Number(c.n);
    const lastAt = new Date(c.last_at).toISOString();
    if (c.outcome === 'refused' && KEY_REASONS.has(c.reason)) {
      keyRefusals.push({ agent_id: c.agent_id === '' ? null : c.agent_id, reason: c.reason as KeyRefusal['reason'], count: n, last_at: lastAt });
    }
    const a = byAgent.get(c.agent_id);
    if (!a) continue;
    a.requests += n;
    if (c.outcome === 'accepted') a.accepted += n;
    else {
      a.refused += n;
      a.refused_by_reason[c.reason] = (a.refused_by_reason[c.reason] ?? 0) + n;
    }
    if (a.last_request_at === null || lastAt > a.last_request_at) a.last_request_at = lastAt;
  }
  keyRefusals.sort((x, y) => (x.agent_id ?? '').localeCompare(y.agent_id ?? '') || x.reason.localeCompare(y.reason));
  const agents = [...byAgent.values()];
  const observed = observedActivity(ctx, w.from, w.to);
  return {
    from: w.from.toISOString(),
    to: w.to.toISOString(),
    agents,
    dormant_agents: agents.filter((a) => a.status === 'active' && a.requests === 0).map((a) => a.agent_id),
    key_refusals: keyRefusals,
    observed: observed.rows,
    observed_reason: observed.reason,
  };
}

/**
 * The collector store's activity in the window, per platform (source) and user pseudonym,
 * read from its SQLite file opened read-only; null with the reason when the file is not here
 * or cannot be read.
 */
function observedActivity(ctx: AppContext, from: Date, to: Date): { rows: ObservedUsage[] | null; reason: string | null } {
  const file = ctx.config.collector.dbPath;
  try {
    fs.accessSync(file, fs.constants.R_OK);
  } catch {
    return { rows: null, reason: 'no collector store on this host (collector.dbPath / COLLECTOR_DB_PATH is absent or not readable)' };
  }
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    const rows = db
      .prepare(
        `SELECT source_id AS platform, actor_identity AS user_pseudonym, count(*) AS events, max(observed_at) AS last_observed_at
           FROM observed_activity_log WHERE observed_at >= ? AND observed_at < ?
          GROUP BY source_id, actor_identity ORDER BY events DESC, platform, user_pseudonym LIMIT ${MAX_OBSERVED}`,
      )
      .all(from.toISOString(), to.toISOString()) as ObservedUsage[];
    return { rows: rows.map((r) => ({ ...r, events: Number(r.events) })), reason: null };
  } catch (e) {
    ctx.logger.warn('analytics: the collector store could not be read', { error: (e as Error).message });
    return { rows: null, reason: 'the collector store could not be read' };
  } finally {
    db?.close();
  }
}
