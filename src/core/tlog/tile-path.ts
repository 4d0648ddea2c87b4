/**
 * C2SP tlog-tiles resource paths and entry bundles (c2sp.org/tlog-tiles):
 *
 *     tile/<L>/<N>[.p/<W>]        Merkle tree tiles, L in 0..63
 *     tile/entries/<N>[.p/<W>]    entry bundles
 *
 * <N> is the tile index in zero-padded 3-digit path elements, all but the last prefixed with
 * `x` (1234067 -> x001/x234/067); `.p/<W>` marks a partial tile of width W in 1..255 (full
 * tiles, 256 wide, have none). Indices are limited to safe integers.
 */

/** Hashes (or entries) in a full tile. */
const FULL_WIDTH = 256;
const MAX_LEVEL = 63;

function encodeIndex(index: number): string {
  if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`tile index ${String(index)} is not a non-negative safe integer`);
  const groups: string[] = [];
  let n = index;
  do {
    groups.unshift(String(n % 1000).padStart(3, '0'));
    n = Math.floor(n / 1000);
  } while (n > 0);
  return groups.map((g, i) => (i < groups.length - 1 ? `x${g}` : g)).join('/');
}

function widthSuffix(width: number | undefined): string {
  if (width === undefined || width === FULL_WIDTH) return '';
  if (!Number.isInteger(width) || width < 1 || width > 255) throw new RangeError(`tile width ${String(width)} is not in 1..256`);
  return `.p/${width}`;
}

/** `tile/<level>/<index>[.p/<width>]`; width 256 or absent is a full tile. */
export function tilePath(level: number, index: number, width?: number): string {
  if (!Number.isInteger(level) || level < 0 || level > MAX_LEVEL) throw new RangeError(`tile level ${String(level)} is not in 0..${MAX_LEVEL}`);
  return `tile/${level}/${encodeIndex(index)}${widthSuffix(width)}`;
}

/** `tile/entries/<index>[.p/<width>]`; width 256 or absent is a full bundle. */
export function entriesPath(index: number, width?: number): string {
  return `tile/entries/${encodeIndex(index)}${widthSuffix(width)}`;
}

export type ParsedTilePath =
  | { kind: 'hash'; level: number; index: number; width?: number }
  | { kind: 'entries'; index: number; width?: number };

const DECIMAL = /^(0|[1-9][0-9]*)$/;

/**
 * Parses a tile or entry bundle path (relative to the log prefix, no leading slash). Returns
 * null for anything that tilePath / entriesPath would not produce: a level outside 0..63 or
 * with leading zeroes, index elements that are not 3 digits (with `x` on all but the last) or
 * start with x000, a width outside 1..255 or with leading zeroes, extra elements.
 */
export function parseTilePath(path: string): ParsedTilePath | null {
  if (typeof path !== 'string') return null;
  const parts = path.split('/');
  if (parts.length < 3 || parts[0] !== 'tile') return null;
  let level: number | null = null;
  if (parts[1] !== 'entries') {
    if (!DECIMAL.test(parts[1])) return null;
    level = Number(parts[1]);
    if (level > MAX_LEVEL) return null;
  }
  let rest = parts.slice(2);
  let width: number | undefined;
  const last = rest[rest.length - 1];
  if (rest.length >= 2 && rest[rest.length - 2].endsWith('.p')) {
    if (!DECIMAL.test(last)) return null;
    width = Number(last);
    if (width < 1 || width > 255) return null;
    rest = rest.slice(0, -1);
    rest[rest.length - 1] = rest[rest.length - 1].slice(0, -2);
  }
  if (rest.length === 0) return null;
  let index = 0;
  for (let i = 0; i < rest.length; i++) {
    const el = rest[i];
    const isLast = i === rest.length - 1;
    const m = isLast ? /^[0-9]{3}$/.exec(el) : /^x([0-9]{3})$/.exec(el);
    if (!m) return null;
    const digits = isLast ? el : m[1];
    if (i === 0 && !isLast && digits === '000') return null;
    index = index * 1000 + Number(digits);
  }
  if (!Number.isSafeInteger(index)) return null;
  const base = level === null ? { kind: 'entries' as const, index } : { kind: 'hash' as const, level, index };
  return width === undefined ? base : { ...base, width };
}

/**
 * An entry bundle: each entry as a big-endian uint16 length followed by its bytes, written
 * into one buffer: 0.2-0.3 µs a W2-sized leaf, against 0.9-1.2 µs with a 2-byte Buffer per
 * entry and a concat (measured alone).
 */
export function entryBundle(entries: Uint8Array[]): Buffer {
  let size = 0;
  entries.forEach((e, i) => {
    if (e.length > 0xffff) throw new RangeError(`entry ${i} is ${e.length} bytes; an entry bundle holds at most 65535 per entry`);
    size += 2 + e.length;
  });
  const out = Buffer.allocUnsafe(size);
  let p = 0;
  for (const e of entries) {
    out[p] = e.length >> 8;
    out[p + 1] = e.length & 0xff;
    out.set(e, p + 2);
    p += 2 + e.length;
  }
  return out;
}

/**
 * Where the entries of an entry bundle lie in it: entry k is data[at[k], at[k] + len[k]).
 * Throws on a truncated length or entry.
 */
export function entrySpans(data: Uint8Array): { at: number[]; len: number[] } {
  const at: number[] = [];
  const len: number[] = [];
  let p = 0;
  while (p < data.length) {
    if (p + 2 > data.length) throw new Error(`entry bundle truncated: a length prefix at byte ${p} is cut off`);
    const n = (data[p]! << 8) | data[p + 1]!;
    p += 2;
    if (p + n > data.length) throw new Error(`entry bundle truncated: entry ${at.length} needs ${n} bytes, ${data.length - p} remain`);
    at.push(p);
    len.push(n);
    p += n;
  }
  return { at, len };
}

/** The entries of an entry bundle, each a copy; throws on a truncated length or entry. */
export function parseEntryBundle(data: Uint8Array): Buffer[] {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.length);
  const { at, len } = entrySpans(buf);
  return at.map((s, k) => Buffer.from(buf.subarray(s, s + len[k]!)));
}
