/**
 * Configuration: read from the environment once, validated with every bad field listed,
 * and passed down as a typed object. No other module reads `process.env`.
 *
 * Two modes (decisions.md):
 * - embedded (no DATABASE_URL and NODE_ENV != production): PGlite, in-process broker;
 *   missing ADMIN_API_KEY, JWT_SECRET, DEPLOYMENT_ID and COLLECTOR_HMAC_SECRET are generated
 *   into $SVC_DATA_DIR/secrets.json (mode 0600) on first start.
 * - production (DATABASE_URL set, or NODE_ENV=production): nothing is generated; a weak,
 *   patterned or missing JWT_SECRET, a set but weak or patterned ADMIN_API_KEY (empty is
 *   allowed: admin routes answer 503), and a missing or empty DB_PASSWORD (required in
 *   production whatever the URL carries, decisions.md) abort start-up.
 */
import { createAdminKeyring, DEFAULT_ADMIN_NAME, type AdminKeyring, type NamedAdminKey } from './admin-keys.js';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { generateNoteKey, parseSignerKey } from '../core/tlog/note.js';
import { parseWitnessVerifierKey } from '../core/tlog/cosignature.js';

export interface Config {
  mode: 'embedded' | 'production';
  host: string;
  ports: { api: number; rules: number; contextGrpc: number; contextWebhook: number; telemetry: number; collector: number };
  collectorHost: string;
  dataDir: string;
  databaseUrl: string | null;
  databaseMigrationUrl: string | null;
  dbPassword: string | null;
  dbSslMode: 'disable' | 'require';
  redisUrl: string | null;
  /** Empty string means "not configured": admin routes answer 503 (unless adminApiKeys has one). */
  adminApiKey: string;
  /**
   * ADMIN_API_KEYS: further admin keys accepted beside ADMIN_API_KEY, each with the name that is
   * the actor of what it does (`name:key`; an entry without a name is `key-<position>`).
   */
  adminApiKeys: NamedAdminKey[];
  /** Every admin key as a digest with its name (ADMIN_API_KEY is `admin`): what the edge compares with. */
  adminKeyring: AdminKeyring;
  /**
   * AUDITOR_API_KEYS: read-only keys (`name:key`), accepted in X-Admin-Key by the read
   * operations that list the AuditorKey scheme, and by the console for a read-only session.
   * Their names are distinct from the admin keys' names.
   */
  auditorApiKeys: NamedAdminKey[];
  auditorKeyring: AdminKeyring;
  jwtSecret: string;
  deploymentId: string;
  licenseKey: string | null;
  licensePublicKey: string | null;
  agentKeyTtlDays: number;
  keyExpiryIntervalSeconds: number;
  /** Period of the analytics rollup job (src/core/analytics/rollup.ts). */
  analyticsRollupIntervalSeconds: number;
  /** Ownership transfers (README: Ownership transfers). */
  ownership: {
    /** ORG_ADMIN_OWNER_ID: who receives the agents of a deactivated owner; cannot be deactivated. */
    orgAdminOwnerId: string;
    /** TRANSFER_WINDOW_HOURS: a pending transfer not accepted within this many hours (from effective_at) expires. */
    transferWindowHours: number;
    /** TRANSFER_EXPIRY_INTERVAL_SECONDS: how often the transfer expiry job runs. */
    expiryIntervalSeconds: number;
    /** OWNERSHIP_WEBHOOK: where transfer requests (the incoming owner's notice) and escalations are POSTed; null: none. */
    webhook: string | null;
  };
  /** Context service streams: HEARTBEAT after this many idle seconds; the tag-state safety poll (0 = off). */
  contextStream: { heartbeatSeconds: number; resyncSeconds: number };
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** Origins (scheme://host[:port]) whose browser pages may call 8000 and 8002 (CORS_ORIGINS; none by default). */
  corsOrigins: string[];
  telemetry: {
    endpoint: string | null;
    signingSecret: string | null;
    dailyReportHour: number;
    retryMaxAttempts: number;
    retryBackoffBase: number;
  };
  collector: {
    dbPath: string;
    coworkFile: string | null;
    codeCliFile: string | null;
    chatBaseUrl: string | null;
    chatApiKey: string | null;
    chatPollSeconds: number;
    hmacSecret: string | null;
    /** Attribute names whose values are replaced by their keyed hash (COLLECTOR_PSEUDONYMIZE_ATTRIBUTES). */
    pseudonymizeAttributes: string[];
    backfillOnFirstRun: boolean;
    tailIntervalMs: number;
  };
  /** The compliance console at /console (src/console). */
  console: {
    /** CONSOLE_IDLE_MINUTES: a session without a request for this long ends. */
    idleMinutes: number;
    /** CONSOLE_SESSION_HOURS: a session ends this long after sign-in, whatever its use. */
    sessionHours: number;
  };
  /** The transparency log over the audit log (src/core/tlog). */
  tlog: {
    /** TLOG_ORIGIN: the checkpoints' origin line; null means the signing key's name. */
    origin: string | null;
    /** TLOG_SIGNING_KEY: an Ed25519 note signer key (`PRIVATE+KEY+<name>+<hash>+<base64>`). */
    signingKey: string;
    checkpointIntervalMs: number;
    exportDir: string | null;
    checkpointWebhook: string | null;
    /** TLOG_PUBLIC=1: entry bundles need no admin key. */
    public: boolean;
    /** TLOG_WITNESS_KEYS: witnesses' cosignature/v1 verifier keys. */
    witnessKeys: string[];
  };
  /** Secrets generated at this start (embedded mode only); the launcher prints the admin key once. */
  generated: string[];
}

export class ConfigError extends Error {
  constructor(public readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Fragments that mark a JWT_SECRET as a placeholder or guessable, whatever its length. */
const WEAK_FRAGMENTS = ['changeme', 'change-me', 'change_me', 'secret', 'password', 'default', 'example', 'replace'];

/**
 * Words that people pad into a secret (`password123123...`, `secret!!!!`, `changeme` repeated).
 * Each costs a few bits in `estimatedBits`, however long it is.
 */
const COMMON_WORDS = [
  'qwertyuiop', 'asdfghjkl', 'zxcvbnm', 'administrator', 'placeholder', 'changeme', 'password', 'passw0rd', 'p4ssw0rd', 'iloveyou', 'letmein', 'welcome', 'default',
  'example', 'replace', 'sample', 'secret', 'master', 'dragon', 'monkey', 'qwerty', 'azerty', 'access', 'dummy', 'token',
  'admin', 'login', 'guest', 'hello', 'apikey', 'change', 'test', 'pass', 'root', 'user', 'demo', 'temp', 'key', 'jwt', 'svc',
];

/** The exact values refused for ADMIN_API_KEY (compared lowercased), whatever the length check says. */
const KNOWN_WEAK = new Set(['admin', 'administrator', 'password', 'changeme', 'change-me', 'secret', 'test', 'testing', 'default', 'letmein', 'qwerty', 'root', 'guest', 'apikey', 'api-key', 'admin_api_key']);

/**
 * Bits below which a 32+ character secret is patterned rather than random. Random values
 * score far above it (32 hex characters score 100 or more; base64url more), repeated or
 * padded ones far below it (`abcabc...` 11, `password` + `1234567890` repeated 21).
 */
const MIN_BITS = 64;

function charClassBits(c: string): number {
  if (c >= '0' && c <= '9') return Math.log2(10);
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return Math.log2(26);
  return Math.log2(33);
}

function charClass(c: string): number {
  if (c >= '0' && c <= '9') return 0;
  if (c >= 'a' && c <= 'z') return 1;
  if (c >= 'A' && c <= 'Z') return 2;
  return 3;
}

/**
 * A rough, conservative estimate of a secret's entropy in bits, in the manner of zxcvbn:
 * the string is read left to right, and each step takes the cheapest explanation of what
 * comes next: a common word (about 6 bits), a repeat of something already seen (a run of
 * one character, `abcabc`, `ab12ab12`: about 6 bits however long), an ascending or
 * descending run (`abcdef`, `4321`: about 5 bits), or a literal character (the bits of its
 * class, plus 2 when the class changes). Random strings score close to their real entropy;
 * patterned ones score far below it.
 */
export function estimatedBits(input: string): number {
  // Quadratic: a longer secret is judged on its first 256 characters (plenty for 100 bits).
  const value = input.slice(0, 256);
  const lower = value.toLowerCase();
  let bits = 0;
  let prevClass = -1;
  let i = 0;
  while (i < value.length) {
    // A common word (case-insensitive).
    const word = COMMON_WORDS.find((w) => lower.startsWith(w, i));
    // The longest repeat of earlier text (overlapping allowed: `aaaa`, `abab`).
    let rep = 0;
    for (let start = 0; start < i; start++) {
      let n = 0;
      while (i + n < value.length && value[start + n] === value[i + n]) n++;
      if (n > rep) rep = n;
    }
    // An ascending or descending run of character codes (`abc`, `789`, `zyx`).
    let run = 1;
    if (i + 1 < value.length) {
      const step = value.charCodeAt(i + 1) - value.charCodeAt(i);
      if (step === 1 || step === -1) {
        run = 2;
        while (i + run < value.length && value.charCodeAt(i + run) - value.charCodeAt(i + run - 1) === step) run++;
      }
    }
    const best = Math.max(word ? word.length : 0, rep >= 3 ? rep : 0, run >= 3 ? run : 0);
    if (best === 0) {
      const cls = charClass(value[i]);
      bits += charClassBits(value[i]) + (prevClass >= 0 && cls !== prevClass ? 2 : 0);
      prevClass = cls;
      i++;
      continue;
    }
    bits += best === (word?.length ?? 0) ? Math.log2(COMMON_WORDS.length) : best === rep ? 6 : 5;
    prevClass = charClass(value[i + best - 1]);
    i += best;
  }
  return bits;
}

/**
 * Patterned: one character repeated, a short run repeated (`abcabc...`, `ab12ab12...`), a
 * common word padded (`password` + digits, `secret!!!!...`, `changeme` repeated), or
 * fewer than 8 distinct characters; what is left has too little entropy for a secret.
 */
export function isPatterned(value: string): boolean {
  return new Set(value).size < 8 || estimatedBits(value) < MIN_BITS;
}

/** Weak JWT_SECRET: shorter than 32 characters, fewer than 8 distinct characters, or a known placeholder. */
export function isWeakSecret(value: string): boolean {
  if (value.length < 32 || new Set(value).size < 8) return true;
  const lower = value.toLowerCase();
  return WEAK_FRAGMENTS.some((w) => lower.includes(w));
}

/** Why an admin key is refused in production (never the value itself), or null. */
export function adminKeyProblem(value: string): string | null {
  if (KNOWN_WEAK.has(value.toLowerCase()) || /^(?:0?1234567890?)+$/.test(value) || /^(.)\1*$/.test(value)) return 'is a known-weak value';
  if (value.length < 32) return `is shorter than 32 characters (${value.length})`;
  if (isPatterned(value)) return 'is patterned (a repeated character or run, or a padded common word)';
  return null;
}

/** The identifiers the collector pseudonymizes by default (COLLECTOR_PSEUDONYMIZE_ATTRIBUTES). */
export const DEFAULT_PSEUDONYMIZE_ATTRIBUTES: readonly string[] = ['user.id', 'user.account_uuid', 'user.account_id', 'actor_identity', 'organization.id'];
const ATTRIBUTE_NAME_RE = /^[A-Za-z0-9_.:-]{1,200}$/;

/** An owner id (migration 0013's check on owners.owner_id; the contract's OwnerId). */
const OWNER_ID_RE = /^[A-Za-z0-9._:@-]{1,256}$/;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type Env = Record<string, string | undefined>;

interface Reader {
  problems: string[];
  str(name: string): string | null;
  int(name: string, dflt: number, min: number, max: number): number;
}

function reader(env: Env): Reader {
  const problems: string[] = [];
  return {
    problems,
    str(name) {
      const v = env[name];
      return v === undefined ? null : v;
    },
    int(name, dflt, min, max) {
      const raw = env[name];
      if (raw === undefined || raw === '') return dflt;
      const n = Number(raw);
      if (!Number.isInteger(n) || n < min || n > max) {
        problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
        return dflt;
      }
      return n;
    },
  };
}

interface SecretsFile {
  ADMIN_API_KEY?: string;
  JWT_SECRET?: string;
  DEPLOYMENT_ID?: string;
  COLLECTOR_HMAC_SECRET?: string;
  TLOG_SIGNING_KEY?: string;
}

/** Generates (once) and reads back the embedded mode's secrets, stored with mode 0600. */
function embeddedSecrets(dataDir: string, env: Env, generated: string[]): SecretsFile {
  const file = path.join(dataDir, 'secrets.json');
  let stored: SecretsFile = {};
  if (fs.existsSync(file)) stored = JSON.parse(fs.readFileSync(file, 'utf8')) as SecretsFile;
  const want: Array<[keyof SecretsFile, () => string]> = [
    ['ADMIN_API_KEY', () => `admin_${randomBytes(24).toString('base64url')}`],
    ['JWT_SECRET', () => randomBytes(48).toString('base64url')],
    ['DEPLOYMENT_ID', () => randomUUID()],
    ['COLLECTOR_HMAC_SECRET', () => randomBytes(32).toString('base64url')],
    ['TLOG_SIGNING_KEY', () => generateNoteKey(env.TLOG_ORIGIN || DEFAULT_TLOG_ORIGIN).signerKey],
  ];
  let changed = false;
  for (const [name, make] of want) {
    // Generated only when the variable is absent, never when it is set (even to empty).
    if (env[name] === undefined && !stored[name]) {
      stored[name] = make();
      generated.push(name);
      changed = true;
    }
  }
  if (changed) {
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, JSON.stringify(stored, null, 2), { mode: 0o600 });
    fs.chmodSync(file, 0o600);
  }
  return stored;
}

/**
 * Reads and validates the configuration. Throws ConfigError listing every bad field.
 * In embedded mode this may write $SVC_DATA_DIR/secrets.json (the only side effect).
 */
/** The password a connection URL carries, or null (none, or not a URL). */
export function urlPassword(url: string | null): string | null {
  if (!url) return null;
  try {
    return decodeURIComponent(new URL(url).password) || null;
  } catch {
    return null;
  }
}

/** An optional http(s) URL setting (a webhook); null when unset, a problem when malformed. */
function httpUrl(r: Pick<Reader, 'str' | 'problems'>, name: string): string | null {
  const v = r.str(name) || null;
  if (v !== null && !/^https?:\/\/[^\s]+$/.test(v)) r.problems.push(`${name} must be an http or https URL`);
  return v;
}

/** An admin key's name: the actor of management events. */
const ADMIN_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/**
 * ADMIN_API_KEYS (and AUDITOR_API_KEYS): `name:key` entries, comma-separated (a key has no `:`
 * or `,`: the recommended ones are base64url). An entry without a name is named
 * `<prefix>-<position>`. A bad or repeated name (`seen` holds the names already taken, `admin`
 * while ADMIN_API_KEY is set) is a problem (start refused): an actor must name one key.
 */
function parseNamedKeys(variable: string, raw: string, seen: Set<string>, problems: string[], prefix = 'key'): NamedAdminKey[] {
  const out: NamedAdminKey[] = [];
  raw.split(',').map((e) => e.trim()).filter(Boolean).forEach((entry, i) => {
    const colon = entry.indexOf(':');
    const name = colon < 0 ? `${prefix}-${i + 1}` : entry.slice(0, colon).trim();
    const key = colon < 0 ? entry : entry.slice(colon + 1).trim();
    if (!ADMIN_NAME.test(name)) problems.push(`${variable} entry ${i + 1}: the name must be 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit`);
    else if (seen.has(name)) problems.push(`${variable} entry ${i + 1}: the name ${name} is used twice (${variable === 'ADMIN_API_KEYS' ? `ADMIN_API_KEY is named ${DEFAULT_ADMIN_NAME}` : 'admin and auditor keys are named apart'})`);
    else if (!key) problems.push(`${variable} entry ${i + 1} (${name}) has no key`);
    seen.add(name);
    if (key) out.push({ name, key });
  });
  return out;
}

/**
 * What is accepted but worth a warning at start: in embedded mode a weak ADMIN_API_KEY or
 * a patterned JWT_SECRET the user set (production refuses both). Never contains a value.
 */
export function configWarnings(cfg: Config): string[] {
  const out: string[] = [];
  if (cfg.mode !== 'embedded') return out;
  const admin = cfg.adminApiKey && !cfg.generated.includes('ADMIN_API_KEY') ? adminKeyProblem(cfg.adminApiKey) : null;
  if (admin) out.push(`ADMIN_API_KEY ${admin}: accepted in embedded mode, refused in production`);
  for (const [variable, keys] of [['ADMIN_API_KEYS', cfg.adminApiKeys], ['AUDITOR_API_KEYS', cfg.auditorApiKeys]] as const) {
    keys.forEach((k, i) => {
      const problem = adminKeyProblem(k.key);
      if (problem) out.push(`${variable} entry ${i + 1} (${k.name}) ${problem}: accepted in embedded mode, refused in production`);
    });
  }
  if (!cfg.generated.includes('JWT_SECRET') && isPatterned(cfg.jwtSecret)) out.push('JWT_SECRET is patterned: accepted in embedded mode, refused in production');
  return out;
}

export function loadConfig(env: Env = process.env): Config {
  const r = reader(env);
  const databaseUrl = r.str('DATABASE_URL') || null;
  const mode: Config['mode'] = databaseUrl || env.NODE_ENV === 'production' ? 'production' : 'embedded';
  const dataDir = path.resolve(r.str('SVC_DATA_DIR') || './.svc-data');
  const generated: string[] = [];
  const secrets = mode === 'embedded' ? embeddedSecrets(dataDir, env, generated) : {};
  const pick = (name: keyof SecretsFile) => r.str(name) ?? secrets[name] ?? null;

  const port = (name: string, dflt: number) => r.int(name, dflt, 0, 65535);
  const ports = {
    api: port('API_PORT', 8000),
    rules: port('RULES_PORT', 8001),
    contextGrpc: port('CONTEXT_GRPC_PORT', 8002),
    contextWebhook: port('CONTEXT_WEBHOOK_PORT', 8003),
    telemetry: port('TELEMETRY_PORT', 8004),
    collector: port('COLLECTOR_PORT', 7002),
  };

  const jwtSecret = pick('JWT_SECRET') ?? '';
  if (!jwtSecret) r.problems.push('JWT_SECRET is required (at least 32 characters, not a known-weak string)');
  else if (isWeakSecret(jwtSecret)) r.problems.push('JWT_SECRET is too weak: use at least 32 random characters, not a known-weak string');
  else if (mode === 'production' && isPatterned(jwtSecret)) {
    r.problems.push('JWT_SECRET is patterned (a repeated character or run, or a padded common word): use at least 32 random characters');
  }

  // Empty means "admin API not configured" (503); set and weak is refused in production.
  const adminApiKey = pick('ADMIN_API_KEY') ?? '';
  const adminProblem = adminApiKey ? adminKeyProblem(adminApiKey) : null;
  if (mode === 'production' && adminProblem) {
    r.problems.push(`ADMIN_API_KEY ${adminProblem}: use at least 32 random characters (for example admin_ followed by 24 random bytes in base64url), or leave it empty to turn the admin API off`);
  }
  // ADMIN_API_KEYS: comma-separated further admin keys (a rotation: the new key is added here,
  // clients move, the old one is removed). Each entry is held to ADMIN_API_KEY's rules.
  const keyNames = new Set(adminApiKey !== '' ? [DEFAULT_ADMIN_NAME] : []);
  const adminApiKeys = parseNamedKeys('ADMIN_API_KEYS', r.str('ADMIN_API_KEYS') ?? '', keyNames, r.problems);
  // AUDITOR_API_KEYS: read-only keys, held to the same rules, named apart from the admin keys.
  const auditorApiKeys = parseNamedKeys('AUDITOR_API_KEYS', r.str('AUDITOR_API_KEYS') ?? '', keyNames, r.problems, 'auditor');
  for (const [variable, keys] of [['ADMIN_API_KEYS', adminApiKeys], ['AUDITOR_API_KEYS', auditorApiKeys]] as const) {
    keys.forEach((k, i) => {
      const problem = adminKeyProblem(k.key);
      if (mode === 'production' && problem) r.problems.push(`${variable} entry ${i + 1} (${k.name}) ${problem}: use at least 32 random characters per key`);
    });
  }
  const presented = [adminApiKey, ...adminApiKeys.map((k) => k.key)];
  auditorApiKeys.forEach((k, i) => {
    if (presented.includes(k.key)) r.problems.push(`AUDITOR_API_KEYS entry ${i + 1} (${k.name}) is also an admin key: an auditor key must be its own`);
  });

  // DB_PASSWORD is required in production whatever DATABASE_URL carries (decisions.md); it is
  // a connection's password only when that connection's URL carries none (app-context.ts).
  const dbPassword = r.str('DB_PASSWORD');
  if (mode === 'production' && !dbPassword) r.problems.push('DB_PASSWORD is required in production and must not be empty');

  const dbSslMode = r.str('DB_SSL_MODE') || 'disable';
  if (dbSslMode !== 'disable' && dbSslMode !== 'require') r.problems.push(`DB_SSL_MODE must be "disable" or "require" (got "${dbSslMode}")`);

  const deploymentId = pick('DEPLOYMENT_ID') ?? '';
  if (!deploymentId) r.problems.push('DEPLOYMENT_ID is required (a UUID, stable per deployment)');
  else if (!UUID_RE.test(deploymentId)) r.problems.push(`DEPLOYMENT_ID must be a UUID (got "${deploymentId}")`);

  const logLevel = (r.str('LOG_LEVEL') || 'info') as Config['logLevel'];
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel)) r.problems.push('LOG_LEVEL must be one of debug, info, warn, error');

