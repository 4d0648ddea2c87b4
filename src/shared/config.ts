/**
 * Configuration: read from the environment once, validated with every bad field listed,
 * and passed down as a typed object. No other module reads `process.env`.
 *
 * Two modes (decisions.md):
 * - embedded (no DATABASE_URL and NODE_ENV != production): PGlite, in-process broker;
 *   missing ADMIN_API_KEY, JWT_SECRET, DEPLOYMENT_ID and COLLECTOR_HMAC_SECRET are generated
 *   into $SVC_DATA_DIR/secrets.json (mode 0600) on first start.
 * - production (DATABASE_URL set, or NODE_ENV=production): nothing is generated; weak or
 *   missing JWT_SECRET and a missing DB_PASSWORD abort start-up.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

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
  /** Empty string means "not configured": admin routes answer 503. */
  adminApiKey: string;
  jwtSecret: string;
  deploymentId: string;
  licenseKey: string | null;
  licensePublicKey: string | null;
  agentKeyTtlDays: number;
  keyExpiryIntervalSeconds: number;
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
    backfillOnFirstRun: boolean;
    tailIntervalMs: number;
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

/** Weak: shorter than 32 characters, fewer than 8 distinct characters, or a known placeholder. */
export function isWeakSecret(value: string): boolean {
  if (value.length < 32 || new Set(value).size < 8) return true;
  const lower = value.toLowerCase();
  return WEAK_FRAGMENTS.some((w) => lower.includes(w));
}

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

  const dbPassword = r.str('DB_PASSWORD');
  if (mode === 'production' && !dbPassword) r.problems.push('DB_PASSWORD is required in production and must not be empty');

  const dbSslMode = r.str('DB_SSL_MODE') || 'disable';
  if (dbSslMode !== 'disable' && dbSslMode !== 'require') r.problems.push(`DB_SSL_MODE must be "disable" or "require" (got "${dbSslMode}")`);

  const deploymentId = pick('DEPLOYMENT_ID') ?? '';
  if (!deploymentId) r.problems.push('DEPLOYMENT_ID is required (a UUID, stable per deployment)');
  else if (!UUID_RE.test(deploymentId)) r.problems.push(`DEPLOYMENT_ID must be a UUID (got "${deploymentId}")`);

  const logLevel = (r.str('LOG_LEVEL') || 'info') as Config['logLevel'];
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel)) r.problems.push('LOG_LEVEL must be one of debug, info, warn, error');

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
    adminApiKey: pick('ADMIN_API_KEY') ?? '',
    jwtSecret,
    deploymentId,
    licenseKey: r.str('LICENSE_KEY') || null,
    licensePublicKey: r.str('LICENSE_PUBLIC_KEY') || null,
    agentKeyTtlDays: r.int('AGENT_KEY_TTL_DAYS', 90, 1, 3650),
    keyExpiryIntervalSeconds: r.int('KEY_EXPIRY_INTERVAL_SECONDS', 3600, 1, 86400),
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
      backfillOnFirstRun: r.str('BACKFILL_ON_FIRST_RUN') === '1',
      tailIntervalMs: r.int('COLLECTOR_TAIL_INTERVAL_MS', 1000, 10, 600000),
    },
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
