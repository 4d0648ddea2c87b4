/**
 * What the resource commands (`svc agents|keys|mcp|tags|deployments`) share: an admin
 * connection, option values as typed, ids with their mandatory prefix, durations, and
 * every page of a list.
 */
import { rawOption, rawOptions } from './argv.js';
import { connection, controlPlane, str, type Connection, type ConnectionOptions } from './api.js';
import { usageError } from './errors.js';
import type { ControlPlaneClient } from '@svc/client';

/** The connection of a command that needs the admin key (exit 3 without one), and its typed client. */
export function admin(opts: ConnectionOptions): { conn: Connection; api: ControlPlaneClient } {
  const conn = connection(opts);
  if (!conn.adminKey) throw usageError('api.key is not set: --key, SVC_API_KEY or `svc config set api.key <admin key>`');
  return { conn, api: controlPlane(conn) };
}

/**
 * A string option as typed (mri turns `--name 1.10` into 1.1; the raw argv keeps it). A bare
 * flag with no value is a usage error, since every option here takes one.
 */
export function text(opts: Record<string, unknown>, key: string, flag: string): string | undefined {
  const v = opts[key];
  if (v === undefined) return undefined;
  if (v === true || v === false || v === '') throw usageError(`--${flag} needs a value`);
  if (Array.isArray(v)) throw usageError(`--${flag} is given more than once`);
  return typeof v === 'number' ? rawOption(flag) ?? String(v) : String(v);
}

/** Like `text`, but an empty value (`--description ''`) is null: the field is cleared. */
export function clearable(opts: Record<string, unknown>, key: string, flag: string): string | null | undefined {
  if (opts[key] === undefined) return undefined;
  return opts[key] === '' || rawOption(flag) === '' ? null : text(opts, key, flag);
}

/** A repeatable option as a list of strings as typed (`--intent a --intent b`, or one value). */
export function texts(opts: Record<string, unknown>, key: string, flag: string): string[] {
  const v = opts[key];
  if (v === undefined) return [];
  const list = Array.isArray(v) ? v : [v];
  if (list.some((x) => x === true || x === false || x === '')) throw usageError(`--${flag} needs a value`);
  const raw = rawOptions(flag);
  return raw.length === list.length ? raw : list.map(String);
}

/** `a1` or `agent:a1` -> `agent:a1` (the API's ids carry a fixed prefix; typing it is optional). */
export const withPrefix = (prefix: string, v: string): string => (v.startsWith(`${prefix}:`) ? v : `${prefix}:${v}`);

/** A positional argument as a non-empty string. */
export function arg(v: unknown, name: string): string {
  const s = str(v);
  if (!s) throw usageError(`${name} is required`);
  return s;
}

/** The AGENT_ID positional argument, `a1` or `agent:a1`, as the API's `agent:a1`. */
export const agentId = (v: unknown): string => withPrefix('agent', arg(v, 'AGENT_ID'));

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

/** `30d`, `12h`, `90m`, `3600s`, `2w` (or a bare number of seconds) -> seconds; anything else is exit 3. */
export function parseDuration(v: string, flag: string): number {
  const m = /^(\d{1,9})([smhdw]?)$/.exec(v.trim());
  if (!m) throw usageError(`--${flag} '${v}' is not a duration (a whole number with s, m, h, d or w: 3600s, 90m, 12h, 30d)`);
  return Number(m[1]) * UNITS[m[2] || 's'];
}

/** Reads every page of a list (`limit`/`offset`, answers `{<items>, total}`) unless one page was asked for. */
export async function pages<T>(page: (limit: number, offset: number) => Promise<{ items: T[]; total: number }>, max: number, limit?: number, offset?: number): Promise<T[]> {
  if (limit !== undefined || offset !== undefined) return (await page(limit ?? max, offset ?? 0)).items;
  const all: T[] = [];
  for (;;) {
    const r = await page(max, all.length);
    all.push(...r.items);
    if (!r.items.length || all.length >= r.total) return all;
  }
}

/** `--limit`/`--offset` as integers in range, or undefined. */
export function paging(opts: Record<string, unknown>, max: number): { limit?: number; offset?: number } {
  const int = (k: string, lo: number, hi: number) => {
    const v = opts[k];
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < lo || n > hi) throw usageError(`--${k} must be an integer ${lo}..${hi}`);
    return n;
  };
  return { limit: int('limit', 1, max), offset: int('offset', 0, Number.MAX_SAFE_INTEGER) };
}

/** The options of a list command that reads one page only. */
export const withPaging = <T extends { option(raw: string, description: string): T }>(c: T, max: number): T =>
  c.option('--limit <n>', `One page of at most n (1..${max}); default: every page`).option('--offset <n>', 'Skip the first n (with --limit)');
