/**
 * `verifyAuditChain`: recomputes both hash chains over every chained record, in ascending
 * integer chain_sequence order, with constant memory whatever the chain's length.
 *
 * On PostgreSQL the records arrive as one `COPY (SELECT ...) TO STDOUT` stream (PostgreSQL
 * and Node work at the same time; a cursor makes them take turns at half the speed); on
 * PGlite they are read in pages by chain_sequence. Either way the database renders the
 * values in their hashed text form (ISO time, 'true'/'false', JSON arrays) and the checker
 * below does the rest. The first failure is reported; the stream is still read to its end
 * so the connection stays usable.
 */
import type { AppContext } from '../../shared/app-context.js';
import { genesisHash } from '../../shared/app-context.js';
import { canonicalJson, LEGACY_SENTINEL, sha256Hex } from './hash.js';
import { forEachCopyRow } from './copy-text.js';

export interface AuditVerifyResult {
  status: 'ok' | 'tampered';
  record_count: number;
  legacy_record_count: number;
  first_chained_sequence: number | null;
  last_verified_at: string;
  tampered_at_sequence: number | null;
  tampered_field_chain: 'record_hash' | 'content_hash' | null;
  error: string | null;
  genesis_hash: string | null;
  deployment_id: string | null;
  initialized_at: string | null;
}

/**
 * What the database renders for each chained record: the plain columns, plus the spec's
 * record_content (`rc`, a cheap concatenation) and requested_at as ISO text. Everything of
 * the content chain's canonical form is built here: asking the database for to_json() text
 * made it four times slower than the checking itself.
 */
export const COLUMNS = [
  'r.chain_sequence::text',
  "r.chain_sequence::text || r.request_id || coalesce(r.agent_id, '') || r.task_type || r.intent_valid::text || x.ts",
  'r.request_id',
  'r.agent_id',
  'r.task_type',
  'r.request_params::text',
  'r.intent_valid::text',
  'r.validation_errors::text',
  'r.context_bundle_ids::text',
  'r.context_scd_ids::text',
  'r.processing_time_ms::text',
  'x.ts',
  'r.chain_id',
  'r.parent_request_id',
  'r.previous_hash',
  'r.record_hash',
  'r.content_hash',
]
  // Distinct names: PGlite returns rows as objects, in column order.
  .map((c, i) => `${c} AS c${String(i).padStart(2, '0')}`)
  .join(', ');
export const FROM = `agent_context_requests r, LATERAL (SELECT to_char(r.requested_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ts) x`;
const N_COLUMNS = 17;

type Row = Array<string | null>;

// eslint-disable-next-line no-control-regex
const NON_ASCII = /[^\x00-\x7f]/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x1f]/;

/** `<UTF-8 byte length>:<text>,`; `ascii` says the whole row is ASCII (length = bytes). */
function ns(s: string, ascii: boolean): string {
  return `${ascii || !NON_ASCII.test(s) ? s.length : Buffer.byteLength(s, 'utf8')}:${s},`;
}

/** JSON text of a nullable string. */
const jsonText = (s: string | null) => (s === null ? 'null' : JSON.stringify(s));

/**
 * The canonical JSON of a jsonb column's text ('null' for SQL NULL). Nothing is remembered
 * across rows: anything kept for thousands of rows is promoted to V8's old generation and
 * piles up there as garbage until a full collection (a memo here grew the heap by ~40 MB
 * per 150,000 records).
 */
const canonicalJsonb = (s: string | null) => (s === null ? 'null' : canonicalJson(JSON.parse(s)));

/** Elements of a PostgreSQL array literal (text[] output): quoting, escapes and NULL. */
export function parsePgTextArray(lit: string): Array<string | null> {
  const out: Array<string | null> = [];
  let i = 1;
  const end = lit.length - 1;
  if (end <= i) return out;
  while (i <= end) {
    if (lit[i] === '"') {
      let v = '';
      i++;
      while (i < end && lit[i] !== '"') {
        if (lit[i] === '\\') i++;
        v += lit[i++];
      }
      out.push(v);
      i += 2; // closing quote and the comma (or the closing brace)
    } else {
      let j = lit.indexOf(',', i);
      if (j < 0) j = end;
      const v = lit.slice(i, j);
      out.push(v === 'NULL' ? null : v);
      i = j + 1;
    }
  }
  return out;
}

/** Canonical JSON of a text[] column's literal ('null' for SQL NULL). */
function arrayJson(lit: string | null): string {
  if (lit === null) return 'null';
  if (lit === '{}') return '[]';
  // Common case: no quoting, no escapes, no NULL element, no character JSON escapes.
  if (!lit.includes('"') && !lit.includes('\\') && !CONTROL.test(lit) && !/(^|,)NULL(,|$)/.test(lit.slice(1, -1))) {
    return `["${lit.slice(1, -1).replaceAll(',', '","')}"]`;
  }
  return canonicalJson(parsePgTextArray(lit));
}

interface Failure {
  seq: number;
  chain: 'record_hash' | 'content_hash';
  error: string;
}

/** Feeds records in order; remembers the first failure. */
class ChainChecker {
  count = 0;
  first: number | null = null;
  failure: Failure | null = null;
  private lastSeq = 0;
  private prevRh: string;
  private prevCh: string;

