/**
 * OTLP/JSON value decoding (external-formats.md 1.2-1.3). Lenient on purpose: `intValue`
 * comes as a decimal string from the Go collector and as a number from the JavaScript SDK;
 * every field is optional; unknown members are ignored.
 */

/** Decodes one AnyValue to plain JSON: string, boolean, number, array, object or null. */
export function decodeAnyValue(v: unknown, depth = 0): unknown {
  if (v === null || typeof v !== 'object' || depth > 64) return null;
  const o = v as Record<string, unknown>;
  // stringValue first: by far the most common member.
  const sv = o.stringValue;
  if (sv !== undefined) return typeof sv === 'string' ? sv : String(sv ?? '');
  if (o.intValue !== undefined) return decodeInt(o.intValue);
  if (o.boolValue !== undefined) return o.boolValue === true || o.boolValue === 'true';
  if (o.doubleValue !== undefined) return typeof o.doubleValue === 'number' ? o.doubleValue : typeof o.doubleValue === 'string' ? o.doubleValue : null;
  if (o.bytesValue !== undefined) return typeof o.bytesValue === 'string' ? o.bytesValue : null;
  if (o.arrayValue !== undefined) {
    const vals = (o.arrayValue as { values?: unknown } | null)?.values;
    return Array.isArray(vals) ? vals.map((x) => decodeAnyValue(x, depth + 1)) : [];
  }
  if (o.kvlistValue !== undefined) {
    const vals = (o.kvlistValue as { values?: unknown } | null)?.values;
    return decodeAttributes(vals, depth + 1);
  }
  return null;
}

/** int64 as a number when it is exact, else as its decimal text (no precision is invented). */
function decodeInt(x: unknown): number | string | null {
  if (typeof x === 'number') return Number.isFinite(x) ? x : null;
  if (typeof x === 'string' && /^-?\d+$/.test(x)) {
    const n = Number(x);
    return Number.isSafeInteger(n) ? n : x;
  }
  return null;
}

/**
 * `[{key, value}]` to a plain object (or into `out`); later duplicates win, entries without a
 * key are dropped.
 */
export function decodeAttributes(list: unknown, depth = 0, out: Record<string, unknown> = {}): Record<string, unknown> {
  if (!Array.isArray(list)) return out;
  for (const kv of list) {
    if (!kv || typeof kv !== 'object') continue;
    const key = (kv as { key?: unknown }).key;
    if (typeof key !== 'string' || key === '') continue;
    out[key] = decodeAnyValue((kv as { value?: unknown }).value, depth);
  }
  return out;
}

/** Reads a number from either wire form (`"214"`, `214`, `"0.1"`); null when it is not one. */
export function toNumber(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string' && v.trim() !== '' && /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(v.trim())) {
    const n = Number(v);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

/** An integer column value (rounded when the source sent a fraction); null otherwise. */
export function toInt(v: unknown): number | null {
  const n = toNumber(v);
  if (n === null) return null;
  const r = Math.round(n);
  return Number.isSafeInteger(r) ? r : null;
}

/** `"true"`/`"false"` strings and booleans to the stored text; null otherwise. */
export function toBoolText(v: unknown): 'true' | 'false' | null {
  if (v === true || v === 'true' || v === 'True' || v === 'TRUE') return 'true';
  if (v === false || v === 'false' || v === 'False' || v === 'FALSE') return 'false';
  return null;
}

/** A non-empty string, or null. Numbers and booleans become their text. */
export function toText(v: unknown): string | null {
  if (typeof v === 'string') return v === '' ? null : v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return null;
}

const MIN_MS = Date.UTC(1970, 0, 1, 0, 0, 1);
const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** `*UnixNano` (string or number) to ISO 8601 with milliseconds; null for 0, absent or out of range. */
export function nanosToIso(v: unknown): string | null {
  let ms: number;
  if (typeof v === 'string' && /^\d+$/.test(v)) ms = v.length > 6 ? Number(v.slice(0, v.length - 6)) : 0;
  else if (typeof v === 'number' && Number.isFinite(v)) ms = Math.floor(v / 1e6);
  else return null;
  return msToIso(ms);
}

let lastSecond = NaN;
let lastPrefix = '';

/** Milliseconds to ISO 8601; null when outside the fixed-width years 1970..9999. */
export function msToIso(ms: number): string | null {
  if (!Number.isFinite(ms) || ms < MIN_MS || ms > MAX_MS) return null;
  ms = Math.floor(ms);
  // Events arrive in time order: reuse the formatted second (Date formatting is costly).
  const second = Math.floor(ms / 1000);
  if (second !== lastSecond) {
    lastSecond = second;
    lastPrefix = new Date(second * 1000).toISOString().slice(0, 20); // `YYYY-MM-DDTHH:MM:SS.`
  }
  const frac = ms - second * 1000;
  return lastPrefix + (frac < 10 ? '00' : frac < 100 ? '0' : '') + frac + 'Z';
}

/** An RFC 3339 / ISO 8601 text to the stored form; null when it does not parse. */
export function isoToIso(v: unknown): string | null {
  if (typeof v !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(v)) return null;
  return msToIso(Date.parse(v));
}
