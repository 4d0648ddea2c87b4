/**
 * From one OTLP log record to one observed_activity_log row (decisions.md "Collector store").
 *
 * - The event name is `event.name`, else the OTLP `eventName` field, else a body that is an
 *   identifier (`vendor_code.tool_result`); it is matched by the part after its last dot,
 *   so real exports work whatever their vendor prefix.
 * - Types: user_prompt -> prompt, tool_result -> tool_call (mcp_call for an MCP tool),
 *   api_request -> model_call, api_error -> error, tool_decision -> approval,
 *   mcp_server_connection -> mcp_connection, permission_mode_changed -> permission_mode, and
 *   by prefix hook_* -> hook (hook_registered, hook_execution_start/complete, ...),
 *   plugin_* -> plugin (plugin_installed, plugin_loaded), skill_* -> skill (skill_activated).
 *   A source that infers from attributes (cowork) tries attribute patterns next; anything
 *   else is unknown.
 * - duration_ms is the event's `duration_ms` (tool results, model requests, API errors, MCP
 *   connections), else `total_duration_ms` (a hook event's completion).
 * - Every column is read from the REDACTED attributes, so that no column can carry what
 *   raw_attributes does not.
 */
import type { EventType } from '../store/schema.js';
import type { ActivityRow, SourceId } from '../store/store.js';
import { maskedKeysColumn, type Redactor } from '../redact/redactor.js';
import { decodeAnyValue, decodeAttributes, isoToIso, nanosToIso, toBoolText, toInt, toNumber, toText } from './any-value.js';

export interface OtlpProfile {
  sourceId: SourceId;
  /** Infer the type from attribute patterns when the name does not classify (cowork). */
  inferFromAttributes: boolean;
  /** Attribute keys masked whole for this source, beyond the e-mail and IP keys. */
  maskKeys: ReadonlySet<string>;
}

const NAME_TYPES: Record<string, EventType> = {
  user_prompt: 'prompt',
  tool_result: 'tool_call',
  api_request: 'model_call',
  api_error: 'error',
  tool_decision: 'approval',
  mcp_server_connection: 'mcp_connection',
  permission_mode_changed: 'permission_mode',
};
/** Event families matched by the prefix of the name's last part (`hook_execution_complete`). */
const PREFIX_TYPES: ReadonlyArray<[string, EventType]> = [
  ['hook_', 'hook'],
  ['plugin_', 'plugin'],
  ['skill_', 'skill'],
];

/** The type of an event name (its last dotted part), or null. */
function typeOfName(name: string): EventType | null {
  const last = lastPart(name);
  // Own keys only: an event named `constructor` is not a type.
  if (Object.hasOwn(NAME_TYPES, last)) return NAME_TYPES[last];
  for (const [prefix, type] of PREFIX_TYPES) if (last.startsWith(prefix)) return type;
  return null;
}
/** The canonical name of a type inferred from attributes alone. */
const TYPE_NAMES: Partial<Record<EventType, string>> = {
  prompt: 'user_prompt',
  tool_call: 'tool_result',
  mcp_call: 'tool_result',
  model_call: 'api_request',
  error: 'api_error',
  approval: 'tool_decision',
};
/** Upstream placeholders for text that was not opted in: not masked by us, not counted. */
const KEEP_VALUES: ReadonlySet<string> = new Set(['<REDACTED>']);
const NAME_LIKE = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;
const HEX_ID = /^[0-9A-Fa-f]{16,32}$/;

/** The raw event name of a record (attributes already decoded), or null. */
function rawEventName(attrs: Record<string, unknown>, record: Record<string, unknown>, body: unknown): string | null {
  const a = toText(attrs['event.name']);
  if (a) return a;
  const f = toText(record.eventName);
  if (f) return f;
  if (typeof body === 'string' && body.length <= 200 && NAME_LIKE.test(body)) return body;
  return null;
}

/** The part after the last dot (`vendor_code.tool_result` -> `tool_result`). */
export function lastPart(name: string): string {
  return name.slice(name.lastIndexOf('.') + 1);
}

function has(attrs: Record<string, unknown>, key: string): boolean {
  const v = attrs[key];
  return v !== undefined && v !== null && v !== '';
}

/** Is the tool of a tool event an MCP tool? Read before redaction (tool_parameters may be masked). */
function isMcpTool(attrs: Record<string, unknown>): boolean {
  const tool = toText(attrs.tool_name) ?? toText(attrs.name) ?? '';
  if (tool.startsWith('mcp__') || tool === 'mcp_tool') return true;
  if (attrs.tool_source === 'mcp' || has(attrs, 'mcp_server_scope')) return true;
  const params = attrs.tool_parameters;
  if (typeof params === 'string' && params.includes('mcp_server_name')) return true;
  if (params && typeof params === 'object' && 'mcp_server_name' in params) return true;
  return false;
}

