-- Spec migration 002: authoritative key status and who revoked a key.
ALTER TABLE agent_api_keys
  ADD COLUMN status text NOT NULL DEFAULT 'active' CONSTRAINT agent_api_keys_status_check CHECK (status IN ('active', 'revoked', 'expired')),
  ADD COLUMN revoked_at timestamptz(3),
  ADD COLUMN revoked_by text;
UPDATE agent_api_keys SET status = 'revoked' WHERE NOT is_active;
-- The legacy flag can never disagree with the authoritative status.
ALTER TABLE agent_api_keys ADD CONSTRAINT agent_api_keys_is_active_check CHECK (is_active = (status = 'active'));
-- Only a key that left `active` carries who revoked it.
ALTER TABLE agent_api_keys ADD CONSTRAINT agent_api_keys_revoked_by_check CHECK (status <> 'active' OR (revoked_by IS NULL AND revoked_at IS NULL));
CREATE INDEX agent_api_keys_active_prefix_idx ON agent_api_keys (key_prefix) WHERE status = 'active';
CREATE INDEX agent_api_keys_expiry_idx ON agent_api_keys (expires_at) WHERE status = 'active';
