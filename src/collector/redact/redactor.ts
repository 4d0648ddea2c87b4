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
 * - Identifiers of people and organizations (COLLECTOR_PSEUDONYMIZE_ATTRIBUTES: `user.id`,
 *   `user.account_uuid`, `user.account_id`, `actor_identity`, `organization.id` by default)
 *   are replaced whole by the same keyed hash, at any depth, so one user is one pseudonym.
 * - Keys that name a secret (`password`, `api_key`, `authorization`, `token`, ...) have their
 *   value replaced by `[redacted:secret]`.
 * - Every string is also scanned for secrets and numbers: API-key-like tokens, JWTs and
 *   `Bearer`/`Basic` credentials, US social security numbers and card numbers (Luhn-valid)
 *   become `[redacted:<kind>]`; e-mail addresses written percent-encoded (`a%40b.com`) or
 *   obfuscated (`a [at] b [dot] com`, `a(at)b.com`, `a AT b DOT com`, `a&#64;b.com`) get the
 *   same keyed hash as the plain address.
 *
 * E-mail addresses are hashed lowercased and trimmed (the same person, however the source
 * spells the address, gets one hash). Without a secret (never in embedded mode, where one
 * is generated) values are replaced by `[redacted]` instead: masked, but not correlatable.
 * What is and is not caught is listed in src/collector/README.md and each collector's
 * coverage manifest.
 */
import { createHmac } from 'node:crypto';
import net from 'node:net';
import { LRUCache } from 'lru-cache';
import { DEFAULT_PSEUDONYMIZE_ATTRIBUTES } from '../../shared/config.js';

const MASK_PREFIX = 'hmac-sha256:';
export const MASK_NO_SECRET = '[redacted]';

/** Broad on purpose: anything that looks like local@domain.tld is treated as an address. */
const EMAIL_RE = /[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4_RE = new RegExp(`(?<![\\d.])(?:${OCTET}\\.){3}${OCTET}(?!\\.?\\d)`, 'g');
/** Candidates only; each is confirmed with net.isIP before it is masked. */
const IPV6_CANDIDATE_RE = /[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?::\d{1,3}(?:\.\d{1,3}){3})?/g;

/**
 * Secrets in text. Each alternative is anchored on a vendor prefix, so that prose, ids and
 * hashes do not match: `sk-` keys need a digit (`sk-learn-...` is prose), svc's own agent
 * keys are `sk_` + 40 base62 characters.
 */
const TOKEN_RE = new RegExp(
  [
    /\bsk-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}/.source, // sk-..., sk-proj-..., sk-ant-api03-...
    /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}/.source, // payment processor keys
    /\bsk_[A-Za-z0-9]{32,}/.source, // svc agent keys
    /\bgh[pousr]_[A-Za-z0-9]{30,}/.source, // GitHub tokens
    /\bgithub_pat_[A-Za-z0-9_]{30,}/.source,
    /\bglpat-[A-Za-z0-9_-]{20,}/.source, // GitLab
    /\bxox[abposre]-[A-Za-z0-9-]{10,}/.source, // Slack
    /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/.source, // AWS access key ids
    /\bAIza[0-9A-Za-z_-]{35}/.source, // Google API keys
    /\bnpm_[A-Za-z0-9]{36}/.source,
  ].join('|'),
  'g',
);
/** A JWT (header.payload.signature, the header base64url JSON): `eyJ...x.y`. */
const JWT_RE = /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g;
/** An HTTP credential after its scheme; it must hold a digit (`bearer of bad news` is prose). */
const AUTH_SCHEME_RE = /\b(Bearer|Basic|Token)(\s+)(?=[A-Za-z0-9._~+/-]*\d)[A-Za-z0-9._~+/-]{16,}=*/gi;
/** US SSN ddd-dd-dddd without the never-issued ranges (000, 666, 9xx; 00; 0000). */
const SSN_RE = /(?<![\w-]|\d\.)(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w-]|\.\d)/g;
/**
 * Card number candidates (confirmed by length 13-19 and the Luhn check): a payment
 * network's first digit (2-6), either unseparated or in groups (4-4-4-4, 4-6-5, 4-4-4-4-3)
 * with one consistent space or dash; not inside an identifier or a decimal number.
 */
