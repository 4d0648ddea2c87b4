/**
 * The webhook's verb: a tag-update notification is a hint, never content. The tag is re-read
 * from the database and this process's streams are sent what they lack; the notification is
 * then published on `svc:tag-updates` for the other processes (each re-reads for itself).
 */
import type { AppContext } from '../../shared/app-context.js';
import { TAG_UPDATES_CHANNEL } from '../../shared/broker.js';
import { AppError } from '../../shared/errors.js';
import type { components } from '../../../gen/openapi/context-webhook.js';
import { fanout } from '../fanout/index.js';

export type TagUpdate = components['schemas']['TagUpdate'];

/** Delivers locally, then publishes; answers how many local streams hold the tag's current state. */
export async function acceptTagUpdate(ctx: AppContext, update: TagUpdate): Promise<{ deliveredTo: number; published: boolean }> {
  const r = await fanout(ctx).refresh(update.tag, 'webhook');
  if (!r.found) throw new AppError('not_found', `Tag ${update.tag} not found`);
  const message: TagUpdate = { tag: update.tag, bundle_id: update.bundle_id, bundle_version: update.bundle_version, updated_at: update.updated_at };
  // Never throws: with Redis down, local streams are served and the others resync on reconnect.
  const published = await ctx.broker.publish(TAG_UPDATES_CHANNEL, JSON.stringify(message));
  if (!published) ctx.logger.warn('tag update not published on the broker; other processes resync when it returns', { tag: update.tag });
  return { deliveredTo: r.holding, published };
}

/**
 * Calls a context service's webhook with a freshly signed token (for a control plane that
 * runs apart from the context service). Resolves with the HTTP status.
 */
export async function postTagUpdate(baseUrl: string, token: string, update: TagUpdate, signal?: AbortSignal): Promise<number> {
  const res = await fetch(new URL('/webhook/tag-update', baseUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(update),
    signal,
  });
  await res.body?.cancel();
  return res.status;
}
