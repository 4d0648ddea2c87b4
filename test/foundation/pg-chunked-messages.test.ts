/**
 * patches/postgres+3.4.9.patch also changes how postgres.js joins a protocol message that
 * straddles the socket's chunks: it joins that message's own bytes and reads on in the chunk
 * itself, instead of joining the whole chunk (which copied nearly every chunk of a long result
 * or COPY once more). Here the socket's chunks are cut at seeded random places, from one byte
 * (a message's 5-byte header split) to a few thousand, so that every way a message can straddle
 * them comes up, and the rows of a query and a COPY must arrive whole and in order.
 */
import { createHash } from 'node:crypto';
import net from 'node:net';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { createTestDb, DB_PASSWORD, REAL } from '../harness.js';
import { rng } from '../rng.js';
import { forEachCopyBinaryRow } from '../../src/core/audit/copy-binary.js';

/** A socket to PostgreSQL whose 'data' events are re-cut into pieces of `size()` bytes, each its own event. */
function recutSocket(url: string, size: () => number): () => Promise<net.Socket> {
  const u = new URL(url);
  return async () => {
    const s = net.connect(Number(u.port || 5432), u.hostname);
    await new Promise<void>((resolve, reject) => s.once('connect', resolve).once('error', reject));
    const emit = s.emit.bind(s) as (event: string | symbol, ...args: unknown[]) => boolean;
    s.emit = ((event: string | symbol, ...args: unknown[]) => {
      if (event !== 'data') return emit(event, ...args);
      const b = args[0] as Buffer;
      for (let at = 0; at < b.length; ) {
        const n = Math.min(b.length - at, size());
        emit('data', b.subarray(at, at + n));
        at += n;
      }
      return true;
    }) as typeof s.emit;
    return s;
  };
}

describe.skipIf(!REAL)('postgres.js reading messages cut anywhere by the socket', () => {
  if (!REAL) console.log('skipped: postgres.js runs only against PostgreSQL (SVC_TEST_REAL=1 and DATABASE_URL)');

  it('rows of a query and of a binary COPY arrive whole, in order, whatever the chunks', async () => {
    const base = await createTestDb();
    const r = rng(20261205);
    // Mostly 1-8 bytes (headers split), else up to 3,000 (a message over several chunks, or several in one).
    const size = () => (r() < 0.3 ? 1 + Math.floor(r() * 8) : 1 + Math.floor(r() * 3000));
    // postgres.js takes a connected socket from `socket` (connection.js); its types do not name the option.
    const options = { password: DB_PASSWORD, max: 1, socket: recutSocket(base.appUrl!, size), onnotice: () => {} };
    const sql = postgres(base.appUrl!, options);
    try {
      const rows = await sql<{ g: number; t: string }[]>`SELECT g, repeat(md5(g::text), g % 40) AS t FROM generate_series(1, 3000) g ORDER BY g`;
      expect(rows.length).toBe(3000);
      const md5 = (g: number) => createHash('md5').update(String(g)).digest('hex');
      rows.forEach((row, i) => {
        expect(row.g).toBe(i + 1);
        expect(row.t).toBe(md5(i + 1).repeat((i + 1) % 40));
      });

      // Read as svc reads a COPY (flowing, the socket resumed at the end: see copy-binary.ts).
      const got: string[] = [];
      const stream = await sql`COPY (SELECT g, repeat('y', g % 700) FROM generate_series(1, 2000) g ORDER BY g) TO STDOUT WITH (FORMAT binary)`.readable();
      await forEachCopyBinaryRow(stream, 2, (buf, f) => got.push(`${buf.readInt32BE(f[0]!)}:${buf.toString('latin1', f[2]!, f[2]! + f[3]!)}`));
      expect(got).toEqual(Array.from({ length: 2000 }, (_, k) => `${k + 1}:${'y'.repeat((k + 1) % 700)}`));
      // And the connection goes on: a query after the COPY.
      expect(await sql`SELECT 42 AS x`).toEqual([{ x: 42 }]);
    } finally {
      await sql.end();
      await base.close();
    }
  });
});
