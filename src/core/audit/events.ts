/**
 * TEMPORARY stand-in for the lead's events core (common brief, "recordEvent"): same
 * interface, so the key verbs are written against the real one. It keeps events in memory
 * (not in the transaction); replaced by main's file at merge.
 */
import type { Db } from '../db/index.js';

export interface Who {
  actor: string;
  request_id: string | null;
}
export interface EventInput {
  event_type: string;
  resource_type: string;
  resource_id: string;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
}

/** Test-only view of what the stand-in recorded. */
export const recordedForTests: Array<EventInput & Who & { event_id: string; leaf_index: number }> = [];

export async function recordEvent(_db: Db, who: Who, ev: EventInput): Promise<{ event_id: string; leaf_index: number }> {
  const out = { event_id: `ev-${recordedForTests.length}`, leaf_index: recordedForTests.length };
  recordedForTests.push({ ...ev, ...who, ...out });
  return out;
}
