/**
 * CLI configuration: defaults < user file < project `.svc/` < environment.
 *
 * User directory: `$SVC_CONFIG_HOME`, else `$XDG_CONFIG_HOME/svc`, else `~/.config/svc`.
 * Each scope keeps plain settings in `config.yaml` and secrets (api.key) in
 * `credentials.yaml`, written with mode 0600 so that the key never sits in a file other
 * users can read, and listed in `.svc/.gitignore` so that it is not committed.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CliError, EXIT, usageError } from './errors.js';
import { findProjectRoot, toYaml } from './documents.js';

export type Scope = 'user' | 'project';

interface KeyDef { secret?: boolean; default?: string; env?: string; description: string; check?: (v: string) => string | null }

const isUrl = (v: string) => {
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:' ? null : 'must be an http(s) URL';
  } catch { return 'must be an http(s) URL'; }
};

export const KEYS: Record<string, KeyDef> = {
  'api.endpoint': { default: 'http://127.0.0.1:8000', env: 'SVC_API_ENDPOINT', check: isUrl, description: 'Control-plane API base URL (svc bundle publish)' },
  'api.key': { secret: true, env: 'SVC_API_KEY', check: (v) => (v.trim() ? null : 'must not be empty'), description: 'Admin API key, sent as X-Admin-Key (stored 0600, masked in show)' },
  'api.timeout_ms': { default: '30000', check: (v) => (/^[1-9]\d{0,6}$/.test(v) ? null : 'must be a positive integer (milliseconds)'), description: 'HTTP timeout of API calls' },
  'api.context_endpoint': { env: 'SVC_CONTEXT_ENDPOINT', check: isUrl, description: 'Context service (gRPC/Connect, HTTP/2) base URL for `svc context request --protocol connect|grpc` (default: the API endpoint\'s host, port 8002)' },
  author: { description: 'provenance.created_by of the bundles the CLI writes (default: $USER)' },
  'validate.strict': { default: 'false', check: (v) => (v === 'true' || v === 'false' ? null : 'must be true or false'), description: 'Make `svc validate` strict by default' },
};

const osUser = (): string => {
  try { return process.env.USER || userInfo().username; } catch { return 'unknown'; }
};

export function userConfigDir(): string {
  if (process.env.SVC_CONFIG_HOME) return process.env.SVC_CONFIG_HOME;
  if (process.env.XDG_CONFIG_HOME) return join(process.env.XDG_CONFIG_HOME, 'svc');
  return join(homedir(), '.config', 'svc');
}

export function scopeDir(scope: Scope, cwd = process.cwd()): string | null {
  if (scope === 'user') return userConfigDir();
  const root = findProjectRoot(cwd);
  return root ? join(root, '.svc') : null;
}

const fileFor = (dir: string, key: string) => join(dir, KEYS[key]?.secret ? 'credentials.yaml' : 'config.yaml');

function readYaml(path: string): Record<string, unknown> {
  if (!existsSync(path)) return {};
  let v: unknown;
  try {
    v = parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new CliError(`${path}: not a readable configuration file (${(e as Error).message.split('\n')[0]})`, EXIT.unreadable);
  }
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

const getPath = (o: Record<string, unknown>, key: string): string | undefined => {
  let cur: unknown = o;
  for (const part of key.split('.')) {
    if (!cur || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur === undefined || cur === null ? undefined : String(cur);
};

const setPath = (o: Record<string, unknown>, key: string, value: string | undefined) => {
  const parts = key.split('.');
  let cur = o;
  for (const part of parts.slice(0, -1)) {
    if (!cur[part] || typeof cur[part] !== 'object') cur[part] = {};
    cur = cur[part] as Record<string, unknown>;
  }
  if (value === undefined) delete cur[parts.at(-1)!];
  else cur[parts.at(-1)!] = value;
};

function checkKey(key: string): KeyDef {
  const def = KEYS[key];
  if (!def) throw usageError(`unknown configuration key '${key}'; known keys: ${Object.keys(KEYS).join(', ')}`);
  return def;
}

export interface Resolved { key: string; value: string | undefined; source: string; secret: boolean }

/** The effective value of every key and where it came from. */
export function resolveAll(cwd = process.cwd()): Resolved[] {
  const user = userConfigDir();
  const project = scopeDir('project', cwd);
  return Object.entries(KEYS).map(([key, def]) => {
    if (def.env && process.env[def.env]) return { key, value: process.env[def.env], source: `env ${def.env}`, secret: !!def.secret };
    for (const [dir, label] of [[project, 'project'], [user, 'user']] as const) {
      if (!dir) continue;
      const f = fileFor(dir, key);
      const v = getPath(readYaml(f), key);
      if (v !== undefined) return { key, value: v, source: `${label} ${f}`, secret: !!def.secret };
    }
    if (key === 'author') return { key, value: osUser(), source: 'login name', secret: false };
    return { key, value: def.default, source: def.default !== undefined ? 'default' : 'unset', secret: !!def.secret };
  });
}

export const resolveKey = (key: string, cwd = process.cwd()): Resolved => {
  checkKey(key);
  return resolveAll(cwd).find((r) => r.key === key)!;
};

/** Writes one key into one scope's file (secrets into credentials.yaml, mode 0600). */
export function setKey(scope: Scope, key: string, value: string | undefined, cwd = process.cwd()): string {
  const def = checkKey(key);
  if (value !== undefined && def.check) {
    const problem = def.check(value);
    if (problem) throw usageError(`invalid value for ${key}: ${problem}`);
  }
  const dir = scopeDir(scope, cwd);
  if (!dir) throw new CliError('not inside an svc project (no .svc/ here or above); run `svc init` first or use --user');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = fileFor(dir, key);
  const data = readYaml(file);
  setPath(data, key, value);
  writeFileSync(file, toYaml(data), { mode: def.secret ? 0o600 : 0o644 });
  if (def.secret) chmodSync(file, 0o600); // an existing file keeps its old mode on write
  return file;
}

/** `sk_…abcd` style masking: enough to tell keys apart, never enough to use one. */
export const mask = (v: string): string => (v.length >= 12 ? `****${v.slice(-4)}` : '****');
