import { readFixture } from '../../../test/collector/helpers.js';
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../shared/logger.js';
import { codeCli } from '../code-cli/definition.js';
import { cowork } from '../cowork/definition.js';
import { processOtlpLine } from '../otlp/lines.js';
import { Redactor } from '../redact/redactor.js';
import { inThreadProcessor, workerProcessor } from './processor.js';

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
    const w = workerProcessor({ sourceId: def.profile.sourceId, hmacSecret: 's3cret', logger, fallback: () => { throw new Error('fallback used'); } });
    try {
      const there = await w.process(lines, NOW);
      expect(there).toEqual(here);
      expect(here.rows.length).toBeGreaterThan(5);
      expect(logger.lines.filter((l) => l.includes('worker'))).toEqual([]);
      // Batches are independent and answered in order.
      const [a, b] = await Promise.all([w.process(lines.slice(0, 1), NOW), w.process(lines.slice(1), NOW)]);
      expect([...a.rows, ...b.rows]).toEqual(here.rows);
    } finally {
      await w.close();
    }
  });
});
