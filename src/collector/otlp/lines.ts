/**
 * One line of an OpenTelemetry Collector `file` export (format json, no compression) to
 * rows. A line is one exported batch, identified by its top-level key: `resourceLogs` is
 * ingested; `resourceMetrics`, `resourceSpans` and `resourceProfiles` lines are skipped and
 * counted (one file can hold every signal); a line that is not a JSON object, or holds no
 * known signal, is counted as malformed and skipped. Nothing here throws.
 */
import { createHash } from 'node:crypto';
import type { ActivityRow } from '../store/store.js';
import { decodeAttributes } from './any-value.js';
import { recordToRow, type RecordContext } from './events.js';

export type Counters = Record<string, number>;

export function bump(c: Counters, name: string, n = 1): void {
  c[name] = (c[name] ?? 0) + n;
}

const SKIPPED: Array<[string, string]> = [
  ['resourceMetrics', 'lines_skipped_metrics'],
  ['resourceSpans', 'lines_skipped_traces'],
  ['resourceProfiles', 'lines_skipped_profiles'],
];

const asArray = (x: unknown): unknown[] => (Array.isArray(x) ? x : []);
const isObj = (x: unknown): x is Record<string, unknown> => !!x && typeof x === 'object' && !Array.isArray(x);

/** Parses one complete line and appends its rows. Returns the number of rows appended. */
export function processOtlpLine(line: string, ctx: RecordContext, rows: ActivityRow[], counters: Counters): number {
  const text = line.endsWith('\r') ? line.slice(0, -1) : line;
  if (text.trim() === '') return 0;
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    bump(counters, 'lines_malformed');
    return 0;
  }
  if (!isObj(doc)) {
    bump(counters, 'lines_malformed');
    return 0;
  }
  if (!('resourceLogs' in doc)) {
    const skipped = SKIPPED.find(([k]) => k in doc);
    bump(counters, skipped ? skipped[1] : 'lines_malformed');
    return 0;
  }
  const before = rows.length;
  // Event ids: a hash of the source and the line's bytes, then the record's place in the
  // line. The same line read again (a replay) yields the same ids; one hash per line keeps
  // this off the per-event cost.
  const lineId = createHash('sha256').update(ctx.profile.sourceId).update('\x1f').update(text).digest('hex').slice(0, 24);
  let index = 0;
  for (const rl of asArray(doc.resourceLogs)) {
    if (!isObj(rl)) {
      bump(counters, 'records_malformed');
      continue;
    }
    const resource = isObj(rl.resource) ? rl.resource : {};
    const resourceAttrs = decodeAttributes(resource.attributes);
    // Collectors before about 2022 wrote instrumentationLibraryLogs / instrumentationLibrary.
    const scopes = 'scopeLogs' in rl ? rl.scopeLogs : rl.instrumentationLibraryLogs;
    for (const sl of asArray(scopes)) {
      if (!isObj(sl)) {
        bump(counters, 'records_malformed');
        continue;
      }
      for (const rec of asArray(sl.logRecords)) {
        const eventId = lineId + (index++).toString(16).padStart(8, '0');
        if (!isObj(rec)) {
          bump(counters, 'records_malformed');
          continue;
        }
        try {
          rows.push(recordToRow(ctx, resourceAttrs, eventId, rec));
        } catch {
          bump(counters, 'records_malformed');
        }
      }
    }
  }
  return rows.length - before;
}
