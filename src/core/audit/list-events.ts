/** `GET /api/audit/events`: management events, newest first, filtered, paged by cursor. */
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import type { components } from '../../../gen/openapi/control-plane.js';
import { EVENT_COLUMNS, toManagementEvent, type EventRow } from './events.js';
import { toDate } from './read.js';

export type ManagementEventPage = components['schemas']['ManagementEventPage'];

export interface EventQuery {
  resourceType?: string;
  resourceId?: string;
  eventType?: string;
  actor?: string;
  since?: string;
  until?: string;
  /** Opaque to clients: the event_sequence of the last event of the previous page. */
  cursor?: string;
  limit: number;
}

export async function listManagementEvents(ctx: Pick<AppContext, 'db'>, q: EventQuery): Promise<ManagementEventPage> {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (sql: string, v: unknown) => {
    params.push(v);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (q.resourceType !== undefined) add('resource_type = ?', q.resourceType);
  if (q.resourceId !== undefined) add('resource_id = ?', q.resourceId);
  if (q.eventType !== undefined) add('event_type = ?', q.eventType);
  if (q.actor !== undefined) add('actor = ?', q.actor);
  if (q.since !== undefined) add('occurred_at >= ?', toDate(q.since, 'since'));
  if (q.until !== undefined) add('occurred_at < ?', toDate(q.until, 'until'));
  if (q.cursor !== undefined) {
    if (!/^[1-9][0-9]{0,17}$/.test(q.cursor)) throw new AppError('validation_error', 'cursor is not one this endpoint gave', { details: { errors: [{ path: '/query/cursor', rule: 'pattern', message: 'must be a next_cursor of an earlier page' }] } });
    add('event_sequence < ?', q.cursor);
  }
  params.push(q.limit);
  const rows = await ctx.db.query<EventRow>(
    `SELECT ${EVENT_COLUMNS} FROM audit_management_events ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY event_sequence DESC LIMIT $${params.length}`,
    params,
  );
  const events = rows.map(toManagementEvent);
  return { events, next_cursor: events.length === q.limit ? String(events[events.length - 1]!.event_sequence) : null };
}
