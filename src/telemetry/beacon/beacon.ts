/**
 * The beacon runtime of one process: the daily schedule, manual triggers, resumption of
 * unfinished reports, and the deliveries in flight (delivery.ts sends one report).
 *
 * Invariants:
 * - At most one scheduled report per UTC day, across restarts and processes: the report is
 *   written with INSERT ... ON CONFLICT DO NOTHING against a partial unique index before
 *   anything is sent, and only the process whose insert won sends it.
 * - Every report is written to the local log before its first send, with the exact payload.
 * - A report is sent by the process holding its lease; an unfinished report whose lease ran
 *   out (its process stopped or crashed) is resumed by whichever process claims it first.
 * - stop() aborts sends and waits, leaves no timer behind, and gives the leases back so the
 *   next start resumes unfinished reports at once.
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../shared/app-context.js';
import type { components } from '../../../gen/openapi/telemetry.js';
import { buildReport } from './payload.js';
import { displayEndpoint, sleep } from './sender.js';
import { deliver, LEASE_MARGIN_MS, NO_ENDPOINT_MESSAGE } from './delivery.js';
import * as store from './store.js';

export { displayEndpoint, NO_ENDPOINT_MESSAGE };

export type TelemetryConfigView = components['schemas']['TelemetryConfig'];

const DAY_MS = 24 * 3600 * 1000;
/** Wait before the scheduler tries again after a database error. */
const ERROR_RETRY_MS = 60_000;

export interface BeaconOptions {
  /** Lease holder id (default: a fresh UUID per instance). */
  owner?: string;
  /** Timeout of one HTTP send (default 10 s). */
  requestTimeoutMs?: number;
  /** Longest single scheduler sleep; the schedule is re-evaluated after it (default 1 h). */
  maxTimerMs?: number;
  fetchImpl?: typeof fetch;
  /** The wait between attempts (tests record it instead of waiting). */
  sleepImpl?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** `YYYY-MM-DD` of the UTC day of `d`. */
export const utcDay = (d: Date) => d.toISOString().slice(0, 10);

/** The daily report time (UTC) on the day of `d`. */
export function dueOn(d: Date, hour: number): number {
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), hour);
}

export class Beacon {
  readonly owner: string;
  private readonly ac = new AbortController();
  private readonly inflight = new Map<number, Promise<void>>();
  private readonly timeoutMs: number;
  private readonly maxTimerMs: number;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<number | null> | null = null;
  private started = false;
  private stopped = false;
  private stopping: Promise<void> | null = null;

  constructor(
    private readonly ctx: AppContext,
    private readonly opts: BeaconOptions = {},
  ) {
    this.owner = opts.owner ?? randomUUID();
    this.timeoutMs = opts.requestTimeoutMs ?? 10_000;
    this.maxTimerMs = opts.maxTimerMs ?? 3600_000;
    this.sleep = opts.sleepImpl ?? sleep;
  }

  private get cfg() {
    return this.ctx.config.telemetry;
  }

  private get log() {
    return this.ctx.logger;
  }

  /** False when no endpoint is configured: nothing is scheduled or sent. */
  get enabled(): boolean {
    return !!this.cfg.endpoint;
  }

  configView(): TelemetryConfigView {
    return {
      enabled: this.enabled,
      endpoint: displayEndpoint(this.cfg.endpoint),
      deployment_id: this.ctx.config.deploymentId,
      daily_report_hour: this.cfg.dailyReportHour,
      retry_max_attempts: this.cfg.retryMaxAttempts,
      retry_backoff_base: this.cfg.retryBackoffBase,
      signing_enabled: !!this.cfg.signingSecret,
    };
  }

  /** Resumes unfinished reports and, when enabled, arms the daily schedule. */
  async start(): Promise<void> {
    if (this.started || this.stopped) return;
    this.started = true;
    if (!this.enabled) {
      this.log.info('telemetry disabled: TELEMETRY_ENDPOINT is not set; no report is scheduled or sent');
      await this.resumeOrphans().catch((e) => this.log.error('telemetry: resuming unfinished reports failed', { error: e as Error }));
      return;
    }
    this.log.info('telemetry enabled', { endpoint: displayEndpoint(this.cfg.endpoint), daily_report_hour: this.cfg.dailyReportHour, signed: !!this.cfg.signingSecret });
    await this.tick();
  }

  /** Stops the schedule and every send; waits for them; gives the leases back. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.stopped = true;
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      this.ac.abort();
      await this.ticking?.catch(() => null);
      await Promise.allSettled([...this.inflight.values()]);
      await store.releaseLeases(this.ctx.db, this.owner, this.ctx.clock.now()).catch((e) => this.log.error('telemetry: releasing leases failed', { error: e as Error }));
    })();
    return this.stopping;
  }

  /** Resolves when every send this process started has ended (tests). */
  async idle(): Promise<void> {
    while (this.inflight.size) await Promise.allSettled([...this.inflight.values()]);
  }

