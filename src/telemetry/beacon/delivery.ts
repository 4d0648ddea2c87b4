/**
 * Delivery of one report: POST, then retries with exponential backoff until it is sent or
 * out of attempts. Each attempt runs under the report's lease, renewed before the attempt
 * and across the backoff wait; a write that finds the lease taken stops this delivery, so
 * two processes never send the same report at once.
 */
import type { AppContext } from '../../shared/app-context.js';
import { canonicalJson, signatureHeaderValue } from './payload.js';
import { AbortedError, backoffMs, displayEndpoint, postBeacon } from './sender.js';
import * as store from './store.js';
import { countTelemetrySend } from '../../shared/metrics.js';

export const NO_ENDPOINT_MESSAGE = 'No telemetry endpoint configured';
/** Slack added to every lease beyond the send timeout and the backoff wait. */
export const LEASE_MARGIN_MS = 60_000;

export interface DeliveryDeps {
  ctx: AppContext;
  /** Lease holder id. */
  owner: string;
  /** Fires at stop(): aborts the send or the wait; the lease is given back by the caller. */
  signal: AbortSignal;
  timeoutMs: number;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  fetchImpl?: typeof fetch;
}

/** Sends one report until it is sent or out of attempts, under its lease. Never throws. */
export async function deliver(d: DeliveryDeps, entry: store.QueuedEntry): Promise<void> {
  const { id } = entry;
  const cfg = d.ctx.config.telemetry;
  const log = d.ctx.logger;
  const endpoint = cfg.endpoint!;
  const secret = cfg.signingSecret;
  const max = cfg.retryMaxAttempts;
  const db = d.ctx.db;
  const signal = d.signal;
  // The exact bytes signed and sent: the payload's canonical JSON.
  const body = canonicalJson(entry.payload);
  const signature = secret ? signatureHeaderValue(body, secret) : null;
  let attempts = entry.attempts;
  let lastError = entry.error_message;
  try {
    if (entry.next_attempt_at) await d.sleep(entry.next_attempt_at.getTime() - d.ctx.clock.now().getTime(), signal);
    for (;;) {
      let now = d.ctx.clock.now();
      if (attempts >= max) {
        // Out of attempts already (e.g. TELEMETRY_RETRY_MAX_ATTEMPTS lowered since).
        await store.recordOutcome(db, id, d.owner, { status: 'failed', attempts, errorMessage: lastError ?? 'Retry limit reached', nextAttemptAt: null, leaseUntil: null, now });
        return;
      }
      const leaseUntil = new Date(now.getTime() + d.timeoutMs + LEASE_MARGIN_MS);
      if (!(await store.beginAttempt(db, id, d.owner, leaseUntil, !!signature, displayEndpoint(endpoint)!, now))) {
        log.warn('telemetry: lost the lease on a report; another process sends it', { id });
        return;
      }
      const res = await postBeacon({ endpoint, body, signature, timeoutMs: d.timeoutMs, signal, fetchImpl: d.fetchImpl });
      attempts += 1;
      countTelemetrySend(res.ok);
      now = d.ctx.clock.now();
      if (res.ok) {
        await store.recordOutcome(db, id, d.owner, { status: 'sent', attempts, errorMessage: null, nextAttemptAt: null, leaseUntil: null, now });
        log.info('telemetry: report sent', { id, attempts, http_status: res.status, signed: !!signature });
        return;
      }
      lastError = res.error;
      if (attempts >= max) {
        await store.recordOutcome(db, id, d.owner, { status: 'failed', attempts, errorMessage: res.error, nextAttemptAt: null, leaseUntil: null, now });
        log.warn('telemetry: report failed; no attempts left', { id, attempts, error_message: res.error });
        return;
      }
      const wait = backoffMs(cfg.retryBackoffBase, attempts);
      const next = new Date(now.getTime() + wait);
      const kept = await store.recordOutcome(db, id, d.owner, {
        status: 'retrying',
        attempts,
        errorMessage: res.error,
        nextAttemptAt: next,
        leaseUntil: new Date(next.getTime() + d.timeoutMs + LEASE_MARGIN_MS),
        now,
      });
      if (!kept) return;
      log.warn('telemetry: send failed; retrying', { id, attempts, error_message: res.error, retry_in_ms: wait });
      await d.sleep(wait, signal);
    }
  } catch (e) {
    if (e instanceof AbortedError || signal.aborted) return; // stop(): the lease is given back, the next start resumes
    // A database error: the report stays unfinished; once its lease runs out a scheduler step resumes it.
    log.error('telemetry: sending a report failed unexpectedly', { id, error: e as Error });
  }
}
