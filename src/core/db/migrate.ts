/**
 * Migration runner: `migrations/NNNN_snake_name.sql`, applied in order, each in its own
 * transaction, recorded in `schema_migrations` with a SHA-256 checksum. A file whose
 * checksum differs from the recorded one is refused (landed migrations are never edited),
 * and so is a gap or a duplicate number. Concurrent starts serialize on an advisory lock.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from './index.js';

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../migrations');

/** Arbitrary constant: the advisory lock key that serializes migration runs. */
const MIGRATION_LOCK = 7_340_001;

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export class MigrationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MigrationError';
  }
}

export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.sql')).sort();
  const out: Migration[] = [];
  for (const f of files) {
    const m = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(f);
    if (!m) throw new MigrationError(`migration file name ${f} does not match NNNN_snake_name.sql`);
    const sql = fs.readFileSync(path.join(dir, f), 'utf8');
    out.push({ version: Number(m[1]), name: m[2], sql, checksum: createHash('sha256').update(sql).digest('hex') });
  }
  out.forEach((m, i) => {
    if (m.version !== (out[0]?.version ?? 0) + i) throw new MigrationError(`migrations are not consecutive at ${String(m.version).padStart(4, '0')}_${m.name}`);
  });
  return out;
}

/** Applies pending migrations; returns the versions applied by this call. */
export async function runMigrations(db: Db, dir = MIGRATIONS_DIR): Promise<number[]> {
  const migrations = readMigrations(dir);
  await db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
  const applied: number[] = [];
  await db.tx(async (t) => {
    // Held until this transaction ends: a second process waits, then sees everything applied.
    await t.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    const rows = await t.query<{ version: number; name: string; checksum: string }>('SELECT version, name, checksum FROM schema_migrations ORDER BY version');
    const done = new Map(rows.map((r) => [Number(r.version), r]));
    for (const m of migrations) {
      const prev = done.get(m.version);
      if (prev) {
        if (prev.checksum !== m.checksum) {
          throw new MigrationError(`migration ${String(m.version).padStart(4, '0')}_${m.name} was edited after it was applied (checksum ${m.checksum.slice(0, 12)} differs from recorded ${prev.checksum.slice(0, 12)}); landed migrations are never edited: add a new one`);
        }
        continue;
      }
      await t.exec(m.sql);
      await t.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [m.version, m.name, m.checksum]);
      applied.push(m.version);
    }
    for (const v of done.keys()) {
      if (!migrations.some((m) => m.version === v)) throw new MigrationError(`the database has migration ${v}, which this build does not know: refusing to run an older build`);
    }
  });
  return applied;
}
