/**
 * One HTTP send of a beacon, and the retry timing. The body is the payload's canonical JSON
 * text, the exact bytes that were signed, so a receiver verifies the HMAC over the raw body.
 * Redirects are not followed: a report goes to the configured endpoint and nowhere else.
 */
import { SIGNATURE_HEADER } from './payload.js';

export type SendResult = { ok: true; status: number } | { ok: false; status: number | null; error: string };

/** Longest wait between two attempts, whatever the configuration (setTimeout's own limit is ~24.8 days). */
export const MAX_BACKOFF_MS = 24 * 3600 * 1000;

/** Wait after failed attempt n (1-based): base * 2^(n-1) seconds, capped at MAX_BACKOFF_MS. */
export function backoffMs(baseSeconds: number, attempt: number): number {
  return Math.min(MAX_BACKOFF_MS, baseSeconds * 1000 * 2 ** Math.max(0, attempt - 1));
}

export class AbortedError extends Error {
  constructor() {
    super('aborted');
    this.name = 'AbortedError';
  }
}

/** A cancellable wait: rejects with AbortedError when the signal fires, leaving no timer behind. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new AbortedError());
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortedError());
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, Math.max(0, ms));
    timer.unref?.();
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Describes a network failure without the URL (it may carry credentials). */
function describeFetchError(e: unknown): string {
  const err = e as { message?: string; cause?: { code?: string; message?: string } };
  const code = err?.cause?.code ?? err?.cause?.message;
  return `Network error: ${String(code ?? err?.message ?? e).slice(0, 200)}`;
}

/**
 * POSTs the body once. Success is any 2xx answer. `signal` aborts the send (shutdown); the
 * attempt also times out after `timeoutMs`. Throws AbortedError only when `signal` fired.
 */
export async function postBeacon(opts: {
  endpoint: string;
  body: string;
  signature: string | null;
  timeoutMs: number;
  signal: AbortSignal;
  fetchImpl?: typeof fetch;
}): Promise<SendResult> {
  if (opts.signal.aborted) throw new AbortedError();
  const ac = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ac.abort();
  }, opts.timeoutMs);
  const onAbort = () => ac.abort();
  opts.signal.addEventListener('abort', onAbort, { once: true });
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'svc-telemetry' };
  if (opts.signature) headers[SIGNATURE_HEADER] = opts.signature;
  try {
    const res = await (opts.fetchImpl ?? fetch)(opts.endpoint, { method: 'POST', headers, body: opts.body, redirect: 'manual', signal: ac.signal });
    // The answer's body is not needed; drop it so the connection is freed.
    await res.body?.cancel().catch(() => {});
    if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status };
    if (res.status >= 300 && res.status < 400) return { ok: false, status: res.status, error: `HTTP ${res.status}: redirects are not followed` };
    return { ok: false, status: res.status, error: `HTTP ${res.status}${res.statusText ? ` ${res.statusText.slice(0, 100)}` : ''}` };
  } catch (e) {
    if (opts.signal.aborted) throw new AbortedError();
    if (timedOut) return { ok: false, status: null, error: `Timed out after ${opts.timeoutMs} ms` };
    return { ok: false, status: null, error: describeFetchError(e) };
  } finally {
    clearTimeout(timer);
    opts.signal.removeEventListener('abort', onAbort);
  }
}

/** The endpoint as shown and logged: a password in the URL is masked. */
export function displayEndpoint(endpoint: string | null): string | null {
  if (!endpoint) return null;
  try {
    const u = new URL(endpoint);
    if (!u.password) return endpoint;
    u.password = '***';
    return u.toString();
  } catch {
    return endpoint;
  }
}
