/**
 * Worker-thread entry of the OTLP collectors: parses, types and redacts batches of lines
 * (each message names its source; workerData carries the HMAC secret and the pseudonymized attribute names) and posts back
 * packed rows. It holds no state between batches and never touches the store.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { codeCli } from '../code-cli/definition.js';
import { cowork } from '../cowork/definition.js';
import { processOtlpLine } from '../otlp/lines.js';
import { Redactor } from '../redact/redactor.js';
import { processBatch } from './processor.js';

const data = workerData as { hmacSecret: string | null; pseudonymize?: string[] };
const redactor = new Redactor(data.hmacSecret, { pseudonymize: data.pseudonymize });
const DEFS = { [cowork.profile.sourceId]: cowork, [codeCli.profile.sourceId]: codeCli } as Record<string, typeof cowork>;
const port = parentPort!;

port.on('message', (m: { id: number; sourceId: string; lines?: string[]; data?: ArrayBuffer; ends?: Uint32Array; now: string }) => {
  try {
    const def = DEFS[m.sourceId];
    if (!def) throw new Error(`no OTLP collector ${m.sourceId}`);
    const lines = m.lines ?? { data: Buffer.from(m.data!), ends: m.ends! };
    const result = processBatch((line, rows, counters, now) => processOtlpLine(line, { profile: def.profile, redactor, now }, rows, counters), lines, m.now);
    port.postMessage({ id: m.id, result });
  } catch (e) {
    port.postMessage({ id: m.id, error: (e as Error).message });
  }
});
port.postMessage({ ready: true });
