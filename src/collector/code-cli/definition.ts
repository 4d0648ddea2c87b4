/**
 * `vendor-code-cli`: tails a second, independent OpenTelemetry Collector file export fed by
 * the coding CLI (spec 2.13, external-formats.md 2.1-2.3). Logs and events only; metric
 * and trace lines are skipped and counted. Lengths only unless the export carries opted-in
 * text; the user's e-mail is always masked.
 */
import type { OtlpCollectorDef } from '../otlp/collector.js';

const CODE_CLI_SOURCE_ID = 'vendor-code-cli' as const;

export const codeCli: OtlpCollectorDef = {
  profile: {
    sourceId: CODE_CLI_SOURCE_ID,
    inferFromAttributes: false,
    maskKeys: new Set(),
  },
  description: 'Coding CLI events from an OpenTelemetry Collector file export (OTLP JSON lines, logs signal)',
  coverage: {
    captures: [
      'every CLI event of the logs signal: prompts, tool results (tool_call or mcp_call, with success), tool decisions (approval, with decision and source), API requests (model, cost, tokens, duration), API errors; other events as unknown',
      'prompt, response and tool text only when the CLI was opted in to log it (OTEL_LOG_USER_PROMPTS and similar); otherwise lengths only',
      'session id, prompt id (correlation_id) and the account id as actor_identity',
    ],
    does_not_capture: [
      'the metrics signal (session, token, cost, lines-of-code counters) and traces: skipped and counted',
      'user e-mail addresses and IP addresses: always replaced by HMAC-SHA256 hashes, inside opted-in text too',
      'CLI sessions whose telemetry is not exported to this collector',
    ],
    caveats: [
      'only the file exporter format json without compression is read; proto or zstd files are counted as malformed lines',
      'event names are matched by their last dotted part, so any vendor prefix works; attribute types are coerced (numbers and booleans may arrive as strings)',
      'event ids derive from the export line and the record\'s place in it: a line read again is never stored twice, but a batch the pipeline exported twice is',
    ],
  },
};
