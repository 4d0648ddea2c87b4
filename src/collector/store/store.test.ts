import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tmpDir } from '../../../test/collector/helpers.js';
import { msToIso } from '../otlp/any-value.js';
import { CollectorStore, packRow, type ActivityRow } from './store.js';

let dir: string;
let store: CollectorStore;
const manifest = { captures: ['a'], does_not_capture: ['b'], caveats: ['c'] };

function row(id: string, over: Partial<ActivityRow> = {}): ActivityRow {
  return {
    event_id: id, source_id: 'vendor-code-cli', observed_at: '2026-01-01T00:00:00.000Z', correlation_id: null, session_id: null,
    actor_identity: null, event_name: 'x', event_type: 'unknown', tool_name: null, mcp_server_scope: null, success: null, decision: null,
    decision_source: null, model: null, cost_usd: null, input_tokens: null, output_tokens: null, duration_ms: null, error_message: null,
    redaction_masked_keys: null, redaction_masked_count: null, raw_attributes: '{}', ingested_at: '2026-01-02T00:00:00.000Z', ...over,
  };
}
const truth = () =>
  store.db
    .prepare('SELECT count(*) AS total_events, count(DISTINCT actor_identity) AS unique_users, count(DISTINCT tool_name) AS unique_tools, total(redaction_masked_count) AS fields_redacted FROM observed_activity_log')
    .get();

