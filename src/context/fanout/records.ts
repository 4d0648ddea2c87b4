/**
 * What the context service writes about its streams: `active_subscriptions` (one row per
 * opened stream, ended when it closes) and `context_service_events` (subscribe,
 * subscribe_refused, unsubscribe, update_delivered, resync).
 *
 * Opening a stream waits for its row (a stream is never open without its record). The other
 * writes are off the delivery path (a tag move must not wait for bookkeeping) but tracked, so
 * that shutdown waits for them before the database closes.
 */
import type { AppContext } from '../../shared/app-context.js';
import type { EndReason, SubscriberInfo } from './subscriber.js';

export type EventType = 'subscribe' | 'subscribe_refused' | 'unsubscribe' | 'update_delivered' | 'resync';

export class StreamRecords {
  private inflight = new Set<Promise<void>>();

  constructor(private readonly ctx: AppContext) {}

  /** Inserts the subscription row and its `subscribe` event in one statement. */
  async open(info: SubscriberInfo): Promise<void> {
    const now = this.ctx.clock.now();
    await this.ctx.db.query(
      `WITH s AS (
         INSERT INTO active_subscriptions (subscription_id, tag_name, agent_id, process_id, auth_method, started_at, last_seen_at)
         VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING subscription_id)
       INSERT INTO context_service_events (event_type, tag_name, agent_id, subscription_id, process_id, details, created_at)
       SELECT 'subscribe', $2, $3, s.subscription_id, $4, $7::jsonb, $6 FROM s`,
      [info.subscriptionId, info.tag, info.agentId, this.ctx.processId, info.authMethod, now, JSON.stringify({ auth_method: info.authMethod })],
    );
  }

  close(info: SubscriberInfo, reason: EndReason, messagesSent: number): void {
    const now = this.ctx.clock.now();
    this.track(
      this.ctx.db.query(
        `WITH s AS (
           UPDATE active_subscriptions SET ended_at = $2, end_reason = $3, messages_sent = $4, last_seen_at = $2
            WHERE subscription_id = $1 AND ended_at IS NULL RETURNING subscription_id, tag_name, agent_id)
         INSERT INTO context_service_events (event_type, tag_name, agent_id, subscription_id, process_id, details, created_at)
         SELECT 'unsubscribe', s.tag_name, s.agent_id, s.subscription_id, $5, $6::jsonb, $2 FROM s`,
        [info.subscriptionId, now, reason, messagesSent, this.ctx.processId, JSON.stringify({ reason, messages_sent: messagesSent })],
      ),
    );
  }

  /** An event that belongs to no open subscription row. Details never carry a credential. */
  event(type: EventType, fields: { tag?: string | null; agentId?: string | null; subscriptionId?: string | null; details?: Record<string, unknown> }): void {
    this.track(
      this.ctx.db.query(
        `INSERT INTO context_service_events (event_type, tag_name, agent_id, subscription_id, process_id, details, created_at)
         VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)`,
        [type, fields.tag ?? null, fields.agentId ?? null, fields.subscriptionId ?? null, this.ctx.processId, JSON.stringify(fields.details ?? {}), this.ctx.clock.now()],
      ),
    );
  }

  /** Marks this process's open streams as alive (`last_seen_at`). */
  touch(subscriptionIds: string[]): void {
    if (!subscriptionIds.length) return;
    this.track(
      this.ctx.db.query('UPDATE active_subscriptions SET last_seen_at = $2 WHERE subscription_id = ANY($1::text[]) AND ended_at IS NULL', [
        subscriptionIds,
        this.ctx.clock.now(),
      ]),
    );
  }

  /** Waits for every write started so far. */
  async drain(): Promise<void> {
    while (this.inflight.size) await Promise.all([...this.inflight]);
  }

  private track(p: Promise<unknown>): void {
    const q: Promise<void> = p.then(
      () => {},
      (e: unknown) => this.ctx.logger.warn('context service record failed', { error: (e as Error).message }),
    );
    this.inflight.add(q);
    void q.finally(() => this.inflight.delete(q));
  }
}