  const orgAdminOwnerId = r.str('ORG_ADMIN_OWNER_ID') || 'org-admin';
  if (!OWNER_ID_RE.test(orgAdminOwnerId)) r.problems.push(`ORG_ADMIN_OWNER_ID must be 1 to 256 letters, digits or . _ : @ - (got "${orgAdminOwnerId}")`);

  const corsOrigins = corsOriginList(r.str('CORS_ORIGINS') ?? '', r.problems);

  for (const name of ['DATABASE_URL', 'DATABASE_MIGRATION_URL', 'REDIS_URL', 'TELEMETRY_ENDPOINT', 'COLLECTOR_CHAT_BASE_URL']) {
    const v = r.str(name);
    if (v) {
      try {
        new URL(v);
      } catch {
        r.problems.push(`${name} must be a URL`);
      }
    }
  }

  // Unset: the default list; set to empty: none; otherwise comma-separated attribute names.
  const pseudoRaw = r.str('COLLECTOR_PSEUDONYMIZE_ATTRIBUTES');
  const pseudonymizeAttributes = pseudoRaw === null ? [...DEFAULT_PSEUDONYMIZE_ATTRIBUTES] : pseudoRaw.split(',').map((x) => x.trim()).filter(Boolean);
  const badNames = pseudonymizeAttributes.filter((n) => !ATTRIBUTE_NAME_RE.test(n));
  if (badNames.length) r.problems.push(`COLLECTOR_PSEUDONYMIZE_ATTRIBUTES must list attribute names (letters, digits, _ . : -), comma-separated (got ${JSON.stringify(badNames.join(','))})`);

