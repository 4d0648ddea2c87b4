/** Migration 0013 on a database that already holds agents: none is left ownerless. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openDb, type Db } from '../../src/core/db/index.js';
import { MIGRATIONS_DIR, runMigrations } from '../../src/core/db/migrate.js';

let db: Db;
beforeAll(async () => {
  db = await openDb({});
});
afterAll(async () => {
  await db?.close();
});

it('backfills every existing agent to org-admin, a registered active owner', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mig0013-'));
  try {
    const files = fs.readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql')).sort();
    for (const f of files.filter((f) => f < '0013')) fs.copyFileSync(path.join(MIGRATIONS_DIR, f), path.join(dir, f));
    await runMigrations(db, dir);
    await db.query(`INSERT INTO agents (agent_id, name, role_id, created_by, owner_name) VALUES ('agent:old-1', 'old', 'role:x', 'test', 'Jane'), ('agent:old-2', 'old', 'role:x', 'test', NULL)`);
    for (const f of files.filter((f) => f >= '0013')) fs.copyFileSync(path.join(MIGRATIONS_DIR, f), path.join(dir, f));
    expect(await runMigrations(db, dir)).toContain(13);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const rows = await db.query(`SELECT agent_id, owner_id, owner_name FROM agents ORDER BY agent_id`);
  expect(rows).toEqual([
    { agent_id: 'agent:old-1', owner_id: 'org-admin', owner_name: 'Jane' },
    { agent_id: 'agent:old-2', owner_id: 'org-admin', owner_name: null },
  ]);
  expect(await db.query(`SELECT owner_id, status FROM owners`)).toEqual([{ owner_id: 'org-admin', status: 'active' }]);
  await expect(db.query(`UPDATE agents SET owner_id = NULL WHERE agent_id = 'agent:old-1'`)).rejects.toThrow();
});
