/** The analytics windows: parsed, defaulted, aligned to UTC hours or days, and bounded. */
import { AppError } from '../../shared/errors.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The dates a window may name (the database's and ISO 8601's four-digit years, with room to round up). */
const MIN = Date.UTC(1970, 0, 1);
const MAX = Date.UTC(9999, 0, 1);

export interface Window {
  from: Date;
  to: Date;
}

function issue(param: 'from' | 'to', rule: string, message: string): AppError {
  return new AppError('validation_error', message, { details: { errors: [{ path: `/query/${param}`, rule, message }] } });
}

function parse(v: string | undefined, param: 'from' | 'to'): number | null {
  if (v === undefined) return null;
  const t = Date.parse(v);
  if (!Number.isFinite(t)) throw issue(param, 'format', `${param} is not a date-time`);
  if (t < MIN || t >= MAX) throw issue(param, 'range', `${param} must be from 1970 to 9998`);
  return t;
}

const floor = (t: number, unit: number) => Math.floor(t / unit) * unit;
const ceil = (t: number, unit: number) => Math.ceil(t / unit) * unit;

/**
 * The effective window of a query: `to` (default now) rounded up and `from` (default
 * `defaultSpanMs` before `to`) rounded down to `unit`; `to` must be after `from` and the
 * window at most `maxUnits` units.
 */
export function alignedWindow(q: { from?: string; to?: string }, now: Date, unit: 'hour' | 'day', defaultSpanMs: number, maxUnits: number): Window {
  const u = unit === 'hour' ? HOUR : DAY;
  const toRaw = parse(q.to, 'to') ?? now.getTime();
  const fromRaw = parse(q.from, 'from') ?? toRaw - defaultSpanMs;
  if (toRaw <= fromRaw) throw issue('to', 'window', 'to must be after from');
  const from = floor(fromRaw, u);
  const to = ceil(toRaw, u);
  if ((to - from) / u > maxUnits) {
    throw issue('from', 'window', `the window is too large for ${unit} buckets: at most ${maxUnits} ${unit}s (${unit === 'hour' ? `${maxUnits / 24} days` : 'use a narrower window'})`);
  }
  return { from: new Date(from), to: new Date(to) };
}


export const DAY_MS = DAY;
