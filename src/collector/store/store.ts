/**
 * The collector store: one SQLite database (better-sqlite3), separate from PostgreSQL.
 *
 * Invariants:
 * - `commit` writes a batch of rows, the source's counters and statistics, and the
 *   collector's progress (tail offset or feed cursor) in ONE transaction: either the rows
 *   and the position after them are both durable, or neither is. A restart resumes from
 *   the position, and `INSERT OR IGNORE` on the deterministic event_id makes any replay
 *   insert nothing twice.
 * - `activity_sources.event_count`, `first_event_at`, `last_event_at` move only with rows
 *   actually inserted, and are recomputed from the table at registration.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { components } from '../../../gen/openapi/collector.js';
import { migrateEventTypes, SCHEMA_SQL, SCHEMA_VERSION, type EventType } from './schema.js';
import { countCollectorCommit } from '../../shared/metrics.js';

export type SourceId = components['schemas']['SourceId'];

/** The source counters that count input not stored (the metrics' skip reasons). */
const SKIP_COUNTER = /^(lines|records|activities)_(malformed|oversize|skipped_[a-z]+|not_allowlisted)$/;
export type ObservedActivity = components['schemas']['ObservedActivity'];
export type ActivitySource = components['schemas']['ActivitySource'];
export type ActivityStats = components['schemas']['ActivityStats'];

/** A collector's declared coverage: the contract's CoverageManifest without `source_id`, the row's key. */
export type CoverageManifest = Omit<components['schemas']['CoverageManifest'], 'source_id'>;

/** A row as written: raw_attributes is JSON text. */
export interface ActivityRow {
  event_id: string;
  source_id: SourceId;
  observed_at: string;
  correlation_id: string | null;
  session_id: string | null;
  actor_identity: string | null;
  event_name: string;
  event_type: EventType;
  tool_name: string | null;
  mcp_server_scope: string | null;
  success: 'true' | 'false' | null;
  decision: string | null;
  decision_source: string | null;
  model: string | null;
  cost_usd: number | null;
  input_tokens: number | null;
  output_tokens: number | null;
  duration_ms: number | null;
  error_message: string | null;
  redaction_masked_keys: string | null;
  redaction_masked_count: number | null;
  raw_attributes: string;
  ingested_at: string;
}

export interface TailState {
  active_path: string;
  file_key: string | null;
  file_path: string | null;
  file_offset: number;
  file_mtime_ms: number | null;
  fingerprint: string | null;
  fingerprint_len: number;
}

/** A row as an array in COLUMNS order: what crosses from the parsing worker, and what is bound. */
export type PackedRow = unknown[];

export interface CommitInput {
  rows: Array<ActivityRow | PackedRow>;
  counters?: Record<string, number>;
  tail?: TailState;
  cursor?: unknown;
}

const COLUMNS = [
  'event_id', 'source_id', 'observed_at', 'correlation_id', 'session_id', 'actor_identity', 'event_name', 'event_type',
  'tool_name', 'mcp_server_scope', 'success', 'decision', 'decision_source', 'model', 'cost_usd', 'input_tokens',
  'output_tokens', 'duration_ms', 'error_message', 'redaction_masked_keys', 'redaction_masked_count', 'raw_attributes', 'ingested_at',
] as const;

const OBSERVED_AT = COLUMNS.indexOf('observed_at');
const ACTOR = COLUMNS.indexOf('actor_identity');
const TOOL = COLUMNS.indexOf('tool_name');
const MASKED = COLUMNS.indexOf('redaction_masked_count');

/** The row as bound (positional binding is measurably cheaper than named parameters). */
export function packRow(row: ActivityRow): PackedRow {
  return [
    row.event_id, row.source_id, row.observed_at, row.correlation_id, row.session_id, row.actor_identity, row.event_name,
    row.event_type, row.tool_name, row.mcp_server_scope, row.success, row.decision, row.decision_source, row.model,
    row.cost_usd, row.input_tokens, row.output_tokens, row.duration_ms, row.error_message, row.redaction_masked_keys,
    row.redaction_masked_count, row.raw_attributes, row.ingested_at,
  ];
}

export class CollectorStore {
  readonly db: Database.Database;
  private readonly insertRow: Database.Statement;
  private readonly bumpSource: Database.Statement;
  private readonly bumpCounter: Database.Statement;
  private readonly addDistinct: Database.Statement;
  private readonly putTail: Database.Statement;
  private readonly putCursor: Database.Statement;
  private readonly commitTx: (sourceId: SourceId, input: CommitInput, now: string) => number;
  private readonly memory: boolean;
  private checkpointer: Checkpointer | null = null;
  private checkpointerTried = false;

