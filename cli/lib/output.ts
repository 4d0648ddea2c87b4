/**
 * How operator commands print: `-o text` (default) an aligned table or a short confirmation
 * for people, `-o json` exactly the API's JSON (one document; a list is an array) and
 * nothing else on stdout. Colour only on a terminal, and never under NO_COLOR.
 */
import { json, out } from './io.js';
import { usageError } from './errors.js';

export type Format = 'text' | 'json';

/** The `-o, --output` option every operator command takes. */
export const withOutputOption = <T extends { option(raw: string, description: string, config?: { default?: unknown }): T }>(c: T): T =>
  c.option('-o, --output <format>', 'Output format: text (tables) or json (the API\'s JSON, nothing else)', { default: 'text' });

export function outputFormat(v: unknown): Format {
  const f = v === undefined ? 'text' : String(v);
  if (f !== 'text' && f !== 'json') throw usageError(`--output must be text or json, not '${f}'`);
  return f;
}

const useColor = (stream: NodeJS.WriteStream = process.stdout): boolean =>
  !!stream.isTTY && !('NO_COLOR' in process.env && process.env.NO_COLOR !== '') && process.env.TERM !== 'dumb';

const CODES = { bold: [1, 22], dim: [2, 22], red: [31, 39], green: [32, 39], yellow: [33, 39] } as const;
export function paint(text: string, style: keyof typeof CODES, stream: NodeJS.WriteStream = process.stdout): string {
  if (!useColor(stream)) return text;
  const [a, b] = CODES[style];
  return `\u001b[${a}m${text}\u001b[${b}m`;
}

/** A cell as people read it: absent is `-`, dates and lists as they are, objects as compact JSON. */
function cell(v: unknown): string {
  if (v === undefined || v === null || v === '') return '-';
  if (Array.isArray(v)) return v.length ? v.map(cell).join(',') : '-';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export type Column<T> = [header: string, value: (row: T) => unknown];

/** An aligned table with a header row; `empty` is printed instead when there are no rows. */
export function table<T>(rows: T[], columns: Column<T>[], empty = '(none)'): void {
  if (!rows.length) { out(empty); return; }
  const cells = rows.map((r) => columns.map(([, f]) => cell(f(r))));
  const widths = columns.map(([h], i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i]))).join('  ').trimEnd();
  out(paint(line(columns.map(([h]) => h.toUpperCase())), 'bold'));
  for (const c of cells) out(line(c));
}

/** `key: value` lines, aligned, for one resource. */
export function fields(pairs: Array<[string, unknown]>): void {
  const w = Math.max(...pairs.map(([k]) => k.length));
  for (const [k, v] of pairs) out(`${`${k}:`.padEnd(w + 1)} ${cell(v)}`);
}

/** Prints `data` as JSON under `-o json`, else runs `human`. */
export function emit(format: Format, data: unknown, human: () => void): void {
  if (format === 'json') json(data);
  else human();
}
