-- The inner nodes of each full level-0 tile of the transparency log (src/core/tlog/merkle.ts,
-- tileInnerNodes): Merkle levels 1 to 7 within the tile, level 1's 128 hashes first, then
-- level 2's 64 ... level 7's 2 (254 hashes, 8,128 bytes), written with the tile when it fills.
-- A proof reads the 32 bytes of each subtree it needs instead of the whole tile and the 255
-- hashes up from it. Tiles stored before this migration have none: proofs read those whole.
-- Like the tile, they never change once written (the trigger below); GET /api/audit/verify
-- checks them against the leaves (src/core/tlog/verify-tree.ts).
ALTER TABLE audit_tlog_tiles
  ADD COLUMN nodes bytea CHECK (nodes IS NULL OR (level = 0 AND length(data) = 8192 AND length(nodes) = 8128));

-- Hashes do not compress: stored out of line uncompressed, a substring reads only the TOAST
-- chunks it needs (applies to rows written from now on).
ALTER TABLE audit_tlog_tiles ALTER COLUMN data SET STORAGE EXTERNAL, ALTER COLUMN nodes SET STORAGE EXTERNAL;

CREATE OR REPLACE FUNCTION svc_tlog_tile_grows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.level <> OLD.level OR NEW.idx <> OLD.idx OR length(NEW.data) < length(OLD.data)
     OR substring(NEW.data FROM 1 FOR length(OLD.data)) <> OLD.data
     OR (OLD.nodes IS NOT NULL AND NEW.nodes IS DISTINCT FROM OLD.nodes) THEN
    RAISE EXCEPTION 'A transparency log tile only grows' USING ERRCODE = 'P0001';
  END IF;
  RETURN NEW;
END;
$$;