const CARD_RE = /(?<![\w-]|\d\.)(?:[2-6]\d{12,18}|[2-6]\d{3}([ -])\d{4,6}\1\d{4,5}(?:\1\d{1,4})?)(?![\w-]|\.\d)/g;
/**
 * A superset of what the patterns above and the obfuscated-address patterns below can
 * match, in one pass: a vendor prefix or scheme word, an SSN or eight digits in a row (a
 * card has them, in one group or two), an encoded or spelled-out at sign.
 */
const SUSPECT_RE = /sk[-_]|[rp]k_|gh[pousr]_|github_pat_|glpat-|xox|AKIA|ASIA|AIza|npm_|eyJ|bearer|basic|token|\d{3}-\d\d-\d{4}|\d{4}[ -]?\d{4}|%(?:25)?40|[[({<]\s*at\s*[\])}>]|\sAT\s|&#|&commat;|\uFF20/i;
/** The local part of an obfuscated address: narrower than EMAIL_RE's, as in URLs (`?email=a%40b.com`). */
const EMAIL_LOCAL = '[A-Za-z0-9._%+-]+';
/** `a%40b.com` (and `%2540`, encoded twice). */
const PCT_EMAIL_RE = new RegExp(`(${EMAIL_LOCAL})%(?:25)?40([A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)*\\.[A-Za-z]{2,})`, 'gi');
/** `a [at] b [dot] com`, `a(at)b.com`, `a {at} b.com`: bracketed at, bracketed dot or `.`. */
const BRACKET_AT = String.raw`\s*[\[({<]\s*at\s*[\])}>]\s*`;
const BRACKET_DOT = String.raw`(?:\s*[\[({<]\s*dot\s*[\])}>]\s*|\.)`;
const BRACKET_EMAIL_RE = new RegExp(`(${EMAIL_LOCAL})${BRACKET_AT}([A-Za-z0-9-]+(?:${BRACKET_DOT}[A-Za-z0-9-]+)+)`, 'gi');
const BRACKET_PRECHECK = /[[({<]\s*at\s*[\])}>]/i;
/** `a AT b DOT com` (upper case only: `look at this dot` is prose). */
const WORD_EMAIL_RE = new RegExp(`(${EMAIL_LOCAL})\\s+AT\\s+([A-Za-z0-9-]+(?:\\s+DOT\\s+[A-Za-z0-9-]+)+)`, 'g');
/** `a&#64;b.com`, `a&#x40;b.com`, `a&commat;b.com`, and the full-width at sign. */
const ENTITY_EMAIL_RE = new RegExp(`(${EMAIL_LOCAL})(?:&#0*64;|&#x0*40;|&commat;|\uFF20)([A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)*\\.[A-Za-z]{2,})`, 'gi');
const TLD_RE = /\.[a-z]{2,}$/;

/** Masks of what is replaced, not hashed: the kind is kept, the value is gone. */
const MASKS = {
  apiKey: '[redacted:api_key]',
  jwt: '[redacted:jwt]',
  credential: '[redacted:credential]',
  ssn: '[redacted:ssn]',
  card: '[redacted:card]',
  secret: '[redacted:secret]',
} as const;

/**
 * Names that stand for more than one attribute: `actor_identity` is every attribute the
 * column is read from (the OTLP account and user ids, the chat feed's actor user id), and
 * `organization.id` includes the chat feed's organization id and uuid.
 */
const PSEUDONYM_ALIASES: Record<string, readonly string[]> = {
  actor_identity: ['user.account_id', 'user.account_uuid', 'user.id', 'enduser.id', 'actor.user_id'],
  'organization.id': ['organization_id', 'organization_uuid'],
};

