/**
 * `verifyAuditChain`: recomputes both hash chains over every chained record, in ascending
 * integer chain_sequence order, with constant memory whatever the chain's length.
 *
 * The records arrive as binary COPY (`COPY (SELECT ...) TO STDOUT WITH (FORMAT binary)`):
 * the database sends each column in its binary form, which costs it less than rendering
 * text (no timestamp or array formatting, no escaping), and the checker (chain-check.ts)
 * writes the hash inputs from those bytes. On PostgreSQL it is one stream, postgres.js's own
 * COPY stream (`.readable()`, read in flowing mode), so PostgreSQL and Node work at the same
 * time (a cursor makes them take turns at half the speed). It runs in a read-only
 * REPEATABLE READ transaction of its own, with the settings of COPY_OUT_SETTINGS; the legacy
 * records' count (a partial index) runs meanwhile on the pool. After its first HAND_OVER_AFTER
 * records two worker threads check the rest, each every other block of rows, while this
 * thread only receives the stream (verify-thread.ts); when they find anything the records are
 * read again on this thread, which names the failure exactly as before.
 * The records are read in storage order first (a sequential scan, about a sixth cheaper for
 * the database than an index scan in chain order): that is chain order in a table only ever
 * appended to under the chain lock, and the read counts only if every sequence rises, which
 * makes it the very rows in the very order of the chain-order query; otherwise they are read
 * again in chain order, in the same transaction (the same snapshot, so the same rows).
 * On PGlite the same COPY is read in pages by chain_sequence (`TO '/dev/blob'`). The first
 * failure is reported; the stream is still read to its end so the connection ends in order.
 */
import type postgres from 'postgres';
import type { AppContext } from '../../shared/app-context.js';
import { genesisHash } from '../../shared/app-context.js';
import { computeRecordHash, LEGACY_SENTINEL, type ChainFields } from './hash.js';
import { CopyBinaryReader, int64 } from './copy-binary.js';
import { checkCopyStream, ReadAgain, type CheckResult } from './verify-thread.js';
import { ByteChainChecker, CHECK_COLUMNS, N_CHECK_COLUMNS, type LeafFailure } from './chain-check.js';
import type { components } from '../../../gen/openapi/control-plane.js';
import { verifyTree } from '../tlog/verify-tree.js';
import { verifyManagementEvents } from './verify-events.js';

export type AuditVerifyResult = components['schemas']['AuditVerifyResult'];

const PAGE = 2000;

/**
 * The query of the chained records as binary COPY (`extra`: more conditions): in chain
 * order, or (`storageOrder`) as the table stores them, which a sequential scan sends for
 * less than an index scan in chain order.
 */
export function copyQuery(extra = '', limit = '', storageOrder = false): string {
  const order = storageOrder ? '' : ' ORDER BY r.chain_sequence';
  return `COPY (SELECT ${CHECK_COLUMNS} FROM agent_context_requests r WHERE r.record_hash <> '${LEGACY_SENTINEL}'${extra}${order}${limit}) TO STDOUT WITH (FORMAT binary)`;
}

/** Which read of the records a verify made: storage order first, chain order when that was not it. */
export type VerifyPass = 'storage order' | 'chain order';

/**
 * The session settings of verify's read (SET LOCAL in its transaction): a sequential scan
 * read for its storage order starts at the table's first page and runs in one process (no
 * joining another scan midway, no parallel workers interleaving rows).
 */
export const COPY_OUT_SETTINGS = { synchronize_seqscans: 'off', max_parallel_workers_per_gather: '0' } as const;

/**
 * Runs a COPY query of the checked columns through a checker made by `fresh`, on two more
 * threads after opts.handOverAfter rows (verify-thread.ts); with `ascendingOnly`, stops
 * checking at the first sequence that does not rise (`ascending` false), reading on to the end
 * so the statement ends in order. When the threads find a failure, or one fails, the records
 * are read again on this thread alone.
 */
async function checkCopy(sql: postgres.TransactionSql, query: string, fresh: () => ByteChainChecker, ascendingOnly: boolean, opts: VerifyOptions): Promise<CheckResult> {
  let read: CheckResult;
  try {
    read = await checkCopyStream(await sql.unsafe(query).readable(), fresh(), ascendingOnly, opts.handOverAfter ?? HAND_OVER_AFTER, opts.threadBlock);
  } catch (e) {
    if (!(e instanceof ReadAgain)) throw e;
    return checkCopyStream(await sql.unsafe(query).readable(), fresh(), ascendingOnly, Infinity);
  }
  if (read.handedOverAt !== null) opts.onHandOver?.(read.handedOverAt);
  return read;
}

