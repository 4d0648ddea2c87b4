/**
 * `Db.query` on PostgreSQL prepares a parameterized statement once a connection (one round
 * trip a call instead of two), up to a bound of distinct texts a process, past which texts run
 * unprepared (src/core/db/index.ts, MAX_PREPARED_TEXTS). Seen from the backend, in
 * pg_prepared_statements, on the one connection a transaction holds. PostgreSQL only: PGlite
 * runs in process, with no round trip to spare.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, REAL, type TestDb } from '../../../test/harness.js';

let t: TestDb;
beforeAll(async () => {
  if (REAL) t = await createTestDb();
});
afterAll(async () => {
  await t?.close();
});

if (!REAL) console.log('prepared.test.ts: skipped, it needs PostgreSQL (DATABASE_URL with SVC_TEST_REAL=1)');

const prepared = async (db: TestDb['db'], like: string) =>
  (await db.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements WHERE statement LIKE $1', [like])).map((r) => r.statement);

describe.skipIf(!REAL)('Db.query on PostgreSQL', () => {
  it('prepares a parameterized statement once and answers from it again', async () => {
    await t.db.tx(async (db) => {
      expect(await db.query<{ n: number }>('SELECT $1::int + 1 AS n /* once */', [1])).toEqual([{ n: 2 }]);
      expect(await db.query<{ n: number }>('SELECT $1::int + 1 AS n /* once */', [41])).toEqual([{ n: 42 }]);
      expect(await prepared(db, '%/* once */%')).toEqual(['SELECT $1::int + 1 AS n /* once */']);
      // No parameters: a simple query, nothing prepared.
      expect(await db.query<{ n: number }>('SELECT 7 AS n /* simple */')).toEqual([{ n: 7 }]);
      expect(await prepared(db, '%/* simple */%')).toEqual([]);
    });
  });

  it('stops preparing new texts past its bound, and still answers them', async () => {
    await t.db.tx(async (db) => {
      for (let i = 0; i < 520; i++) {
        expect(await db.query<{ n: number }>(`SELECT $1::int + ${i} AS n /* text ${i} */`, [1])).toEqual([{ n: i + 1 }]);
      }
      const texts = await prepared(db, '%/* text %');
      // The bound is 500 texts a process; the set-up (migrations) and the cases before used a few.
      expect(texts.length).toBeGreaterThan(480);
      expect(texts.length).toBeLessThan(500);
      expect(texts).not.toContain('SELECT $1::int + 519 AS n /* text 519 */');
      expect(texts).toContain('SELECT $1::int + 0 AS n /* text 0 */');
    });
  });
});