  /**
   * One scheduler step: writes and sends today's report when it is due and no process has
   * written it yet, resumes orphaned reports, and re-arms the timer. Returns the id of the
   * report it wrote, or null.
   */
  tick(): Promise<number | null> {
    if (this.stopped) return Promise.resolve(null);
    this.ticking ??= this.runTick().finally(() => (this.ticking = null));
    return this.ticking;
  }

  private async runTick(): Promise<number | null> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const now = this.ctx.clock.now();
    let created: number | null = null;
    let delay: number;
    try {
      const due = dueOn(now, this.cfg.dailyReportHour);
      if (now.getTime() >= due) {
        created = await this.writeScheduled(now);
        delay = due + DAY_MS - now.getTime();
      } else {
        delay = due - now.getTime();
      }
      await this.resumeOrphans();
    } catch (e) {
      this.log.error('telemetry: scheduler step failed; trying again later', { error: e as Error });
      delay = ERROR_RETRY_MS;
    }
    this.arm(delay);
    return created;
  }

  private arm(delayMs: number): void {
    if (this.stopped || !this.enabled) return;
    const ms = Math.min(this.maxTimerMs, Math.max(1000, delayMs));
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.tick();
    }, ms);
    this.timer.unref?.();
  }

  /** Today's scheduled report, unless one exists (the unique index decides between processes). */
  private async writeScheduled(now: Date): Promise<number | null> {
    const day = utcDay(now);
    if (await store.scheduledExists(this.ctx.db, day)) return null;
    const { payload, counts } = await buildReport(this.ctx, now);
    const id = await store.insertEntry(this.ctx.db, {
      reportDate: day,
      trigger: 'schedule',
      payload,
      counts,
      status: 'pending',
      signed: !!this.cfg.signingSecret,
      endpoint: displayEndpoint(this.cfg.endpoint),
      claimedBy: this.owner,
      claimedUntil: new Date(now.getTime() + this.timeoutMs + LEASE_MARGIN_MS),
      now,
    });
    if (id === null) return null; // another process wrote today's report first
    this.log.info('telemetry: daily report written', { id, report_date: day });
    this.launch({ id, attempts: 0, payload, next_attempt_at: null, error_message: null });
    return id;
  }

  /**
   * A report now, outside the schedule (POST /trigger). Written before this returns; sent in
   * the background. With no endpoint the entry is written as failed, so the customer sees
   * what would have been sent.
   */
  async trigger(): Promise<number> {
    const now = this.ctx.clock.now();
    const { payload, counts } = await buildReport(this.ctx, now);
    const enabled = this.enabled;
    const id = await store.insertEntry(this.ctx.db, {
      reportDate: utcDay(now),
      trigger: 'manual',
      payload,
      counts,
      status: enabled ? 'pending' : 'failed',
      signed: enabled && !!this.cfg.signingSecret,
      endpoint: displayEndpoint(this.cfg.endpoint),
      errorMessage: enabled ? null : NO_ENDPOINT_MESSAGE,
      claimedBy: enabled ? this.owner : null,
      claimedUntil: enabled ? new Date(now.getTime() + this.timeoutMs + LEASE_MARGIN_MS) : null,
      now,
    });
    if (id === null) throw new Error('telemetry: manual report was not written');
    this.log.info('telemetry: manual report written', { id });
    if (enabled) this.launch({ id, attempts: 0, payload, next_attempt_at: null, error_message: null });
    return id;
  }

  /** Claims unfinished reports nobody is sending (their process stopped or crashed). */
  private async resumeOrphans(): Promise<void> {
    const now = this.ctx.clock.now();
    const leaseMs = this.timeoutMs + LEASE_MARGIN_MS;
    for (const id of await store.orphanIds(this.ctx.db, now)) {
      if (this.stopped) return;
      if (this.inflight.has(id)) continue;
      const entry = await store.claimOrphan(this.ctx.db, id, this.owner, leaseMs, now);
      if (!entry) continue;
      if (!this.enabled) {
        await store.recordOutcome(this.ctx.db, id, this.owner, { status: 'failed', attempts: entry.attempts, errorMessage: NO_ENDPOINT_MESSAGE, nextAttemptAt: null, leaseUntil: null, now });
        continue;
      }
      this.log.info('telemetry: resuming an unfinished report', { id, attempts: entry.attempts });
      this.launch(entry);
    }
  }

  private launch(entry: store.QueuedEntry): void {
    if (this.stopped || this.inflight.has(entry.id)) return;
    const deps = { ctx: this.ctx, owner: this.owner, signal: this.ac.signal, timeoutMs: this.timeoutMs, sleep: this.sleep, fetchImpl: this.opts.fetchImpl };
    const p = deliver(deps, entry).finally(() => this.inflight.delete(entry.id));
    this.inflight.set(entry.id, p);
  }
}

/** The one Beacon of a context, stopped when the context closes. */
export function getBeacon(ctx: AppContext): Beacon {
  return ctx.singleton('telemetry.beacon', () => {
    const b = new Beacon(ctx);
    ctx.onClose(() => b.stop());
    return b;
  });
}
