import { bigint, bigserial, boolean, date, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';

/** migration 0008: every beacon report with the exact payload (the customer inspection log). */
export const telemetryLog = pgTable('telemetry_log', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  // The UTC day as 'YYYY-MM-DD': a Date would shift with the process's time zone.
  report_date: date('report_date', { mode: 'string' }).notNull(),
  trigger: text('trigger', { enum: ['schedule', 'manual'] }).notNull(),
  reported_at: timestamptz3('reported_at').notNull(),
  status: text('status', { enum: ['pending', 'retrying', 'sent', 'failed'] }).notNull(),
  attempts: integer('attempts').notNull().default(0),
  payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
  signed: boolean('signed').notNull(),
  error_message: text('error_message'),
  endpoint: text('endpoint'),
  agent_count: integer('agent_count').notNull(),
  context_request_count: bigint('context_request_count', { mode: 'number' }).notNull(),
  bundle_count: integer('bundle_count').notNull(),
  claimed_by: text('claimed_by'),
  claimed_until: timestamptz3('claimed_until'),
  next_attempt_at: timestamptz3('next_attempt_at'),
  created_at: timestamptz3('created_at').notNull().defaultNow(),
  updated_at: timestamptz3('updated_at').notNull().defaultNow(),
});
