-- Spec migration 001: the audit hash chain, immutability, and the database roles.

-- Records written before the chain keep the sentinel and are counted, not chained.
ALTER TABLE agent_context_requests
  ADD COLUMN chain_sequence bigserial,
  ADD COLUMN previous_hash text NOT NULL DEFAULT 'LEGACY_PRE_AUDIT' CHECK (previous_hash <> ''),
  ADD COLUMN record_hash text NOT NULL DEFAULT 'LEGACY_PRE_AUDIT' CHECK (record_hash <> ''),
  -- Second chain over every stored field (decisions.md); null on legacy records.
  ADD COLUMN content_hash text CHECK (content_hash IS NULL OR content_hash <> '');
ALTER TABLE agent_context_requests ALTER COLUMN previous_hash DROP DEFAULT;
ALTER TABLE agent_context_requests ALTER COLUMN record_hash DROP DEFAULT;
ALTER TABLE agent_context_requests ADD CONSTRAINT agent_context_requests_chain_sequence_key UNIQUE (chain_sequence);
CREATE INDEX agent_context_requests_requested_at_idx ON agent_context_requests (requested_at);

CREATE TABLE audit_chain_genesis (
  id             serial PRIMARY KEY,
  deployment_id  text NOT NULL,
  genesis_hash   text NOT NULL CHECK (genesis_hash ~ '^[0-9a-f]{64}$'),
  initialized_at timestamptz(3) NOT NULL,
  -- One row per deployment: a second insert is a unique violation.
  singleton      boolean NOT NULL DEFAULT true UNIQUE CHECK (singleton)
);

CREATE FUNCTION svc_reject_audit_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'Audit records are immutable' USING ERRCODE = 'P0001';
END;
$$;

CREATE TRIGGER agent_context_requests_immutable
  BEFORE UPDATE OR DELETE ON agent_context_requests
  FOR EACH ROW EXECUTE FUNCTION svc_reject_audit_change();
CREATE TRIGGER agent_context_requests_no_truncate
  BEFORE TRUNCATE ON agent_context_requests
  FOR EACH STATEMENT EXECUTE FUNCTION svc_reject_audit_change();
CREATE TRIGGER audit_chain_genesis_immutable
  BEFORE UPDATE OR DELETE ON audit_chain_genesis
  FOR EACH ROW EXECUTE FUNCTION svc_reject_audit_change();
CREATE TRIGGER audit_chain_genesis_no_truncate
  BEFORE TRUNCATE ON audit_chain_genesis
  FOR EACH STATEMENT EXECUTE FUNCTION svc_reject_audit_change();

-- Roles are cluster-wide: another database of the same cluster may have made them.
-- NOLOGIN here; the operator grants LOGIN and a password (see README).
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'svc_app') THEN
    CREATE ROLE svc_app NOLOGIN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'svc_audit') THEN
    CREATE ROLE svc_audit NOLOGIN;
  END IF;
END;
$$;

GRANT USAGE ON SCHEMA public TO svc_app, svc_audit;
-- Application role: INSERT (and SELECT, to read the chain tip) on the audit table; never
-- UPDATE, DELETE or TRUNCATE. Full access to agents and keys.
GRANT SELECT, INSERT ON agent_context_requests TO svc_app;
GRANT SELECT, INSERT ON audit_chain_genesis TO svc_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON agents, agent_api_keys, mcp_servers, agent_policy_overrides TO svc_app;
GRANT SELECT ON schema_migrations TO svc_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO svc_app;
-- Audit role: read-only on the audit and genesis tables.
GRANT SELECT ON agent_context_requests, audit_chain_genesis TO svc_audit;
