/**
 * Key lifecycle verbs (spec 3.2): issue (plaintext returned once; only prefix and SHA-256
 * stored), list, read, revoke (rotation: rotate-key.ts). State changes are conditional on the
 * stored status so that concurrent callers cannot both win, every change writes its event in
 * its transaction (key-events.ts), and every revocation invalidates the key cache on every
 * process after its commit.
 */
import type { components } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import { intentsFromStore } from './verify-key.js';
import { generateApiKey, generateKeyId, hashKey, keyPrefix } from './key-material.js';
import { invalidateKeys } from './key-cache.js';
import { and, eq } from 'drizzle-orm';
import { agentApiKeys, agents } from '../db/schema/index.js';
import { issuedKey, KEY_COLUMNS, listKeyRows, toApiKey, type ApiKey } from './key-store.js';
import { recordEvent, type Who } from '../audit/events.js';
import { keyCreatedEvent, keyEndedEvent } from './key-events.js';

export type IssueKeyInput = components['schemas']['ApiKeyIssueRequest'];
export type IssuedApiKey = components['schemas']['IssuedApiKey'];
export type ApiKeyList = components['schemas']['ApiKeyList'];

const DAY_MS = 86_400_000;

export async function issueApiKey(ctx: AppContext, agentId: string, input: IssueKeyInput, who: Who): Promise<IssuedApiKey> {
  const now = ctx.clock.now();
  const keyId = input.key_id ?? generateKeyId();
  const days = input.expires_in_days ?? ctx.config.agentKeyTtlDays;
  const expiresAt = new Date(now.getTime() + days * DAY_MS);
  const apiKey = generateApiKey();
  return ctx.db.tx(async (db) => {
    // The row lock orders this issue against a concurrent agent revocation: a key can never
    // be issued to an agent whose revocation committed first, nor survive one that follows.
    const [agent] = await db.orm
      .select({ status: agents.status, allowed_intents: agents.allowed_intents })
      .from(agents)
      .where(eq(agents.agent_id, agentId))
      .for('update');
    if (!agent) throw new AppError('not_found', `Agent ${agentId} does not exist`);
    if (agent.status === 'revoked') throw new AppError('conflict', `Agent ${agentId} is revoked: keys cannot be issued to it`, { details: { agent_status: 'revoked' } });
    if (input.scopes) {
      const allowed = new Set(intentsFromStore(agent.allowed_intents));
      const errors = input.scopes
        .map((s, i) => ({ s, i }))
        .filter(({ s }) => !allowed.has(s))
        .map(({ s, i }) => ({ path: `/body/scopes/${i}`, rule: 'scope_not_allowed', message: `scope "${s}" is not one of the agent's allowed intents` }));
      if (errors.length) throw new AppError('validation_error', "scopes must be a subset of the agent's allowed intents", { details: { errors } });
    }
    const [row] = await db.orm
      .insert(agentApiKeys)
      .values({
        key_id: keyId,
        agent_id: agentId,
        key_prefix: keyPrefix(apiKey),
        key_hash: hashKey(apiKey),
        name: input.name ?? null,
        scopes: input.scopes ?? null,
        is_active: true,
        status: 'active',
        created_at: now,
        expires_at: expiresAt,
      })
      .onConflictDoNothing({ target: agentApiKeys.key_id })
      .returning(KEY_COLUMNS);
    if (!row) throw new AppError('conflict', `key_id ${keyId} is already in use`);
    await recordEvent(db, who, keyCreatedEvent(row), now);
    return issuedKey(row, apiKey);
  });
}

export async function listApiKeys(ctx: AppContext, agentId: string): Promise<ApiKeyList> {
  const [agent] = await ctx.db.orm.select({ agent_id: agents.agent_id }).from(agents).where(eq(agents.agent_id, agentId));
  if (!agent) throw new AppError('not_found', `Agent ${agentId} does not exist`);
  const rows = await listKeyRows(ctx.db, agentId);
  const now = ctx.clock.now();
  return { agent_id: agentId, api_keys: rows.map((r) => toApiKey(r, now)), total: rows.length };
}

/** One key of the agent (404 when unknown or another agent's). */
export async function readApiKey(ctx: AppContext, agentId: string, keyId: string): Promise<ApiKey> {
  const [row] = await ctx.db.orm
    .select(KEY_COLUMNS)
    .from(agentApiKeys)
    .where(and(eq(agentApiKeys.key_id, keyId), eq(agentApiKeys.agent_id, agentId)));
  if (!row) throw new AppError('not_found', `Key ${keyId} of agent ${agentId} does not exist`);
  return toApiKey(row, ctx.clock.now());
}

/** Moves an active key to revoked; a key that left `active` keeps its original revocation. */
export async function revokeApiKey(ctx: AppContext, agentId: string, keyId: string, revokedBy: string, who: Who): Promise<void> {
  if (revokedBy.startsWith('system:')) {
    throw new AppError('validation_error', 'revoked_by values starting with "system:" are reserved for the service', {
      details: { errors: [{ path: '/query/revoked_by', rule: 'reserved', message: 'values starting with "system:" are reserved' }] },
    });
  }
  const now = ctx.clock.now();
  const revoked = await ctx.db.tx(async (db) => {
    const [key] = await db.orm
      .select(KEY_COLUMNS)
      .from(agentApiKeys)
      .where(and(eq(agentApiKeys.key_id, keyId), eq(agentApiKeys.agent_id, agentId)))
      .for('update');
    if (!key) throw new AppError('not_found', `Key ${keyId} of agent ${agentId} does not exist`);
    const status = toApiKey(key, now).status;
    if (status !== 'active') throw new AppError('conflict', `Key ${keyId} is already ${status}`, { details: { status } });
    await db.orm
      .update(agentApiKeys)
      .set({ status: 'revoked', is_active: false, revoked_at: now, revoked_by: revokedBy })
      .where(and(eq(agentApiKeys.key_id, keyId), eq(agentApiKeys.agent_id, agentId), eq(agentApiKeys.status, 'active')));
    await recordEvent(db, who, keyEndedEvent('key.revoked', key, now, revokedBy), now);
    return true;
  });
  if (revoked) await invalidateKeys(ctx, { kind: 'keys', key_ids: [keyId] });
}
