/**
 * Notices of ownership transfers (spec 3.6: the incoming owner is notified of a request; an
 * expiry escalates to an admin), POSTed as JSON to OWNERSHIP_WEBHOOK once the transaction that
 * made them has committed, retried in the background (shared/webhook-sender.ts). The durable
 * record is the management event; the notice carries no secret (never the acceptance token:
 * whoever requested the transfer hands it to the incoming owner).
 */
import type { AppContext } from '../../shared/app-context.js';
import { WebhookSender } from '../../shared/webhook-sender.js';
import type { Db } from '../db/index.js';
import type { agentOwnershipTransfers } from '../db/schema/index.js';

type TransferRow = typeof agentOwnershipTransfers.$inferSelect;

export type OwnershipNotice = 'ownership.transfer_requested' | 'ownership.escalated';

export function notifyOwnership(ctx: AppContext, db: Db, type: OwnershipNotice, t: TransferRow): void {
  const url = ctx.config.ownership.webhook;
  if (!url) return;
  const sender = ctx.singleton('ownership-webhook', () => {
    const s = new WebhookSender(url, ctx.logger, { what: 'ownership', contentType: 'application/json' });
    ctx.onClose(() => s.stop());
    return s;
  });
  const body = JSON.stringify({
    type,
    transfer_id: t.id,
    agent_id: t.agent_id,
    from_owner_id: t.from_owner_id,
    to_owner_id: t.to_owner_id,
    status: t.status,
    reason: t.reason,
    effective_at: t.effective_at.toISOString(),
    expires_at: t.expires_at.toISOString(),
    ...(type === 'ownership.escalated' && { escalated_to: 'admin', next: 'force-assign this transfer or request a new one' }),
  });
  db.afterCommit(() => sender.send(body));
}
