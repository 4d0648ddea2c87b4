/**
 * The process's logger: pino, JSON lines on stderr (`LOG_LEVEL`), behind the small `Logger`
 * interface the code calls (`info(msg, fields)`, `child(fields)`).
 *
 * Secrets never reach a line:
 * - by name: pino's own `redact` paths censor secret-named fields (passwords, tokens, API,
 *   admin and license keys, `authorization`, `cookie`, `x-admin-key`, `x-api-key`) at the
 *   top level and in `headers`, `req.headers`, `request.headers`, `details` and `body`.
 *   Deeper or elsewhere, the same names are censored by the walk below (pino's wildcard
 *   paths, `*.api_key`, cost about 0.3 µs each per line: 80 of them made a request line
 *   cost 55 µs of CPU instead of 1.5);
 * - by shape: strings that look like an agent key (`sk_...`), an admin key (`admin_...`) or a
 *   JWT are masked wherever they appear in a line's message and fields (an error's message
 *   and stack included), so a key quoted in an error message is masked too.
 */
import pino, { type DestinationStream } from 'pino';

export type Level = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
  /** Writes out what is buffered (at exit). */
  flush(): void;
}

const CENSOR = '[redacted]';
/** Field names whose values are never logged (pino redact paths are built from them). */
const SECRET_NAMES = [
  'password', 'passwd', 'pass', 'secret', 'token', 'access_token', 'refresh_token', 'auth_token', 'authToken',
  'apiKey', 'api_key', 'api-key', 'adminKey', 'admin_key', 'licenseKey', 'license_key', 'authorization', 'cookie', 'set-cookie',
  'x-admin-key', 'x-api-key', 'jwtSecret', 'jwt_secret', 'hmacSecret', 'hmac_secret', 'dbPassword', 'db_password',
];
const prop = (name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? `.${name}` : `["${name}"]`);
const REDACT_PATHS = SECRET_NAMES.flatMap((n) => [prop(n).replace(/^\./, ''), ...['headers', 'req.headers', 'request.headers', 'details', 'body'].map((c) => `${c}${prop(n)}`)]);
/** The same names, for fields below the top level (the walk in `mask`). */
const SECRET_KEY = new RegExp(`^(${SECRET_NAMES.map((n) => n.replace(/[-_]/g, '[-_]?')).join('|')})$`, 'i');

const SECRET_VALUE = /\b(sk_[A-Za-z0-9]{8,}|admin_[A-Za-z0-9_-]{8,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)/g;
/** The cheap pre-check: every shape above contains one of these. */
const MAYBE_SECRET = /sk_|admin_|eyJ/;

const maskString = (s: string): string => (MAYBE_SECRET.test(s) ? s.replace(SECRET_VALUE, CENSOR) : s);

/**
 * Masks key-shaped strings, censors secret-named fields below the top level (the top level
 * is pino's redact), and turns errors into {type, message, stack} (masked), copying only
 * what changes: a line without such a value (the per-request line) is passed as it is.
 */
function mask(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return maskString(value);
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Error) {
    const out: Record<string, unknown> = { type: value.name, message: maskString(value.message) };
    if (value.stack) out.stack = maskString(value.stack);
    const code = (value as { code?: unknown }).code;
    if (code !== undefined) out.code = code;
    if (value.cause !== undefined && depth < 4) out.cause = mask(value.cause, depth + 1);
    return out;
  }
  if (depth >= 6) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      const m = mask(v, depth + 1);
      if (m !== v) (copy ??= value.slice())[i] = m;
    }
    return copy ?? value;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) return value;
  let copy: Record<string, unknown> | null = null;
  for (const k in value) {
    const v = (value as Record<string, unknown>)[k];
    const m = depth > 0 && v != null && v !== '' && SECRET_KEY.test(k) ? CENSOR : mask(v, depth + 1);
    if (m !== v) (copy ??= { ...(value as Record<string, unknown>) })[k] = m;
  }
  return copy ?? value;
}

/**
 * pino's ISO time, its text made once per millisecond: `toISOString` per line was a third of
 * a request line's cost, and a busy process writes many lines in one millisecond.
 */
let lastMs = -1;
let lastTime = '';
function isoTime(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTime;
}

export interface LoggerOptions {
  level?: Level;
  /** Where lines go (default: stderr, asynchronously; flushed by `flush()`). */
  destination?: DestinationStream;
}

function wrap(p: pino.Logger, flush: () => void): Logger {
  return {
    debug: (msg, fields) => p.debug(fields ?? {}, maskString(msg)),
    info: (msg, fields) => p.info(fields ?? {}, maskString(msg)),
    warn: (msg, fields) => p.warn(fields ?? {}, maskString(msg)),
    error: (msg, fields) => p.error(fields ?? {}, maskString(msg)),
    child: (fields) => wrap(p.child(mask(fields, 0) as Record<string, unknown>), flush),
    flush,
  };
}

/** Most a line waits in the stderr buffer before it is written (BUFFER_BYTES fills first under load). */
const FLUSH_EVERY_MS = 250;
const BUFFER_BYTES = 4096;

/**
 * stderr through sonic-boom (pino.destination), written synchronously once BUFFER_BYTES have
 * gathered or FLUSH_EVERY_MS has passed, whichever comes first: about 18 request lines a
 * write. Synchronous on purpose: on this machine an asynchronous fs.write (libuv's thread
 * pool) cost 35 µs of process CPU per call, 13 µs of it on the event loop, where writeSync
 * of the same 4 KB cost 3 µs; per request line that is about 0.2 µs instead of 2. As with
 * pino's own default destination, a reader of stderr that stops reading would block the
 * process at the next write (journald and container runtimes read it). The timer is unref'd
 * (it never keeps the process up); `flush()` writes the rest at exit.
 */
function bufferedStderr(): DestinationStream {
  const d = pino.destination({ dest: 2, sync: true, minLength: BUFFER_BYTES });
  setInterval(() => {
    try {
      d.flush();
    } catch {
      // Nothing written yet, or a write in flight (the buffer goes with the next one).
    }
  }, FLUSH_EVERY_MS).unref();
  return d;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const destination = opts.destination ?? bufferedStderr();
  const p = pino(
    {
      level: opts.level ?? 'info',
      base: null,
      timestamp: isoTime,
      redact: { paths: REDACT_PATHS, censor: CENSOR },
      formatters: {
        level: (label) => ({ level: label }),
        log: (obj) => mask(obj, 0) as Record<string, unknown>,
      },
    },
    destination,
  );
  const flush = () => {
    const d = destination as DestinationStream & { flushSync?: () => void };
    try {
      d.flushSync?.();
    } catch {
      // Not ready yet (nothing written) or already closed: nothing to flush.
    }
  };
  return wrap(p, flush);
}

/** A logger that keeps lines in memory (tests read them to prove secrets never leak). */
export function memoryLogger(level: Level = 'debug'): Logger & { lines: string[] } {
  const lines: string[] = [];
  const l = createLogger({ level, destination: { write: (s: string) => void lines.push(s.endsWith('\n') ? s.slice(0, -1) : s) } });
  return Object.assign(l, { lines });
}
