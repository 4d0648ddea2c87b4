/**
 * Verify's checking threads (verify-thread.ts) on the binary COPY of a real chain, cut into
 * chunks of every size: the threads' merged answer is the one-thread checker's; a chain with
 * a changed record makes them read again (ReadAgain), where one thread names the record; a
 * stream of more segments than may be in flight is held back and still checked whole.
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../../../test/harness.js';
import { ensureGenesis, systemClock } from '../../shared/app-context.js';
import { memoryLogger } from '../../shared/logger.js';
import { ByteChainChecker, N_CHECK_COLUMNS } from './chain-check.js';
import { CopyBinaryReader } from './copy-binary.js';
import { copyQuery } from './verify.js';
import { checkCopyStream, ReadAgain, type CheckResult } from './verify-thread.js';
import { AuditWriter } from './writer.js';

let t: TestDb;
let genesis: string;
/** The binary COPY of the chain, as verify reads it. */
let copy: Buffer;
const N = 3_000;

async function copyBytes(): Promise<Buffer> {
  if (t.db.pglite) {
    const res = await t.db.pglite.query(copyQuery().replace('TO STDOUT', "TO '/dev/blob'"));
    return Buffer.from(await res.blob!.arrayBuffer());
  }
  const chunks: Buffer[] = [];
  for await (const c of await t.db.raw!.unsafe(copyQuery()).readable()) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** `bytes` as a stream of chunks of 1 to `max` bytes (a fixed pseudo-random draw). */
function chunked(bytes: Buffer, max: number): Readable {
  const parts: Buffer[] = [];
  let seed = 7;
  for (let at = 0; at < bytes.length; ) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const n = 1 + (seed % max);
    parts.push(bytes.subarray(at, at + n));
    at += n;
  }
  return Readable.from(parts, { objectMode: false });
}

const answer = (r: CheckResult) => ({ count: r.checker.count, first: r.checker.first, failure: r.checker.failure, leafFailure: r.checker.leafFailure, leaves: r.checker.leavesChecked });

beforeAll(async () => {
  t = await createTestDb();
  await ensureGenesis(t.db, randomUUID(), systemClock);
  [{ genesis_hash: genesis }] = (await t.db.query<{ genesis_hash: string }>('SELECT genesis_hash FROM audit_chain_genesis')) as [{ genesis_hash: string }];
  const writer = new AuditWriter({ db: t.db, clock: systemClock, logger: memoryLogger() });
  const ids = Object.freeze(['scd:a:x', 'scd:a:y']) as string[];
  await Promise.all(
    Array.from({ length: N }, (_, i) =>
      writer.append({
        requestId: randomUUID(),
        agentId: null,
        taskType: i % 3 ? 'code_review' : 'deploy',
        requestParams: i % 2 ? { ticket: `T-${i}`, note: 'n'.repeat(i % 1500) } : null,
        intentValid: i % 5 !== 0,
        validationErrors: i % 5 ? null : { error_code: 'INTENT_NOT_ALLOWED' },
        contextBundleIds: Object.freeze(['bundle:a:1.0.0']) as string[],
        contextScdIds: ids,
        processingTimeMs: i % 7,
        chainId: null,
        parentRequestId: null,
      }),
    ),
  );
  await writer.drain();
  copy = await copyBytes();
}, 120_000);
afterAll(async () => {
  await t?.close();
});

describe('verify on checking threads', () => {
  it('gives the one-thread answer wherever the threads take over and however the stream is cut', async () => {
    const one = answer(await checkCopyStream(chunked(copy, 4096), new ByteChainChecker(genesis, null), false, Infinity));
    expect(one).toMatchObject({ count: N, first: 1, failure: null, leafFailure: null, leaves: N });
    // More than 8 segments of 256 KB: the stream is paused and resumed on the threads' acks.
    expect(copy.length).toBeGreaterThan(2 * 1024 * 1024);
    for (const [after, block, max] of [
      [1, 7, 700],
      [1_000, 256, 65_536],
      [2_999, 1, 1],
    ] as const) {
      const r = await checkCopyStream(chunked(copy, max), new ByteChainChecker(genesis, null), false, after, block);
      expect(r.handedOverAt).toBeGreaterThanOrEqual(after);
      expect(answer(r)).toEqual(one);
    }
  }, 120_000);

  it('reads again on one thread when a record was changed, and one thread names it', async () => {
    // A byte of record 2,000's task_type (its 4th column) changed, in place.
    const bytes = Buffer.from(copy);
    let seq = 0;
    let at = -1;
    const reader = new CopyBinaryReader(N_CHECK_COLUMNS, (buf, f) => {
      if (++seq === 2_000) at = f[6]!;
    });
    reader.push(bytes);
    reader.end();
    bytes[at] = bytes[at]! ^ 0x01;
    await expect(checkCopyStream(chunked(bytes, 4096), new ByteChainChecker(genesis, null), false, 10, 64)).rejects.toBeInstanceOf(ReadAgain);
    const one = await checkCopyStream(chunked(bytes, 4096), new ByteChainChecker(genesis, null), false, Infinity);
    expect(one.checker.failure).toMatchObject({ seq: 2_000, chain: 'record_hash' });
  }, 120_000);
});
