/** Shared helpers of the collector tests: fixtures, an OTLP line builder, the personal-data scan. */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/collector');
export const fixture = (name: string) => path.join(FIXTURES, name);
export const readFixture = (name: string) => fs.readFileSync(fixture(name), 'utf8');
export const tmpDir = (prefix = 'svc-collector-') => fs.mkdtempSync(path.join(os.tmpdir(), prefix));

const s = (key: string, v: string) => ({ key, value: { stringValue: v } });
const i = (key: string, v: number) => ({ key, value: { intValue: String(v) } });

/**
 * One OTLP logs line (as the collector's file exporter writes it) holding `n` coding-CLI
 * tool_result events, numbered from `seq`. Every event is distinct (sequence, time).
 */
export function otlpLine(seq: number, n = 1, opts: { email?: string; session?: string } = {}): string {
  const base = 1767225600000n * 1000000n;
  const records = Array.from({ length: n }, (_, k) => {
    const ns = (base + BigInt(seq + k) * 1000000n).toString();
    return {
      timeUnixNano: ns,
      observedTimeUnixNano: ns,
      body: { stringValue: 'vendor_code.tool_result' },
      attributes: [
        s('user.account_id', 'user_01TESTUSER'),
        s('user.email', opts.email ?? 'dev@example.com'),
        s('session.id', opts.session ?? 'sess-1'),
        s('event.name', 'tool_result'),
        i('event.sequence', seq + k),
        s('tool_name', 'Bash'),
        s('success', 'true'),
        i('duration_ms', 10),
      ],
      traceId: '',
      spanId: '',
    };
  });
  return JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: [s('service.name', 'vendor-code'), s('service.version', '2.1.200')] },
        scopeLogs: [{ scope: { name: 'com.vendor.vendor_code.events', version: '2.1.200' }, logRecords: records }],
      },
    ],
  });
}

const EMAIL_SCAN = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/;
const IPV4_SCAN = /(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\d])/;
const IPV6_CANDIDATES = /[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}/g;

/** Every e-mail or raw IP address found in text (IPv6 candidates confirmed with net.isIP). */
export function personalDataIn(text: string): string[] {
  const found: string[] = [];
  const e = EMAIL_SCAN.exec(text);
  if (e) found.push(e[0]);
  const v4 = IPV4_SCAN.exec(text);
  if (v4) found.push(v4[0]);
  for (const m of text.match(IPV6_CANDIDATES) ?? []) if (m.length >= 3 && /\d/.test(m) && net.isIP(m) === 6) found.push(m);
  return found;
}

/**
 * Scans every text value of every row of every table of the SQLite database, then the raw
 * bytes of the database files (main and WAL), for e-mail and IP addresses.
 */
export function scanDatabase(dbPath: string): string[] {
  const found: string[] = [];
  const db = new Database(dbPath, { readonly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>;
    for (const { name } of tables) {
      for (const row of db.prepare(`SELECT * FROM "${name}"`).iterate() as Iterable<Record<string, unknown>>) {
        for (const [col, v] of Object.entries(row)) {
          if (typeof v !== 'string') continue;
          for (const hit of personalDataIn(v)) found.push(`${name}.${col}: ${hit}`);
        }
      }
    }
  } finally {
    db.close();
  }
  for (const f of [dbPath, `${dbPath}-wal`]) {
    if (!fs.existsSync(f)) continue;
    const bytes = fs.readFileSync(f).toString('latin1');
    const m = EMAIL_SCAN.exec(bytes);
    if (m) found.push(`${path.basename(f)} bytes: ${m[0]}`);
  }
  return found;
}
