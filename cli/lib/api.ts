/**
 * The running system as the CLI calls it: the typed `@svc/client` (openapi-fetch over the
 * contract in spec/), with the endpoint and admin key every operator command shares, and
 * one way to turn what comes back into exit codes.
 *
 * Connection: `--endpoint`, else `SVC_API_ENDPOINT`, else the configuration's
 * `api.endpoint` (default http://127.0.0.1:8000); admin key: `--key`, else `SVC_API_KEY`,
 * else `api.key`. Failures:
 * - the API answered with an error body: `ApiError` (exit 1), naming the HTTP status, the
 *   body's `error` code (or the context API's `error_code`) and its message;
 * - nothing answered: exit 5, naming the endpoint and the cause (refused, timed out, DNS,
 *   TLS, reset).
 */
import { createControlPlaneClient, type ControlPlaneClient } from '@svc/client';
import { mask, resolveKey } from './config.js';
import { CliError, EXIT, usageError } from './errors.js';

export interface ConnectionOptions {
  endpoint?: unknown;
  key?: unknown;
}

export interface Connection {
  /** Base URL without a trailing slash. */
  endpoint: string;
  /** The admin key, when one is configured. */
  adminKey?: string;
  timeoutMs: number;
}

/** Strings only: mri turns numeric-looking option values into numbers, and a bare flag into `true`. */
export const str = (v: unknown): string | undefined => (v === undefined || v === null || v === true || v === false ? undefined : String(v));

/** Options every command that talks to the API takes (`--endpoint`, `--key`). */
export const withApiOptions = <T extends { option(raw: string, description: string): T }>(c: T): T =>
  c.option('--endpoint <url>', 'API base URL (default $SVC_API_ENDPOINT, else config api.endpoint, else http://127.0.0.1:8000)')
    .option('--key <admin-key>', 'Admin key (default $SVC_API_KEY, else config api.key)');

export function checkEndpoint(endpoint: string): string {
  const e = endpoint.replace(/\/+$/, '');
  try {
    const u = new URL(e);
    if (u.protocol === 'http:' || u.protocol === 'https:') return e;
  } catch { /* below */ }
  throw usageError(`endpoint '${endpoint}' is not an http(s) URL`);
}

/** The endpoint, admin key and timeout of a command: flags, then environment, then configuration. */
export function connection(opts: ConnectionOptions = {}): Connection {
  const endpoint = checkEndpoint(str(opts.endpoint) ?? resolveKey('api.endpoint').value ?? 'http://127.0.0.1:8000');
  const adminKey = str(opts.key) ?? resolveKey('api.key').value;
  const timeoutMs = Number(resolveKey('api.timeout_ms').value ?? 30000);
  return { endpoint, adminKey: adminKey || undefined, timeoutMs: Number.isFinite(timeoutMs) && timeoutMs > 0 ? timeoutMs : 30000 };
}

/** Why a request got no answer, in the words an operator searches for. */
export function describeNetworkError(e: unknown): string {
  const err = e as { name?: string; message?: string; code?: string; cause?: { code?: string; message?: string; name?: string } };
  if (err?.name === 'TimeoutError' || err?.cause?.name === 'TimeoutError') return 'timed out';
  const code = err?.cause?.code ?? err?.code;
  if (code === 'ECONNREFUSED') return 'connection refused (ECONNREFUSED)';
  if (code === 'ETIMEDOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT') return `timed out (${code})`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') return `DNS lookup failed (${code})`;
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return `connection reset (${code})`;
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return `host unreachable (${code})`;
  if (code && (/^ERR_TLS|^ERR_SSL|CERT|^DEPTH_ZERO|^SELF_SIGNED|^UNABLE_TO_/.test(code))) return `TLS failed (${code})`;
  if (code) return `${code}${err?.cause?.message ? `: ${err.cause.message}` : ''}`;
  return err?.cause?.message ?? err?.message ?? String(e);
}

/** The server could not be reached: exit 5. */
export class UnreachableError extends CliError {
  constructor(readonly endpoint: string, readonly why: string) {
    super(`cannot reach ${endpoint}: ${why}`, EXIT.unreachable);
  }
}

/** The API answered with an error: exit 1, the body kept for `-o json` and details. */
export class ApiError extends CliError {
  constructor(readonly status: number, readonly code: string, message: string, readonly body: unknown) {
    super(message, EXIT.failed);
  }
}

/** A fetch that throws `UnreachableError` when nothing answers, with the command's timeout. */
export function cliFetch(conn: Connection): typeof fetch {
  return async (input, init) => {
    const signal = AbortSignal.timeout(conn.timeoutMs);
    try {
      if (input instanceof Request) return await fetch(new Request(input, { signal }));
      return await fetch(input, { ...init, signal });
    } catch (e) {
      throw new UnreachableError(conn.endpoint, describeNetworkError(e));
    }
  };
}

/**
 * The typed control-plane client of a command's connection. `apiKey` (an agent key, sent as
 * X-API-Key) is for the agent routes (`/api/context`); those calls send no admin key.
 */
export function controlPlane(conn: Connection, agent?: { apiKey: string }): ControlPlaneClient {
  if (agent) return createControlPlaneClient({ baseUrl: conn.endpoint, apiKey: agent.apiKey, fetch: cliFetch(conn) });
  return createControlPlaneClient({ baseUrl: conn.endpoint, adminKey: conn.adminKey, fetch: cliFetch(conn) });
}

/** What every openapi-fetch call resolves to. */
interface FetchResult<T> { data?: T; error?: unknown; response: Response }

/** The error of an API answer: the spec's error body (`error`, `message`, `details`) or the context API's (`error_code`, `error_message`). */
export function apiError(status: number, body: unknown, conn?: Connection): ApiError {
  const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const code = String(b.error ?? b.error_code ?? `http_${status}`);
  const message = String(b.message ?? b.error_message ?? (typeof body === 'string' && body ? body.slice(0, 300) : `HTTP ${status}`));
  let text = `${code}: ${message} (HTTP ${status})`;
  if (status === 401 && conn) text += conn.adminKey ? ` (the admin key sent was ${mask(conn.adminKey)})` : ' (no admin key: --key, SVC_API_KEY or `svc config set api.key`)';
  return new ApiError(status, code, text, body);
}

/** The 2xx body of a call (or of its result, when the caller reads its headers too), else an `ApiError` (exit 1). */
export async function call<T>(p: FetchResult<T> | Promise<FetchResult<T>>, conn?: Connection): Promise<T> {
  const r = await p;
  if (r.response.ok) return r.data as T;
  throw apiError(r.response.status, r.error, conn);
}

/** Lines of `details` worth showing under an API error (validation issues, the differing field). */
export function detailLines(body: unknown): string[] {
  const d = (body && typeof body === 'object' ? (body as Record<string, unknown>).details : undefined) as Record<string, unknown> | undefined;
  if (!d || typeof d !== 'object') return [];
  const issues = Array.isArray(d.errors) ? (d.errors as Array<Record<string, unknown>>) : [];
  const lines = issues.map((i) => `${String(i.severity ?? 'error')} ${String(i.path || '/')} [${String(i.rule ?? '?')}] ${String(i.message ?? '')}${i.reference ? ` (${String(i.reference)})` : ''}`);
  if (!issues.length) for (const [k, v] of Object.entries(d)) lines.push(`${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return lines;
}
