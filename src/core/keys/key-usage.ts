/**
 * `last_used_at` without a write on the request path: successful verifications are noted in
 * memory (one slot per key, the latest time wins) and written in one statement every
 * few seconds, and once more at close. A flush never moves `last_used_at` backwards
 * (another process may have written a later time).
 */
import type { AppContext } from '../../shared/app-context.js';

const USAGE_FLUSH_MS = 5_000;

export class KeyUsage {
  private pending = new Map<string, Date>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly ctx: AppContext) {}

  note(keyId: string, at: Date): void {
    this.pending.set(keyId, at);
    if (!this.timer) {
      this.timer = setInterval(() => void this.flush(), USAGE_FLUSH_MS);
      this.timer.unref();
    }
  }

  /** Writes the noted times; safe to call concurrently (flushes run one after another). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }

  private async write(): Promise<void> {
    if (!this.pending.size) return;
    const batch = this.pending;
    this.pending = new Map();
    const ids = [...batch.keys()];
    const times = ids.map((id) => batch.get(id)!.toISOString());
    try {
      // Raw SQL: one UPDATE ... FROM unnest(ids, times) for the whole batch, which the query
      // builder cannot say without writing the same SQL in a sql`` fragment.
      await this.ctx.db.query(
        `UPDATE agent_api_keys k SET last_used_at = u.t
           FROM (SELECT unnest($1::text[]) AS key_id, unnest($2::timestamptz[]) AS t) u
          WHERE k.key_id = u.key_id AND (k.last_used_at IS NULL OR k.last_used_at < u.t)`,
        [ids, times],
      );
    } catch (e) {
      // Put the batch back (newer notes win) so a database blip loses nothing.
      for (const [id, at] of batch) if (!this.pending.has(id)) this.pending.set(id, at);
      this.ctx.logger.warn('last_used_at flush failed; retried at the next flush', { keys: ids.length, error: (e as Error).message });
    }
  }
}

export function keyUsage(ctx: AppContext): KeyUsage {
  return ctx.singleton('agent-key-usage', () => {
    const usage = new KeyUsage(ctx);
    ctx.onClose(() => usage.stop());
    return usage;
  });
}
