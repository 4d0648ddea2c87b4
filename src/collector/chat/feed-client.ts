/**
 * The Compliance API Activity Feed client (external-formats.md 3.1-3.5): one page per
 * call, with the feed's retry rules. A 429 is retried after `retry-after` (else exponential
 * backoff from 1 s to 60 s); 5xx and 529 are retried with backoff (a 500 carrying
 * `x-should-retry: false` is not); network errors are retried; any other status is a
 * FeedError. The key is sent in `x-api-key` and never logged.
 */
import type { Logger } from '../../shared/logger.js';

const FEED_PATH = '/v1/compliance/activities';
const MAX_BACKOFF_MS = 60_000;
const MAX_RETRY_AFTER_MS = 600_000;

export interface FeedPage {
  data: unknown[];
  has_more: boolean;
  first_id: string | null;
  last_id: string | null;
}

export interface PageQuery {
  gte: string | null;
  lt: string;
  after_id: string | null;
  limit: number;
}

export class FeedError extends Error {
  constructor(
    readonly status: number,
    readonly errorType: string | null,
  ) {
    super(`compliance feed answered ${status}${errorType ? ` (${errorType})` : ''}`);
    this.name = 'FeedError';
  }
}

export class StoppedError extends Error {
  constructor() {
    super('stopped');
    this.name = 'StoppedError';
  }
}

export interface FeedClientOptions {
  baseUrl: string;
  apiKey: string;
  logger: Logger;
  /** First backoff step (default 1000 ms); doubles up to MAX_BACKOFF_MS. */
  backoffBaseMs?: number;
  /** Aborted on stop: cancels a request or a wait in progress. */
  signal: AbortSignal;
}

export class FeedClient {
  private readonly url: string;
  private readonly base: number;

  constructor(private readonly o: FeedClientOptions) {
    this.url = o.baseUrl.replace(/\/+$/, '') + FEED_PATH;
    this.base = o.backoffBaseMs ?? 1000;
  }

  buildUrl(q: PageQuery): string {
    const p = new URLSearchParams();
    p.set('limit', String(q.limit));
    if (q.gte) p.set('created_at.gte', q.gte);
    p.set('created_at.lt', q.lt);
    if (q.after_id) p.set('after_id', q.after_id);
    return `${this.url}?${p.toString()}`;
  }

  /** Fetches one page, retrying what the feed says is retryable. */
  async page(q: PageQuery): Promise<FeedPage> {
    const url = this.buildUrl(q);
    for (let attempt = 0; ; attempt++) {
      if (this.o.signal.aborted) throw new StoppedError();
      const backoff = Math.min(MAX_BACKOFF_MS, this.base * 2 ** Math.min(attempt, 16));
      let res: Response;
      try {
        res = await fetch(url, {
          headers: { 'x-api-key': this.o.apiKey, 'vendor-version': '2023-06-01', accept: 'application/json' },
          signal: this.o.signal,
        });
      } catch (e) {
        if (this.o.signal.aborted) throw new StoppedError();
        this.o.logger.warn('compliance feed unreachable; retrying', { wait_ms: backoff, error: (e as Error).message });
        await this.sleep(backoff);
        continue;
      }
      if (res.ok) {
        const page = parsePage(await res.text().catch(() => ''));
        if (page) return page;
        this.o.logger.warn('compliance feed answered a body that is not a page; retrying', { wait_ms: backoff });
        await this.sleep(backoff);
        continue;
      }
      const errorType = await errorTypeOf(res);
      const requestId = res.headers.get('request-id');
      if (res.status === 429) {
        // Honour retry-after; the cursor does not move meanwhile.
        const wait = Math.max(100, retryAfterMs(res.headers.get('retry-after')) ?? backoff);
        this.o.logger.warn('compliance feed rate limit; waiting', { wait_ms: wait, request_id: requestId });
        await this.sleep(wait);
        continue;
      }
      const retryable = res.status >= 500 && !(res.status === 500 && res.headers.get('x-should-retry') === 'false');
      if (retryable) {
        this.o.logger.warn('compliance feed server error; retrying', { status: res.status, wait_ms: backoff, request_id: requestId });
        await this.sleep(backoff);
        continue;
      }
      throw new FeedError(res.status, errorType);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.o.signal.aborted) return reject(new StoppedError());
      const onAbort = () => {
        clearTimeout(t);
        reject(new StoppedError());
      };
      const t = setTimeout(() => {
        this.o.signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      this.o.signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function parsePage(text: string): FeedPage | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (!v || typeof v !== 'object' || !Array.isArray((v as FeedPage).data)) return null;
  const o = v as Record<string, unknown>;
  return {
    data: o.data as unknown[],
    has_more: o.has_more === true,
    first_id: typeof o.first_id === 'string' ? o.first_id : null,
    last_id: typeof o.last_id === 'string' ? o.last_id : null,
  };
}

async function errorTypeOf(res: Response): Promise<string | null> {
  try {
    const body = (await res.json()) as { error?: { type?: unknown } };
    return typeof body?.error?.type === 'string' ? body.error.type : null;
  } catch {
    return null;
  }
}

/** `retry-after` in seconds or as an HTTP date; null when absent or unreadable. */
function retryAfterMs(h: string | null, now = Date.now()): number | null {
  if (!h) return null;
  const s = h.trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Math.min(MAX_RETRY_AFTER_MS, Math.round(Number(s) * 1000));
  const t = Date.parse(s);
  return Number.isNaN(t) ? null : Math.min(MAX_RETRY_AFTER_MS, Math.max(0, t - now));
}
