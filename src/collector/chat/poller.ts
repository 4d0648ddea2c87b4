/**
 * `vendor-enterprise-chat`: polls the Compliance API Activity Feed (spec 2.13).
 *
 * Window polling (external-formats.md 3.5): each poll reads the window
 * [gte, lt = now) page by page (`after_id = last_id` until `has_more` is false), and the
 * next window starts OVERLAP before the previous `lt`, since activities become queryable up
 * to about a minute late. Delivery is at-least-once; the activity id is the event_id, so an
 * overlap or a replay inserts nothing twice.
 *
 * The cursor is persisted in the same transaction as each page's rows: a crash resumes
 * inside the window at the last committed page. On first run the cursor starts at "now"
 * (nothing older is read); with BACKFILL_ON_FIRST_RUN=1 the first window has no lower bound
 * and walks the whole history.
 */
import type { Clock } from '../../shared/app-context.js';
import type { Logger } from '../../shared/logger.js';
import type { Redactor } from '../redact/redactor.js';
import type { ActivityRow, CollectorStore, CoverageManifest } from '../store/store.js';
import { bump, type Counters } from '../otlp/lines.js';
import { FeedClient, FeedError, StoppedError } from './feed-client.js';
import { activityToRow, CHAT_SOURCE_ID } from './normalize.js';

export const OVERLAP_MS = 2 * 60_000;
const PAGE_LIMIT = 1000;

export interface ChatCursor {
  /** No window starts before this ("now" at first run), or null: the whole history. */
  floor: string | null;
  /** `lt` of the last completed window, or null before the first one completed. */
  done_until: string | null;
  /** The window in progress and the page to resume at. */
  window: { gte: string | null; lt: string; after_id: string | null } | null;
}

const chatDescription = 'Chat product activity from the Compliance API Activity Feed (metadata only, allowlisted types)';

const chatCoverage: CoverageManifest = {
  captures: [
    'metadata of about 40 chat, file, project and artifact activity types (created, viewed, updated, deleted, shared, access failed ...): ids, file names, timestamps',
    "the actor's user id as actor_identity, pseudonymized with the same keyed hash as the desktop agent's and the CLI's account id, so the sources still join",
    'the actor type, user agent, organization ids, and the per-type fields of each activity',
  ],
  does_not_capture: [
    'message, prompt, response or file content: the feed carries metadata only',
    'actor e-mail, unauthenticated e-mail and IP addresses: replaced by HMAC-SHA256 hashes before storage, inside raw_attributes too',
    'the actor user id and the organization id and uuid (COLLECTOR_PSEUDONYMIZE_ATTRIBUTES: actor_identity, organization.id): replaced by their keyed hash',
    'API-key-like tokens, JWTs, credentials, US SSNs, Luhn-valid card numbers and obfuscated e-mails in file names or other fields: masked as in the other collectors',
    'sign-in, admin, compliance-API and other activity types outside the allowlist: dropped and counted',
    'desktop agent (Cowork) activity, which the feed does not carry',
    'activity older than the first start, unless BACKFILL_ON_FIRST_RUN=1 on that first start',
  ],
  caveats: [
    'activities become queryable about a minute after they happen; each poll re-reads a two-minute overlap, deduplicated on the activity id',
    'the feed is polled every COLLECTOR_CHAT_POLL_SECONDS; rate limits (429) and server errors are retried with backoff without moving the cursor',
    'access and deletion failures are typed error; every other activity type is unknown (the feed has no prompt, tool or model events)',
  ],
};

export interface ChatPollerOptions {
  store: CollectorStore;
  redactor: Redactor;
  logger: Logger;
  clock: Clock;
  baseUrl: string;
  apiKey: string;
  pollSeconds: number;
  backfillOnFirstRun: boolean;
  backoffBaseMs?: number;
  pageLimit?: number;
}

