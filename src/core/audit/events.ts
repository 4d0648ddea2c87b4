/**
 * Management events (issue 22): what the people and jobs running svc did. Every change made
 * through the API, the CLI or the console calls `recordEvent` inside the transaction that makes
 * the change, so the event commits with it or not at all (a crash loses both or neither).
 *
 * Events are a hash chain of their own (migration 0012, svc_event_append): event_sequence 1,
 * 2, ..., record_hash = SHA-256 of `<event_sequence>:<previous_hash><content>` where content is
 * the RFC 8785 canonical JSON of the event's own fields (eventContent), chained from the audit
 * genesis hash. Each event is also a leaf of the transparency log (its leaf data is the
 * canonical JSON of the event as `GET /api/audit/events` returns it).
 *
 * svc_event_append takes the chain lock, which is held to the end of the caller's
 * transaction: call recordEvent last in a transaction, so context requests wait on it for as
 * short a time as possible.
 *
 * No secret ever goes into an event: API keys appear by key_id and prefix.
 */
import { randomUUID } from 'node:crypto';
import type { components } from '../../../gen/openapi/control-plane.js';
import type { Db } from '../db/index.js';
import { canonicalJson, sha256Hex } from './hash.js';

export type ManagementEvent = components['schemas']['ManagementEvent'];

/** Who acts: the admin key's name (or `system:<job>`, or an owner), and the request's id (null for a job). */
export interface Who {
  actor: string;
  request_id: string | null;
}

/** A job of the service acting on its own. */
export const systemActor = (job: string): Who => ({ actor: `system:${job}`, request_id: null });

export interface EventInput {
  /** `<resource>.<verb>`: `agent.created`, `key.revoked`, `tag.moved`, ... */
  event_type: string;
  resource_type: string;
  resource_id: string;
  /** The changed fields before the change (null or absent for a creation). */
  before?: Record<string, unknown> | null;
  /** The changed fields after the change (null or absent for a deletion). */
  after?: Record<string, unknown> | null;
}

/** The event's own fields, hashed into its record_hash. */
type EventContent = Pick<ManagementEvent, 'actor' | 'after' | 'before' | 'event_id' | 'event_type' | 'occurred_at' | 'request_id' | 'resource_id' | 'resource_type'>;

/** The canonical JSON of the event's own fields (what record_hash covers with the sequence and the previous hash). */
function eventContent(e: EventContent): string {
  return canonicalJson({
    actor: e.actor,
    after: e.after,
    before: e.before,
    event_id: e.event_id,
    event_type: e.event_type,
    occurred_at: e.occurred_at,
    request_id: e.request_id,
    resource_id: e.resource_id,
    resource_type: e.resource_type,
  });
}

/** An event's record_hash from its fields (what svc_event_append computes). */
export function eventRecordHash(e: EventContent & Pick<ManagementEvent, 'event_sequence' | 'previous_hash'>): string {
  return sha256Hex(`${e.event_sequence}:${e.previous_hash}${eventContent(e)}`);
}

/**
 * Only the fields that changed: `before` and `after` restricted to the keys whose values differ
 * (compared as canonical JSON). Both null when nothing changed.
 */
export function changedFields(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): { before: Record<string, unknown> | null; after: Record<string, unknown> | null } {
  const b: Record<string, unknown> = {};
  const a: Record<string, unknown> = {};
  for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const x = before[k] === undefined ? null : before[k];
    const y = after[k] === undefined ? null : after[k];
    if (canonicalJson(x) === canonicalJson(y)) continue;
    b[k] = x;
    a[k] = y;
  }
  return Object.keys(a).length ? { before: b, after: a } : { before: null, after: null };
}

/** A resource's fields as events record them: its wire shape without its own timestamps (created_at, updated_at). */
export function eventFields(o: object): Record<string, unknown> {
  const { created_at: _c, updated_at: _u, ...fields } = o as Record<string, unknown>;
  return fields;
}

/** Writes one event in the caller's transaction (`db` is the handle `ctx.db.tx` gives). */
export async function recordEvent(db: Db, who: Who, ev: EventInput, now: Date = new Date()): Promise<{ event_id: string; leaf_index: number; record_hash: string }> {
  const e: EventContent = {
    event_id: randomUUID(),
    event_type: ev.event_type,
    resource_type: ev.resource_type,
    resource_id: ev.resource_id,
    actor: who.actor,
    before: ev.before ?? null,
    after: ev.after ?? null,
    request_id: who.request_id,
    // Stored as timestamptz(3): the text hashed is the one read back.
    occurred_at: new Date(Math.floor(now.getTime())).toISOString(),
  };
  const [row] = await db.query<{ leaf_index: number | string; record_hash: string }>(
    'SELECT leaf_index, record_hash FROM svc_event_append($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8, $9, $10)',
    [
      e.event_id,
      e.event_type,
      e.resource_type,
      e.resource_id,
      e.actor,
      e.before === null ? null : canonicalJson(e.before),
      e.after === null ? null : canonicalJson(e.after),
      e.request_id,
      e.occurred_at,
      eventContent(e),
    ],
  );
  return { event_id: e.event_id, leaf_index: Number(row!.leaf_index), record_hash: row!.record_hash };
}

export const EVENT_COLUMNS = `event_id, event_sequence, event_type, resource_type, resource_id, actor, "before", "after", request_id,
  occurred_at, previous_hash, record_hash, leaf_index`;

/** A row of EVENT_COLUMNS as the drivers return it (jsonb may come as text, int8 as text, the time as a Date). */
export interface EventRow {
  event_id: string;
  event_sequence: number | string;
  event_type: string;
  resource_type: string;
  resource_id: string;
  actor: string;
  before: unknown;
  after: unknown;
  request_id: string | null;
  occurred_at: Date | string;
  previous_hash: string;
  record_hash: string;
  leaf_index: number | string;
}

const objectOrNull = (v: unknown): Record<string, unknown> | null => {
  const o = typeof v === 'string' ? JSON.parse(v) : v;
  return o && typeof o === 'object' && !Array.isArray(o) ? (o as Record<string, unknown>) : null;
};

export function toManagementEvent(r: EventRow): ManagementEvent {
  return {
    event_id: r.event_id,
    event_sequence: Number(r.event_sequence),
    event_type: r.event_type,
    resource_type: r.resource_type,
    resource_id: r.resource_id,
    actor: r.actor,
    before: objectOrNull(r.before),
    after: objectOrNull(r.after),
    request_id: r.request_id ?? null,
    occurred_at: new Date(r.occurred_at).toISOString(),
    previous_hash: r.previous_hash,
    record_hash: r.record_hash,
    leaf_index: Number(r.leaf_index),
  };
}
