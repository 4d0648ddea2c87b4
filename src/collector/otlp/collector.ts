/** An OTLP file collector: a FileTailer whose lines are OpenTelemetry Collector `file` export batches. */
import type { AppContext } from '../../shared/app-context.js';
import type { Redactor } from '../redact/redactor.js';
import type { CollectorStore, CoverageManifest } from '../store/store.js';
import { FileTailer } from '../tail/tailer.js';
import { poolProcessor, type ParsePool } from '../tail/processor.js';
import type { OtlpProfile } from './events.js';
import { processOtlpLine } from './lines.js';

export interface OtlpCollectorDef {
  profile: OtlpProfile;
  description: string;
  coverage: CoverageManifest;
}

/** Registers the source (with its manifest) and returns its tailer, not yet started. */
export function createOtlpCollector(ctx: AppContext, store: CollectorStore, redactor: Redactor, pool: ParsePool, def: OtlpCollectorDef, file: string): FileTailer {
  store.registerSource(def.profile.sourceId, def.description, def.coverage);
  return new FileTailer({
    sourceId: def.profile.sourceId,
    path: file,
    store,
    logger: ctx.logger.child({ collector: def.profile.sourceId }),
    clock: ctx.clock,
    intervalMs: ctx.config.collector.tailIntervalMs,
    // Parsing, typing and redaction run in worker threads, overlapping the SQLite commits.
    processor: poolProcessor(pool, def.profile.sourceId, (line, rows, counters, now) =>
      processOtlpLine(line, { profile: def.profile, redactor, now }, rows, counters),
    ),
    pipelineDepth: 3,
  });
}
