/**
 * A small JSON-lines logger. Values under keys that look like secrets are masked, and
 * strings that look like agent or admin keys are masked wherever they appear, so that a
 * secret can never reach a log line by accident.
 */
export type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

const SECRET_KEY = /(pass(word)?|secret|token|api[_-]?key|authorization|admin[_-]?key|license[_-]?key|cookie)/i;
const SECRET_VALUE = /\b(sk_[A-Za-z0-9]{8,}|admin_[A-Za-z0-9_-]{8,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)/g;

/** Masks secrets in any JSON-able value (exported for tests and for error details). */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 8) return '[deep]';
  if (typeof value === 'string') return value.replace(SECRET_VALUE, '[redacted]');
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value instanceof Error) return { name: value.name, message: redact(value.message), stack: redact(value.stack ?? '') };
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEY.test(k) && v != null && v !== '' ? '[redacted]' : redact(v, depth + 1);
    return out;
  }
  return value;
}

export interface LoggerOptions {
  level?: Level;
  write?: (line: string) => void;
  base?: Record<string, unknown>;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const min = ORDER[opts.level ?? 'info'];
  const write = opts.write ?? ((line: string) => process.stderr.write(line + '\n'));
  const base = opts.base ?? {};
  const log = (level: Level, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < min) return;
    const rec = { ts: new Date().toISOString(), level, msg: redact(msg), ...(redact({ ...base, ...fields }) as object) };
    write(JSON.stringify(rec));
  };
  return {
    debug: (m, f) => log('debug', m, f),
    info: (m, f) => log('info', m, f),
    warn: (m, f) => log('warn', m, f),
    error: (m, f) => log('error', m, f),
    child: (fields) => createLogger({ ...opts, base: { ...base, ...fields } }),
  };
}

/** A logger that keeps lines in memory (tests read them to prove secrets never leak). */
export function memoryLogger(level: Level = 'debug'): Logger & { lines: string[] } {
  const lines: string[] = [];
  const l = createLogger({ level, write: (s) => lines.push(s) });
  return Object.assign(l, { lines });
}