/** Rows verify checks on the API's thread before two others take the rest over (verify-thread.ts). */
const HAND_OVER_AFTER = 16_384;

export interface VerifyOptions {
  /** Called with each read made (PostgreSQL). */
  onPass?: (pass: VerifyPass) => void;
  /** PostgreSQL: skip the storage-order read (tests compare the two). */
  chainOrderOnly?: boolean;
  /** PostgreSQL: rows checked on the API's thread before two others take over (HAND_OVER_AFTER; Infinity: this one alone). */
  handOverAfter?: number;
  /** Called for each read the checking threads took over, with the rows checked before. */
  onHandOver?: (rows: number) => void;
  /** Rows each checking thread checks in turn (verify-thread.ts; tests make it small). */
  threadBlock?: number;
}

/**
 * Verifies both chains, the management events' chain (verify-events.ts), and the
 * transparency log (src/core/tlog/verify-tree.ts: the stored tree against the records and
 * the latest checkpoint). record_count counts the context requests and the events. A mismatch is a result
 * (`tampered`), never an exception.
 */
export async function verifyAudit(ctx: AppContext): Promise<AuditVerifyResult> {
  // One after the other: the tree check's work on this thread while the records stream
  // (peak RSS 447-489 MB at 1,000,000 records when the two ran at once on one thread; 257 MB
  // with the records checked on other threads, against 219-241 one after the other).
  const { leafFailure, ...chains } = await verifyAuditChain(ctx);
  const events = await verifyManagementEvents(ctx, chains.genesis_hash);
  const tree = await verifyTree(ctx, leafFailure);
  const ok = chains.status === 'ok' && events.status === 'ok' && tree.status === 'ok';
  return { ...chains, record_count: chains.record_count + events.event_count, status: ok ? 'ok' : 'tampered', management_events: events, transparency_log: tree };
}

/**
 * The sequence of a chained record labelled LEGACY_PRE_AUDIT (the failure there), when the
 * chain's failure at `failedAt` is explained by one: a legacy record numbered after the first
 * chained record (legacy records only ever precede the chain), or the legacy record just
 * before the first chained one when its fields, chained from the genesis, give exactly the
 * `previous_hash` its successor carries. Null otherwise.
 */
async function relabelled(db: AppContext['db'], first: number | null, failedAt: number, genesis: string): Promise<{ seq: number; chain: 'record_hash'; error: string } | null> {
  const at = (seq: number) => ({ seq, chain: 'record_hash' as const, error: `record ${seq} is chained but labelled ${LEGACY_SENTINEL} (relabelled)` });
  if (first !== null) {
    const [late] = await db.query<{ s: number | string | null }>(
      `SELECT min(chain_sequence) AS s FROM agent_context_requests WHERE record_hash = $1 AND chain_sequence > $2`,
      [LEGACY_SENTINEL, first],
    );
    if (late?.s != null && Number(late.s) <= failedAt) return at(Number(late.s));
  }
  if (first === null || failedAt !== first) return null;
  const rows = await db.query<Record<string, unknown>>(
    `SELECT chain_sequence, request_id, agent_id, task_type, intent_valid, requested_at, previous_hash, record_hash FROM agent_context_requests
      WHERE chain_sequence IN ($1, $2) ORDER BY chain_sequence`,
    [first - 1, first],
  );
  const [prev, next] = rows;
  if (!prev || !next || Number(prev.chain_sequence) !== first - 1 || prev.record_hash !== LEGACY_SENTINEL) return null;
  const f = { chain_sequence: first - 1, request_id: String(prev.request_id), agent_id: (prev.agent_id as string | null) ?? null, task_type: String(prev.task_type), intent_valid: !!prev.intent_valid, requested_at: new Date(prev.requested_at as Date) };
  // The first chained record follows the genesis: if the legacy record before it was that
  // record, its fields chained from the genesis give the previous_hash its successor carries.
  return computeRecordHash(f as ChainFields, genesis) === next.previous_hash ? at(first - 1) : null;
}

