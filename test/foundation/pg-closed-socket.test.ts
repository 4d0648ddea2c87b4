/**
 * postgres.js 3.4.9 throws out of a setImmediate when a write is scheduled on a connection
 * whose socket has closed (porsager/postgres#1154, #1208: `Cannot read properties of null
 * (reading 'write')` in nextWrite), which takes the whole process down; CI saw it once in the
 * readiness test, when the database went away under the API. patches/postgres+3.4.9.patch
 * (applied by `npm ci`'s postinstall, patch-package) settles the waiting query with
 * CONNECTION_CLOSED instead. Without the patch, the first test ends in that uncaught
 * TypeError, which fails the run; the second is the ordinary case beside it (a transaction
 * whose connection ends is rejected as `unavailable`, 503, and the pool answers again).
 */
import { describe, expect, it } from 'vitest';
import { createTestDb, DB_PASSWORD, REAL } from '../harness.js';
import { openDb } from '../../src/core/db/index.js';

const settle = <T>(p: Promise<T>) =>
  Promise.race([
    p.then(
      () => ({ ok: true as const, code: undefined }),
      (e: { code?: string }) => ({ ok: false as const, code: e.code }),
    ),
    new Promise<{ ok: null; code: 'hung' }>((resolve) => setTimeout(() => resolve({ ok: null, code: 'hung' }), 5000)),
  ]);

describe.skipIf(!REAL)('a PostgreSQL connection whose server ends it', () => {
  if (!REAL) console.log('skipped: postgres.js runs only against PostgreSQL (SVC_TEST_REAL=1 and DATABASE_URL)');

  it('a reserved connection: the next query is refused with CONNECTION_CLOSED and the process lives on', async () => {
    const base = await createTestDb();
    const db = await openDb({ url: base.appUrl!, password: DB_PASSWORD, max: 2 });
    try {
      const reserved = await db.raw!.reserve();
      const [{ pid }] = await reserved<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      await base.owner.query('SELECT pg_terminate_backend($1)', [pid]);
      await new Promise((r) => setTimeout(r, 200));
      expect(await settle(reserved`SELECT 1`)).toEqual({ ok: false, code: 'CONNECTION_CLOSED' });
      // And again: a reserved connection stays pinned to its closed socket (svc reserves none).
      expect(await settle(reserved`SELECT 2`)).toEqual({ ok: false, code: 'CONNECTION_CLOSED' });
      reserved.release();
    } finally {
      await db.close();
      await base.close();
    }
  });

  it("a transaction's connection ended under it: the transaction fails as unavailable, the pool answers again", async () => {
    const base = await createTestDb();
    const db = await openDb({ url: base.appUrl!, password: DB_PASSWORD, max: 2 });
    try {
      const outcome = await settle(
        db.tx(async (t) => {
          const [{ pid }] = await t.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
          await base.owner.query('SELECT pg_terminate_backend($1)', [pid]);
          await new Promise((r) => setTimeout(r, 200));
          await t.query('SELECT 1');
        }),
      );
      // Mapped as every lost connection is: 503 unavailable (retry), not a 500.
      expect(outcome).toEqual({ ok: false, code: 'unavailable' });
      expect(await db.query<{ x: number }>('SELECT 3 AS x')).toEqual([{ x: 3 }]);
    } finally {
      await db.close();
      await base.close();
    }
  });
});
