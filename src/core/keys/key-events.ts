/**
 * Management events of agent keys (issue 22): `key.created`, `key.revoked`, `key.rotated`,
 * `key.expired`, resource type `api_key`, resource id the key_id. A key appears by key_id and
 * key_prefix only: no event ever carries the plaintext or the hash. Besides the changed
 * fields, `after` names the key's agent and prefix so an event reads on its own.
 */
import type { EventInput } from '../audit/events.js';

const RESOURCE_TYPE = 'api_key';

interface KeyIdentity {
  key_id: string;
  agent_id: string;
  key_prefix: string;
}

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

export function keyCreatedEvent(k: KeyIdentity & { name: string | null; scopes: string[] | null; expires_at: Date | null; rotated_from?: string | null }): EventInput {
  return {
    event_type: 'key.created',
    resource_type: RESOURCE_TYPE,
    resource_id: k.key_id,
    before: null,
    after: {
      agent_id: k.agent_id,
      key_prefix: k.key_prefix,
      name: k.name,
      scopes: k.scopes,
      status: 'active',
      expires_at: iso(k.expires_at),
      ...(k.rotated_from ? { rotated_from: k.rotated_from } : {}),
    },
  };
}

/** An active key left `active`: revoked (by a caller, an agent revocation or a rotation) or expired. */
export function keyEndedEvent(event_type: 'key.revoked' | 'key.expired', k: KeyIdentity, at: Date, revokedBy: string): EventInput {
  return {
    event_type,
    resource_type: RESOURCE_TYPE,
    resource_id: k.key_id,
    before: { status: 'active' },
    after: { agent_id: k.agent_id, key_prefix: k.key_prefix, status: event_type === 'key.revoked' ? 'revoked' : 'expired', revoked_at: iso(at), revoked_by: revokedBy },
  };
}

export function keyRotatedEvent(k: KeyIdentity & { expires_at: Date | null }, change: { rotated_to: string; rotated_to_prefix: string; rotated_at: Date; grace_until: Date; expires_at: Date | null }): EventInput {
  return {
    event_type: 'key.rotated',
    resource_type: RESOURCE_TYPE,
    resource_id: k.key_id,
    before: { expires_at: iso(k.expires_at), rotated_to: null, grace_until: null },
    after: {
      agent_id: k.agent_id,
      key_prefix: k.key_prefix,
      rotated_to: change.rotated_to,
      rotated_to_prefix: change.rotated_to_prefix,
      rotated_at: iso(change.rotated_at),
      grace_until: iso(change.grace_until),
      expires_at: iso(change.expires_at),
    },
  };
}
