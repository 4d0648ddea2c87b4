/**
 * Agent key material (decisions.md): `sk_` + 40 random base62 characters; `key_prefix` is
 * the first 8 characters (the lookup column); `key_hash` is the hex SHA-256 of the whole
 * key. The plaintext exists only in the issue response, never in the store or a log line.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const KEY_RANDOM_CHARS = 40;
export const KEY_PREFIX_LENGTH = 8;
/** What a presented key must look like; anything else is refused without a lookup. */
export const KEY_SHAPE = /^sk_[A-Za-z0-9]{40,200}$/;

/** Uniform base62 (rejection sampling: bytes >= 248 would bias the first 8 symbols). */
function base62(n: number): string {
  let out = '';
  while (out.length < n) {
    for (const b of randomBytes(n * 2)) {
      if (b < 248) out += BASE62[b % 62];
      if (out.length === n) break;
    }
  }
  return out;
}

export function generateApiKey(): string {
  return `sk_${base62(KEY_RANDOM_CHARS)}`;
}

export function keyPrefix(key: string): string {
  return key.slice(0, KEY_PREFIX_LENGTH);
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Constant-time equality of two hex SHA-256 digests. */
export function hashEquals(aHex: string, bHex: string): boolean {
  const a = Buffer.from(aHex, 'hex');
  const b = Buffer.from(bHex, 'hex');
  return a.length === 32 && b.length === 32 && timingSafeEqual(a, b);
}

/** `key_` + 24 lowercase hex characters, when the caller supplies no key_id. */
export function generateKeyId(): string {
  return `key_${randomBytes(12).toString('hex')}`;
}
