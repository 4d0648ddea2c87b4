-- Legacy (pre-audit) records: verify counts them and reads the last one's chain_sequence on
-- every call. Without an index that is a full scan of the audit table, which competes with
-- verify's own stream of the chained records; with this partial index it reads only the
-- legacy rows (none, in a deployment that began audited). Building it reads the table once
-- (about half a second per million records here), inside the migration's transaction, so
-- appends wait that long once, at the upgrade's start-up.
CREATE INDEX agent_context_requests_legacy_idx ON agent_context_requests (chain_sequence) WHERE record_hash = 'LEGACY_PRE_AUDIT';