  constructor(
    genesis: string,
    /** The sequence the first chained record must carry (after the last legacy record). */
    private readonly expectedFirst: number,
  ) {
    this.prevRh = genesis;
    this.prevCh = genesis;
  }

  fail(seq: number, chain: Failure['chain'], error: string): void {
    this.failure ??= { seq, chain, error };
  }

  check(r: Row, ascii = false): void {
    this.count++;
    if (this.failure) return;
    const seqText = r[0]!;
    const seq = Number(seqText);
    const expected = this.first === null ? this.expectedFirst : this.lastSeq + 1;
    if (this.first === null) this.first = seq;
    if (seq !== expected) {
      return this.fail(expected, 'record_hash', `record ${expected} is missing: the chain goes from ${expected - 1} to ${seq}`);
    }
    this.lastSeq = seq;
    const [, rc, rid, aid, task, params, intent, verr, bids, sids, ms, ts, chainId, parent, prev, rh, ch] = r as string[];
    if (prev !== this.prevRh) {
      return this.fail(seq, 'record_hash', `previous_hash of record ${seq} is not the record_hash of ${seq === this.expectedFirst ? 'the genesis' : `record ${seq - 1}`}`);
    }
    if (sha256Hex(rc + this.prevRh) !== rh) return this.fail(seq, 'record_hash', `record_hash of record ${seq} does not match its fields`);
    let wantCh = '';
    try {
      wantCh = sha256Hex(
        this.prevCh +
          ns(seqText, true) +
          ns(JSON.stringify(rid), ascii) +
          ns(jsonText(aid), ascii) +
          ns(JSON.stringify(task), ascii) +
          ns(canonicalJsonb(params), false) +
          ns(intent!, true) +
          ns(canonicalJsonb(verr), false) +
          ns(arrayJson(bids), ascii) +
          ns(arrayJson(sids), ascii) +
          ns(ms ?? 'null', true) +
          ns(`"${ts}"`, true) +
          ns(jsonText(chainId), ascii) +
          ns(jsonText(parent), ascii),
      );
    } catch {
      /* unparsable stored text: the record does not verify */
    }
    if (wantCh !== ch) return this.fail(seq, 'content_hash', `content_hash of record ${seq} does not match its fields`);
    this.prevRh = rh!;
    this.prevCh = ch!;
  }
}

const PAGE = 2000;

/** Checks a `COPY (SELECT COLUMNS ...) TO STDOUT` stream of chained records (exported for benchmarks). */
export async function checkCopyStream(stream: import('node:stream').Readable, genesis: string, expectedFirst: number): Promise<{ count: number; failure: Failure | null }> {
  const checker = new ChainChecker(genesis, expectedFirst);
  await forEachCopyRow(stream, N_COLUMNS, (row, ascii) => checker.check(row, ascii));
  return checker;
}

/** Verifies both chains. A mismatch is a result (`tampered`), never an exception. */
export async function verifyAuditChain(ctx: Pick<AppContext, 'db' | 'clock'>): Promise<AuditVerifyResult> {
  const { db } = ctx;
  const [g] = await db.query<{ deployment_id: string; genesis_hash: string; initialized_at: Date }>(
    'SELECT deployment_id, genesis_hash, initialized_at FROM audit_chain_genesis ORDER BY id LIMIT 1',
  );
  const [legacy] = await db.query<{ n: number; last: number | null }>(
    `SELECT count(*)::int8 AS n, max(chain_sequence) AS last FROM agent_context_requests WHERE record_hash = $1`,
    [LEGACY_SENTINEL],
  );
  const legacyCount = Number(legacy?.n ?? 0);
  const checker = new ChainChecker(g?.genesis_hash ?? '', Number(legacy?.last ?? 0) + 1);

  const where = `r.record_hash <> '${LEGACY_SENTINEL}'`;
  if (db.raw) {
    const stream = await db.raw.unsafe(`COPY (SELECT ${COLUMNS} FROM ${FROM} WHERE ${where} ORDER BY r.chain_sequence) TO STDOUT`).readable();
    await forEachCopyRow(stream, N_COLUMNS, (row, ascii) => checker.check(row, ascii));
  } else {
    let after = -1;
    for (;;) {
      const rows = await db.query(`SELECT ${COLUMNS} FROM ${FROM} WHERE ${where} AND r.chain_sequence > $1 ORDER BY r.chain_sequence LIMIT ${PAGE}`, [after]);
      for (const r of rows) checker.check(Object.values(r) as Row);
      if (rows.length < PAGE) break;
      after = Number(Object.values(rows[rows.length - 1]!)[0]);
    }
  }

  if (!g && checker.first !== null) {
    checker.failure = { seq: checker.first, chain: 'record_hash', error: 'the genesis row is missing' };
  } else if (g && checker.first !== null && genesisHash(g.deployment_id, g.initialized_at) !== g.genesis_hash) {
    checker.failure = { seq: checker.first, chain: 'record_hash', error: 'the genesis hash does not match its deployment_id and initialized_at' };
  }
  const f = checker.failure;
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
  };
}
