/**
 * Redaction applied to every value before a row is written (spec 2.13, decisions.md):
 * no e-mail address and no raw IP address may ever reach a row, raw_attributes included.
 *
 * - Keys that name a personal value (an e-mail or IP key, and the per-collector extra keys
 *   such as cowork's prompt text) are replaced whole by `hmac-sha256:<hex>`, the keyed
 *   hash of the value, so that equal values still correlate but cannot be reversed or
 *   confirmed by a dictionary without the secret.
 * - Every other string, at any depth, is scanned: each embedded e-mail address or IP
 *   address is replaced by its own mask. This is what keeps an address typed into an
 *   opted-in prompt or an error message out of the store.
 *
 * E-mail addresses are hashed lowercased and trimmed (the same person, however the source
 * spells the address, gets one hash). Without a secret (never in embedded mode, where one
 * is generated) values are replaced by `[redacted]` instead: masked, but not correlatable.
 */
import { createHmac } from 'node:crypto';
import net from 'node:net';
import { LRUCache } from 'lru-cache';

const MASK_PREFIX = 'hmac-sha256:';
export const MASK_NO_SECRET = '[redacted]';

/** Broad on purpose: anything that looks like local@domain.tld is treated as an address. */
const EMAIL_RE = /[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4_RE = new RegExp(`(?<![\\d.])(?:${OCTET}\\.){3}${OCTET}(?!\\.?\\d)`, 'g');
/** Candidates only; each is confirmed with net.isIP before it is masked. */
const IPV6_CANDIDATE_RE = /[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?::\d{1,3}(?:\.\d{1,3}){3})?/g;

/** Keys whose whole value is personal: e-mail and IP keys, at the last dotted part. */
const EMAIL_KEY_RE = /(^|[._])(e-?mail|email_address|unauthenticated_email_address)$/i;
const IP_KEY_RE = /(^|[._])(ip|ip_address|ipaddress|client_ip|remote_ip)$/i;
/** Version strings (`1.2.3.4`) are not addresses. */
const VERSION_KEY_RE = /(^|[._])version$/i;

export interface RedactionResult<T> {
  value: T;
  /** Top-level keys (dotted paths for nested objects such as `actor.email_address`) that were masked. */
  maskedKeys: Set<string>;
  maskedCount: number;
}

export interface RedactOptions {
  /** Keys (exact, top level) whose whole value is masked for this source. */
  maskKeys?: ReadonlySet<string>;
  /** Values that mean "already redacted upstream" and are kept as they are. */
  keepValues?: ReadonlySet<string>;
}

export class Redactor {
  /** Masks of recent values (the same few addresses repeat on every event of a session). */
  private readonly cache = new LRUCache<string, string>({ max: 10_000 });

  constructor(private readonly secret: string | null) {}

  /** The keyed hash of a value, as stored: `hmac-sha256:<hex>`. */
  mask(value: string): string {
    if (!this.secret) return MASK_NO_SECRET;
    let out = this.cache.get(value);
    if (out === undefined) {
      out = MASK_PREFIX + createHmac('sha256', this.secret).update(value, 'utf8').digest('hex');
      this.cache.set(value, out);
    }
    return out;
  }

  /** Masks an e-mail address (normalized: trimmed, lowercased). */
  maskEmail(value: string): string {
    return this.mask(value.trim().toLowerCase());
  }

  /** Replaces embedded e-mail and IP addresses in free text; returns the text and the count. */
  scrubString(s: string, isVersion = false): [string, number] {
    const before = this.found;
    const out = this.scrubText(s, isVersion);
    const n = this.found - before;
    return [out, n];
  }

  /** Running count of addresses masked by scrubText (no tuple per string on the hot path). */
  private found = 0;

  private scrubText(s: string, isVersion: boolean): string {
    if (s.length < 3) return s;
    if (s.indexOf('@') >= 0) {
      s = s.replace(EMAIL_RE, (m) => {
        this.found++;
        return this.maskEmail(m);
      });
    }
    // Cheap prechecks first: an IPv4 address needs three dots; an IPv6 one needs `::` or
    // seven colons (a timestamp's two colons never run the pattern).
    if (!isVersion && s.length >= 7 && hasAtLeast(s, '.', 3)) {
      s = s.replace(IPV4_RE, (m) => {
        this.found++;
        return this.mask(m);
      });
    }
    if (s.indexOf('::') >= 0 || hasAtLeast(s, ':', 7)) {
      s = s.replace(IPV6_CANDIDATE_RE, (m) => {
        if (m.length < 3 || net.isIP(m) !== 6 || (!/\d/.test(m) && m.length < 6)) return m;
        this.found++;
        return this.mask(m.toLowerCase());
      });
    }
    return s;
  }

  /** What a key says about its value; keys repeat on every event, so this is cached. */
  private keyInfo(key: string): KeyInfo {
    let info = this.keys.get(key);
    if (!info) {
      const before = this.found;
      const scrubbed = this.scrubText(key, false);
      info = {
        key: scrubbed,
        keyMasks: this.found - before,
        kind: EMAIL_KEY_RE.test(key) ? 'email' : IP_KEY_RE.test(key) ? 'ip' : null,
        version: VERSION_KEY_RE.test(key),
      };
      this.found = before;
      this.keys.set(key, info);
    }
    return info;
  }

  private readonly keys = new LRUCache<string, KeyInfo>({ max: 10_000 });

  /**
   * Redacts a flat attribute map (values may nest). By default the result is a new object
   * and the input is not changed; `inPlace` rewrites the given object (the caller owns it).
   */
  redactAttributes(attrs: Record<string, unknown>, opts: RedactOptions & { inPlace?: boolean } = {}): RedactionResult<Record<string, unknown>> {
    const maskedKeys = new Set<string>();
    let maskedCount = 0;
    const out: Record<string, unknown> = opts.inPlace ? attrs : {};
    // Looking a long value up in keepValues would hash all of it: compare lengths first.
    const keepMax = maxLength(opts.keepValues);
    for (const rawKey of Object.keys(attrs)) {
      const v = attrs[rawKey];
      const info = this.keyInfo(rawKey);
      // An address can be used as a key, too.
      const key = info.key;
      if (info.keyMasks) {
        maskedKeys.add(key);
        maskedCount += info.keyMasks;
        if (opts.inPlace) delete out[rawKey];
      }
      if (v === null || v === undefined || v === '' || typeof v === 'number' || typeof v === 'boolean') {
        out[key] = v;
        continue;
      }
      if (typeof v === 'string' && v.length <= keepMax && opts.keepValues!.has(v)) {
        out[key] = v;
        continue;
      }
      if (info.kind || opts.maskKeys?.has(rawKey)) {
        const text = typeof v === 'string' ? v : JSON.stringify(v);
        out[key] = info.kind === 'email' ? this.maskEmail(text) : this.mask(text);
        maskedKeys.add(key);
        maskedCount++;
        continue;
      }
      const before = this.found;
      const nv = typeof v === 'string' ? this.scrubText(v, info.version) : this.scrubValue(v, info.version, 0);
      out[key] = nv;
      const n = this.found - before;
      if (n > 0) {
        maskedKeys.add(key);
        maskedCount += n;
      }
    }
    return { value: out, maskedKeys, maskedCount };
  }

  private scrubValue(v: unknown, isVersion: boolean, depth: number): unknown {
    if (typeof v === 'string') return this.scrubText(v, isVersion);
    if (v === null || typeof v !== 'object') return v;
    if (depth > 32) {
      this.found++;
      return MASK_NO_SECRET; // pathological nesting: drop rather than risk a leak
    }
    if (Array.isArray(v)) return v.map((x) => this.scrubValue(x, isVersion, depth + 1));
    const obj: Record<string, unknown> = {};
    for (const k of Object.keys(v)) {
      const x = (v as Record<string, unknown>)[k];
      const info = this.keyInfo(k);
      // Keys are scrubbed too: an address can be used as a map key.
      this.found += info.keyMasks;
      if (typeof x === 'string' && x !== '' && info.kind) {
        obj[info.key] = info.kind === 'email' ? this.maskEmail(x) : this.mask(x);
        this.found++;
        continue;
      }
      obj[info.key] = this.scrubValue(x, isVersion || info.version, depth + 1);
    }
    return obj;
  }
}

interface KeyInfo {
  /** The key with any address in it masked. */
  key: string;
  keyMasks: number;
  kind: 'email' | 'ip' | null;
  version: boolean;
}

/** The longest value of a set, or -1 for none. */
function maxLength(set: ReadonlySet<string> | undefined): number {
  let n = -1;
  if (set) for (const v of set) n = Math.max(n, v.length);
  return n;
}

/** Does `s` contain `ch` at least `n` times? (native indexOf: no per-character loop in JS) */
function hasAtLeast(s: string, ch: string, n: number): boolean {
  let i = -1;
  while (n-- > 0) {
    i = s.indexOf(ch, i + 1);
    if (i < 0) return false;
  }
  return true;
}

const keysColumnCache = new LRUCache<string, string>({ max: 1000 });

/** Sorted JSON array text of the masked keys, or null when nothing was masked. */
export function maskedKeysColumn(keys: Set<string>): string | null {
  if (!keys.size) return null;
  const sorted = [...keys].sort();
  const k = sorted.join('\n');
  let out = keysColumnCache.get(k);
  if (out === undefined) {
    out = JSON.stringify(sorted);
    keysColumnCache.set(k, out);
  }
  return out;
}
