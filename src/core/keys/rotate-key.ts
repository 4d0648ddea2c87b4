/**
 * Key rotation (issue 22): issues a successor to an active key and ends the old key after a
 * grace period, in one transaction with its events.
 *
 * How the old key stops: with a grace of 0 it is `revoked` at once (revoked_by
 * `system:key-rotated`); otherwise its `expires_at` is moved to the grace end (never later
 * than it was). Authentication checks `expires_at` on every request, cache hits included, and
 * the cache is invalidated on every process after the commit (the entry's old `expires_at`
 * is dropped), so the old key is refused at the grace end everywhere with nothing added to
 * the hot path; the expiry job (or the first refused use) then records it `expired`.
 */
import type { components } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import { and, eq, isNull } from 'drizzle-orm';
import { agentApiKeys, agents } from '../db/schema/index.js';
import { recordEvent, type Who } from '../audit/events.js';
import { generateApiKey, generateKeyId, hashKey, keyPrefix } from './key-material.js';
import { invalidateKeys } from './key-cache.js';
import { issuedKey, KEY_COLUMNS, toApiKey } from './key-store.js';
import { keyCreatedEvent, keyEndedEvent, keyRotatedEvent } from './key-events.js';

export type RotateKeyInput = components['schemas']['ApiKeyRotateRequest'];
export type RotatedApiKey = components['schemas']['RotatedApiKey'];

const KEY_ROTATED_BY = 'system:key-rotated';
const MAX_GRACE_SECONDS = 86_400;
const DAY_MS = 86_400_000;

export async function rotateApiKey(ctx: AppContext, agentId: string, keyId: string, input: RotateKeyInput, who: Who): Promise<RotatedApiKey> {
  const grace = input.grace_seconds ?? 0;
  // The edge validates against the spec; this guards the other callers of the verb.
  if (!Number.isInteger(grace) || grace < 0 || grace > MAX_GRACE_SECONDS) {
    const message = `grace_seconds must be an integer from 0 to ${MAX_GRACE_SECONDS}`;
    throw new AppError('validation_error', message, { details: { errors: [{ path: '/body/grace_seconds', rule: 'grace_seconds', message }] } });
  }
  const now = ctx.clock.now();
  const apiKey = generateApiKey();
  const newId = generateKeyId();
  const out = await ctx.db.tx(async (db) => {
    // Agent row first, then the key: the order issue and agent revocation take, so a rotation
    // can neither deadlock with them nor hand a new key to an agent being revoked.
    const [agent] = await db.orm.select({ status: agents.status }).from(agents).where(eq(agents.agent_id, agentId)).for('update');
    if (!agent) throw new AppError('not_found', `Agent ${agentId} does not exist`);
    const [old] = await db.orm
      .select(KEY_COLUMNS)
      .from(agentApiKeys)
      .where(and(eq(agentApiKeys.key_id, keyId), eq(agentApiKeys.agent_id, agentId)))
      .for('update');
    if (!old) throw new AppError('not_found', `Key ${keyId} of agent ${agentId} does not exist`);
    const status = toApiKey(old, now).status;
    if (status !== 'active') throw new AppError('conflict', `Key ${keyId} is ${status}: only an active key can be rotated`, { details: { status } });
    if (old.rotated_to) {
      throw new AppError('conflict', `Key ${keyId} was already rotated to ${old.rotated_to}`, { details: { status, rotated_to: old.rotated_to } });
    }
    const wanted = new Date(now.getTime() + grace * 1000);
    const graceUntil = old.expires_at && old.expires_at < wanted ? old.expires_at : wanted;
    const [row] = await db.orm
      .insert(agentApiKeys)
      .values({
        key_id: newId,
        agent_id: agentId,
        key_prefix: keyPrefix(apiKey),
        key_hash: hashKey(apiKey),
        name: old.name,
        scopes: old.scopes,
        is_active: true,
        status: 'active',
        created_at: now,
        expires_at: new Date(now.getTime() + ctx.config.agentKeyTtlDays * DAY_MS),
        rotated_from: keyId,
      })
      .onConflictDoNothing({ target: agentApiKeys.key_id })
      .returning(KEY_COLUMNS);
    if (!row) throw new AppError('conflict', `generated key_id ${newId} is already in use; retry`);
    const ends = grace === 0 ? { status: 'revoked' as const, is_active: false, revoked_at: now, revoked_by: KEY_ROTATED_BY } : { expires_at: graceUntil };
    const moved = await db.orm
      .update(agentApiKeys)
      .set({ ...ends, rotated_to: newId, rotated_at: now, grace_until: graceUntil })
      .where(and(eq(agentApiKeys.key_id, keyId), eq(agentApiKeys.status, 'active'), isNull(agentApiKeys.rotated_to)))
      .returning({ key_id: agentApiKeys.key_id });
    if (!moved.length) throw new AppError('conflict', `Key ${keyId} changed while it was being rotated`, { details: { status } });
    await recordEvent(db, who, keyCreatedEvent(row), now);
    await recordEvent(
      db,
      who,
      keyRotatedEvent(old, { rotated_to: newId, rotated_to_prefix: row.key_prefix, rotated_at: now, grace_until: graceUntil, expires_at: grace === 0 ? old.expires_at : graceUntil }),
      now,
    );
    if (grace === 0) await recordEvent(db, who, keyEndedEvent('key.revoked', old, now, KEY_ROTATED_BY), now);
    return { row, graceUntil };
  });
  // The old key's cached entry carries its old expires_at (or predates its revocation).
  await invalidateKeys(ctx, { kind: 'keys', key_ids: [keyId] });
  const { row, graceUntil } = out;
  return { ...issuedKey(row, apiKey), rotated_from: keyId, grace_until: graceUntil.toISOString() };
}
