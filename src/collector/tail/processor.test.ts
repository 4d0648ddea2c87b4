import { readFixture } from '../../../test/collector/helpers.js';
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../shared/logger.js';
import { codeCli } from '../code-cli/definition.js';
import { cowork } from '../cowork/definition.js';
import { processOtlpLine } from '../otlp/lines.js';
import { Redactor } from '../redact/redactor.js';
import { inThreadProcessor, packLines, ParsePool, poolProcessor } from './processor.js';

const NOW = '2030-01-01T00:00:00.000Z';

describe('line processors', () => {
  it.each([
    ['code-cli.jsonl', codeCli],
    ['cowork.jsonl', cowork],
  ] as const)('a worker thread yields exactly what the main thread does (%s)', async (file, def) => {
    const lines = readFixture(file).split('\n');
    const fallback = (line: string, rows: any[], counters: any, now: string) => processOtlpLine(line, { profile: def.profile, redactor: new Redactor('s3cret'), now }, rows, counters);
    const here = await inThreadProcessor(fallback).process(lines, NOW);
    const logger = memoryLogger();
    const pool = new ParsePool({ size: 2, hmacSecret: 's3cret', logger });
    const w = poolProcessor(pool, def.profile.sourceId, () => {
      throw new Error('fallback used');
    });
    try {
      const there = await w.process(lines, NOW);
      expect(there).toEqual(here);
      expect(here.rows.length).toBeGreaterThan(5);
      expect(logger.lines.filter((l) => l.includes('worker'))).toEqual([]);
      // Batches are independent, spread over the threads, and each answered as its own.
      const parts = await Promise.all(lines.map((l) => w.process([l], NOW)));
      expect(parts.flatMap((p) => p.rows)).toEqual(here.rows);
      // As the tailer hands them over: the lines' bytes, moved to the thread.
      const bytes = packLines(lines.map((l) => Buffer.from(l)));
      expect(await w.process(bytes, NOW)).toEqual(here);
      expect(bytes.data.byteLength).toBe(0); // transferred, not copied
      expect(await inThreadProcessor(fallback).process(packLines(lines.map((l) => Buffer.from(l))), NOW)).toEqual(here);
    } finally {
      await pool.close();
    }
  });
});

describe('the worker threads redact as configured', () => {
  it('pseudonymize the attribute names given to the pool, and only those', async () => {
    const lines = readFixture('code-cli.jsonl').split('\n');
    const pseudonymize = ['session.id'];
    const fallback = (line: string, rows: any[], counters: any, now: string) =>
      processOtlpLine(line, { profile: codeCli.profile, redactor: new Redactor('s3cret', { pseudonymize }), now }, rows, counters);
    const here = await inThreadProcessor(fallback).process(lines, NOW);
    const pool = new ParsePool({ size: 1, hmacSecret: 's3cret', pseudonymize, logger: memoryLogger() });
    try {
      const there = await poolProcessor(pool, codeCli.profile.sourceId, () => {
        throw new Error('fallback used');
      }).process(lines, NOW);
      expect(there).toEqual(here);
      const row = (there.rows[0] as unknown[]).map(String);
      // session_id hashed; the account id (actor_identity) kept, as the list no longer names it.
      expect(row).toContain('user_01SYNTHUSER0000000000000');
      expect(row.join('\n')).not.toContain('5e7a0c2b-1111-4222-8333-944445555666');
    } finally {
      await pool.close();
    }
  });
});

describe('packLines', () => {
  it('keeps each line whole, multi-byte characters and empty lines included', async () => {
    const lines = ['{"a":"é€😀"}', '', 'x', '{"b":"\\u00e9"}'];
    const seen: string[] = [];
    await inThreadProcessor((line) => void seen.push(line)).process(packLines(lines.map((l) => Buffer.from(l))), NOW);
    expect(seen).toEqual(lines);
  });
});

describe('a pool with no thread left', () => {
  it('falls back to parsing in the main thread', async () => {
    const pool = new ParsePool({ size: 1, hmacSecret: null, logger: memoryLogger() });
    await pool.close();
    const p = poolProcessor(pool, codeCli.profile.sourceId, (line, rows, counters, now) =>
      processOtlpLine(line, { profile: codeCli.profile, redactor: new Redactor(null), now }, rows, counters),
    );
    const r = await p.process(readFixture('code-cli.jsonl').split('\n'), NOW);
    expect(r.rows).toHaveLength(11);
  });
});