beforeEach(() => {
  dir = tmpDir();
  store = new CollectorStore(path.join(dir, 'c.sqlite'));
});
afterEach(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('CollectorStore', () => {
  it('keeps source statistics and stats true, counting only rows actually inserted', () => {
    store.registerSource('vendor-code-cli', 'd', manifest);
    store.registerSource('vendor-enterprise-chat', 'd', manifest);
    const a = [
      row('a', { actor_identity: 'u1', tool_name: 'Bash', redaction_masked_count: 2, observed_at: '2026-01-01T00:00:05.000Z' }),
      row('b', { actor_identity: 'u2', tool_name: 'Bash', redaction_masked_count: 1, observed_at: '2026-01-01T00:00:01.000Z' }),
    ];
    expect(store.commit('vendor-code-cli', { rows: a })).toBe(2);
    expect(store.commit('vendor-code-cli', { rows: [packRow(a[0]), packRow(row('c', { actor_identity: 'u1', tool_name: 'Edit' }))] })).toBe(1);
    expect(store.commit('vendor-enterprise-chat', { rows: [row('d', { source_id: 'vendor-enterprise-chat', actor_identity: 'u3', redaction_masked_count: 2 })] })).toBe(1);
    expect(store.stats()).toEqual(truth());
    expect(store.stats()).toEqual({ total_events: 4, unique_users: 3, unique_tools: 2, fields_redacted: 5 });
    expect(store.listSources()).toEqual([
      { source_id: 'vendor-code-cli', description: 'd', event_count: 3, first_event_at: '2026-01-01T00:00:00.000Z', last_event_at: '2026-01-01T00:00:05.000Z' },
      { source_id: 'vendor-enterprise-chat', description: 'd', event_count: 1, first_event_at: '2026-01-01T00:00:00.000Z', last_event_at: '2026-01-01T00:00:00.000Z' },
    ]);
    expect(store.counters('vendor-code-cli')).toMatchObject({ events_ingested: 3, events_duplicate: 1, fields_redacted: 3 });
  });

  it('writes nothing, not even the position, when a batch fails', () => {
    const tail = { active_path: '/x', file_key: '1:2', file_path: '/x', file_offset: 100, file_mtime_ms: 1, fingerprint: null, fingerprint_len: 0 };
    expect(() => store.commit('vendor-code-cli', { rows: [row('a')], tail })).toThrow(/not registered/);
    expect(store.getTailState('vendor-code-cli')).toBeNull();
    expect(truth()).toMatchObject({ total_events: 0 });
  });

  it('orders newest first by observed_at then event_id, filters by source, parses raw_attributes', () => {
    store.registerSource('vendor-code-cli', 'd', manifest);
    store.commit('vendor-code-cli', {
      rows: [row('a', { raw_attributes: '{"k":1}' }), row('b'), row('c', { observed_at: '2025-12-31T23:59:59.999Z' })],
    });
    expect(store.listObserved({ limit: 10 }).map((r) => r.event_id)).toEqual(['b', 'a', 'c']);
    expect(store.listObserved({ limit: 1 })).toHaveLength(1);
    expect(store.listObserved({ limit: 10, sourceId: 'vendor-enterprise-chat' })).toEqual([]);
    expect(store.listObserved({ limit: 10 })[1].raw_attributes).toEqual({ k: 1 });
    store.close();
    store = new CollectorStore(':memory:');
    expect(store.listObserved({ limit: 10 })).toEqual([]); // no source registered yet
  });

  it('merges sources newest first (ties broken by event_id), whatever their share of the rows', () => {
    const sources = ['vendor-code-cli', 'vendor-enterprise-chat', 'vendor-enterprise-cowork'] as const;
    for (const s of sources) store.registerSource(s, 'd', manifest);
    const all: ActivityRow[] = [];
    for (let i = 0; i < 300; i++) {
      const s = sources[i % 7 === 0 ? 2 : i % 3 === 0 ? 1 : 0];
      // Many rows share a millisecond: the order then rests on event_id.
      all.push(row(`id-${(i * 7919) % 1000}`, { source_id: s, observed_at: msToIso(1767225600000 + Math.floor(i / 4))! }));
    }
    for (const s of sources) store.commit(s, { rows: all.filter((r) => r.source_id === s) });
    const expected = [...all].sort((a, b) => (a.observed_at === b.observed_at ? (a.event_id < b.event_id ? 1 : -1) : a.observed_at < b.observed_at ? 1 : -1));
    for (const limit of [1, 7, 50, 300, 500]) {
      expect(store.listObserved({ limit }).map((r) => r.event_id)).toEqual(expected.slice(0, limit).map((r) => r.event_id));
    }
    expect(store.listObserved({ limit: 500, sourceId: sources[2] }).map((r) => r.event_id)).toEqual(expected.filter((r) => r.source_id === sources[2]).map((r) => r.event_id));
    // A store of an earlier build loses its second index, and still lists the same.
    store.db.exec('CREATE INDEX observed_activity_log_newest ON observed_activity_log (observed_at, event_id)');
    store.close();
    store = new CollectorStore(path.join(dir, 'c.sqlite'));
    expect(store.listObserved({ limit: 50 }).map((r) => r.event_id)).toEqual(expected.slice(0, 50).map((r) => r.event_id));
    expect(store.db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND name LIKE 'observed%'").pluck().all()).toEqual(['observed_activity_log_source']);
  });

  it('recomputes a source row at registration and refuses a newer schema', () => {
    store.registerSource('vendor-code-cli', 'd', manifest);
    store.commit('vendor-code-cli', { rows: [row('a'), row('b')] });
    store.db.prepare('UPDATE activity_sources SET event_count = 99, first_event_at = NULL').run();
    store.registerSource('vendor-code-cli', 'new description', manifest);
    expect(store.listSources()[0]).toMatchObject({ description: 'new description', event_count: 2, first_event_at: '2026-01-01T00:00:00.000Z' });
    expect(store.getCoverage('vendor-code-cli')).toEqual({ source_id: 'vendor-code-cli', ...manifest });
    expect(store.getCoverage('nope')).toBeNull();
    store.db.pragma('user_version = 99');
    store.close();
    expect(() => new CollectorStore(path.join(dir, 'c.sqlite'))).toThrow(/newer/);
    store = new CollectorStore(':memory:');
  });

  it('rebuilds a version-1 store (the older event_type CHECK) keeping its rows, then takes the new types', () => {
    store.registerSource('vendor-code-cli', 'd', manifest);
    store.commit('vendor-code-cli', { rows: [row('a', { event_type: 'tool_call', duration_ms: 5 }), row('b')] });
    // Make it what an earlier build left: the version-1 CHECK, user_version 1.
    const old = (store.db.prepare("SELECT sql FROM sqlite_master WHERE name = 'observed_activity_log'").get() as { sql: string }).sql;
    const v1 = old.replace(/'hook', 'plugin', 'skill', 'mcp_connection', 'permission_mode', /, '');
    expect(v1).not.toBe(old);
    store.db.exec(`DROP INDEX observed_activity_log_source; ALTER TABLE observed_activity_log RENAME TO t; ${v1}; INSERT INTO observed_activity_log SELECT * FROM t; DROP TABLE t;
      CREATE INDEX observed_activity_log_source ON observed_activity_log (source_id, observed_at, event_id)`);
    store.db.pragma('user_version = 1');
    // INSERT OR IGNORE skips a row its CHECK refuses: without the rebuild, new types would be lost.
    expect(store.commit('vendor-code-cli', { rows: [row('c', { event_type: 'hook' })] })).toBe(0);
    store.close();

    store = new CollectorStore(path.join(dir, 'c.sqlite'));
    expect(store.db.pragma('user_version', { simple: true })).toBe(2);
    expect(store.listObserved({ limit: 10 }).map((r) => [r.event_id, r.event_type, r.duration_ms])).toEqual([['b', 'unknown', null], ['a', 'tool_call', 5]]);
    for (const t of ['hook', 'plugin', 'skill', 'mcp_connection', 'permission_mode'] as const) {
      expect(store.commit('vendor-code-cli', { rows: [row(`n-${t}`, { event_type: t })] })).toBe(1);
    }
    const idx = store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'observed_activity_log' AND sql IS NOT NULL").pluck().all();
    expect(idx).toEqual(['observed_activity_log_source']);
    expect(store.listSources()[0].event_count).toBe(7);
  });
});

describe('checkpoints and durability', () => {
  const bulk = (from: number, n: number) =>
    Array.from({ length: n }, (_, i) => row(`e${from + i}`, { raw_attributes: JSON.stringify({ pad: 'x'.repeat(1000), i: from + i }) }));

  it('copies the WAL into the database from a background thread, without the writer checkpointing', async () => {
    store.registerSource('vendor-code-cli', 'd', manifest);
    for (let b = 0; b < 10; b++) store.commit('vendor-code-cli', { rows: bulk(b * 500, 500) });
    const file = path.join(dir, 'c.sqlite');
    // The writer's own threshold is far away: only the checkpointer can have copied frames.
    expect(fs.statSync(`${file}-wal`).size).toBeLessThan(8192 * 16384);
    // Frames reach the database file only through a checkpoint: its size says how far it got
    // (the thread runs alongside, so it may have started during the commits above).
    for (let i = 0; i < 50 && fs.statSync(file).size < 5_000_000; i++) await new Promise((r) => setTimeout(r, 100));
    expect(fs.statSync(file).size).toBeGreaterThan(5_000_000);
    expect(truth()).toMatchObject({ total_events: 5000 });
  });

  it('keeps every committed transaction, rows and position together, when the process dies without closing', () => {
    store.close();
    const file = path.join(dir, 'c.sqlite');
    const storeModule = path.join(path.dirname(fileURLToPath(import.meta.url)), 'store.ts');
    const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
    const code = `
      const { CollectorStore } = await import(${JSON.stringify(storeModule)});
      const s = new CollectorStore(${JSON.stringify(file)});
      s.registerSource('vendor-code-cli', 'd', { captures: [], does_not_capture: [], caveats: [] });
      const row = (i) => [\`e\${i}\`, 'vendor-code-cli', '2026-01-01T00:00:00.000Z', null, null, null, 'x', 'unknown', null, null, null, null, null, null, null, null, null, null, null, null, null, JSON.stringify({ pad: 'x'.repeat(1000), i }), '2026-01-02T00:00:00.000Z'];
      for (let b = 0; b < 20; b++) {
        const rows = Array.from({ length: 500 }, (_, i) => row(b * 500 + i));
        s.commit('vendor-code-cli', { rows, tail: { active_path: '/x', file_key: '1:2', file_path: '/x', file_offset: (b + 1) * 1000, file_mtime_ms: 1, fingerprint: null, fingerprint_len: 0 } });
      }
      process.kill(process.pid, 'SIGKILL');
    `;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: root, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.signal).toBe('SIGKILL');
    store = new CollectorStore(file);
    expect(truth()).toMatchObject({ total_events: 10_000 });
    expect(store.getTailState('vendor-code-cli')).toMatchObject({ file_offset: 20_000 });
    store.registerSource('vendor-code-cli', 'd', manifest);
    expect(store.listSources()[0]).toMatchObject({ event_count: 10_000 });
  });
});

describe('msToIso', () => {
  it('formats like Date.toISOString, across seconds and out of order', () => {
    for (const ms of [1767225600123, 1767225600999, 1767225601000, 1767225600001, 0 + 1000 * 86400, 253402300799999]) {
      expect(msToIso(ms)).toBe(new Date(ms).toISOString());
    }
    expect(msToIso(1767225600123.9)).toBe('2026-01-01T00:00:00.123Z');
    expect(msToIso(-1)).toBeNull();
    expect(msToIso(253402300800000)).toBeNull();
  });
});
