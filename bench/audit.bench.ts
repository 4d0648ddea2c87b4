/**
 * Audit benchmarks (benchmarks.md): verify speed and peak memory on a chain of 1,000,000
 * records (100,000 on PGlite, labelled), and the group-commit writer's own rate.
 *
 * The chain is generated with valid hashes (the product's hash rules) and bulk-loaded as the
 * owner with COPY; verify then runs in a separate server process (`GET /api/audit/verify`),
 * whose peak RSS (VmHWM) is read from /proc before and after.
 */
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { Bench } from './run.js';
import { closedLoop, cpuSeconds, fmt, peakRssMb } from './load-gen.js';
import { ADMIN_KEY, createTestDb, type TestDb } from '../test/harness.js';
import { spawnApi } from '../test/audit/server-process.js';
import { ensureGenesis, systemClock } from '../src/shared/app-context.js';
import { computeContentHash, computeRecordHash, contentHashInput, recordHashInput, sha256Hex, type ChainFields } from '../src/core/audit/hash.js';
import { AuditWriter, textArrayLiteral } from '../src/core/audit/writer.js';
import { COPY_OUT_SETTINGS, copyQuery, verifyAuditChain } from '../src/core/audit/verify.js';
import { memoryLogger } from '../src/shared/logger.js';
import { sha256Into, sha256Native } from '../src/shared/sha256.js';
import { auditRecordJson } from '../src/core/tlog/leaves.js';
import { leafHash } from '../src/core/tlog/merkle.js';

const SCDS = ['scd:meta:ai-usage-policy', 'scd:meta:data-classification', 'scd:meta:glossary', 'scd:meta:review-policy', 'scd:project:auth-rules', 'scd:project:input-validation', 'scd:project:secrets-handling', 'scd:project:threat-model'];
const BUNDLES = ['bundle:meta:0.2.0', 'bundle:security:0.1.0'];

/** Record i of a synthetic chain: mostly accepted W1-like requests, every fifth refused. */
function fields(i: number, seq: number, at: Date): ChainFields {
  const refused = i % 5 === 4;
  return {
    chain_sequence: seq,
    request_id: randomUUID(),
    agent_id: `agent:bench-${i % 100}`,
    task_type: refused ? 'deploy_prod' : 'code_review',
    request_params: i % 3 === 0 ? { ticket: `T-${i}` } : null,
    intent_valid: !refused,
    validation_errors: refused ? { error_code: 'INTENT_NOT_ALLOWED', error_message: 'Task type "deploy_prod" is not among the agent\'s allowed intents' } : null,
    context_bundle_ids: refused ? null : BUNDLES,
    context_scd_ids: refused ? null : SCDS,
    processing_time_ms: i % 7,
    requested_at: at,
    chain_id: null,
    parent_request_id: null,
  };
}

/** The leaf data of record i of such a chain (its canonical JSON as the read endpoint answers it). */
function leafData(f: ChainFields, i: number, prevRh: string, rh: string, ch: string): string {
  return auditRecordJson({
    request_id: f.request_id, agent_id: f.agent_id, task_type: f.task_type, request_params: f.request_params, intent_valid: f.intent_valid,
    validation_errors: f.validation_errors, context_bundle_ids: f.context_bundle_ids, context_scd_ids: f.context_scd_ids,
    processing_time_ms: f.processing_time_ms, requested_at: f.requested_at.toISOString(), chain_sequence: f.chain_sequence,
    previous_hash: prevRh, record_hash: rh, content_hash: ch, chain_id: null, parent_request_id: null, leaf_index: i,
  });
}

/** Runs `query` (a COPY ... TO STDOUT) through psql into /dev/null, with `env` added to this process's. */
export function psqlCopyOut(url: string, query: string, env: Record<string, string> = {}): Promise<void> {
  return new Promise<void>((resolve, reject) =>
    spawn('psql', [url, '-q', '-c', query], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] })
      .on('error', reject)
      .on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`psql exited with ${code}`)))),
  );
}

