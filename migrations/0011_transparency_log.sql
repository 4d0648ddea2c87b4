-- Migration 0011: the transparency log over the audit log (issue 21).
--
-- Every audit record (context requests and agent outputs) is a leaf of one RFC 9162 Merkle
-- tree, in the order of its leaf_index: 0, 1, 2, ... with no gap, assigned under the chain
-- lock (pg_advisory_xact_lock(7340100)) that svc_audit_append already takes, so records of
-- any number of processes get one order and commit in it.
ALTER TABLE agent_context_requests ADD COLUMN leaf_index bigint;
ALTER TABLE agent_output_logs ADD COLUMN leaf_index bigint;

-- Records stored before this migration become the first leaves: the context requests in
-- chain_sequence order, then the outputs in (created_at, output_id) order. The records are
-- immutable (triggers); the owner running this migration lifts that for this one statement
-- each, in this transaction, and only this column changes.
ALTER TABLE agent_context_requests DISABLE TRIGGER agent_context_requests_immutable;
UPDATE agent_context_requests r SET leaf_index = n.li
  FROM (SELECT request_id, row_number() OVER (ORDER BY chain_sequence) - 1 AS li FROM agent_context_requests) n
 WHERE r.request_id = n.request_id;
ALTER TABLE agent_context_requests ENABLE TRIGGER agent_context_requests_immutable;
ALTER TABLE agent_output_logs DISABLE TRIGGER agent_output_logs_immutable;
UPDATE agent_output_logs o SET leaf_index = n.li
  FROM (SELECT output_id, (SELECT count(*) FROM agent_context_requests) + row_number() OVER (ORDER BY created_at, output_id) - 1 AS li
          FROM agent_output_logs) n
 WHERE o.output_id = n.output_id;
ALTER TABLE agent_output_logs ENABLE TRIGGER agent_output_logs_immutable;

-- The next leaf index, under the chain lock: one past the highest of either table. It is also
-- the column default, so that a record inserted by hand (an owner's repair, a test's legacy
-- row) still gets a leaf; the product's writers take the lock first.
CREATE FUNCTION svc_audit_next_leaf() RETURNS bigint
LANGUAGE sql VOLATILE AS $fn$
  SELECT greatest(
    coalesce((SELECT leaf_index FROM agent_context_requests ORDER BY leaf_index DESC LIMIT 1), -1),
    coalesce((SELECT leaf_index FROM agent_output_logs ORDER BY leaf_index DESC LIMIT 1), -1)) + 1;
$fn$;
ALTER TABLE agent_context_requests ALTER COLUMN leaf_index SET DEFAULT svc_audit_next_leaf();
ALTER TABLE agent_output_logs ALTER COLUMN leaf_index SET DEFAULT svc_audit_next_leaf();
ALTER TABLE agent_context_requests ALTER COLUMN leaf_index SET NOT NULL;
ALTER TABLE agent_output_logs ALTER COLUMN leaf_index SET NOT NULL;
ALTER TABLE agent_context_requests ADD CONSTRAINT agent_context_requests_leaf_index_key UNIQUE (leaf_index);
ALTER TABLE agent_output_logs ADD CONSTRAINT agent_output_logs_leaf_index_key UNIQUE (leaf_index);
ALTER TABLE agent_context_requests ADD CONSTRAINT agent_context_requests_leaf_index_check CHECK (leaf_index >= 0);
ALTER TABLE agent_output_logs ADD CONSTRAINT agent_output_logs_leaf_index_check CHECK (leaf_index >= 0);


-- Each context request's leaf hash, computed by the database in the statement that stores
-- the record, from the record's own canonical JSON: the writer sends the JSON around the five
-- values only the chain lock decides (chain_sequence, content_hash, leaf_index,
-- previous_hash, record_hash), and svc_audit_append puts them in and hashes: leaf_hash =
-- SHA-256(0x00 || JSON). The integrator then reads 32 bytes per record instead of reading the
-- record back and serializing it. NULL on the records stored before (the integrator computes
-- theirs); verify recomputes every leaf from the record whatever this column says.
ALTER TABLE agent_context_requests ADD COLUMN leaf_hash bytea CHECK (leaf_hash IS NULL OR length(leaf_hash) = 32);

