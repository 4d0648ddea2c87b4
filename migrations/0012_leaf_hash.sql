-- Migration 0012: each context request's leaf hash (the transparency log, migration 0011),
-- computed by the database in the statement that stores the record, from the record's own
-- canonical JSON: the writer sends the JSON around the five values only the chain lock
-- decides (chain_sequence, content_hash, leaf_index, previous_hash, record_hash), and
-- svc_audit_append puts them in and hashes: leaf_hash = SHA-256(0x00 || JSON). The
-- integrator then reads 32 bytes per record instead of reading the record back and
-- serializing it. NULL on the records stored before (the integrator computes theirs); verify
-- recomputes every leaf from the record whatever this column says.
ALTER TABLE agent_context_requests ADD COLUMN leaf_hash bytea CHECK (leaf_hash IS NULL OR length(leaf_hash) = 32);

-- svc_audit_append (migration 0011) as before; each element may carry `lj`, the record's
-- canonical JSON in five pieces around those values (see src/core/audit/writer.ts).
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
