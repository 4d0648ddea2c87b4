/**
 * The collector store's SQLite schema (spec 2.13). `observed_activity_log` and
 * `activity_sources` are the spec's tables; the three `collector_*` tables hold each
 * collector's progress (file offset, feed cursor, counters), written in the same
 * transaction as the rows they produced, which is what makes ingestion effectively-once.
 */
export const SCHEMA_VERSION = 2;

/** Version 2 added hook, plugin, skill, mcp_connection and permission_mode (the CHECK constraint; see migrateEventTypes). */
const EVENT_TYPES = ['prompt', 'tool_call', 'mcp_call', 'model_call', 'approval', 'error', 'hook', 'plugin', 'skill', 'mcp_connection', 'permission_mode', 'unknown'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS observed_activity_log (
  event_id               TEXT PRIMARY KEY,
  source_id              TEXT NOT NULL,
  observed_at            TEXT NOT NULL,
  correlation_id         TEXT,
  session_id             TEXT,
  actor_identity         TEXT,
  event_name             TEXT NOT NULL,
  event_type             TEXT NOT NULL CHECK (event_type IN (${EVENT_TYPES.map((t) => `'${t}'`).join(', ')})),
  tool_name              TEXT,
  mcp_server_scope       TEXT,
  success                TEXT CHECK (success IN ('true', 'false')),
  decision               TEXT,
  decision_source        TEXT,
  model                  TEXT,
  cost_usd               REAL,
  input_tokens           INTEGER,
  output_tokens          INTEGER,
  duration_ms            INTEGER,
  error_message          TEXT,
  redaction_masked_keys  TEXT,
  redaction_masked_count INTEGER CHECK (redaction_masked_count >= 0),
  raw_attributes         TEXT NOT NULL,
  ingested_at            TEXT NOT NULL
);
-- "Newest first" (decisions.md) is observed_at, then event_id, descending: per source from
-- this index, and across sources by merging the few sources' newest rows (listObserved).
-- One index fewer to update per row than a second, source-less (observed_at, event_id)
-- index, which stores of earlier builds had and lose here.
CREATE INDEX IF NOT EXISTS observed_activity_log_source ON observed_activity_log (source_id, observed_at, event_id);
DROP INDEX IF EXISTS observed_activity_log_newest;

CREATE TABLE IF NOT EXISTS activity_sources (
  source_id      TEXT PRIMARY KEY,
  description    TEXT NOT NULL,
  coverage_json  TEXT NOT NULL,
  first_event_at TEXT,
  last_event_at  TEXT,
  event_count    INTEGER NOT NULL DEFAULT 0 CHECK (event_count >= 0)
);

-- Where a file tailer is: the file it reads (device:inode), the byte offset after the
-- last complete line whose rows are committed, and a fingerprint of the file's head that
-- tells a truncated or replaced file from the one the offset belongs to.
CREATE TABLE IF NOT EXISTS collector_tail_state (
  source_id       TEXT PRIMARY KEY,
  active_path     TEXT NOT NULL,
  file_key        TEXT,
  file_path       TEXT,
  file_offset     INTEGER NOT NULL DEFAULT 0 CHECK (file_offset >= 0),
  file_mtime_ms   REAL,
  fingerprint     TEXT,
  fingerprint_len INTEGER NOT NULL DEFAULT 0,
  updated_at      TEXT NOT NULL
);

-- A poller's cursor (JSON), committed with the page it follows.
CREATE TABLE IF NOT EXISTS collector_cursor (
  source_id   TEXT PRIMARY KEY,
  cursor_json TEXT NOT NULL,
  updated_at  TEXT NOT NULL
);

-- Distinct actors and tools seen, kept in the transaction that inserts the rows, so that
-- GET /api/activity/stats never scans the log (it shares the process with every service).
CREATE TABLE IF NOT EXISTS collector_stats_distinct (
  kind  TEXT NOT NULL CHECK (kind IN ('actor', 'tool')),
  value TEXT NOT NULL,
  PRIMARY KEY (kind, value)
) WITHOUT ROWID;

-- Counters: malformed lines, skipped metric/trace lines, duplicates, dropped activities.
CREATE TABLE IF NOT EXISTS collector_counters (
  source_id TEXT NOT NULL,
  name      TEXT NOT NULL,
  value     INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (source_id, name)
) WITHOUT ROWID;
`;

/**
 * A store of an earlier build has the older CHECK (event_type IN ...), which SQLite cannot
 * alter: the table is rebuilt under the new schema, rows copied as they are, in one
 * transaction (the caller's). Run before SCHEMA_SQL; a no-op on a new or current store.
 */
export function migrateEventTypes(db: { prepare(sql: string): { get(...a: unknown[]): unknown }; exec(sql: string): unknown }): boolean {
  const row = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'observed_activity_log'").get() as { sql: string } | undefined;
  if (!row || row.sql.includes("'permission_mode'")) return false;
  db.exec('DROP INDEX IF EXISTS observed_activity_log_source');
  db.exec('DROP INDEX IF EXISTS observed_activity_log_newest');
  db.exec('ALTER TABLE observed_activity_log RENAME TO observed_activity_log_old');
  db.exec(SCHEMA_SQL);
  db.exec('INSERT INTO observed_activity_log SELECT * FROM observed_activity_log_old');
  db.exec('DROP TABLE observed_activity_log_old');
  return true;
}