export class ChatPoller {
  private readonly abort = new AbortController();
  private readonly client: FeedClient;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly o: ChatPollerOptions) {
    this.client = new FeedClient({ baseUrl: o.baseUrl, apiKey: o.apiKey, logger: o.logger, backoffBaseMs: o.backoffBaseMs, signal: this.abort.signal });
  }

  /** Registers the source and fixes the first-run cursor; then polls now and every pollSeconds. */
  start(): void {
    this.init();
    const loop = async () => {
      this.timer = null;
      await this.poll();
      if (!this.stopped) this.timer = setTimeout(loop, this.o.pollSeconds * 1000);
    };
    this.timer = setTimeout(loop, 0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.abort.abort();
    await this.running;
  }

  /** Registers the source row (with its manifest) and creates the first-run cursor. */
  init(): ChatCursor {
    this.o.store.registerSource(CHAT_SOURCE_ID, chatDescription, chatCoverage);
    return this.initialCursor();
  }

  /** The persisted cursor, created at first run: "now", or the whole history on backfill. */
  initialCursor(): ChatCursor {
    const existing = this.o.store.getCursor<ChatCursor>(CHAT_SOURCE_ID);
    if (existing) return existing;
    const now = this.o.clock.now().toISOString();
    const cursor: ChatCursor = this.o.backfillOnFirstRun ? { floor: null, done_until: null, window: null } : { floor: now, done_until: now, window: null };
    this.o.store.commit(CHAT_SOURCE_ID, { rows: [], cursor }, this.o.clock.now());
    this.o.logger.info('chat collector cursor created', { backfill: this.o.backfillOnFirstRun, floor: cursor.floor });
    return cursor;
  }

  /** One poll: read the next window to its end. Never throws. */
  poll(): Promise<void> {
    if (this.running) return this.running;
    this.running = this.pollOnce()
      .catch((e) => {
        if (e instanceof StoppedError) return;
        if (e instanceof FeedError) this.o.logger.error('compliance feed refused the request', { status: e.status, error_type: e.errorType });
        else this.o.logger.error('chat collector poll failed', { error: e as Error });
      })
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  private async pollOnce(): Promise<void> {
    let cursor = this.initialCursor();
    if (!cursor.window) {
      const lt = this.o.clock.now().toISOString();
      let gte = cursor.done_until ? new Date(Date.parse(cursor.done_until) - OVERLAP_MS).toISOString() : null;
      if (cursor.floor && (!gte || gte < cursor.floor)) gte = cursor.floor;
      if (gte && gte >= lt) return;
      cursor = { ...cursor, window: { gte, lt, after_id: null } };
    }
    while (!this.stopped && cursor.window) {
      const w = cursor.window;
      let page;
      try {
        page = await this.client.page({ gte: w.gte, lt: w.lt, after_id: w.after_id, limit: this.o.pageLimit ?? PAGE_LIMIT });
      } catch (e) {
        // A cursor the feed rejects: restart the window from its first page next time.
        if (e instanceof FeedError && e.status === 400 && w.after_id) {
          this.o.store.commit(CHAT_SOURCE_ID, { rows: [], cursor: { ...cursor, window: { ...w, after_id: null } } }, this.o.clock.now());
        }
        throw e;
      }
      const now = this.o.clock.now();
      const rows: ActivityRow[] = [];
      const counters: Counters = {};
      for (const a of page.data) {
        const r = activityToRow(a, this.o.redactor, now.toISOString());
        if ('row' in r) rows.push(r.row);
        else bump(counters, r.skipped === 'malformed' ? 'activities_malformed' : 'activities_not_allowlisted');
      }
      const more = page.has_more && !!page.last_id && page.last_id !== w.after_id;
      cursor = more
        ? { ...cursor, window: { ...w, after_id: page.last_id } }
        : { ...cursor, done_until: w.lt, window: null };
      this.o.store.commit(CHAT_SOURCE_ID, { rows, counters, cursor }, now);
    }
  }
}
