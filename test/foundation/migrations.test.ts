import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDb } from '../../src/core/db/index.js';
import { MIGRATIONS_DIR, MigrationError, readMigrations, runMigrations } from '../../src/core/db/migrate.js';
import { createTestDb, REAL, type TestDb } from '../harness.js';

describe('migration runner', () => {
  it('files are consecutive and named NNNN_snake_name.sql', () => {
    const ms = readMigrations();
    expect(ms[0].version).toBe(0);
    ms.forEach((m, i) => expect(m.version).toBe(i));
  });

  it('is idempotent across restarts (PGlite on disk)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mig-'));
    const a = await openDb({ dataDir: dir });
    const first = await runMigrations(a);
    expect(first.length).toBe(readMigrations().length);
    await a.close();
    const b = await openDb({ dataDir: dir });
    expect(await runMigrations(b)).toEqual([]);
    await b.close();
  });

  it('refuses a migration edited after it was applied, and changes nothing', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-migdir-'));
    for (const f of fs.readdirSync(MIGRATIONS_DIR)) fs.copyFileSync(path.join(MIGRATIONS_DIR, f), path.join(dir, f));
    const db = await openDb({});
    await runMigrations(db, dir);
    const f = fs.readdirSync(dir).find((x) => x.startsWith('0002_'))!;
    fs.appendFileSync(path.join(dir, f), '\n-- edited\nCREATE TABLE should_not_exist (x int);\n');
    await expect(runMigrations(db, dir)).rejects.toThrow(MigrationError);
    await expect(runMigrations(db, dir)).rejects.toThrow(/was edited after it was applied/);
    const rows = await db.query(`SELECT to_regclass('public.should_not_exist') AS t`);
    expect(rows[0].t).toBeNull();
    await db.close();
  });

  it('refuses a gap in the numbering', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-gap-'));
    fs.writeFileSync(path.join(dir, '0000_a.sql'), 'SELECT 1;');
    fs.writeFileSync(path.join(dir, '0002_c.sql'), 'SELECT 1;');
    expect(() => readMigrations(dir)).toThrow(/not consecutive/);
  });
});

describe(`audit immutability in the database (${REAL ? 'PostgreSQL' : 'PGlite'})`, () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb();
    await t.owner.query(`INSERT INTO agents (agent_id, name, role_id, created_by) VALUES ('agent:imm', 'imm', 'role:x', 'test')`);
    await t.owner.query(
      `INSERT INTO agent_context_requests (request_id, agent_id, task_type, intent_valid, previous_hash, record_hash, content_hash, requested_at)
       VALUES ('req-imm-1', 'agent:imm', 'review', true, 'p', 'r', 'c', now())`,
    );
  });
  afterAll(async () => {
    await t?.close();
  });

  it.each([
    ['UPDATE', `UPDATE agent_context_requests SET task_type = 'x' WHERE request_id = 'req-imm-1'`],
    ['DELETE', `DELETE FROM agent_context_requests WHERE request_id = 'req-imm-1'`],
    ['TRUNCATE', `TRUNCATE agent_context_requests CASCADE`],
  ])('%s is rejected even for the owner with "Audit records are immutable"', async (_name, sql) => {
    await expect(t.owner.query(sql)).rejects.toThrow('Audit records are immutable');
    const rows = await t.owner.query(`SELECT task_type FROM agent_context_requests WHERE request_id = 'req-imm-1'`);
    expect(rows).toEqual([{ task_type: 'review' }]);
  });

  it('the genesis table is immutable too', async () => {
    await t.owner.query(`INSERT INTO audit_chain_genesis (deployment_id, genesis_hash, initialized_at) VALUES ('d', $1, now()) ON CONFLICT DO NOTHING`, ['a'.repeat(64)]);
    await expect(t.owner.query(`UPDATE audit_chain_genesis SET deployment_id = 'e'`)).rejects.toThrow('Audit records are immutable');
    await expect(t.owner.query(`DELETE FROM audit_chain_genesis`)).rejects.toThrow('Audit records are immutable');
  });

  it.runIf(REAL)('the application role has no UPDATE or DELETE on the audit table at all', async () => {
    const [who] = await t.db.query<{ u: string; s: boolean }>(`SELECT current_user AS u, rolsuper AS s FROM pg_roles WHERE rolname = current_user`);
    expect(who).toEqual({ u: 'svc_app', s: false });
    await expect(t.db.query(`UPDATE agent_context_requests SET task_type = 'x'`)).rejects.toThrow(/permission denied/);
    await expect(t.db.query(`DELETE FROM agent_context_requests`)).rejects.toThrow(/permission denied/);
    await expect(t.db.query(`ALTER TABLE agent_context_requests DISABLE TRIGGER USER`)).rejects.toThrow(/must be owner|permission denied/);
    const privs = await t.owner.query<{ p: string }>(`SELECT privilege_type AS p FROM information_schema.role_table_grants WHERE grantee = 'svc_app' AND table_name = 'agent_context_requests' ORDER BY 1`);
    expect(privs.map((r) => r.p)).toEqual(['INSERT', 'SELECT']);
    const audit = await t.owner.query<{ p: string }>(`SELECT privilege_type AS p FROM information_schema.role_table_grants WHERE grantee = 'svc_audit' AND table_name IN ('agent_context_requests', 'audit_chain_genesis') ORDER BY 1`);
    expect(new Set(audit.map((r) => r.p))).toEqual(new Set(['SELECT']));
  });
});
