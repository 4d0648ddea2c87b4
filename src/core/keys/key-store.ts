/** Key rows and their listed form (never the hash, never the plaintext). */
import type { components } from '../../../gen/openapi/control-plane.js';
import type { Db } from '../db/index.js';

export type ApiKey = components['schemas']['ApiKey'];

export interface KeyRow {
  key_id: string;
  agent_id: string;
  key_prefix: string;
  name: string | null;
  scopes: string[] | null;
  status: 'active' | 'revoked' | 'expired';
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
  revoked_by: string | null;
}

/** The columns a listing may read: key_hash is deliberately absent. */
export const KEY_COLUMNS = 'key_id, agent_id, key_prefix, name, scopes, status, created_at, expires_at, last_used_at, revoked_at, revoked_by';

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
  };
}

/** Every key of the agent, newest first. */
export function listKeyRows(db: Db, agentId: string): Promise<KeyRow[]> {
  return db.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM agent_api_keys WHERE agent_id = $1 ORDER BY created_at DESC, key_id DESC`, [agentId]);
}