-- svc_audit_append (migration 0001) as before; each record also gets its leaf index (the
-- batch's leaves are consecutive, from the first one returned) and, when its element carries
-- `lj` (the record's canonical JSON in five pieces, src/core/audit/writer.ts), its leaf hash.
DROP FUNCTION svc_audit_append(jsonb);
CREATE FUNCTION svc_audit_append(batch jsonb, OUT first_seq bigint, OUT first_leaf bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
  tip_seq  bigint;
  tip_rh   text;
  tip_ch   text;
  prev_rh  text;
  prev_ch  text;
  rh       text;
  ch       text;
  seq      bigint;
  s        text;
  el       jsonb;
  lj       jsonb;
  n        integer := jsonb_array_length(batch);
  seqs     bigint[] := ARRAY[]::bigint[];
  prevs    text[] := ARRAY[]::text[];
  rhs      text[] := ARRAY[]::text[];
  chs      text[] := ARRAY[]::text[];
  lhs      bytea[] := ARRAY[]::bytea[];
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
  first_leaf := svc_audit_next_leaf();
  seq := coalesce(tip_seq, 0);
  first_seq := seq + 1;
  FOR i IN 0 .. n - 1 LOOP
    el := batch -> i;
    seq := seq + 1;
    s := seq::text;
    prevs := prevs || prev_rh;
    rh := encode(sha256(convert_to(s || (el ->> 'rc') || prev_rh, 'UTF8')), 'hex');
    ch := encode(sha256(convert_to(prev_ch || length(s)::text || ':' || s || ',' || (el ->> 'cc'), 'UTF8')), 'hex');
    lj := el -> 'lj';
    -- {..."chain_sequence":<seq>,"content_hash":"<ch>",...,"leaf_index":<leaf>,...,
    --  "previous_hash":"<prev>",...,"record_hash":"<rh>",...}
    lhs := lhs || CASE WHEN lj IS NULL THEN NULL::bytea ELSE sha256('\x00'::bytea || convert_to(
      (lj ->> 0) || s || ',"content_hash":"' || ch || (lj ->> 1) || (first_leaf + i)::text || (lj ->> 2) || prev_rh
      || (lj ->> 3) || rh || (lj ->> 4), 'UTF8')) END;
    prev_rh := rh;
    prev_ch := ch;
    seqs := seqs || seq;
    rhs := rhs || rh;
    chs := chs || ch;
  END LOOP;
  INSERT INTO agent_context_requests (
    request_id, agent_id, task_type, request_params, intent_valid, validation_errors,
    context_bundle_ids, context_scd_ids, processing_time_ms, requested_at,
    chain_sequence, previous_hash, record_hash, content_hash, chain_id, parent_request_id, leaf_index, leaf_hash)
  SELECT x ->> 'r', x ->> 'a', x ->> 't', NULLIF(x -> 'p', 'null'::jsonb), (x ->> 'v')::boolean,
         NULLIF(x -> 'e', 'null'::jsonb), (x ->> 'b')::text[], (x ->> 's')::text[],
         (x ->> 'm')::integer, (x ->> 'at')::timestamptz,
         h.seq, h.prev, h.rh, h.ch, x ->> 'c', x ->> 'pr', first_leaf + h.k - 1, h.lh
    FROM unnest(seqs, prevs, rhs, chs, lhs) WITH ORDINALITY AS h(seq, prev, rh, ch, lh, k)
    CROSS JOIN LATERAL (SELECT batch -> (h.k::integer - 1) AS x) AS b;
END;
$fn$;
REVOKE ALL ON FUNCTION svc_audit_append(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION svc_audit_append(jsonb) TO svc_app;

-- An agent output against one of the agent's own requests, with its leaf index, under the
-- same lock. Returns no row when the request is not that agent's.
CREATE FUNCTION svc_output_append(p_output_id text, p_request_id text, p_agent_id text, p_output_type text,
                                  p_output jsonb, p_output_hash text)
RETURNS TABLE (created_at timestamptz, leaf_index bigint)
LANGUAGE plpgsql AS $fn$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM agent_context_requests r WHERE r.request_id = p_request_id AND r.agent_id = p_agent_id) THEN
    RETURN;
  END IF;
  PERFORM pg_advisory_xact_lock(7340100);
  RETURN QUERY
    INSERT INTO agent_output_logs AS o (output_id, request_id, agent_id, output_type, output, output_hash, leaf_index)
    VALUES (p_output_id, p_request_id, p_agent_id, p_output_type, p_output, p_output_hash, svc_audit_next_leaf())
    RETURNING o.created_at, o.leaf_index;
END;
$fn$;
REVOKE ALL ON FUNCTION svc_output_append(text, text, text, text, jsonb, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION svc_output_append(text, text, text, text, jsonb, text) TO svc_app;

-- The tree, as C2SP tlog-tiles: tile (level, idx) holds the hashes of Merkle level 8*level,
-- nodes idx*256 .. idx*256+255, 32 bytes each. A tile only grows: its bytes may be extended,
-- never changed, and a full tile (8,192 bytes) never changes again.
CREATE TABLE audit_tlog_tiles (
  level smallint NOT NULL CHECK (level >= 0 AND level < 8),
  idx   bigint NOT NULL CHECK (idx >= 0),
  data  bytea NOT NULL CHECK (length(data) > 0 AND length(data) <= 8192 AND length(data) % 32 = 0),
  PRIMARY KEY (level, idx)
);
CREATE FUNCTION svc_tlog_tile_grows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.level <> OLD.level OR NEW.idx <> OLD.idx OR length(NEW.data) < length(OLD.data)
     OR substring(NEW.data FROM 1 FOR length(OLD.data)) <> OLD.data THEN
    RAISE EXCEPTION 'A transparency log tile only grows' USING ERRCODE = 'P0001';
  END IF;
  RETURN NEW;
END;
$$;
CREATE TRIGGER audit_tlog_tiles_grow BEFORE UPDATE ON audit_tlog_tiles
  FOR EACH ROW EXECUTE FUNCTION svc_tlog_tile_grows();
CREATE TRIGGER audit_tlog_tiles_no_delete BEFORE DELETE ON audit_tlog_tiles
  FOR EACH ROW EXECUTE FUNCTION svc_reject_audit_change();
CREATE TRIGGER audit_tlog_tiles_no_truncate BEFORE TRUNCATE ON audit_tlog_tiles
  FOR EACH STATEMENT EXECUTE FUNCTION svc_reject_audit_change();

-- Every checkpoint the log signed (C2SP tlog-checkpoint in a signed note), one per tree size.
CREATE TABLE audit_tlog_checkpoints (
  tree_size  bigint PRIMARY KEY CHECK (tree_size >= 0),
  root_hash  bytea NOT NULL CHECK (length(root_hash) = 32),
  note       text NOT NULL,
  created_at timestamptz(3) NOT NULL DEFAULT now()
);
-- Witnesses' cosignatures (C2SP tlog-cosignature), one per witness key and checkpoint.
CREATE TABLE audit_tlog_cosignatures (
  tree_size   bigint NOT NULL REFERENCES audit_tlog_checkpoints (tree_size),
  key_name    text NOT NULL,
  line        text NOT NULL,
  received_at timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (tree_size, key_name)
);
CREATE TRIGGER audit_tlog_checkpoints_immutable BEFORE UPDATE OR DELETE ON audit_tlog_checkpoints
  FOR EACH ROW EXECUTE FUNCTION svc_reject_audit_change();
CREATE TRIGGER audit_tlog_checkpoints_no_truncate BEFORE TRUNCATE ON audit_tlog_checkpoints
  FOR EACH STATEMENT EXECUTE FUNCTION svc_reject_audit_change();
CREATE TRIGGER audit_tlog_cosignatures_immutable BEFORE UPDATE OR DELETE ON audit_tlog_cosignatures
  FOR EACH ROW EXECUTE FUNCTION svc_reject_audit_change();
CREATE TRIGGER audit_tlog_cosignatures_no_truncate BEFORE TRUNCATE ON audit_tlog_cosignatures
  FOR EACH STATEMENT EXECUTE FUNCTION svc_reject_audit_change();

GRANT SELECT, INSERT, UPDATE ON audit_tlog_tiles TO svc_app;
GRANT SELECT, INSERT ON audit_tlog_checkpoints, audit_tlog_cosignatures TO svc_app;
GRANT SELECT ON audit_tlog_tiles, audit_tlog_checkpoints, audit_tlog_cosignatures TO svc_audit;
GRANT EXECUTE ON FUNCTION svc_audit_next_leaf() TO svc_app;
