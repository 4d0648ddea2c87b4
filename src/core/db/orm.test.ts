/**
 * `Db.orm` (drizzle) and `Db.query` (raw SQL) on one connection: inside `tx` both run in the
 * same transaction; drizzle's errors map like raw ones; column values round-trip with the
 * postgres.js type settings (int8 as number, JSON as text) and PGlite alike.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { eq, sql } from 'drizzle-orm';
import { createTestDb, REAL, type TestDb } from '../../../test/harness.js';
import { AppError } from '../../shared/errors.js';
import { agentApiKeys, agents, graphNodes, telemetryLog } from './schema/index.js';

let t: TestDb;
beforeAll(async () => {
  t = await createTestDb();
});
afterAll(async () => {
  await t?.close();
});

const newAgent = (over: Partial<typeof agents.$inferInsert> = {}): typeof agents.$inferInsert => ({
  agent_id: `agent:orm-${randomUUID()}`,
  name: 'orm',
  role_id: 'role:orm',
  created_by: 'test',
  ...over,
});

describe('Db.orm inside Db.tx', () => {
  it('a rollback undoes the drizzle and the raw writes together', async () => {
    const a = newAgent();
    const node = `orm-node-${randomUUID()}`;
    await expect(
      t.db.tx(async (db) => {
        await db.orm.insert(agents).values(a);
        await db.query(`INSERT INTO graph_nodes (node_id, label) VALUES ($1, 'Agent')`, [node]);
        // Each sees the other's uncommitted row: one transaction.
        expect(await db.query(`SELECT 1 FROM agents WHERE agent_id = $1`, [a.agent_id])).toHaveLength(1);
        expect(await db.orm.select().from(graphNodes).where(eq(graphNodes.node_id, node))).toHaveLength(1);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await t.db.orm.select().from(agents).where(eq(agents.agent_id, a.agent_id))).toEqual([]);
    expect(await t.db.query(`SELECT 1 FROM graph_nodes WHERE node_id = $1`, [node])).toEqual([]);
  });

  it('a commit keeps both; a nested tx reuses the outer transaction', async () => {
    const a = newAgent();
    await t.db.tx(async (db) => {
      await db.query(`INSERT INTO agents (agent_id, name, role_id, created_by) VALUES ($1, 'x', 'role:x', 't')`, [a.agent_id]);
      await db.tx((inner) => inner.orm.update(agents).set({ name: 'renamed' }).where(eq(agents.agent_id, a.agent_id)));
    });
    const [row] = await t.db.orm.select({ name: agents.name }).from(agents).where(eq(agents.agent_id, a.agent_id));
    expect(row).toEqual({ name: 'renamed' });
  });

  it('orm.transaction is refused: transactions go through Db.tx', async () => {
    await expect(t.db.orm.transaction(async () => {})).rejects.toThrow('use Db.tx');
  });
});

describe('drizzle errors pass through mapDbError', () => {
  it('a duplicate key is conflict, outside and inside tx', async () => {
    const a = newAgent();
    await t.db.orm.insert(agents).values(a);
    const outside = await t.db.orm.insert(agents).values(a).catch((e: unknown) => e);
    expect(outside).toBeInstanceOf(AppError);
    expect(outside).toMatchObject({ code: 'conflict', details: { constraint: 'agents_pkey' } });
    const inside = await t.db.tx((db) => db.orm.insert(agents).values(a)).catch((e: unknown) => e);
    expect(inside).toMatchObject({ code: 'conflict' });
  });

  it('a missing referenced row is not_found; a failed CHECK is validation_error', async () => {
    const fk = await t.db.orm
      .insert(agentApiKeys)
      .values({ key_id: `k-${randomUUID()}`, agent_id: 'agent:nobody', key_prefix: 'sk_abcde', key_hash: 'a'.repeat(64) })
      .catch((e: unknown) => e);
    expect(fk).toMatchObject({ code: 'not_found' });
    const check = await t.db.orm.insert(agents).values(newAgent({ role_id: 'not-a-role' })).catch((e: unknown) => e);
    expect(check).toMatchObject({ code: 'validation_error', details: { constraint: 'agents_role_id_check' } });
  });

  it.runIf(REAL)('a deadlock is a conflict (nothing changed, retry), never an unmapped error', async () => {
    const a = newAgent();
    const b = newAgent();
    await t.db.orm.insert(agents).values([a, b]);
    // Two transactions lock the two rows in opposite orders; PostgreSQL ends one of them (40P01).
    let ready = 0;
    const both = () => new Promise<void>((r) => { ready++; const w = () => (ready >= 2 ? r() : setTimeout(w, 5)); w(); });
    const lock = (first: string, second: string) =>
      t.db.tx(async (db) => {
        await db.query('SELECT 1 FROM agents WHERE agent_id = $1 FOR UPDATE', [first]);
        await both();
        await db.query('SELECT 1 FROM agents WHERE agent_id = $1 FOR UPDATE', [second]);
      });
    const results = await Promise.allSettled([lock(a.agent_id, b.agent_id), lock(b.agent_id, a.agent_id)]);
    const refused = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toBeInstanceOf(AppError);
    expect(refused[0]).toMatchObject({ code: 'conflict' });
  });

  it('an unmapped error is the driver error, without drizzle’s query text and parameters', async () => {
    const e = await t.db.orm.execute(sql`SELECT 1 / ${0}::int AS x`).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(Error);
    expect((e as Error).message).not.toContain('Failed query');
    expect((e as { code?: string }).code).toBe('22012');
  });
});

describe('column values round-trip', () => {
  it('jsonb, text[], timestamptz(3) through drizzle, and read back raw', async () => {
    const at = new Date('2026-01-02T03:04:05.678Z');
    const intents = [{ task_type: 'summarize', scope: 'a"b' }];
    const a = newAgent({ allowed_intents: intents, overrides: ['scd:x:1', 'with space', 'q"uote', ''], restrictions: [], created_at: at });
    const [ins] = await t.db.orm.insert(agents).values(a).returning();
    expect(ins.allowed_intents).toEqual(intents);
    expect(ins.overrides).toEqual(['scd:x:1', 'with space', 'q"uote', '']);
    expect(ins.restrictions).toEqual([]);
    expect(ins.created_at).toEqual(at);
    expect(ins.description).toBeNull();
    const [raw] = await t.db.query(`SELECT allowed_intents, overrides, created_at, allowed_intents->0->>'scope' AS scope FROM agents WHERE agent_id = $1`, [a.agent_id]);
    // The raw path's parsers are untouched by drizzle: a Date, a parsed array, parsed JSON.
    expect(raw.created_at).toBeInstanceOf(Date);
    expect(raw.created_at.getTime()).toBe(at.getTime());
    expect(raw.overrides).toEqual(a.overrides);
    expect(raw.allowed_intents).toEqual(intents);
    expect(raw.scope).toBe('a"b');
  });

  it('raw writes read through drizzle: jsonb text, text[], timestamptz', async () => {
    const id = `agent:orm-${randomUUID()}`;
    await t.db.query(
      `INSERT INTO agents (agent_id, name, role_id, created_by, allowed_intents, overrides, created_at) VALUES ($1, 'n', 'role:r', 't', $2::jsonb, $3::text[], $4)`,
      [id, JSON.stringify([{ task_type: 't' }]), ['a', 'b'], new Date('2026-03-04T05:06:07.089Z')],
    );
    const [row] = await t.db.orm.select().from(agents).where(eq(agents.agent_id, id));
    expect(row).toMatchObject({ allowed_intents: [{ task_type: 't' }], overrides: ['a', 'b'], restrictions: [], status: 'active', owner_verified: false });
    expect(row.created_at).toEqual(new Date('2026-03-04T05:06:07.089Z'));
  });

  it('date as YYYY-MM-DD, bigint as number, jsonb object', async () => {
    const reported = new Date('2026-05-06T07:08:09.010Z');
    const [row] = await t.db.orm
      .insert(telemetryLog)
      .values({
        report_date: '2026-05-06',
        trigger: 'manual',
        reported_at: reported,
        status: 'pending',
        payload: { deployment_id: 'd', agent_count: 3 },
        signed: false,
        agent_count: 3,
        context_request_count: 2 ** 40,
        bundle_count: 1,
      })
      .returning();
    expect(row).toMatchObject({ report_date: '2026-05-06', context_request_count: 2 ** 40, payload: { deployment_id: 'd', agent_count: 3 }, attempts: 0 });
    expect(typeof row.id).toBe('number');
    expect(row.reported_at).toEqual(reported);
    const [back] = await t.db.orm.select({ d: telemetryLog.report_date, n: telemetryLog.context_request_count }).from(telemetryLog).where(eq(telemetryLog.id, row.id));
    expect(back).toEqual({ d: '2026-05-06', n: 2 ** 40 });
  });
});
