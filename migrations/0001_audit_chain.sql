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
ALTER TABLE agent_context_requests ADD CONSTRAINT agent_context_requests_chained_content_hash
  CHECK (record_hash = 'LEGACY_PRE_AUDIT' OR content_hash IS NOT NULL);
CREATE INDEX agent_context_requests_requested_at_idx ON agent_context_requests (requested_at);

CREATE TABLE audit_chain_genesis (
  id             serial PRIMARY KEY,
  deployment_id  text NOT NULL,
  genesis_hash   text NOT NULL CHECK (genesis_hash ~ '^[0-9a-f]{64}$'),
  initialized_at timestamptz(3) NOT NULL,
  -- One row per deployment: a second insert is a unique violation.
  singleton      boolean NOT NULL DEFAULT true UNIQUE CHECK (singleton)
);

-- Appends a batch of audit records to the chain (group commit), in one statement so the
-- chain lock is held only while the database works, never across a client round trip.
-- The lock is a transaction-level advisory lock taken in the database (not in process
-- memory, not LOCK TABLE, which svc_app may not take), so any number of API processes
-- keep one gapless chain: under the lock the tip is read, chain_sequence is assigned as
-- tip + 1, 2, ... and both hashes are finished; the lock is released at commit.
--
-- Each element of `batch` carries the stored fields (r request_id, a agent_id, t task_type,
-- p request_params, v intent_valid, e validation_errors, b / s context_bundle_ids /
-- context_scd_ids as array literals, m processing_time_ms, at requested_at, c chain_id,
-- pr parent_request_id) and the two hash inputs the application prepared from them:
-- rc = record_content without its leading chain_sequence, cc = the content netstrings of
-- every field after chain_sequence (decisions.md). Here:
--   record_hash  = sha256(chain_sequence || rc || previous record_hash)
--   content_hash = sha256(previous content_hash || netstring(chain_sequence) || cc)
-- with the genesis hash as the previous hash of the first chained record. Returns the
-- chain_sequence of the batch's first record (the others follow it in batch order).
CREATE FUNCTION svc_audit_append(batch jsonb) RETURNS bigint
LANGUAGE plpgsql AS $fn$
DECLARE
  tip_seq  bigint;
  tip_rh   text;
  tip_ch   text;
  prev_rh  text;
  prev_ch  text;
  seq      bigint;
  first_seq bigint;
  s        text;
  el       jsonb;
  n        integer := jsonb_array_length(batch);
  seqs     bigint[] := ARRAY[]::bigint[];
  prevs    text[] := ARRAY[]::text[];
  rhs      text[] := ARRAY[]::text[];
  chs      text[] := ARRAY[]::text[];
BEGIN
  PERFORM pg_advisory_xact_lock(7340100);
  SELECT r.chain_sequence, r.record_hash, r.content_hash INTO tip_seq, tip_rh, tip_ch
    FROM agent_context_requests r ORDER BY r.chain_sequence DESC LIMIT 1;
  IF tip_rh IS NULL OR tip_rh = 'LEGACY_PRE_AUDIT' THEN
    SELECT g.genesis_hash INTO prev_rh FROM audit_chain_genesis g ORDER BY g.id LIMIT 1;
    IF prev_rh IS NULL THEN
      RAISE EXCEPTION 'audit chain genesis is missing';
    END IF;
    prev_ch := prev_rh;
  ELSE
    prev_rh := tip_rh;
    prev_ch := tip_ch;
  END IF;
  seq := coalesce(tip_seq, 0);
  first_seq := seq + 1;
  FOR i IN 0 .. n - 1 LOOP
    el := batch -> i;
    seq := seq + 1;
    s := seq::text;
    prevs := prevs || prev_rh;
    prev_rh := encode(sha256(convert_to(s || (el ->> 'rc') || prev_rh, 'UTF8')), 'hex');
    prev_ch := encode(sha256(convert_to(prev_ch || length(s)::text || ':' || s || ',' || (el ->> 'cc'), 'UTF8')), 'hex');
    seqs := seqs || seq;
    rhs := rhs || prev_rh;
    chs := chs || prev_ch;
  END LOOP;
  INSERT INTO agent_context_requests (
    request_id, agent_id, task_type, request_params, intent_valid, validation_errors,
    context_bundle_ids, context_scd_ids, processing_time_ms, requested_at,
    chain_sequence, previous_hash, record_hash, content_hash, chain_id, parent_request_id)
  SELECT x ->> 'r', x ->> 'a', x ->> 't', NULLIF(x -> 'p', 'null'::jsonb), (x ->> 'v')::boolean,
         NULLIF(x -> 'e', 'null'::jsonb), (x ->> 'b')::text[], (x ->> 's')::text[],
         (x ->> 'm')::integer, (x ->> 'at')::timestamptz,
         h.seq, h.prev, h.rh, h.ch, x ->> 'c', x ->> 'pr'
    FROM unnest(seqs, prevs, rhs, chs) WITH ORDINALITY AS h(seq, prev, rh, ch, k)
    CROSS JOIN LATERAL (SELECT batch -> (h.k::integer - 1) AS x) AS b;
  RETURN first_seq;
END;
$fn$;
REVOKE ALL ON FUNCTION svc_audit_append(jsonb) FROM PUBLIC;

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
GRANT EXECUTE ON FUNCTION svc_audit_append(jsonb) TO svc_app;
GRANT SELECT, INSERT ON audit_chain_genesis TO svc_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON agents, agent_api_keys, mcp_servers, agent_policy_overrides TO svc_app;
GRANT SELECT ON schema_migrations TO svc_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO svc_app;
-- Audit role: read-only on the audit and genesis tables.
GRANT SELECT ON agent_context_requests, audit_chain_genesis TO svc_audit;
