/**
 * The raw COPY tap (copy-out.ts): the framing state machine on synthetic protocol bytes cut
 * at every place, and on PostgreSQL (SVC_TEST_REAL=1) a dedicated connection that streams
 * COPY data, reports a failing COPY as an error, and keeps serving afterwards.
 */
import { describe, expect, it } from 'vitest';
import { CopyTap, openCopyOutConnection } from './copy-out.js';

const REAL = process.env.SVC_TEST_REAL === '1' && !!process.env.DATABASE_URL;

function msg(type: string, body: Buffer | string): Buffer {
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const h = Buffer.alloc(5);
  h[0] = type.charCodeAt(0);
  h.writeInt32BE(b.length + 4, 1);
  return Buffer.concat([h, b]);
}

/** A COPY's answer: CopyOutResponse, CopyData x n (the last one empty), CopyDone, CommandComplete, ReadyForQuery. */
function copyAnswer(payloads: Buffer[], opts: { error?: boolean } = {}) {
  const pre = [msg('H', Buffer.from([1, 0, 1, 0, 1])), msg('N', 'notice\0\0')];
  const data = payloads.map((p) => msg('d', p));
  const post = opts.error ? [msg('E', 'SERROR\0\0')] : [msg('c', ''), msg('C', 'COPY 3\0')];
  const z = msg('Z', 'I');
  return { bytes: Buffer.concat([...pre, ...data, ...post, z]), passed: Buffer.concat([...pre, ...post, z]), payload: Buffer.concat(payloads) };
}

/** Feeds `bytes` cut at the given places; returns what reached the sink and what went through. */
function run(tap: CopyTap, bytes: Buffer, cuts: number[]): { sunk: Buffer; passed: Buffer } {
  const sunk: Buffer[] = [];
  const passed: Buffer[] = [];
  tap.arm((b, s, e) => sunk.push(Buffer.from(b.subarray(s, e))));
  let at = 0;
  for (const c of [...cuts, bytes.length]) {
    // A copy of each piece: the tap must not rely on chunks staying put after the call.
    const out = tap.feed(Buffer.from(bytes.subarray(at, c)));
    if (out) passed.push(Buffer.from(out));
    const later = tap.takeHeld();
    if (later) passed.push(Buffer.from(later));
    at = c;
  }
  return { sunk: Buffer.concat(sunk), passed: Buffer.concat(passed) };
}

describe('COPY tap framing', () => {
  const payloads = [Buffer.from('row one'), Buffer.alloc(0), Buffer.from('row ☃ two, longer'), Buffer.from([0xff, 0xff])];
  const a = copyAnswer(payloads);
  const next = msg('D', 'the next statement'); // after ReadyForQuery: postgres.js's alone

  it('takes the CopyData payloads out and passes every other byte through, in one chunk', () => {
    const tap = new CopyTap();
    const r = run(tap, Buffer.concat([a.bytes, next]), []);
    expect(r.sunk).toEqual(a.payload);
    expect(r.passed).toEqual(Buffer.concat([a.passed, next]));
    expect(tap.armed).toBe(false);
  });

  it('gives the same bytes whatever the chunk boundaries: cut at every place, and in two places', () => {
    const all = Buffer.concat([a.bytes, next]);
    for (let i = 0; i <= all.length; i++) {
      const r = run(new CopyTap(), all, [i]);
      expect(r.sunk, `cut at ${i}`).toEqual(a.payload);
      expect(r.passed, `cut at ${i}`).toEqual(Buffer.concat([a.passed, next]));
    }
    for (let i = 0; i <= a.bytes.length; i += 3) {
      for (let j = i; j <= a.bytes.length; j += 2) {
        const r = run(new CopyTap(), all, [i, j]);
        expect(r.sunk).toEqual(a.payload);
        expect(r.passed).toEqual(Buffer.concat([a.passed, next]));
      }
    }
  });

  it('reads the bytes one at a time', () => {
    const all = Buffer.concat([a.bytes, next]);
    const r = run(new CopyTap(), all, Array.from({ length: all.length }, (_, i) => i));
    expect(r.sunk).toEqual(a.payload);
    expect(r.passed).toEqual(Buffer.concat([a.passed, next]));
  });

  it('passes an ErrorResponse through and disarms at ReadyForQuery', () => {
    const e = copyAnswer(payloads.slice(0, 2), { error: true });
    const tap = new CopyTap();
    const r = run(tap, e.bytes, [7]);
    expect(r.sunk).toEqual(e.payload);
    expect(r.passed).toEqual(e.passed);
    expect(tap.armed).toBe(false);
  });

  it('holds back what follows a CopyOutResponse in the same chunk, for after the caller has the stream', () => {
    const tap = new CopyTap();
    tap.arm(() => {});
    const e = copyAnswer(payloads.slice(0, 2), { error: true });
    const now = tap.feed(Buffer.from(e.bytes))!;
    const h = msg('H', Buffer.from([1, 0, 1, 0, 1]));
    expect(now).toEqual(h);
    expect(Buffer.concat([now, tap.takeHeld()!])).toEqual(e.passed);
    expect(tap.takeHeld()).toBeNull();
  });

  it('passes everything through when not armed', () => {
    const tap = new CopyTap();
    const c = Buffer.from(a.bytes);
    expect(tap.feed(c)).toBe(c);
  });

  it('refuses a message length that cannot be', () => {
    const tap = new CopyTap();
    tap.arm(() => {});
    const bad = Buffer.from([0x64, 0, 0, 0, 2, 1, 2]);
    expect(() => tap.feed(bad)).toThrow(/length/);
  });
});

describe.skipIf(!REAL)('dedicated COPY connection (PostgreSQL)', () => {
  it('streams a COPY, reports a failing one, and keeps serving', async () => {
    const conn = await openCopyOutConnection({ url: process.env.DATABASE_URL! });
    try {
      const got = async (q: string) => {
        const parts: Buffer[] = [];
        await conn.copyOut(q, (b, s, e) => parts.push(Buffer.from(b.subarray(s, e))));
        return Buffer.concat(parts).toString();
      };
      // Long enough to span many socket chunks.
      const text = await got(`COPY (SELECT i, repeat('x', i % 300) FROM generate_series(1, 20000) i) TO STDOUT`);
      const lines = text.split('\n');
      expect(lines.length).toBe(20001);
      expect(lines[19999]).toBe(`20000\t${'x'.repeat(20000 % 300)}`);
      await expect(got(`COPY (SELECT 1 / (i - 5000) FROM generate_series(1, 10000) i) TO STDOUT`)).rejects.toThrow(/division by zero/);
      // Failing on its first row: CopyOutResponse, ErrorResponse and ReadyForQuery come in one read.
      await expect(got(`COPY (SELECT 1 / (i - 1) FROM generate_series(1, 2) i) TO STDOUT`)).rejects.toThrow(/division by zero/);
      expect(await got(`COPY (SELECT 'again') TO STDOUT`)).toBe('again\n');
    } finally {
      await conn.close();
    }
  });
});