/** Keys that name a secret (the last dotted part): the value is replaced by `[redacted:secret]`. */
const SECRET_KEY_RE = /(^|[._-])(password|passwd|secret|client_secret|api_?key|x-api-key|access_?token|refresh_?token|auth_?token|id_token|session_token|bearer_token|authorization|private_key|token|credentials?)$/i;

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
  /** Dotted path of the object redacted (`actor.`), for the pseudonymized attribute names. */
  prefix?: string;
  /** Values that mean "already redacted upstream" and are kept as they are. */
  keepValues?: ReadonlySet<string>;
}

export class Redactor {
  /** Masks of recent values (the same few addresses repeat on every event of a session). */
  private readonly cache = new LRUCache<string, string>({ max: 10_000 });

  /** Attribute names (and dotted paths) whose value is pseudonymized whole. */
  private readonly pseudonymized: ReadonlySet<string>;

  constructor(
    private readonly secret: string | null,
    opts: { pseudonymize?: readonly string[] } = {},
  ) {
    const names = new Set<string>();
    for (const n of opts.pseudonymize ?? DEFAULT_PSEUDONYMIZE_ATTRIBUTES) {
      names.add(n);
      for (const a of PSEUDONYM_ALIASES[n] ?? []) names.add(a);
    }
    this.pseudonymized = names;
  }