  const cfg: Config = {
    mode,
    host: r.str('HOST') || '127.0.0.1',
    ports,
    collectorHost: r.str('COLLECTOR_HOST') || '127.0.0.1',
    dataDir,
    databaseUrl,
    databaseMigrationUrl: r.str('DATABASE_MIGRATION_URL') || null,
    dbPassword: dbPassword || null,
    dbSslMode: dbSslMode as Config['dbSslMode'],
    redisUrl: r.str('REDIS_URL') || null,
    adminApiKey,
    adminApiKeys,
    adminKeyring: createAdminKeyring([{ name: DEFAULT_ADMIN_NAME, key: adminApiKey }, ...adminApiKeys]),
    auditorApiKeys,
    auditorKeyring: createAdminKeyring(auditorApiKeys),
    jwtSecret,
    deploymentId,
    licenseKey: r.str('LICENSE_KEY') || null,
    licensePublicKey: r.str('LICENSE_PUBLIC_KEY') || null,
    agentKeyTtlDays: r.int('AGENT_KEY_TTL_DAYS', 90, 1, 3650),
    keyExpiryIntervalSeconds: r.int('KEY_EXPIRY_INTERVAL_SECONDS', 3600, 1, 86400),
    analyticsRollupIntervalSeconds: r.int('ANALYTICS_ROLLUP_INTERVAL_SECONDS', 1, 1, 86400),
    ownership: {
      orgAdminOwnerId,
      transferWindowHours: r.int('TRANSFER_WINDOW_HOURS', 72, 1, 8760),
      expiryIntervalSeconds: r.int('TRANSFER_EXPIRY_INTERVAL_SECONDS', 300, 1, 86400),
      webhook: httpUrl(r, 'OWNERSHIP_WEBHOOK'),
    },
    contextStream: {
      heartbeatSeconds: r.int('CONTEXT_HEARTBEAT_SECONDS', 30, 1, 3600),
      resyncSeconds: r.int('CONTEXT_RESYNC_SECONDS', 60, 0, 86400),
    },
    logLevel,
    corsOrigins,
    telemetry: {
      endpoint: r.str('TELEMETRY_ENDPOINT') || null,
      signingSecret: r.str('TELEMETRY_SIGNING_SECRET') || null,
      dailyReportHour: r.int('TELEMETRY_DAILY_REPORT_HOUR', 2, 0, 23),
      retryMaxAttempts: r.int('TELEMETRY_RETRY_MAX_ATTEMPTS', 5, 1, 100),
      retryBackoffBase: r.int('TELEMETRY_RETRY_BACKOFF_BASE', 60, 0, 86400),
    },
    collector: {
      dbPath: r.str('COLLECTOR_DB_PATH') || path.join(dataDir, 'collector.sqlite'),
      coworkFile: r.str('COLLECTOR_COWORK_FILE') || null,
      codeCliFile: r.str('COLLECTOR_CODE_CLI_FILE') || null,
      chatBaseUrl: r.str('COLLECTOR_CHAT_BASE_URL') || null,
      chatApiKey: r.str('COLLECTOR_CHAT_API_KEY') || null,
      chatPollSeconds: r.int('COLLECTOR_CHAT_POLL_SECONDS', 60, 1, 86400),
      hmacSecret: pick('COLLECTOR_HMAC_SECRET'),
      pseudonymizeAttributes,
      backfillOnFirstRun: r.str('BACKFILL_ON_FIRST_RUN') === '1',
      tailIntervalMs: r.int('COLLECTOR_TAIL_INTERVAL_MS', 1000, 10, 600000),
    },
    console: {
      idleMinutes: r.int('CONSOLE_IDLE_MINUTES', 30, 1, 24 * 60),
      sessionHours: r.int('CONSOLE_SESSION_HOURS', 12, 1, 24 * 7),
    },
    tlog: tlogConfig(r, pick('TLOG_SIGNING_KEY')),
    generated,
  };
  if (r.problems.length) throw new ConfigError(r.problems);
  return cfg;
}