/** Verifies both chains. A mismatch is a result (`tampered`), never an exception. */
export async function verifyAuditChain(
  ctx: Pick<AppContext, 'db' | 'clock'>,
  opts: VerifyOptions = {},
): Promise<Omit<AuditVerifyResult, 'transparency_log' | 'management_events'> & { leafFailure: LeafFailure | null }> {
  const { db } = ctx;
  const [g] = await db.query<{ deployment_id: string; genesis_hash: string; initialized_at: Date }>(
    'SELECT deployment_id, genesis_hash, initialized_at FROM audit_chain_genesis ORDER BY id LIMIT 1',
  );
  // Served by a partial index over the legacy rows alone (migration 0010); on PostgreSQL it
  // runs while the records stream.
  const legacyP = db.query<{ n: number; last: number | null }>(
    `SELECT count(*)::int8 AS n, max(chain_sequence) AS last FROM agent_context_requests WHERE record_hash = $1`,
    [LEGACY_SENTINEL],
  );
  legacyP.catch(() => {}); // awaited below, after the records when they fail first
  const genesis = g?.genesis_hash ?? '';
  let checker: ByteChainChecker;

  if (db.raw) {
    // The first record is judged once the legacy records' query is back. The records are
    // read in storage order first: in an append-only table written under the chain lock it
    // is chain order, and then the checker sees exactly the rows, in exactly the order, that
    // the chain-order query gives. Any sequence that does not rise (a row stored out of
    // place, wherever from) voids that read, and the records are read again in chain order.
    const fresh = () => new ByteChainChecker(genesis, null);
    let read: CheckResult | null = null;
    await db.raw.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (sql) => {
      for (const [k, v] of Object.entries(COPY_OUT_SETTINGS)) await sql.unsafe(`SET LOCAL ${k} = ${v}`);
      if (!opts.chainOrderOnly) {
        opts.onPass?.('storage order');
        read = await checkCopy(sql, copyQuery('', '', true), fresh, true, opts);
        if (read.ascending) return;
      }
      opts.onPass?.('chain order');
      read = await checkCopy(sql, copyQuery(), fresh, false, opts);
    });
    checker = read!.checker;
    const [legacy] = await legacyP;
    checker.settleFirst(Number(legacy?.last ?? 0) + 1);
  } else if (db.pglite) {
    const [legacy] = await legacyP;
    const c = new ByteChainChecker(genesis, Number(legacy?.last ?? 0) + 1);
    checker = c;
    let after = -1;
    for (;;) {
      const res = await db.pglite.query(copyQuery(` AND r.chain_sequence > ${after}`, ` LIMIT ${PAGE}`).replace('TO STDOUT', "TO '/dev/blob'"));
      let rows = 0;
      const reader = new CopyBinaryReader(N_CHECK_COLUMNS, (buf, f) => {
        rows++;
        after = int64(buf, f[0]!);
        c.row(buf, f);
      });
      reader.push(Buffer.from(await res.blob!.arrayBuffer()));
      reader.end();
      if (rows < PAGE) break;
    }
  } else {
    throw new Error('verifyAuditChain needs PostgreSQL or PGlite');
  }
  const [legacy] = await legacyP;
  const legacyCount = Number(legacy?.n ?? 0);

  if (!g && checker.first !== null) {
    checker.failure = { seq: checker.first, chain: 'record_hash', error: 'the genesis row is missing' };
  } else if (g && checker.first !== null && genesisHash(g.deployment_id, g.initialized_at) !== g.genesis_hash) {
    checker.failure = { seq: checker.first, chain: 'record_hash', error: 'the genesis hash does not match its deployment_id and initialized_at' };
  }
  // A chained record relabelled as legacy shows first as a break at the next record, or as a
  // chain that starts after it: it is reported at its own sequence.
  const f = checker.failure ? ((await relabelled(db, checker.first, checker.failure.seq, genesis)) ?? checker.failure) : null;
  return {
    status: f ? 'tampered' : 'ok',
    record_count: legacyCount + checker.count,
    legacy_record_count: legacyCount,
    first_chained_sequence: checker.first,
    last_verified_at: ctx.clock.now().toISOString(),
    tampered_at_sequence: f ? f.seq : null,
    tampered_field_chain: f ? f.chain : null,
    error: f ? f.error : null,
    genesis_hash: g?.genesis_hash ?? null,
    deployment_id: g?.deployment_id ?? null,
    initialized_at: g ? g.initialized_at.toISOString() : null,
    leafFailure: checker.leafFailure,
  };
}
