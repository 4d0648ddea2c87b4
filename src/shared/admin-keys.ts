/**
 * The admin keys (spec 5.2, issue 22): `ADMIN_API_KEY` (named `admin`) and the named entries of
 * `ADMIN_API_KEYS` (`name:key,name:key`). Each key's name is the `actor` of what is done with
 * it (management events). The keyring holds only SHA-256 digests; a presented key is compared
 * with every digest in constant time (no early exit), so the time says nothing about which
 * key, or how many, matched.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export interface NamedAdminKey {
  name: string;
  key: string;
}

export interface AdminKeyring {
  /** At least one key is configured (else admin routes answer 503). */
  readonly configured: boolean;
  /** The names, in configuration order. */
  readonly names: readonly string[];
  /** The name of the key presented, or null when it is none of them (or absent). */
  match(presented: string | undefined | null): string | null;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest();

/** The name of ADMIN_API_KEY's key. */
export const DEFAULT_ADMIN_NAME = 'admin';

export function createAdminKeyring(keys: readonly NamedAdminKey[]): AdminKeyring {
  const entries = keys.filter((k) => k.key.length > 0).map((k) => ({ name: k.name, digest: sha256(k.key) }));
  return {
    configured: entries.length > 0,
    names: entries.map((e) => e.name),
    match(presented) {
      if (typeof presented !== 'string' || !entries.length) return null;
      const digest = sha256(presented);
      let found: string | null = null;
      for (const e of entries) if (timingSafeEqual(digest, e.digest) && found === null) found = e.name;
      return found;
    },
  };
}