  constructor(file: string) {
    this.memory = file === ':memory:' || file === '';
    if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    this.db = new Database(file);
    // Rows are about 1 KiB (raw_attributes): larger pages cost less per row. Only takes
    // effect when the file is created, before WAL mode is set.
    this.db.pragma('page_size = 16384');
    // WAL + synchronous=NORMAL, the durability trade-off: a commit is appended to the WAL
    // with write() and not fsynced, so a committed transaction survives a crash of this
    // process (the bytes are in the OS), but an OS crash or power loss may lose the last
    // transactions (never corrupting the file). Rows and the position after them are in
    // one transaction, so they are lost together and the collector simply reads them again.
    // The fsyncs happen at checkpoints (WAL, then database), which the background
    // checkpointer below takes off this thread.
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    // A bounded page cache (32 MiB): memory stays flat whatever the size of the input or
    // of the store.
    this.db.pragma('cache_size = -32768');
    // Checkpoints are the background checkpointer's; this connection checkpoints itself only
    // when the WAL reaches 128 MiB (then mostly copied already, so the pause is short), which
    // bounds the WAL whether or not the checkpointer keeps up, or runs at all.
    this.db.pragma(`wal_autocheckpoint = ${WRITER_AUTOCHECKPOINT_PAGES}`);
    const version = this.db.pragma('user_version', { simple: true }) as number;
    if (version > SCHEMA_VERSION) {
      this.db.close();
      throw new Error(`collector store ${file} has schema version ${version}, newer than this build (${SCHEMA_VERSION})`);
    }
    this.db.transaction(() => {
      migrateEventTypes(this.db);
      this.db.exec(SCHEMA_SQL);
    })();
    this.db.pragma(`user_version = ${SCHEMA_VERSION}`);

    this.insertRow = this.db.prepare(`INSERT OR IGNORE INTO observed_activity_log (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})`);
    this.bumpSource = this.db.prepare(
      `UPDATE activity_sources SET event_count = event_count + @n,
         first_event_at = CASE WHEN first_event_at IS NULL OR @first < first_event_at THEN @first ELSE first_event_at END,
         last_event_at = CASE WHEN last_event_at IS NULL OR @last > last_event_at THEN @last ELSE last_event_at END
       WHERE source_id = @source_id`,
    );
    this.bumpCounter = this.db.prepare(
      `INSERT INTO collector_counters (source_id, name, value) VALUES (?, ?, ?)
       ON CONFLICT (source_id, name) DO UPDATE SET value = value + excluded.value`,
    );
    this.addDistinct = this.db.prepare('INSERT OR IGNORE INTO collector_stats_distinct (kind, value) VALUES (?, ?)');
    this.putTail = this.db.prepare(
      `INSERT INTO collector_tail_state (source_id, active_path, file_key, file_path, file_offset, file_mtime_ms, fingerprint, fingerprint_len, updated_at)
       VALUES (@source_id, @active_path, @file_key, @file_path, @file_offset, @file_mtime_ms, @fingerprint, @fingerprint_len, @updated_at)
       ON CONFLICT (source_id) DO UPDATE SET active_path = excluded.active_path, file_key = excluded.file_key, file_path = excluded.file_path,
         file_offset = excluded.file_offset, file_mtime_ms = excluded.file_mtime_ms, fingerprint = excluded.fingerprint,
         fingerprint_len = excluded.fingerprint_len, updated_at = excluded.updated_at`,
    );
    this.putCursor = this.db.prepare(
      `INSERT INTO collector_cursor (source_id, cursor_json, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (source_id) DO UPDATE SET cursor_json = excluded.cursor_json, updated_at = excluded.updated_at`,
    );
    this.commitTx = this.db.transaction((sourceId: SourceId, input: CommitInput, now: string) => {
      let inserted = 0;
      let first: string | null = null;
      let last: string | null = null;
      let masked = 0;
      const actors = new Set<string>();
      const tools = new Set<string>();
      for (const row of input.rows) {
        const values = Array.isArray(row) ? row : packRow(row);
        if (this.insertRow.run(values).changes === 1) {
          inserted++;
          const at = values[OBSERVED_AT] as string;
          if (first === null || at < first) first = at;
          if (last === null || at > last) last = at;
          if (typeof values[ACTOR] === 'string') actors.add(values[ACTOR]);
          if (typeof values[TOOL] === 'string') tools.add(values[TOOL]);
          if (typeof values[MASKED] === 'number') masked += values[MASKED];
        }
      }
      if (inserted) {
        // An unregistered source would leave event_count untrue: refuse rather than drift.
        if (this.bumpSource.run({ n: inserted, first, last, source_id: sourceId }).changes !== 1) throw new Error(`activity source ${sourceId} is not registered`);
        for (const a of actors) this.addDistinct.run('actor', a);
        for (const t of tools) this.addDistinct.run('tool', t);
        if (masked) this.bumpCounter.run(sourceId, 'fields_redacted', masked);
      }
      const duplicates = input.rows.length - inserted;
      if (duplicates) this.bumpCounter.run(sourceId, 'events_duplicate', duplicates);
      if (inserted) this.bumpCounter.run(sourceId, 'events_ingested', inserted);
      for (const [name, n] of Object.entries(input.counters ?? {})) if (n) this.bumpCounter.run(sourceId, name, n);
      if (input.tail) this.putTail.run({ source_id: sourceId, ...input.tail, updated_at: now });
      if (input.cursor !== undefined) this.putCursor.run(sourceId, JSON.stringify(input.cursor), now);
      return inserted;
    });
  }

