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
      'every CLI event of the logs signal: prompts, tool results (tool_call or mcp_call, with success and duration_ms), tool decisions (approval, with decision and source), API requests (model, cost, tokens, duration), API errors, hook events (hook: registered, execution start and complete, with total_duration_ms as duration_ms), plugin events (plugin: installed, loaded), skill activations (skill), MCP server connections (mcp_connection: status, transport, scope, duration_ms), permission mode changes (permission_mode: from_mode, to_mode, trigger); other events (at_mention, compaction, auth, ...) as unknown',
      'prompt, response and tool text only when the CLI was opted in to log it (OTEL_LOG_USER_PROMPTS and similar); otherwise lengths only',
      'session id, prompt id (correlation_id) and the account id as actor_identity, pseudonymized (one user, one keyed hash, the same as in the chat feed)',
    ],
    does_not_capture: [
      'the metrics signal (session, token, cost, lines-of-code counters) and traces: skipped and counted',
      'user e-mail addresses and IP addresses: always replaced by HMAC-SHA256 hashes, inside opted-in text too; percent-encoded (a%40b.com) and obfuscated e-mails (a [at] b [dot] com, a(at)b.com, a AT b DOT com, a&#64;b.com) get the same hash as the plain address',
      'the identifiers of COLLECTOR_PSEUDONYMIZE_ATTRIBUTES (by default user.id, user.account_uuid, user.account_id, organization.id and whatever actor_identity is read from): replaced by their keyed hash, at any depth',
      'secrets typed into opted-in text or tool parameters: API-key-like tokens (sk-..., sk_live_..., ghp_/gho_/ghs_/github_pat_..., glpat-..., xoxb-/xoxp-..., AKIA..., AIza..., npm_...), JWTs, Bearer/Basic/Token credentials that hold a digit, US SSNs (ddd-dd-dddd, valid ranges) and Luhn-valid card numbers are replaced by [redacted:<kind>]; values of keys named like a secret (password, token, api_key, authorization, ...) by [redacted:secret]',
      'CLI sessions whose telemetry is not exported to this collector',
    ],
    caveats: [
      'only the file exporter format json without compression is read; proto or zstd files are counted as malformed lines',
      'event names are matched by their last dotted part, so any vendor prefix works; attribute types are coerced (numbers and booleans may arrive as strings)',
      "event ids derive from the export line and the record's place in it: a line read again is never stored twice, but a batch the pipeline exported twice is",
      'secret detection is by pattern and can miss: tokens of other vendors without a known prefix, passwords in free text, SSNs written without dashes or with spaces, card numbers with mixed separators or glued to letters, names, postal addresses and phone numbers are not caught; a 13-19 digit Luhn-valid number starting with 2-6 is masked even when it is not a card',
    ],
  },
};
