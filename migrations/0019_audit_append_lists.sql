-- svc_audit_append_lists: svc_audit_append (migrations 0001, 0011) for a batch that carries
-- each distinct list of ids once. The records of a context request hold its selection's
-- bundle and SCD ids, the same lists for every request of a role; svc_audit_append received
-- them three times a record (the text[] literal, inside the content hash's input, inside the
-- leaf's JSON), and PostgreSQL 15 parses a jsonb parameter's strings a character at a time:
-- in a profile of svc_audit_append under 16-record batches of W2-sized records (43 SCD ids),
-- parsing the parameter was 17% of the backend's CPU, and the text[] casts 5% more.
--
-- The batch: {"L": [{"l": <text[] literal>, "j": <canonical JSON of the list>}, ...],
--             "R": [<record>, ...]}
-- Each record as svc_audit_append's elements (r, a, t, p, v, e, m, at, c, pr, rc), except:
--   b, s   the index in L of its bundle and SCD id lists (null: no list);
--   c0, c1 the content netstrings before the two lists and after them (src/core/audit/hash.ts);
--   lj     the record's canonical JSON in five pieces, as before, except that the second
--          piece now starts after the two lists (`,"intent_valid":...,"leaf_index":`): the
--          function puts in `","context_bundle_ids":<b>,"context_scd_ids":<s>` itself.
-- Hashes, leaf indexes and the stored columns are exactly svc_audit_append's (the tests
-- recompute them); svc_audit_append stays, for processes of the version before during an
-- upgrade, and both take the chain's lock.
CREATE FUNCTION svc_audit_append_lists(batch jsonb, OUT first_seq bigint, OUT first_leaf bigint)
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
  lists    jsonb := batch -> 'L';
  recs     jsonb := batch -> 'R';
  n        integer := jsonb_array_length(recs);
  canon    text[] := ARRAY[]::text[];
  nets     text[] := ARRAY[]::text[];
  j        text;
  bi       integer;
  si       integer;
  bis      integer[] := ARRAY[]::integer[];
  sis      integer[] := ARRAY[]::integer[];
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
  -- Each list's canonical JSON and its netstring, once a batch.
  FOR i IN 0 .. coalesce(jsonb_array_length(lists), 0) - 1 LOOP
    j := lists -> i ->> 'j';
    canon := canon || j;
    nets := nets || (octet_length(j)::text || ':' || j || ',');
  END LOOP;
  first_leaf := svc_audit_next_leaf();
  seq := coalesce(tip_seq, 0);
  first_seq := seq + 1;
  FOR i IN 0 .. n - 1 LOOP
    el := recs -> i;
    -- PostgreSQL arrays count from 1, the batch's list indexes from 0.
    bi := (el ->> 'b')::integer + 1;
    si := (el ->> 's')::integer + 1;
    seq := seq + 1;
    s := seq::text;
    prevs := prevs || prev_rh;
    rh := encode(sha256(convert_to(s || (el ->> 'rc') || prev_rh, 'UTF8')), 'hex');
    ch := encode(sha256(convert_to(prev_ch || length(s)::text || ':' || s || ',' || (el ->> 'c0')
      || coalesce(nets[bi], '4:null,') || coalesce(nets[si], '4:null,') || (el ->> 'c1'), 'UTF8')), 'hex');
    lj := el -> 'lj';
    -- {..."chain_sequence":<seq>,"content_hash":"<ch>","context_bundle_ids":<b>,"context_scd_ids":<s>,
    --  ...,"leaf_index":<leaf>,...,"previous_hash":"<prev>",...,"record_hash":"<rh>",...}
    lhs := lhs || sha256('\x00'::bytea || convert_to(
      (lj ->> 0) || s || ',"content_hash":"' || ch || '","context_bundle_ids":' || coalesce(canon[bi], 'null')
      || ',"context_scd_ids":' || coalesce(canon[si], 'null') || (lj ->> 1) || (first_leaf + i)::text || (lj ->> 2)
      || prev_rh || (lj ->> 3) || rh || (lj ->> 4), 'UTF8'));
    prev_rh := rh;
    prev_ch := ch;
    bis := bis || bi;
    sis := sis || si;
    seqs := seqs || seq;
    rhs := rhs || rh;
    chs := chs || ch;
  END LOOP;
  -- Each list as text[] once (the CTE is referenced twice, so it is computed once).
  WITH l AS (SELECT t.k::integer AS k, (t.e ->> 'l')::text[] AS ids FROM jsonb_array_elements(lists) WITH ORDINALITY AS t(e, k))
  INSERT INTO agent_context_requests (
    request_id, agent_id, task_type, request_params, intent_valid, validation_errors,
    context_bundle_ids, context_scd_ids, processing_time_ms, requested_at,
    chain_sequence, previous_hash, record_hash, content_hash, chain_id, parent_request_id, leaf_index, leaf_hash)
  SELECT x ->> 'r', x ->> 'a', x ->> 't', NULLIF(x -> 'p', 'null'::jsonb), (x ->> 'v')::boolean,
         NULLIF(x -> 'e', 'null'::jsonb), lb.ids, ls.ids,
         (x ->> 'm')::integer, (x ->> 'at')::timestamptz,
         h.seq, h.prev, h.rh, h.ch, x ->> 'c', x ->> 'pr', first_leaf + h.k - 1, h.lh
    FROM unnest(seqs, prevs, rhs, chs, lhs, bis, sis) WITH ORDINALITY AS h(seq, prev, rh, ch, lh, bi, si, k)
    CROSS JOIN LATERAL (SELECT recs -> (h.k::integer - 1) AS x) AS b
    LEFT JOIN l lb ON lb.k = h.bi
    LEFT JOIN l ls ON ls.k = h.si
   ORDER BY h.k;
END;
$fn$;
REVOKE ALL ON FUNCTION svc_audit_append_lists(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION svc_audit_append_lists(jsonb) TO svc_app;