  /** Is the attribute at this dotted path (or a dotted suffix of it) pseudonymized? */
  private isPseudonymized(path: string): boolean {
    if (!this.pseudonymized.size) return false;
    let p = path;
    for (;;) {
      if (this.pseudonymized.has(p)) return true;
      const dot = p.indexOf('.');
      if (dot < 0) return false;
      p = p.slice(dot + 1);
    }
  }

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
    // One pass decides whether any of the secret, number and obfuscated-address patterns
    // can match; most strings (ids, names, timestamps) stop here.
    const suspect = s.length >= 8 && SUSPECT_RE.test(s);
    // Secrets first: a credential may hold what looks like an address or a number.
    if (suspect && s.length >= 16) {
      s = s.replace(AUTH_SCHEME_RE, (_m, scheme: string, space: string) => {
        this.found++;
        return `${scheme}${space}${MASKS.credential}`;
      });
      s = s.replace(JWT_RE, () => {
        this.found++;
        return MASKS.jwt;
      });
      s = s.replace(TOKEN_RE, () => {
        this.found++;
        return MASKS.apiKey;
      });
    }
    if (s.indexOf('@') >= 0) {
      s = s.replace(EMAIL_RE, (m) => {
        this.found++;
        return this.maskEmail(m);
      });
    }
    if (suspect) s = this.scrubObfuscatedEmails(s);
    if (suspect && s.length >= 11) {
      if (s.indexOf('-') >= 0) {
        s = s.replace(SSN_RE, () => {
          this.found++;
          return MASKS.ssn;
        });
      }
      s = s.replace(CARD_RE, (m) => {
        const digits = m.replace(/[ -]/g, '');
        if (digits.length < 13 || digits.length > 19 || !luhn(digits)) return m;
        this.found++;
        return MASKS.card;
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

  /** E-mail addresses written percent-encoded or obfuscated: the plain address's hash. */
  private scrubObfuscatedEmails(s: string): string {
    const hash = (local: string, domain: string) => {
      this.found++;
      return this.maskEmail(`${local}@${domain}`);
    };
    if (s.indexOf('%') >= 0 && /%(?:25)?40/.test(s)) {
      s = s.replace(PCT_EMAIL_RE, (m, local: string, domain: string) => hash(decodePercent(local), domain));
    }
    if (BRACKET_PRECHECK.test(s)) {
      s = s.replace(BRACKET_EMAIL_RE, (m, local: string, domain: string) => {
        const d = domain.replace(new RegExp(BRACKET_DOT, 'gi'), '.').toLowerCase();
        return TLD_RE.test(d) ? hash(local, d) : m;
      });
    }
    if (s.indexOf(' AT ') >= 0) {
      s = s.replace(WORD_EMAIL_RE, (m, local: string, domain: string) => {
        const d = domain.replace(/\s+DOT\s+/g, '.').toLowerCase();
        return TLD_RE.test(d) ? hash(local, d) : m;
      });
    }
    if (s.indexOf('&') >= 0 || s.indexOf('\uFF20') >= 0) {
      s = s.replace(ENTITY_EMAIL_RE, (_m, local: string, domain: string) => hash(local, domain));
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
        kind: EMAIL_KEY_RE.test(key) ? 'email' : IP_KEY_RE.test(key) ? 'ip' : this.isPseudonymized(key) ? 'id' : SECRET_KEY_RE.test(key) ? 'secret' : null,
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
    const prefix = opts.prefix ?? '';
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
      const kind = prefix && !info.kind && this.isPseudonymized(prefix + rawKey) ? 'id' : info.kind;
      // Numbers are kept, but for an identifier or a secret (`user.id: 42`, `password: 123456`).
      if (v === null || v === undefined || v === '' || typeof v === 'boolean' || (typeof v === 'number' && kind !== 'id' && kind !== 'secret')) {
        out[key] = v;
        continue;
      }
      if (typeof v === 'string' && v.length <= keepMax && opts.keepValues!.has(v)) {
        out[key] = v;
        continue;
      }
      if (kind || opts.maskKeys?.has(rawKey)) {
        out[key] = this.maskWhole(kind, v);
        maskedKeys.add(key);
        maskedCount++;
        continue;
      }
      const before = this.found;
      const nv = typeof v === 'string' ? this.scrubText(v, info.version) : this.scrubValue(v, info.version, 0, prefix + rawKey);
      out[key] = nv;
      const n = this.found - before;
      if (n > 0) {
        maskedKeys.add(key);
        maskedCount += n;
      }
    }
    return { value: out, maskedKeys, maskedCount };
  }

  /** The replacement of a value masked whole, by what its key says it is. */
  private maskWhole(kind: KeyInfo['kind'], v: unknown): string {
    if (kind === 'secret') return MASKS.secret;
    const text = typeof v === 'string' ? v : JSON.stringify(v);
    return kind === 'email' ? this.maskEmail(text) : this.mask(kind === 'id' ? text.trim() : text);
  }

  private scrubValue(v: unknown, isVersion: boolean, depth: number, path: string): unknown {
    if (typeof v === 'string') return this.scrubText(v, isVersion);
    if (v === null || typeof v !== 'object') return v;
    if (depth > 32) {
      this.found++;
      return MASK_NO_SECRET; // pathological nesting: drop rather than risk a leak
    }
    if (Array.isArray(v)) return v.map((x) => this.scrubValue(x, isVersion, depth + 1, path));
    const obj: Record<string, unknown> = {};
    for (const k of Object.keys(v)) {
      const x = (v as Record<string, unknown>)[k];
      const info = this.keyInfo(k);
      // Keys are scrubbed too: an address can be used as a map key.
      this.found += info.keyMasks;
      const kind = info.kind ?? (this.isPseudonymized(`${path}.${k}`) ? 'id' : null);
      if (kind && x !== null && x !== undefined && x !== '' && typeof x !== 'boolean' && (typeof x !== 'number' || kind === 'id' || kind === 'secret')) {
        obj[info.key] = this.maskWhole(kind, x);
        this.found++;
        continue;
      }
      obj[info.key] = this.scrubValue(x, isVersion || info.version, depth + 1, `${path}.${k}`);
    }
    return obj;
  }
}

interface KeyInfo {
  /** The key with any address in it masked. */
  key: string;
  keyMasks: number;
  kind: 'email' | 'ip' | 'id' | 'secret' | null;
  version: boolean;
}

/** The Luhn check digit test of a card number's digits. */
function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = digits.length - 1, double = false; i >= 0; i--, double = !double) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/** Percent-decodes an e-mail's local part (`a%2Bb` -> `a+b`); malformed escapes stay as they are. */
function decodePercent(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
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