  /**
   * Registers (or refreshes) a collector's activity_sources row with its manifest, and
   * recomputes its statistics from the table so that they are true whatever happened before.
   */
  registerSource(sourceId: SourceId, description: string, coverage: CoverageManifest): void {
    this.db.transaction(() => {
      this.db
        .prepare(
          `INSERT INTO activity_sources (source_id, description, coverage_json) VALUES (?, ?, ?)
           ON CONFLICT (source_id) DO UPDATE SET description = excluded.description, coverage_json = excluded.coverage_json`,
        )
        .run(sourceId, description, JSON.stringify(coverage));
      this.db
        .prepare(
          `UPDATE activity_sources SET
             event_count = (SELECT count(*) FROM observed_activity_log WHERE source_id = @s),
             first_event_at = (SELECT min(observed_at) FROM observed_activity_log WHERE source_id = @s),
             last_event_at = (SELECT max(observed_at) FROM observed_activity_log WHERE source_id = @s)
           WHERE source_id = @s`,
        )
        .run({ s: sourceId });
    })();
  }

  /** Writes rows and progress atomically; returns the number of rows actually inserted. */
  commit(sourceId: SourceId, input: CommitInput, now: Date = new Date()): number {
    const inserted = this.commitTx(sourceId, input, now.toISOString());
    if (inserted && !this.checkpointerTried) this.startCheckpointer();
    // Metrics once committed: duplicates and what the source counted as skipped (bounded names).
    const skipped: Record<string, number> = {};
    const duplicates = input.rows.length - inserted;
    if (duplicates) skipped.duplicate = duplicates;
    for (const [name, n] of Object.entries(input.counters ?? {})) if (n && SKIP_COUNTER.test(name)) skipped[name] = n;
    countCollectorCommit(sourceId, inserted, skipped);
    return inserted;
  }

  getTailState(sourceId: SourceId): TailState | null {
    return (
      (this.db
        .prepare(
          'SELECT active_path, file_key, file_path, file_offset, file_mtime_ms, fingerprint, fingerprint_len FROM collector_tail_state WHERE source_id = ?',
        )
        .get(sourceId) as TailState | undefined) ?? null
    );
  }

  getCursor<T>(sourceId: SourceId): T | null {
    const row = this.db.prepare('SELECT cursor_json FROM collector_cursor WHERE source_id = ?').get(sourceId) as { cursor_json: string } | undefined;
    return row ? (JSON.parse(row.cursor_json) as T) : null;
  }

  counters(sourceId: SourceId): Record<string, number> {
    const rows = this.db.prepare('SELECT name, value FROM collector_counters WHERE source_id = ?').all(sourceId) as Array<{ name: string; value: number }>;
    return Object.fromEntries(rows.map((r) => [r.name, r.value]));
  }

  listObserved(opts: { limit: number; sourceId?: string }): ObservedActivity[] {
    let rows: ActivityRow[];
    if (opts.sourceId) {
      rows = this.db
        .prepare(`SELECT * FROM observed_activity_log WHERE source_id = ? ORDER BY observed_at DESC, event_id DESC LIMIT ?`)
        .all(opts.sourceId, opts.limit) as ActivityRow[];
    } else {
      // Every row's source is registered (commit refuses others): the newest rows overall are
      // among each source's newest, each read from the (source_id, observed_at, event_id) index.
      const sources = this.db.prepare('SELECT source_id FROM activity_sources ORDER BY source_id').pluck().all() as string[];
      if (!sources.length) return [];
      if (sources.length > 100) throw new Error('too many activity sources to merge'); // there are three
      const one = `SELECT * FROM (SELECT * FROM observed_activity_log WHERE source_id = ? ORDER BY observed_at DESC, event_id DESC LIMIT ?)`;
      rows = this.db
        .prepare(`${sources.map(() => one).join(' UNION ALL ')} ORDER BY observed_at DESC, event_id DESC LIMIT ?`)
        .all(...sources.flatMap((s) => [s, opts.limit]), opts.limit) as ActivityRow[];
    }
    return rows.map((r) => ({ ...r, raw_attributes: parseObject(r.raw_attributes) }));
  }

