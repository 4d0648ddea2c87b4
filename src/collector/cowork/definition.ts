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
      'session id, prompt id (correlation_id) and the account id as actor_identity, pseudonymized with the same keyed hash as the chat feed\'s user id, so the two still join',
      'every other log record of the export, typed by attribute patterns or as unknown',
    ],
    does_not_capture: [
      'prompt and response text, tool inputs and parameters, workspace paths and the OS login (process.owner): replaced by keyed hashes before storage',
      'user e-mail addresses and IP addresses: replaced by HMAC-SHA256 hashes; percent-encoded and obfuscated e-mails (a%40b.com, a [at] b [dot] com, a(at)b.com) get the same hash as the plain address',
      'the identifiers of COLLECTOR_PSEUDONYMIZE_ATTRIBUTES (by default user.id, user.account_uuid, user.account_id, organization.id and whatever actor_identity is read from): replaced by their keyed hash',
      'API-key-like tokens, JWTs, Bearer/Basic credentials, US SSNs and Luhn-valid card numbers in any other text: replaced by [redacted:<kind>]; values of keys named like a secret by [redacted:secret]',
      'metrics, traces and profiles lines of a shared export: skipped and counted',
      'anything before an admin points an OTLP pipeline at the exporter file: nothing arrives until then',
      'chat activity: Cowork is not in the compliance feed and the chat product is not in this export',
    ],
    caveats: [
      'only the file exporter format json without compression is read; proto or zstd files are counted as malformed lines',
      'the event type is inferred: from the event name (its last dotted part) first, then from attribute patterns; unknown when nothing matches',
      'event ids derive from the export line and the record\'s place in it: a line read again is never stored twice, but a batch the pipeline exported twice is',
      'content capture is an admin setting of the desktop product; what is masked here does not depend on it',
      'secret detection in text is by pattern: tokens without a known prefix, passwords in prose, names, postal addresses and phone numbers are not caught (src/collector/README.md lists what is)',
    ],
  },
};
