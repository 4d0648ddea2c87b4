/** Key rows, their listed form (never the hash) and a new key's answer (its plaintext, shown once). */
import { desc, eq, getTableColumns } from 'drizzle-orm';
import type { components } from '../../../gen/openapi/control-plane.js';
import type { Db } from '../db/index.js';
import { agentApiKeys } from '../db/schema/index.js';

export type ApiKey = components['schemas']['ApiKey'];

/** The columns a listing may read: key_hash is deliberately absent (and the legacy is_active). */
const { key_hash: _hash, is_active: _active, ...keyColumns } = getTableColumns(agentApiKeys);
export const KEY_COLUMNS = keyColumns;

export type KeyRow = Omit<typeof agentApiKeys.$inferSelect, 'key_hash' | 'is_active'>;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/**
 * The listed form. `status` is the effective one: a stored `active` key past its expires_at
 * is reported `expired` before the expiry job has moved it (authentication refuses it too).
 */
export function toApiKey(r: KeyRow, now: Date): ApiKey {
  const pastDue = r.status === 'active' && r.expires_at !== null && r.expires_at.getTime() <= now.getTime();
  return {
    key_id: r.key_id,
    agent_id: r.agent_id,
    key_prefix: r.key_prefix,
    name: r.name,
    scopes: r.scopes,
    status: pastDue ? 'expired' : r.status,
    created_at: r.created_at.toISOString(),
    expires_at: iso(r.expires_at),
    last_used_at: iso(r.last_used_at),
    revoked_at: iso(r.revoked_at),
    revoked_by: r.revoked_by,
    rotated_from: r.rotated_from,
    rotated_to: r.rotated_to,
    grace_until: iso(r.grace_until),
  };
}

/** Every key of the agent, newest first. */
export function listKeyRows(db: Db, agentId: string): Promise<KeyRow[]> {
  return db.orm
    .select(KEY_COLUMNS)
    .from(agentApiKeys)
    .where(eq(agentApiKeys.agent_id, agentId))
    .orderBy(desc(agentApiKeys.created_at), desc(agentApiKeys.key_id));
}

/** A newly issued key's answer (issue and rotation): the plaintext key, shown this once. */
export function issuedKey(row: KeyRow, apiKey: string): components['schemas']['IssuedApiKey'] {
  return {
    key_id: row.key_id,
    api_key: apiKey,
    key_prefix: row.key_prefix,
    agent_id: row.agent_id,
    name: row.name,
    scopes: row.scopes,
    status: 'active',
    created_at: row.created_at.toISOString(),
    expires_at: row.expires_at!.toISOString(),
  };
}