/**
 * The checking's floor on this machine, in µs of CPU per record: SHA-256 alone of the four
 * inputs each record of the chain needs hashed by any verify of the chains and the tree
 * (GET /api/audit/verify, and `svc audit verify --since` in the CLI): its record_hash input,
 * its content_hash input, 0x00 and its leaf data, and one tree node (0x01 and two hashes: a
 * tree of n leaves has n - 1). src/shared/sha256.ts's sha256Into, as verify and the CLI call it
 * (the native addon when built, see sha256Native),
 * with each output as they ask for it; the inputs of `m` records of this chain are prepared
 * beforehand, so nothing but the hashing is timed. The lowest of three rounds.
 */
export function hashFloorUs(m: number): number {
  const inputs: Buffer[] = [];
  let prevRh = '0'.repeat(64);
  let prevCh = prevRh;
  const at = Date.now();
  for (let i = 0; i < m; i++) {
    const f = fields(i, i + 1, new Date(at + i));
    const rIn = recordHashInput(f, prevRh);
    const cIn = contentHashInput(f, prevCh);
    const rh = sha256Hex(rIn);
    const ch = sha256Hex(cIn);
    inputs.push(Buffer.from(rIn), Buffer.from(cIn), Buffer.from(`\0${leafData(f, i, prevRh, rh, ch)}`), Buffer.alloc(65, 1));
    prevRh = rh;
    prevCh = ch;
  }
  const out = Buffer.alloc(32);
  let best = Infinity;
  for (let r = 0; r < 3; r++) {
    const c0 = process.cpuUsage();
    for (let k = 0; k < inputs.length; k++) sha256Into(out, 0, inputs[k]!, 0, inputs[k]!.length);
    const c = process.cpuUsage(c0);
    best = Math.min(best, (c.user + c.system) / m);
  }
  return best;
}

/** Current resident set size (VmRSS) of a process, in MB. */
function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

const COPY_COLUMNS = 'request_id, agent_id, task_type, request_params, intent_valid, validation_errors, context_bundle_ids, context_scd_ids, processing_time_ms, requested_at, chain_sequence, previous_hash, record_hash, content_hash, chain_id, parent_request_id, leaf_index, leaf_hash';
const N = (v: unknown) => (v === null || v === undefined ? '\\N' : String(v));

/** Where a loaded chain continues from: the first record's index (its leaf index, chain_sequence - 1) and the chain tip's two hashes. */
interface ChainStart {
  first: number;
  prevRh: string;
  prevCh: string;
  /** requested_at of record i is baseMs + i (default: now - (first + n), so the last is about now). */
  baseMs?: number;
}

/**
 * Waits until the analytics rollup (src/core/analytics/rollup.ts) has counted every record of
 * the chain; returns the seconds waited. A chain bulk-loaded past the server is rolled up by
 * the first API process that starts, 200,000 records a run and a run a second, in PostgreSQL:
 * a benchmark timed meanwhile shares the two cores with it (1,000,000 records are about 8 s of
 * a backend's CPU), where in production the rollup follows the writes a second behind them.
 * Set-up, not a target.
 */
