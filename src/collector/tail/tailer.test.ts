/**
 * Effectively-once tailing: restart, crash mid-file, partial last line, rotation (rename +
 * new file, several at once, a deleted backup), truncation, malformed lines.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { otlpLine, tmpDir } from '../../../test/collector/helpers.js';
import { memoryLogger } from '../../shared/logger.js';
import { codeCli } from '../code-cli/definition.js';
import { processOtlpLine } from '../otlp/lines.js';
import { Redactor } from '../redact/redactor.js';
import { CollectorStore } from '../store/store.js';
import { FileTailer, type TailerOptions } from './tailer.js';

const SOURCE = codeCli.profile.sourceId;
let dir: string;
let file: string;
let store: CollectorStore;
const redactor = new Redactor('tail-secret');

function tailer(over: Partial<TailerOptions> = {}): FileTailer {
  return new FileTailer({
    sourceId: SOURCE,
    path: file,
    store: over.store ?? store,
    logger: memoryLogger(),
    clock: { now: () => new Date() },
    intervalMs: 10,
    processLine: (line, rows, counters, now) => processOtlpLine(line, { profile: codeCli.profile, redactor, now }, rows, counters),
    ...over,
  });
}
const count = () => (store.db.prepare('SELECT count(*) AS n FROM observed_activity_log').get() as { n: number }).n;
const sequences = () =>
  (store.db.prepare(`SELECT json_extract(raw_attributes, '$."event.sequence"') AS s FROM observed_activity_log ORDER BY s`).all() as Array<{ s: number }>).map(
    (r) => r.s,
  );
const range = (from: number, n: number) => Array.from({ length: n }, (_, k) => from + k);
const lines = (from: number, nLines: number, perLine = 1) => range(0, nLines).map((k) => otlpLine(from + k * perLine, perLine) + '\n').join('');
const source = () => store.listSources().find((s) => s.source_id === SOURCE)!;

beforeEach(() => {
  dir = tmpDir();
  file = path.join(dir, 'data.json');
  store = new CollectorStore(path.join(dir, 'collector.sqlite'));
  store.registerSource(SOURCE, codeCli.description, codeCli.coverage);
});
afterEach(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('FileTailer', () => {
  it('reads complete lines and commits the offset after them', async () => {
    fs.writeFileSync(file, lines(0, 3, 2));
    await tailer().tick();
    expect(sequences()).toEqual(range(0, 6));
    expect(store.getTailState(SOURCE)!.file_offset).toBe(fs.statSync(file).size);
    expect(source()).toMatchObject({ event_count: 6, first_event_at: '2026-01-01T00:00:00.000Z', last_event_at: '2026-01-01T00:00:00.005Z' });
  });

  it('leaves a partial last line for the next pass, then reads it once complete', async () => {
    const full = otlpLine(10, 2);
    fs.writeFileSync(file, lines(0, 1) + full.slice(0, 100));
    const t = tailer();
    await t.tick();
    expect(sequences()).toEqual([0]);
    const offset = store.getTailState(SOURCE)!.file_offset;
    expect(offset).toBe(Buffer.byteLength(lines(0, 1)));
    fs.appendFileSync(file, full.slice(100));
    await t.tick();
    expect(sequences()).toEqual([0]); // still no newline: still waiting
    fs.appendFileSync(file, '\n');
    await t.tick();
    expect(sequences()).toEqual([0, 10, 11]);
    expect(store.counters(SOURCE).lines_malformed ?? 0).toBe(0);
  });

  it('resumes after a restart without duplicating or losing anything', async () => {
    fs.writeFileSync(file, lines(0, 5));
    await tailer().tick();
    fs.appendFileSync(file, lines(5, 5));
    store.close();
    store = new CollectorStore(path.join(dir, 'collector.sqlite')); // a new process
    store.registerSource(SOURCE, codeCli.description, codeCli.coverage);
    await tailer().tick();
    expect(sequences()).toEqual(range(0, 10));
    expect(store.counters(SOURCE).events_duplicate ?? 0).toBe(0); // resumed at the offset, not replayed
    expect(source().event_count).toBe(10);
  });

  it('survives a crash between transactions: rows and offset are committed together', async () => {
    fs.writeFileSync(file, lines(0, 10, 3));
    // Dies at its third transaction (as a killed process would): nothing of it is written.
    let calls = 0;
    const crashing = Object.create(store) as CollectorStore;
    crashing.commit = (...args: Parameters<CollectorStore['commit']>) => {
      if (++calls === 3) throw new Error('simulated crash');
      return store.commit(...args);
    };
    await tailer({ store: crashing, batchLines: 2 }).tick();
    const committed = store.getTailState(SOURCE)!.file_offset;
    expect(sequences()).toEqual(range(0, 12)); // two transactions of two lines (6 rows) each
    expect(committed).toBe(Buffer.byteLength(lines(0, 4, 3)));
    await tailer({ batchLines: 2 }).tick();
    expect(sequences()).toEqual(range(0, 30));
    expect(store.counters(SOURCE).events_duplicate ?? 0).toBe(0);
  });

  it('inserts nothing twice when the same lines are read again (lost state)', async () => {
    fs.writeFileSync(file, lines(0, 4, 2));
    await tailer().tick();
    store.db.prepare('DELETE FROM collector_tail_state').run();
    await tailer().tick();
    expect(sequences()).toEqual(range(0, 8));
    expect(store.counters(SOURCE).events_duplicate).toBe(8);
    expect(source().event_count).toBe(8);
  });

  it('follows a rotation (rename + new file) without losing the end of the old file', async () => {
    fs.writeFileSync(file, lines(0, 2));
    const t = tailer();
    await t.tick();
    fs.appendFileSync(file, lines(2, 2)); // written, not yet read...
    fs.renameSync(file, path.join(dir, 'data-2026-01-01T00-00-01.000.json')); // ...then rotated
    fs.writeFileSync(file, lines(4, 2));
    await t.tick();
    expect(sequences()).toEqual(range(0, 6));
    fs.appendFileSync(file, lines(6, 1));
    await t.tick();
    expect(sequences()).toEqual(range(0, 7));
    expect(store.counters(SOURCE).events_duplicate ?? 0).toBe(0);
  });

  it('reads every backup when several rotations happened between passes', async () => {
    fs.writeFileSync(file, lines(0, 1));
    const t = tailer();
    await t.tick();
    fs.appendFileSync(file, lines(1, 1));
    const b1 = path.join(dir, 'data-2026-01-01T00-00-01.000-size.json');
    fs.renameSync(file, b1);
    fs.utimesSync(b1, new Date(1_000_000), new Date(1_000_000));
    fs.writeFileSync(file, lines(2, 2));
    const b2 = path.join(dir, 'data-2026-01-01T00-00-02.000-size.json');
    fs.renameSync(file, b2);
    fs.utimesSync(b2, new Date(2_000_000), new Date(2_000_000));
    fs.writeFileSync(file, lines(4, 1));
    fs.writeFileSync(path.join(dir, 'other.json'), lines(100, 1)); // not ours
    await t.tick();
    expect(sequences()).toEqual(range(0, 5));
  });

  it('waits when the active file is briefly missing after the rename', async () => {
    fs.writeFileSync(file, lines(0, 1));
    const t = tailer();
    await t.tick();
    fs.appendFileSync(file, lines(1, 1));
    fs.renameSync(file, path.join(dir, 'data-2026-01-01T00-00-03.000.json'));
    await t.tick(); // no active file yet
    expect(sequences()).toEqual([0, 1]);
    fs.writeFileSync(file, lines(2, 1));
    await t.tick();
    expect(sequences()).toEqual([0, 1, 2]);
  });

  it('starts again at 0 when the file is truncated and rewritten (exporter restart)', async () => {
    fs.writeFileSync(file, lines(0, 3));
    const t = tailer();
    await t.tick();
    fs.truncateSync(file, 0); // O_TRUNC keeps the inode
    fs.writeFileSync(file, lines(50, 6)); // already longer than the old offset
    await t.tick();
    expect(sequences()).toEqual([0, 1, 2, ...range(50, 6)]);
    expect(store.counters(SOURCE).files_restarted).toBe(1);
    fs.truncateSync(file, 0);
    fs.writeFileSync(file, lines(60, 1)); // shorter than the offset
    await t.tick();
    expect(sequences()).toContain(60);
    expect(store.counters(SOURCE).files_restarted).toBe(2);
  });

  it('counts and skips malformed, oversize and non-log lines, never failing', async () => {
    const bad = ['{"resourceLogs": [', 'garbage', '"a string"', '{"resourceMetrics":[]}', '{"resourceSpans":[]}', '{"something":1}', '', '\u0000\u0001\u0002', 'x'.repeat(5000)];
    fs.writeFileSync(file, lines(0, 1) + bad.join('\n') + '\n' + lines(1, 1) + 'y'.repeat(5000) + '\n' + lines(2, 1));
    const logger = memoryLogger();
    await tailer({ logger, chunkBytes: 1024, maxLineBytes: 2048 }).tick();
    expect(sequences()).toEqual([0, 1, 2]);
    expect(store.counters(SOURCE)).toMatchObject({
      lines_malformed: 5,
      lines_skipped_metrics: 1,
      lines_skipped_traces: 1,
      lines_oversize: 2,
    });
    expect(logger.lines.some((l) => l.includes('malformed input skipped'))).toBe(true);
    expect(store.getTailState(SOURCE)!.file_offset).toBe(fs.statSync(file).size);
  });

  it('runs on its own timer and stops cleanly', async () => {
    const t = tailer();
    t.start();
    fs.writeFileSync(file, lines(0, 2));
    await waitUntil(() => count() === 2);
    fs.appendFileSync(file, lines(2, 1));
    await waitUntil(() => count() === 3);
    await t.stop();
    fs.appendFileSync(file, lines(3, 1));
    await new Promise((r) => setTimeout(r, 50));
    expect(count()).toBe(3);
  });

  it('handles a CRLF file and a file with no lines', async () => {
    fs.writeFileSync(file, '');
    await tailer().tick();
    expect(count()).toBe(0);
    fs.writeFileSync(file, otlpLine(0) + '\r\n' + otlpLine(1) + '\r\n');
    await tailer().tick();
    expect(sequences()).toEqual([0, 1]);
  });
});

async function waitUntil(fn: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}
