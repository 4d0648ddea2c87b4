-- Migration 0013: agent owners and ownership transfers (issue 22; spec 2.14, 3.6, 4.10).
--
-- Every agent has an owner_id (NOT NULL: an agent is never ownerless), which names a row of
-- `owners` (status active or deactivated; a deactivated owner receives no agent). owner_name
-- stays the owner's display name (spec 2.1) beside the id.
--
-- Backfill: agents created before this migration are held by `org-admin`, the default of
-- ORG_ADMIN_OWNER_ID (a migration cannot read the configuration). A deployment that sets
-- another org admin moves them with POST /api/owners/org-admin/deactivate, which starts a
-- pending transfer of each to the configured org admin (README: Ownership transfers).
CREATE TABLE owners (
  owner_id        text PRIMARY KEY CHECK (owner_id ~ '^[A-Za-z0-9._:@-]+$' AND length(owner_id) <= 256),
  status          text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'deactivated')),
  created_at      timestamptz(3) NOT NULL DEFAULT now(),
  deactivated_at  timestamptz(3),
  deactivated_by  text,
  CHECK ((status = 'deactivated') = (deactivated_at IS NOT NULL))
);

INSERT INTO owners (owner_id) VALUES ('org-admin');

-- The default covers rows written without the service (the service always names the owner,
-- ORG_ADMIN_OWNER_ID when none is given); ADD COLUMN with a default fills existing rows.
ALTER TABLE agents ADD COLUMN owner_id text NOT NULL DEFAULT 'org-admin' REFERENCES owners (owner_id);
CREATE INDEX agents_owner_id_idx ON agents (owner_id);

-- One row per transfer (spec 2.14). agent_id is the agent's text id (`agent:<name>`), not a
-- UUID as the proposal assumed. Only the SHA-256 of the acceptance token is kept (the token
-- is answered once, at creation). from_owner_id is the agent's owner when the transfer was
-- requested; while a transfer is pending the agent's owner cannot change any other way, so
-- from_owner_id is the current owner of every pending transfer.
CREATE TABLE agent_ownership_transfers (
  id                     uuid PRIMARY KEY,
  agent_id               text NOT NULL REFERENCES agents (agent_id),
  from_owner_id          text NOT NULL REFERENCES owners (owner_id),
  to_owner_id            text NOT NULL REFERENCES owners (owner_id),
  status                 text NOT NULL DEFAULT 'pending'
                         CHECK (status IN ('pending', 'accepted', 'rejected', 'cancelled', 'expired', 'force_assigned')),
  reason                 text NOT NULL CHECK (reason <> ''),
  initiated_by           text NOT NULL,
  initiated_at           timestamptz(3) NOT NULL DEFAULT now(),
  -- The owner changes on acceptance, which is refused before effective_at.
  effective_at           timestamptz(3) NOT NULL,
  -- effective_at + TRANSFER_WINDOW_HOURS: a pending transfer not accepted by then expires.
  expires_at             timestamptz(3) NOT NULL,
  resolved_at            timestamptz(3),
  resolved_by            text,
  acceptance_token_hash  text NOT NULL CHECK (acceptance_token_hash ~ '^[0-9a-f]{64}$'),
  -- record_hash of the transfer's latest management event (its link into the audit chain).
  audit_hash             text CHECK (audit_hash IS NULL OR audit_hash ~ '^[0-9a-f]{64}$'),
  CHECK (from_owner_id <> to_owner_id),
  CHECK (effective_at >= initiated_at AND expires_at > effective_at),
  CHECK ((status = 'pending') = (resolved_at IS NULL) AND (resolved_at IS NULL) = (resolved_by IS NULL))
);
-- At most one transfer in flight per agent.
CREATE UNIQUE INDEX agent_ownership_transfers_one_pending ON agent_ownership_transfers (agent_id) WHERE status = 'pending';
CREATE INDEX agent_ownership_transfers_agent_idx ON agent_ownership_transfers (agent_id, initiated_at);
CREATE INDEX agent_ownership_transfers_to_idx ON agent_ownership_transfers (to_owner_id) WHERE status = 'pending';
CREATE INDEX agent_ownership_transfers_expiry_idx ON agent_ownership_transfers (expires_at) WHERE status = 'pending';

GRANT SELECT, INSERT, UPDATE ON owners, agent_ownership_transfers TO svc_app;