export async function rollupCaughtUp(t: TestDb, timeoutMs = 600_000): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const [r] = await t.owner.query<{ done: boolean }>(
      'SELECT (SELECT last_sequence FROM analytics_watermark) >= coalesce((SELECT max(chain_sequence) FROM agent_context_requests), 0) AS done',
    );
    if (r!.done) return (performance.now() - t0) / 1000;
    if (performance.now() - t0 > timeoutMs) throw new Error(`the analytics rollup did not catch up with the chain in ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Generates `n` chained records and loads them as the owner; returns the seconds taken.
 * Record i carries chain_sequence i + 1 and leaf_index i: from the genesis by default, or
 * continuing a chain loaded before (`start`, on a database holding no other audit record).
 */
export async function loadChain(t: TestDb, n: number, genesis: string, start?: ChainStart): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < 100; i++) {
    await t.owner.query(`INSERT INTO agents (agent_id, name, role_id, created_by) VALUES ($1, $1, 'role:security', 'bench') ON CONFLICT DO NOTHING`, [`agent:bench-${i}`]);
  }
  const first = start?.first ?? 0;
  let prevRh = start?.prevRh ?? genesis;
  let prevCh = start?.prevCh ?? genesis;
  const base = start?.baseMs ?? Date.now() - (first + n);
  const lineOf = (k: number) => {
    const i = first + k;
    const f = fields(i, i + 1, new Date(base + i));
    const rh = computeRecordHash(f, prevRh);
    const ch = computeContentHash(f, prevCh);
    // The leaf hash the writer's statement stores with each record (migration 0011).
    const leaf = leafHash(Buffer.from(leafData(f, i, prevRh, rh, ch), 'utf8'));
    const line = [
      f.request_id,
      f.agent_id,
      f.task_type,
      N(f.request_params && JSON.stringify(f.request_params)),
      f.intent_valid ? 't' : 'f',
      N(f.validation_errors && JSON.stringify(f.validation_errors)),
      N(f.context_bundle_ids && textArrayLiteral(f.context_bundle_ids)),
      N(f.context_scd_ids && textArrayLiteral(f.context_scd_ids)),
      N(f.processing_time_ms),
      f.requested_at.toISOString(),
      f.chain_sequence,
      prevRh,
      rh,
      ch,
      '\\N',
      '\\N',
      i,
      `\\x${leaf.toString('hex')}`,
    ].join('\t');
    prevRh = rh;
    prevCh = ch;
    return line + '\n';
  };
  if (t.owner.raw) {
    const w = await t.owner.raw.unsafe(`COPY agent_context_requests (${COPY_COLUMNS}) FROM STDIN`).writable();
    let i = 0;
    while (i < n) {
      let chunk = '';
      // COPY text format: a backslash in the data is written doubled (\N stays the NULL marker).
      for (let j = 0; j < 2000 && i < n; j++, i++) chunk += lineOf(i).replace(/\\(?!N)/g, '\\\\');
      if (!w.write(chunk)) await new Promise((r) => w.once('drain', r));
    }
    await new Promise<void>((resolve, reject) => w.end((e?: Error | null) => (e ? reject(e) : resolve())));
    await t.owner.query('ANALYZE agent_context_requests');
  } else {
    // PGlite: multi-row INSERTs in one transaction.
    await t.owner.tx(async (tx) => {
      for (let i = 0; i < n; ) {
        const rows: string[] = [];
        for (let j = 0; j < 1000 && i < n; j++, i++) rows.push(lineOf(i).slice(0, -1));
        await tx.query(
          `INSERT INTO agent_context_requests (${COPY_COLUMNS})
           SELECT c[1], c[2], c[3], nullif(c[4], '\\N')::jsonb, c[5]::boolean, nullif(c[6], '\\N')::jsonb, nullif(c[7], '\\N')::text[], nullif(c[8], '\\N')::text[],
                  nullif(c[9], '\\N')::int, c[10]::timestamptz, c[11]::bigint, c[12], c[13], c[14], NULL, NULL, c[17]::bigint, c[18]::bytea
             FROM (SELECT string_to_array(l, E'\\t') AS c FROM unnest($1::text[]) AS l) x`,
          [rows],
        );
      }
    });
  }
  return (performance.now() - t0) / 1000;
}

/** Waits until the process used under 5% of a core over each of two consecutive half seconds; returns the seconds waited. */
async function serverQuiet(pid: number, timeoutMs = 120_000): Promise<number> {
  const t0 = performance.now();
  let last = cpuSeconds(pid);
  for (let calm = 0; calm < 2 && performance.now() - t0 < timeoutMs; ) {
    await new Promise((r) => setTimeout(r, 500));
    const now = cpuSeconds(pid);
    calm = now - last < 0.025 ? calm + 1 : 0;
    last = now;
  }
  return (performance.now() - t0) / 1000;
}

export default async function auditBench(b: Bench): Promise<void> {
  const n = b.real ? Number(process.env.BENCH_AUDIT_RECORDS ?? 1_000_000) : 100_000;
  const db = b.real ? 'PostgreSQL' : 'PGlite';
  const t = await createTestDb();
  try {
    const deploymentId = randomUUID();
    await ensureGenesis(t.db, deploymentId, systemClock);
    const [g] = await t.db.query<{ genesis_hash: string }>('SELECT genesis_hash FROM audit_chain_genesis');
    const loadS = await loadChain(t, n, g!.genesis_hash);
    b.print(`${fmt(n / loadS)} records/s | chain generation with valid hashes + bulk load as owner (set-up, not a target) | ${n} records | ${db}`);

    if (b.real) {
      // BENCH_NODE_ARGS: extra Node flags for the server, as in the context benchmark (--cpu-prof ...).
      const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
      const env = { DATABASE_MIGRATION_URL: t.ownerUrl!, LOG_LEVEL: 'error' };
      // Until a checkpoint covers the chain. The API answers /health before its start hooks
      // end: the transparency log's start check integrates every record not yet in the tree.
      const covered = async (url: string, since: number) => {
        for (let size = -1; size < n; await new Promise((r) => setTimeout(r, 200))) {
          const c = await fetch(`${url}/api/audit/tlog/checkpoint`);
          size = c.status === 200 ? Number((await c.text()).split('\n')[1]) : -1;
          if (performance.now() - since > 1_200_000) throw new Error('no checkpoint covers the chain after 20 minutes');
        }
      };
      // Set-up: the chain was bulk-loaded past the integrator, so a first start integrates all
      // of it from the records (in production the integrator follows the writes, a chunk a
      // second). That start leaves its process 350-400 MB resident until V8's memory reducer
      // runs, 10-20 s later (to about 240 MB); verify is timed on a second start, as on a
      // deployment whose tree was integrated as the records came.
      {
        const startAt = performance.now();
        const first = await spawnApi(t.appUrl!, deploymentId, env, ['api'], nodeArgs);
        try {
          await covered(first.url, startAt);
          const startS = (performance.now() - startAt) / 1000;
          b.print(`${fmt(n / startS)} leaves/s (${startS.toFixed(1)} s), peak RSS ${fmt(peakRssMb(first.child.pid!))} MB | API start until a checkpoint covers the chain (the start check integrates every leaf from its record; set-up, not a target) | ${n} records | ${db}`);
        } finally {
          await first.stop();
        }
      }
      const startAt = performance.now();
      const proc = await spawnApi(t.appUrl!, deploymentId, env, ['api'], nodeArgs);
      try {
        await covered(proc.url, startAt);
        const rollupS = await rollupCaughtUp(t);
        b.print(`${rollupS.toFixed(1)} s | waited after the second start until the analytics rollup had counted every record (set-up, not a target: verify is timed alone) | ${n} records | ${db}`);
        // And until the server is idle: the API's start warm-up (3,000 proof requests through
        // the app, HttpServiceDef.warmUp) ran into the first seconds of verify otherwise, 15%
        // of the server's thread there in a CPU profile.
        const quietS = await serverQuiet(proc.child.pid!);
        b.print(`${quietS.toFixed(1)} s | waited then until the server used under 5% of a core for a second (its start warm-up done; set-up, not a target) | ${n} records | ${db}`);
        // BENCH_AUDIT_VERIFY_RUNS: verify timed that many times on this server (1 by default):
        // this machine's speed drifts within minutes, and a change is judged on several runs.
        const runs = Math.max(1, Number(process.env.BENCH_AUDIT_VERIFY_RUNS ?? 1));
        // The server's own connections (its pool's backends) and their CPU, from /proc: the
        // database is on the critical path too, and CPU per record shows through the noise
        // of a shared machine where records/s does not.
        // The backends are sampled during the call (every 10 ms; a new one, as the pool opens
        // it, is looked for every 100 ms and counts from zero): the last sample of each is at
        // most 10 ms old.
        const backends = async () =>
          (await t.owner.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND usename = 'svc_app'`)).map((r) => r.pid);
        for (let run = 0; run < runs; run++) {
          const seen = new Map<number, { from: number; to: number }>();
          for (const p of await backends()) {
            const c = cpuSeconds(p) || 0;
            seen.set(p, { from: c, to: c });
          }
          let sampling = true;
          const sampler = (async () => {
            for (let k = 0; sampling; k++) {
              if (k % 10 === 0) for (const p of await backends()) if (!seen.has(p)) seen.set(p, { from: 0, to: cpuSeconds(p) || 0 });
              for (const [p, v] of seen) {
                const c = cpuSeconds(p);
                if (c === c) v.to = c;
              }
              await new Promise((r) => setTimeout(r, 10));
            }
          })();
          const hwmBefore = peakRssMb(proc.child.pid!);
          const rssBefore = rssMb(proc.child.pid!);
          const cpu0 = cpuSeconds(proc.child.pid!);
          const t0 = performance.now();
          const r = await fetch(`${proc.url}/api/audit/verify`, { headers: { 'x-admin-key': ADMIN_KEY } });
          const v = (await r.json()) as { status: string; record_count: number };
          const s = (performance.now() - t0) / 1000;
          sampling = false;
          await sampler;
          const rssPeak = peakRssMb(proc.child.pid!);
          const nodeUs = ((cpuSeconds(proc.child.pid!) - cpu0) / v.record_count) * 1e6;
          const pgUs = ([...seen.values()].reduce((sum, b) => sum + b.to - b.from, 0) / v.record_count) * 1e6;
          const what = `${v.record_count} records`;
          b.print(`${fmt(v.record_count / s)} records/s | GET /api/audit/verify, both chains, status ${v.status}, ${s.toFixed(2)} s | ${what} | ${db} | target >= 500,000/s`);
          b.print(`${fmt(nodeUs, 2)} µs/record | CPU (user + system) of the server process during verify | ${what} | ${db}`);
          b.print(`${fmt(pgUs, 2)} µs/record | CPU (user + system) of the server's PostgreSQL backends during verify | ${what} | ${db}`);
          b.print(`${fmt(rssPeak)} MB | peak RSS of the server process during verify (VmHWM; before the call: VmRSS ${fmt(rssBefore)} MB, VmHWM ${fmt(hwmBefore)} MB) | ${what} | ${db} | target < 256 MB`);
        }
      } finally {
        await proc.stop();
      }
      // References in the same run: the database streaming verify's own COPY with no checking
      // (into psql and /dev/null, and into this process through postgres.js's COPY stream).
      // Verify's read: its records in storage order (a sequential scan), with the settings of its transaction.
      const sq = copyQuery('', '', true);
      const PGOPTIONS = Object.entries(COPY_OUT_SETTINGS).map(([k, v]) => `-c ${k}=${v}`).join(' ');
      const psqlCopy = (q: string) => psqlCopyOut(t.ownerUrl!, q, { PGOPTIONS });
      // The ceiling of this machine for any verify that reads the records from PostgreSQL:
      // both cores doing nothing but sending them (two backends, each half the table's
      // pages by ctid, a TID range scan), nothing left for checking.
      const [pages] = await t.owner.query<{ n: number }>(`SELECT (pg_relation_size('agent_context_requests') / current_setting('block_size')::int)::int AS n`);
      const half = Math.ceil(Number(pages!.n) / 2);
      let pgAloneS: number | undefined;
      for (const [label, run] of [
        ['PostgreSQL alone: the same COPY read by psql into /dev/null', () => psqlCopy(sq)],
        [
          'PostgreSQL alone on both cores: the same COPY as two halves of the table (by ctid) at once, each read by psql into /dev/null',
          () => Promise.all([psqlCopy(copyQuery(` AND r.ctid < '(${half},0)'`, '', true)), psqlCopy(copyQuery(` AND r.ctid >= '(${half},0)'`, '', true))]),
        ],
        ['PostgreSQL alone: the records in chain order (an index scan, verify\'s read before) read by psql into /dev/null', () => psqlCopy(copyQuery())],
        // The database's cheapest export of every stored field: the whole table, storage order, binary.
        ['PostgreSQL alone: COPY of the whole table (storage order, binary) read by psql into /dev/null', () => psqlCopy('COPY agent_context_requests TO STDOUT WITH (FORMAT binary)')],
        ['the same COPY read through postgres.js\'s COPY stream as verify reads it (its transaction and settings), nothing checked', () =>
          t.db.raw!.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (sql) => {
            for (const [k, v] of Object.entries(COPY_OUT_SETTINGS)) await sql.unsafe(`SET LOCAL ${k} = ${v}`);
            // Its backend's CPU a record, beside verify's backends' above.
            const [{ pid }] = await sql.unsafe<Array<{ pid: number }>>('SELECT pg_backend_pid() AS pid');
            const c0 = cpuSeconds(pid);
            const stream = await sql.unsafe(sq).readable();
            await new Promise<void>((resolve, reject) => stream.on('data', () => {}).once('end', resolve).once('error', reject));
            return `${fmt(((cpuSeconds(pid) - c0) / n) * 1e6, 2)} µs of its backend's CPU a record`;
          })],
      ] as const) {
        const t0 = performance.now();
        const more = await run();
        const s = (performance.now() - t0) / 1000;
        pgAloneS ??= s;
        b.print(`${fmt(n / s)} records/s | ${label} (${s.toFixed(2)} s${typeof more === 'string' ? `, ${more}` : ''}; reference for verify) | ${n} records | ${db}`);
      }
      // The bound these two give: a record costs the database at least its share of psql's
      // read (one backend, CPU-bound) and the checker at least the floor; two cores share both.
      const floor = hashFloorUs(100_000);
      const pgUs = (pgAloneS! / n) * 1e6;
      b.print(`${fmt(floor, 2)} µs/record | SHA-256 alone of the four inputs each record needs hashed (record_hash's, content_hash's, its leaf's, one tree node's; sha256Into ${sha256Native ? 'on the native addon' : 'on node:crypto (the addon not built)'}, inputs prepared beforehand, 100,000 records of this chain, best of 3): the floor of any check of the chains and the tree, in this process | - | ${db}`);
      b.print(`${fmt(2e6 / (floor + pgUs))} records/s | the ceiling of such a verify on this machine: two cores over that floor plus the database's ${fmt(pgUs, 2)} µs a record (psql's read above), with no parsing, no protocol and no other work | ${n} records | ${db} | target >= 500,000/s`);
    } else {
      const heap0 = process.memoryUsage().rss;
      const t0 = performance.now();
      const v = await verifyAuditChain({ db: t.db, clock: systemClock });
      const s = (performance.now() - t0) / 1000;
      b.print(`${fmt(v.record_count / s)} records/s (${s.toFixed(2)} s) | verifyAuditChain in process (pages), status ${v.status} | ${v.record_count} records | ${db}`);
      b.print(`${fmt(peakRssMb(process.pid))} MB | peak RSS of the bench process (PGlite in process; ${fmt(heap0 / 2 ** 20)} MB before verify) | ${v.record_count} records | ${db}`);
    }

    // The writer alone: 64 concurrent appenders, group commit vs one record per statement.
    for (const [label, opts] of [
      ['group commit', {}],
      ['one record per statement', { maxBatch: 1, maxInFlight: 1 }],
    ] as const) {
      const w = new AuditWriter({ db: t.db, clock: systemClock, logger: memoryLogger() }, opts);
      let i = 0;
      const r = await closedLoop(64, 500, b.real ? 3000 : 2000, async () => {
        const f = fields(i++, 0, new Date());
        await w.append({
          requestId: f.request_id,
          agentId: f.agent_id,
          taskType: f.task_type,
          requestParams: f.request_params as Record<string, string> | null,
          intentValid: f.intent_valid,
          validationErrors: f.validation_errors,
          contextBundleIds: f.context_bundle_ids,
          contextScdIds: f.context_scd_ids,
          processingTimeMs: f.processing_time_ms,
          chainId: null,
          parentRequestId: null,
        });
        return 'ok';
      });
      await w.drain();
      b.print(`${fmt(r.perSecond)} records/s, p50 ${fmt(r.p50, 2)} ms, p99 ${fmt(r.p99, 2)} ms | audit writer alone, ${label}, 64 concurrent appenders | - | ${db}`);
    }
    const passes: string[] = [];
    const v = await verifyAuditChain({ db: t.db, clock: systemClock }, { onPass: (p) => passes.push(p) });
    b.print(`audit chain after the writer runs: verify ${v.status} (${v.record_count} records; read in ${passes.join(', then ') || 'pages'})`);
  } finally {
    await t.close();
  }
}