/**
 * CORS_ORIGINS: comma-separated exact origins, each as a browser sends it in `Origin`
 * (`https://app.example`, `http://127.0.0.1:5173`: scheme, host and a non-default port,
 * nothing else). Anything else is listed in `problems`.
 */
function corsOriginList(raw: string, problems: string[]): string[] {
  const out: string[] = [];
  const bad: string[] = [];
  for (const item of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
    let origin: string | null = null;
    try {
      origin = new URL(item).origin;
    } catch {
      // not a URL
    }
    if (origin && origin !== 'null' && origin === item) out.push(item);
    else bad.push(`"${item}"`);
  }
  if (bad.length) problems.push(`CORS_ORIGINS must list origins like https://app.example:8443 (scheme, host, optional port; no path or trailing slash): ${bad.join(', ')}`);
  return out;
}

/** The origin of the key generated in embedded mode when TLOG_ORIGIN is not set. */
const DEFAULT_TLOG_ORIGIN = 'svc.localhost/audit-log';

function tlogConfig(r: Reader, signingKey: string | null): Config['tlog'] {
  if (!signingKey) r.problems.push('TLOG_SIGNING_KEY is required: an Ed25519 note signer key (README "Transparency log" says how to make one)');
  else {
    try {
      parseSignerKey(signingKey);
    } catch (e) {
      r.problems.push(`TLOG_SIGNING_KEY is not a note signer key: ${(e as Error).message}`);
    }
  }
  const origin = r.str('TLOG_ORIGIN') || null;
  if (origin !== null && (/[\n\r]/.test(origin) || origin.trim() !== origin)) r.problems.push('TLOG_ORIGIN must be one line with no leading or trailing space');
  const witnessKeys = (r.str('TLOG_WITNESS_KEYS') ?? '').split(',').map((k) => k.trim()).filter(Boolean);
  for (const k of witnessKeys) {
    try {
      parseWitnessVerifierKey(k);
    } catch (e) {
      r.problems.push(`TLOG_WITNESS_KEYS has a key that is not a cosignature/v1 verifier key: ${(e as Error).message}`);
    }
  }
  const webhook = httpUrl(r, 'TLOG_CHECKPOINT_WEBHOOK');
  return {
    origin,
    signingKey: signingKey ?? '',
    checkpointIntervalMs: r.int('TLOG_CHECKPOINT_INTERVAL_MS', 1000, 10, 3_600_000),
    exportDir: r.str('TLOG_EXPORT_DIR') ? path.resolve(r.str('TLOG_EXPORT_DIR')!) : null,
    checkpointWebhook: webhook,
    public: r.str('TLOG_PUBLIC') === '1',
    witnessKeys,
  };
}