  listSources(): ActivitySource[] {
    return this.db
      .prepare('SELECT source_id, description, event_count, first_event_at, last_event_at FROM activity_sources ORDER BY source_id')
      .all() as ActivitySource[];
  }

  getCoverage(sourceId: string): components['schemas']['CoverageManifest'] | null {
    const row = this.db.prepare('SELECT source_id, coverage_json FROM activity_sources WHERE source_id = ?').get(sourceId) as
      | { source_id: SourceId; coverage_json: string }
      | undefined;
    if (!row) return null;
    const m = parseObject(row.coverage_json) as Partial<CoverageManifest>;
    const list = (x: unknown) => (Array.isArray(x) ? x.filter((s): s is string => typeof s === 'string') : []);
    return { source_id: row.source_id, captures: list(m.captures), does_not_capture: list(m.does_not_capture), caveats: list(m.caveats) };
  }

  /** From the running aggregates kept by `commit` (no scan of the log). */
  stats(): ActivityStats {
    return this.db
      .prepare(
        `SELECT (SELECT coalesce(sum(event_count), 0) FROM activity_sources) AS total_events,
                (SELECT count(*) FROM collector_stats_distinct WHERE kind = 'actor') AS unique_users,
                (SELECT count(*) FROM collector_stats_distinct WHERE kind = 'tool') AS unique_tools,
                (SELECT coalesce(sum(value), 0) FROM collector_counters WHERE name = 'fields_redacted') AS fields_redacted`,
      )
      .get() as ActivityStats;
  }

  /**
   * Starts the background checkpointer (file stores only; idempotent). Called at the first
   * commit that inserts rows, so that a store only read (or a test's) costs no thread.
   */
  private startCheckpointer(): void {
    if (this.checkpointerTried || this.memory || !this.db.open) return;
    this.checkpointerTried = true;
    this.checkpointer = Checkpointer.start(path.resolve(this.db.name));
  }

  close(): void {
    this.checkpointer?.stop();
    this.checkpointer = null;
    if (this.db.open) this.db.close();
  }
}

/** The writer's own autocheckpoint threshold (16 KiB pages): the WAL's bound. */
const WRITER_AUTOCHECKPOINT_PAGES = 8192;
/**
 * Measured on a bulk load: 250-300 ms used the least CPU (100 ms copies the pages every
 * commit touches again and again, and fsyncs more often; 1 s leaves more for the writer).
 */
const CHECKPOINT_INTERVAL_MS = 250;

const CHECKPOINTER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const done = new Int32Array(workerData.done);
let db = null;
let timer = null;
function finish() {
  if (timer) clearTimeout(timer);
  timer = null;
  try { if (db && db.open) db.close(); } catch {}
  db = null;
  Atomics.store(done, 0, 1);
  Atomics.notify(done, 0);
  parentPort.close();
}
function tick() {
  timer = null;
  try {
    // PASSIVE: copies what it can without waiting for, or blocking, the writer or readers.
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {}
  timer = setTimeout(tick, workerData.intervalMs);
}
parentPort.on('message', (m) => { if (m === 'stop') finish(); });
try {
  db = new Database(workerData.file, { fileMustExist: true });
  db.pragma('busy_timeout = 0');
  tick();
} catch {
  finish();
}
`;

/**
 * A thread with its own connection that runs PASSIVE checkpoints every 250 ms, so that
 * copying WAL frames into the database and the fsyncs that go with it overlap with parsing
 * and committing instead of stalling the writer's thread. It changes nothing about what is
 * durable: commits are in the WAL either way, and SQLite checkpoints safely from any
 * connection. If it cannot start, the writer's own autocheckpoint does the work.
 */
class Checkpointer {
  private constructor(
    private readonly worker: Worker,
    private readonly done: Int32Array,
  ) {}

  static start(file: string): Checkpointer | null {
    try {
      const done = new SharedArrayBuffer(4);
      const worker = new Worker(CHECKPOINTER_SOURCE, {
        eval: true,
        workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), file, done, intervalMs: CHECKPOINT_INTERVAL_MS },
      });
      worker.unref();
      worker.on('error', () => {}); // the writer's autocheckpoint covers for it
      return new Checkpointer(worker, new Int32Array(done));
    } catch {
      return null;
    }
  }

  /** Closes the checkpointer's connection before the writer's (waits up to 5 s for a checkpoint in progress). */
  stop(): void {
    this.worker.postMessage('stop');
    Atomics.wait(this.done, 0, 0, 5000);
    void this.worker.terminate();
  }
}

function parseObject(text: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  } catch {
    return {};
  }
}
