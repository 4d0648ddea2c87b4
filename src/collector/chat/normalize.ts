/**
 * One Compliance API activity (external-formats.md 3.3) to one row.
 *
 * - Only the allowlisted chat, file, project and artifact types are kept (spec 2.13:
 *   metadata only, about 40 types), matched after the vendor prefix.
 * - Actor e-mail, unauthenticated e-mail and IP address are replaced by HMAC-SHA256
 *   before anything is stored, inside raw_attributes too; any other e-mail or IP address
 *   in any field is masked as well. actor_identity is the actor's user id, pseudonymized
 *   (the same keyed hash as the OTLP account id, so the sources still join) while
 *   `actor_identity` is in COLLECTOR_PSEUDONYMIZE_ATTRIBUTES.
 * - The activity id is the dedupe key (delivery is at-least-once), so it is the event_id.
 */
import { createHash } from 'node:crypto';
import type { EventType } from '../store/schema.js';
import type { ActivityRow } from '../store/store.js';
import { maskedKeysColumn, type Redactor } from '../redact/redactor.js';
import { isoToIso, toText } from '../otlp/any-value.js';

export const CHAT_SOURCE_ID = 'vendor-enterprise-chat' as const;

/** The part after the vendor prefix (`vendor_chat_created` -> `chat_created`). */
const ALLOWED_SUFFIXES: readonly string[] = [
  // chat
  'chat_created', 'chat_viewed', 'chat_updated', 'chat_deleted', 'chat_deletion_failed', 'chat_access_failed',
  'chat_settings_updated', 'chat_snapshot_created', 'chat_snapshot_viewed', 'chat_snapshot_deleted',
  // file
  'file_uploaded', 'file_viewed', 'file_deleted', 'file_access_failed', 'file_exported',
  // project
  'project_created', 'project_viewed', 'project_deleted', 'project_archived', 'project_sharing_updated', 'project_reported',
  'project_document_uploaded', 'project_document_viewed', 'project_document_updated', 'project_document_deleted',
  'project_file_uploaded', 'project_file_deleted', 'project_sync_source_created',
  // artifact
  'artifact_created', 'artifact_viewed', 'artifact_published', 'artifact_sharing_updated', 'artifact_access_failed',
  'artifact_duplicated', 'artifact_commented', 'published_artifact_deleted',
];
const ALLOWED = new Set(ALLOWED_SUFFIXES);
/** `<prefix>_<suffix>` with a one-word vendor prefix. */
const TYPE_RE = /^[a-z0-9]+_([a-z0-9_]+)$/;

function isAllowedType(type: unknown): boolean {
  if (typeof type !== 'string') return false;
  const m = TYPE_RE.exec(type);
  return !!m && ALLOWED.has(m[1]);
}

/** Actor fields hashed whole; every other string is scanned for addresses. */
const ACTOR_MASK_KEYS: ReadonlySet<string> = new Set(['email_address', 'unauthenticated_email_address', 'ip_address']);
const SAFE_ID = /^[A-Za-z0-9_.:-]{1,200}$/;

export type NormalizeResult = { row: ActivityRow } | { skipped: 'not_allowlisted' | 'malformed' };

export function activityToRow(activity: unknown, redactor: Redactor, now: string): NormalizeResult {
  if (!activity || typeof activity !== 'object' || Array.isArray(activity)) return { skipped: 'malformed' };
  const a = activity as Record<string, unknown>;
  const observedAt = isoToIso(a.created_at);
  if (typeof a.type !== 'string' || !observedAt) return { skipped: 'malformed' };
  if (!isAllowedType(a.type)) return { skipped: 'not_allowlisted' };

  const maskedKeys = new Set<string>();
  let maskedCount = 0;
  const { actor, ...rest } = a;
  let actorOut: unknown = actor;
  if (actor && typeof actor === 'object' && !Array.isArray(actor)) {
    const red = redactor.redactAttributes(actor as Record<string, unknown>, { maskKeys: ACTOR_MASK_KEYS, prefix: 'actor.' });
    actorOut = red.value;
    for (const k of red.maskedKeys) maskedKeys.add(`actor.${k}`);
    maskedCount += red.maskedCount;
  }
  const redRest = redactor.redactAttributes(rest);
  for (const k of redRest.maskedKeys) maskedKeys.add(k);
  maskedCount += redRest.maskedCount;
  const raw: Record<string, unknown> = { ...redRest.value, actor: actorOut };
  const ractor = (actorOut && typeof actorOut === 'object' ? actorOut : {}) as Record<string, unknown>;

  const id = typeof a.id === 'string' && SAFE_ID.test(a.id) ? a.id : null;
  const eventId = id ?? 'activity_' + createHash('sha256').update(JSON.stringify(a)).digest('hex').slice(0, 32);
  const type = String(redRest.value.type);
  // Access and deletion failures are errors; the feed has no prompt, tool or model events.
  const eventType: EventType = type.endsWith('_failed') ? 'error' : 'unknown';

  return {
    row: {
      event_id: eventId,
      source_id: CHAT_SOURCE_ID,
      observed_at: observedAt,
      correlation_id: null,
      session_id: null,
      actor_identity: toText(ractor.user_id),
      event_name: type,
      event_type: eventType,
      tool_name: null,
      mcp_server_scope: null,
      success: null,
      decision: null,
      decision_source: null,
      model: null,
      cost_usd: null,
      input_tokens: null,
      output_tokens: null,
      duration_ms: null,
      error_message: eventType === 'error' ? toText(redRest.value.reason) : null,
      redaction_masked_keys: maskedKeysColumn(maskedKeys),
      redaction_masked_count: maskedCount || null,
      raw_attributes: JSON.stringify(raw),
      ingested_at: now,
    },
  };
}
