/**
 * SHA-256 of a range of a Buffer, written into another: the audit log's verify paths (the
 * server's `GET /api/audit/verify`, the CLI's `svc audit verify --since`, entry bundles and
 * tiles) hash four inputs a record.
 *
 * Node's crypto.hash costs about 2 µs a call on the 2-core development machine whatever the
 * input up to a few hundred bytes: 1.96 µs for 32 bytes, 2.44 µs for 700, measured
 * 2026-11-29. The addon in native/sha256 (built by `npm ci`'s postinstall with node-gyp, as
 * better-sqlite3 is) calls the OpenSSL that Node carries, on the range itself, into the
 * caller's buffer: 0.23 and 0.80 µs. Where the addon was not built (a copy of dist/ without
 * native/, a machine without a compiler) the same function runs on crypto.hash, slower and
 * with the same answers (sha256.test.ts); `sha256Native` tells which.
 */
import { hash } from 'node:crypto';
import { createRequire } from 'node:module';

type Sha256Fn = (out: Uint8Array, outOffset: number, src: Uint8Array, start: number, end: number, prefix?: number) => void;

function load(): Sha256Fn | null {
  if (process.env.SVC_SHA256_NATIVE === '0') return null;
  try {
    // src/shared -> native/sha256; dist/src/shared -> dist/native (a link to ../native, see the Makefile).
    return (createRequire(import.meta.url)('../../native/sha256/build/Release/sha256.node') as { sha256: Sha256Fn }).sha256;
  } catch {
    return null;
  }
}

const native = load();

/** Whether sha256Into runs on the native addon (else on crypto.hash). */
export const sha256Native = native !== null;

const one = Buffer.alloc(1);

/**
 * out[outOffset, outOffset + 32) = SHA-256(the byte `prefix` when given, then src[start, end)).
 * Throws a RangeError when a range is outside its buffer.
 */
export const sha256Into: Sha256Fn =
  native ??
  ((out, outOffset, src, start, end, prefix) => {
    const uint = (v: number) => Number.isInteger(v) && v >= 0 && v < 2 ** 32;
    if (!(out instanceof Uint8Array) || !(src instanceof Uint8Array)) throw new RangeError('sha256: out and src must be Buffers');
    if (!uint(outOffset) || !uint(start) || !uint(end)) throw new RangeError('sha256: offsets must be non-negative integers');
    if (prefix !== undefined && !(Number.isInteger(prefix) && prefix >= 0 && prefix <= 255)) throw new RangeError('sha256: prefix must be a byte');
    if (start > end || end > src.length) throw new RangeError('sha256: [start, end) is not within src');
    if (outOffset + 32 > out.length) throw new RangeError('sha256: no room for 32 bytes at outOffset');
    let input = src.subarray(start, end);
    if (prefix !== undefined) {
      one[0] = prefix;
      input = Buffer.concat([one, input]);
    }
    out.set(hash('sha256', input, 'buffer'), outOffset);
  });

const HEX = Buffer.from('0123456789abcdef', 'latin1');

/** Whether b[at, at + 64) is the lowercase hex of the 32 bytes d[off, off + 32). */
export function hexIs(d: Uint8Array, off: number, b: Uint8Array, at: number): boolean {
  if (at < 0 || at + 64 > b.length) return false;
  for (let k = 0; k < 32; k++) {
    const v = d[off + k]!;
    if (b[at + 2 * k] !== HEX[v >> 4] || b[at + 2 * k + 1] !== HEX[v & 15]) return false;
  }
  return true;
}

/** The digest the two checks below compute into (each compares before the next is computed). */
const digest = Buffer.alloc(32);

/** Whether the SHA-256 of src[start, end) is the 32 bytes at b[at]. */
export function sha256Is(src: Uint8Array, start: number, end: number, b: Uint8Array, at: number): boolean {
  sha256Into(digest, 0, src, start, end);
  if (at < 0 || at + 32 > b.length) return false;
  for (let k = 0; k < 32; k++) if (b[at + k] !== digest[k]) return false;
  return true;
}

/** Whether the SHA-256 of src[start, end) is, as 64 lowercase hex digits, the text at b[at]. */
export function sha256HexIs(src: Uint8Array, start: number, end: number, b: Uint8Array, at: number): boolean {
  sha256Into(digest, 0, src, start, end);
  return hexIs(digest, 0, b, at);
}