/** The attribute patterns of cowork's inference, tried in order; null when none matches. */
export function inferFromAttributes(attrs: Record<string, unknown>): EventType | null {
  const tool = has(attrs, 'tool_name') || has(attrs, 'tool_use_id');
  if (tool && has(attrs, 'decision')) return 'approval';
  if (tool && has(attrs, 'success')) return isMcpTool(attrs) ? 'mcp_call' : 'tool_call';
  if (has(attrs, 'model') && (has(attrs, 'input_tokens') || has(attrs, 'output_tokens') || has(attrs, 'cost_usd') || has(attrs, 'cost_usd_micros'))) return 'model_call';
  if (has(attrs, 'prompt_length') || (has(attrs, 'prompt') && !has(attrs, 'model'))) return 'prompt';
  if (has(attrs, 'model') && (has(attrs, 'error') || has(attrs, 'status_code'))) return 'error';
  return null;
}

export interface RecordContext {
  profile: OtlpProfile;
  redactor: Redactor;
  /** Ingestion time (ISO), also the fallback observed_at of a record with no time at all. */
  now: string;
}

/**
 * Builds the row of one log record. `resourceAttrs` is decoded once per resource; the
 * event id is the caller's (derived from the line and the record's place in it).
 */
export function recordToRow(ctx: RecordContext, resourceAttrs: Record<string, unknown>, eventId: string, record: Record<string, unknown>): ActivityRow {
  // Resource attributes first: a record's own attribute of the same key wins.
  const attrs = decodeAttributes(record.attributes, 0, Object.assign({}, resourceAttrs));
  const body = record.body === undefined ? undefined : decodeAnyValue(record.body);
  const name = rawEventName(attrs, record, body);
  // The body of a vendor event is its name again (`vendor_code.tool_result`): not kept twice.
  const bodyIsName = typeof body === 'string' && name !== null && NAME_LIKE.test(body) && lastPart(body) === lastPart(name);
  if (body !== undefined && body !== null && !bodyIsName) attrs['log.body'] = body;
  for (const [field, key] of [['traceId', 'trace_id'], ['spanId', 'span_id']] as const) {
    const id = record[field];
    if (typeof id === 'string' && HEX_ID.test(id) && !(key in attrs)) attrs[key] = id.toLowerCase();
  }

  let type: EventType | null = name ? typeOfName(name) : null;
  if (type === 'tool_call' && isMcpTool(attrs)) type = 'mcp_call';
  if (type === null && ctx.profile.inferFromAttributes) type = inferFromAttributes(attrs);
  const eventType: EventType = type ?? 'unknown';
  const eventName = name ?? TYPE_NAMES[eventType] ?? 'unknown';

  // In place: `attrs` is this function's own object.
  const red = ctx.redactor.redactAttributes(attrs, { maskKeys: ctx.profile.maskKeys, keepValues: KEEP_VALUES, inPlace: true });
  const r = red.value;
  const isTool = eventType === 'tool_call' || eventType === 'mcp_call';
  const isModel = eventType === 'model_call';
  const costMicros = toNumber(r.cost_usd_micros);
  const observedAt =
    nanosToIso(record.timeUnixNano) ?? nanosToIso(record.observedTimeUnixNano) ?? isoToIso(r['event.timestamp']) ?? ctx.now;

  return {
    event_id: eventId,
    source_id: ctx.profile.sourceId,
    observed_at: observedAt,
    correlation_id: toText(r['prompt.id']),
    session_id: toText(r['session.id']),
    actor_identity: toText(r['user.account_id']) ?? toText(r['user.account_uuid']) ?? toText(r['user.id']) ?? toText(r['enduser.id']),
    event_name: eventName,
    event_type: eventType,
    tool_name: isTool || eventType === 'approval' ? (toText(r.tool_name) ?? toText(r.name)) : null,
    mcp_server_scope: toText(r.mcp_server_scope) ?? toText(r.server_scope),
    success: isTool ? toBoolText(r.success) : null,
    decision: eventType === 'approval' ? toText(r.decision) : null,
    decision_source: eventType === 'approval' ? (toText(r.source) ?? toText(r.decision_source)) : null,
    model: isModel ? toText(r.model) : null,
    cost_usd: isModel ? (toNumber(r.cost_usd) ?? (costMicros === null ? null : costMicros / 1e6)) : null,
    input_tokens: isModel ? toInt(r.input_tokens) : null,
    output_tokens: isModel ? toInt(r.output_tokens) : null,
    duration_ms: toInt(r.duration_ms) ?? toInt(r.total_duration_ms),
    error_message:
      toText(r.error) ?? toText(r['error.message']) ?? (eventType === 'error' || r.success === 'false' || r.success === false ? toText(r.error_type) : null),
    redaction_masked_keys: maskedKeysColumn(red.maskedKeys),
    redaction_masked_count: red.maskedCount || null,
    raw_attributes: JSON.stringify(r),
    ingested_at: ctx.now,
  };
}
