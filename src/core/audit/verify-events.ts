/**
 * The management events' chain, for `GET /api/audit/verify`: event_sequence 1, 2, ... with no
 * gap, each previous_hash the record_hash before it (the audit genesis hash for the first), each
 * record_hash recomputed from the event (events.ts eventRecordHash). Read in pages by sequence;
 * memory is one page. The events' leaves are checked by the tree walk (verify-tree.ts).
 */
import type { AppContext } from '../../shared/app-context.js';
import type { components } from '../../../gen/openapi/control-plane.js';
import { EVENT_COLUMNS, eventRecordHash, toManagementEvent, type EventRow } from './events.js';

export type EventsVerifyResult = components['schemas']['ManagementEventsVerifyResult'];

const PAGE = 5000;

export async function verifyManagementEvents(ctx: Pick<AppContext, 'db'>, genesis: string | null, page = PAGE): Promise<EventsVerifyResult> {
  const [total] = await ctx.db.query<{ n: number | string }>('SELECT count(*) AS n FROM audit_management_events');
  const eventCount = Number(total?.n ?? 0);
  let count = 0;
  let prev = genesis;
  let after = 0;
  const tampered = (seq: number, error: string): EventsVerifyResult => ({ status: 'tampered', event_count: eventCount, tampered_at_sequence: seq, error });
  for (;;) {
    const rows = await ctx.db.query<EventRow>(`SELECT ${EVENT_COLUMNS} FROM audit_management_events WHERE event_sequence > $1 ORDER BY event_sequence LIMIT $2`, [after, page]);
    for (const row of rows) {
      const e = toManagementEvent(row);
      const want = count + 1;
      if (e.event_sequence !== want) return tampered(want, `management event ${want} is missing (the next is ${e.event_sequence})`);
      count++;
      if (prev === null) return tampered(want, 'the genesis row is missing');
      if (e.previous_hash !== prev) return tampered(want, `previous_hash of management event ${want} is not the record_hash before it`);
      const rh = eventRecordHash(e);
      if (rh !== e.record_hash) return tampered(want, `record_hash ${e.record_hash} of management event ${want} is not the recomputed ${rh}`);
      prev = e.record_hash;
      after = e.event_sequence;
    }
    if (rows.length < page) break;
  }
  if (count !== eventCount) return tampered(count + 1, `management event ${count + 1} is missing`);
  return { status: 'ok', event_count: eventCount, tampered_at_sequence: null, error: null };
}
