-- Migration 0012: management events (issue 22). Every change made through the API, the CLI or
-- the console writes one event in the same transaction as the change: who (`actor`: the admin
-- key's name, a system job, an owner), what (`event_type`, the resource), the changed fields
-- before and after, the request id and the time. Events are a hash chain of their own
-- (event_sequence 1, 2, ... from the audit genesis) and leaves of the transparency log, in the
-- one leaf order the chain lock gives context requests and outputs.
CREATE TABLE audit_management_events (
  event_sequence bigint PRIMARY KEY CHECK (event_sequence > 0),
  event_id       text NOT NULL UNIQUE,
  event_type     text NOT NULL CHECK (event_type <> ''),
  resource_type  text NOT NULL CHECK (resource_type <> ''),
  resource_id    text NOT NULL,
  actor          text NOT NULL CHECK (actor <> ''),
  "before"       jsonb CHECK ("before" IS NULL OR jsonb_typeof("before") = 'object'),
  "after"        jsonb CHECK ("after" IS NULL OR jsonb_typeof("after") = 'object'),
  request_id     text,
  occurred_at    timestamptz(3) NOT NULL,
  previous_hash  text NOT NULL CHECK (previous_hash ~ '^[0-9a-f]{64}$'),
  record_hash    text NOT NULL CHECK (record_hash ~ '^[0-9a-f]{64}$'),
  leaf_index     bigint NOT NULL UNIQUE CHECK (leaf_index >= 0)
);
CREATE INDEX audit_management_events_resource_idx ON audit_management_events (resource_type, resource_id, event_sequence);
CREATE INDEX audit_management_events_actor_idx ON audit_management_events (actor, event_sequence);
CREATE INDEX audit_management_events_type_idx ON audit_management_events (event_type, event_sequence);
CREATE INDEX audit_management_events_time_idx ON audit_management_events (occurred_at);

CREATE TRIGGER audit_management_events_immutable BEFORE UPDATE OR DELETE ON audit_management_events
  FOR EACH ROW EXECUTE FUNCTION svc_reject_audit_change();
CREATE TRIGGER audit_management_events_no_truncate BEFORE TRUNCATE ON audit_management_events
  FOR EACH STATEMENT EXECUTE FUNCTION svc_reject_audit_change();

-- The next leaf index now counts the events too.
CREATE OR REPLACE FUNCTION svc_audit_next_leaf() RETURNS bigint
LANGUAGE sql VOLATILE AS $fn$
  SELECT greatest(
    coalesce((SELECT leaf_index FROM agent_context_requests ORDER BY leaf_index DESC LIMIT 1), -1),
    coalesce((SELECT leaf_index FROM agent_output_logs ORDER BY leaf_index DESC LIMIT 1), -1),
    coalesce((SELECT leaf_index FROM audit_management_events ORDER BY leaf_index DESC LIMIT 1), -1)) + 1;
$fn$;

-- Appends one event under the chain lock (pg_advisory_xact_lock(7340100), held to the end of
-- the caller's transaction, so the event commits with its change and in leaf order). The
-- application sends `content`, the RFC 8785 canonical JSON of the event's own fields
-- (src/core/audit/events.ts eventContent); here its sequence, previous hash and leaf are
-- decided and record_hash = hex SHA-256 of (event_sequence || ':' || previous_hash || content),
-- the previous hash being the last event's record_hash, or the audit genesis hash for the first.
CREATE FUNCTION svc_event_append(p_event_id text, p_event_type text, p_resource_type text, p_resource_id text,
                                 p_actor text, p_before jsonb, p_after jsonb, p_request_id text,
                                 p_occurred_at timestamptz, p_content text)
RETURNS TABLE (event_sequence bigint, previous_hash text, record_hash text, leaf_index bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
  seq  bigint;
  prev text;
BEGIN
  PERFORM pg_advisory_xact_lock(7340100);
  SELECT e.event_sequence, e.record_hash INTO seq, prev FROM audit_management_events e ORDER BY e.event_sequence DESC LIMIT 1;
  IF prev IS NULL THEN
    SELECT g.genesis_hash INTO prev FROM audit_chain_genesis g ORDER BY g.id LIMIT 1;
    IF prev IS NULL THEN
      RAISE EXCEPTION 'audit chain genesis is missing';
    END IF;
    seq := 0;
  END IF;
  seq := seq + 1;
  RETURN QUERY
    INSERT INTO audit_management_events AS e (event_sequence, event_id, event_type, resource_type, resource_id, actor,
                                              "before", "after", request_id, occurred_at, previous_hash, record_hash, leaf_index)
    VALUES (seq, p_event_id, p_event_type, p_resource_type, p_resource_id, p_actor, p_before, p_after, p_request_id,
            p_occurred_at, prev, encode(sha256(convert_to(seq::text || ':' || prev || p_content, 'UTF8')), 'hex'),
            svc_audit_next_leaf())
    RETURNING e.event_sequence, e.previous_hash, e.record_hash, e.leaf_index;
END;
$fn$;
REVOKE ALL ON FUNCTION svc_event_append(text, text, text, text, text, jsonb, jsonb, text, timestamptz, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION svc_event_append(text, text, text, text, text, jsonb, jsonb, text, timestamptz, text) TO svc_app;

GRANT SELECT, INSERT ON audit_management_events TO svc_app;
GRANT SELECT ON audit_management_events TO svc_audit;
