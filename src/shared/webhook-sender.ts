/**
 * Delivers bodies to one webhook URL in order, in the background, never on a request's path:
 * each POST is retried with exponential backoff (0.5 s doubling to 60 s) until it answers 2xx;
 * at most `max` bodies wait (the oldest is dropped past that, and logged). The queue lives in
 * the process: what must survive a crash is in the database already (the checkpoint, the
 * management event); the webhook is its copy sent outside. Used by the transparency log's
 * checkpoints and by ownership notifications.
 */
import type { Logger } from './logger.js';

export class WebhookSender {
  private queue: string[] = [];
  private busy = false;
  private stopped = false;

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
    private readonly opts: { what: string; contentType: string; max?: number },
  ) {}

  send(body: string): void {
    if (this.stopped) return;
    this.queue.push(body);
    if (this.queue.length > (this.opts.max ?? 1000)) {
      this.queue.shift();
      this.logger.warn(`${this.opts.what} webhook queue full: the oldest undelivered message was dropped`);
    }
    void this.drain();
  }

  /** Stops retrying; what is queued is not delivered. */
  stop(): void {
    this.stopped = true;
  }

  private async drain(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      let delay = 500;
      while (this.queue.length && !this.stopped) {
        try {
          const res = await fetch(this.url, { method: 'POST', headers: { 'content-type': this.opts.contentType }, body: this.queue[0]!, signal: AbortSignal.timeout(10_000) });
          await res.body?.cancel();
          if (!res.ok) throw new Error(`status ${res.status}`);
          this.queue.shift();
          delay = 500;
        } catch (e) {
          this.logger.warn(`${this.opts.what} webhook failed; retrying`, { reason: (e as Error).message, retry_in_ms: delay });
          await new Promise((r) => setTimeout(r, delay).unref());
          delay = Math.min(delay * 2, 60_000);
        }
      }
    } finally {
      this.busy = false;
    }
  }
}
