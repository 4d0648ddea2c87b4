/**
 * `vendor-enterprise-cowork`: tails the file export of an OpenTelemetry Collector that the
 * admin points the desktop agent's OTLP pipeline at (spec 2.13, external-formats.md 2.4).
 * Its posture: prompt and response text, tool inputs, the user's e-mail and workspace paths
 * are masked before storage (prompts are kept as keyed hashes, so equal prompts still
 * correlate); the event type is inferred from attribute patterns, `unknown` when none matches.
 */
import type { OtlpCollectorDef } from '../otlp/collector.js';

const COWORK_SOURCE_ID = 'vendor-enterprise-cowork' as const;

export const cowork: OtlpCollectorDef = {
  profile: {
    sourceId: COWORK_SOURCE_ID,
    inferFromAttributes: true,
    maskKeys: new Set(['prompt', 'response', 'tool_input', 'tool_parameters', 'workspace.host_paths', 'process.owner', 'body', 'hook_definitions']),
  },
  description: 'Desktop agent (Cowork) activity from an OpenTelemetry Collector file export (OTLP JSON lines)',
  coverage: {
    captures: [
      'prompts (as keyed hashes, with prompt_length), tool calls and MCP tool calls with success, approvals (tool decisions), model requests with model, cost, tokens and duration, API errors',
      'session id, prompt id (correlation_id) and the account id as actor_identity, which joins the chat feed',
      'every other log record of the export, typed by attribute patterns or as unknown',
    ],
    does_not_capture: [
      'prompt and response text, tool inputs and parameters, workspace paths and the OS login (process.owner): replaced by keyed hashes before storage',
      'user e-mail addresses and IP addresses: replaced by HMAC-SHA256 hashes',
      'metrics, traces and profiles lines of a shared export: skipped and counted',
      'anything before an admin points an OTLP pipeline at the exporter file: nothing arrives until then',
      'chat activity: Cowork is not in the compliance feed and the chat product is not in this export',
    ],
    caveats: [
      'only the file exporter format json without compression is read; proto or zstd files are counted as malformed lines',
      'the event type is inferred: from the event name (its last dotted part) first, then from attribute patterns; unknown when nothing matches',
      'event ids derive from the export line and the record\'s place in it: a line read again is never stored twice, but a batch the pipeline exported twice is',
      'content capture is an admin setting of the desktop product; what is masked here does not depend on it',
    ],
  },
};
