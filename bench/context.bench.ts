/**
 * Context delivery benchmarks (benchmarks.md): audited `POST /api/context` per second with
 * p50/p99 at 64 concurrent clients on W1 (role-scoped: 8 SCDs, a 40 KB answer, where
 * benchmarks.md guessed about 10 KB) and W2 (whole deployment: 43 SCDs, 87 KB), gRPC
 * RequestContext on W1, and a bare node:http hello-world measured just before each workload
 * for the ratio. The load comes from wrk and h2load in their own processes (see
 * external-load.ts), or from the Node generator of load-gen.ts when they are missing; the
 * hello-world and the context runs always share one generator. On PostgreSQL the server is
 * a separate process (`src/main.ts api context-grpc`) on a fresh database holding the real
 * corpus; on PGlite (no DATABASE_URL) a smaller in-process run, labelled so.
 *
 * After each run the audit records written are counted against the answers received, and
 * the chain is verified: every audited answer must have its record.
 */
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Bench } from './run.js';
import { closedLoop, cpuSeconds, cpuSecondsOf, fmt, machineCpu, grpcFrame, httpCaller, startHelloWorld, type LoadResult } from './load-gen.js';
import { h2loadGrpc, haveTool, wrkRun } from './external-load.js';
import { ContextService } from '../gen/proto/context_pb.js';
import { createTestDb, startTestStack, type TestDb } from '../test/harness.js';
import { spawnApi } from '../test/audit/server-process.js';
import { benchCorpusDir, caller, publishCorpus } from '../test/fixtures/corpus.js';
import { verifyAuditChain } from '../src/core/audit/verify.js';
import { systemClock } from '../src/shared/app-context.js';

const CLIENTS = 64;
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'info';
/** Server CPU per hello-world request in the last reference run (µs): a ratio that machine load distorts less than rates. */
let helloCpuPerReq = NaN;

type Call = ReturnType<typeof caller>;

/** The benchmark agent (role:security, intent code_review) and its key. */
export async function benchAgent(call: Call): Promise<string> {
  const agentId = `agent:bench-${randomUUID().slice(0, 8)}`;
  const a = await call('api', 'POST', '/api/agents', { admin: true, body: { agent_id: agentId, name: 'Benchmark agent', role_id: 'role:security', allowed_intents: ['code_review'] } });
  if (a.status !== 201) throw new Error(`create agent: ${a.status} ${JSON.stringify(a.body)}`);
  const k = await call('api', 'POST', `/api/agents/${agentId}/api-keys`, { admin: true, body: {} });
  if (k.status !== 201) throw new Error(`issue key: ${k.status}`);
  return k.body.api_key;
}

function line(r: LoadResult, what: string, workload: string, db: string, ref: string, extra = ''): string {
  return `${fmt(r.perSecond)} req/s, p50 ${fmt(r.p50, 2)} ms, p99 ${fmt(r.p99, 2)} ms | ${what} | ${workload} | ${db} | ${CLIENTS} clients | ${ref}${extra}`;
}

/**
 * Records written against answers received. An external generator stops with requests in
 * flight, which the server still answers and audits: up to one per connection per run more
 * records than counted answers is expected there, never fewer.
 */
async function auditCheck(b: Bench, db: TestDb['db'], before: number, answered: number, label: string, external = false): Promise<void> {
  const [r] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM agent_context_requests');
  const v = await verifyAuditChain({ db, clock: systemClock });
  const extra = Number(r!.n) - before - answered;
  const note = external ? ` (${extra} more records than counted answers: requests in flight when the generator stopped; expected 0..${2 * CLIENTS}${extra < 0 || extra > 2 * CLIENTS ? ' — OUTSIDE THAT RANGE' : ''})` : '';
  b.print(`audit ${label}: ${Number(r!.n) - before} new records for ${answered} answers${note}; verify ${v.status} (${v.record_count} records)`);
}

async function count(db: TestDb['db']): Promise<number> {
  const [r] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM agent_context_requests');
  return Number(r!.n);
}

/**
 * HTTP load on `base` + `path` for `ms` after an uncounted warm-up: from wrk when `external`,
 * else from the Node generator. `answered` counts every answer, the warm-up's included.
 */
async function httpLoad(external: boolean, base: string, path: string, opts: { body?: string; headers?: Record<string, string> }, ms: number, warmupMs: number): Promise<{ r: LoadResult; answered: number }> {
  if (external) {
    const w = await wrkRun(base + path, { connections: CLIENTS, seconds: ms / 1000, warmupSeconds: warmupMs / 1000, ...opts });
    return { r: w, answered: w.requests + w.warmupRequests };
  }
  const call = httpCaller(base, path, { method: opts.body === undefined ? 'GET' : 'POST', ...opts, sockets: CLIENTS });
  let answered = 0;
  const r = await closedLoop(CLIENTS, warmupMs, ms, async () => {
    const st = await call();
    answered++;
    return st;
  });
  return { r, answered };
}

export default async function contextBench(b: Bench): Promise<void> {
  const corpusDir = benchCorpusDir(b.print);
  if (!corpusDir) return;
  // wrk and h2load on PostgreSQL runs; the Node generator otherwise (see realRun's first line).
  const external = b.real && haveTool('wrk') && haveTool('h2load');
  const hello = await startHelloWorld();
  const helloRun = async (ms: number) => {
    const cpu0 = cpuSeconds(hello.pid);
    const { r, answered } = await httpLoad(external, hello.url, '/', {}, ms, 1000);
    helloCpuPerReq = ((cpuSeconds(hello.pid) - cpu0) / answered) * 1e6;
    return r;
  };
  try {
    if (b.real) await realRun(b, corpusDir, external, helloRun);
    else await embeddedRun(b, corpusDir, helloRun);
  } finally {
    hello.stop();
  }
}

async function realRun(b: Bench, corpusDir: string, external: boolean, helloRun: (ms: number) => Promise<LoadResult>): Promise<void> {
  const DURATION = Number(process.env.BENCH_CONTEXT_MS ?? 8000);
  b.print(
    external
      ? 'load: wrk (REST, hello-world; 2 threads, 64 connections) and h2load (gRPC; 64 streams on 8 HTTP/2 connections), separate processes'
      : 'load: wrk/h2load not found (make bench installs them from Debian when it can): the Node load generator in this process, which takes most of a core itself; figures understate the server',
  );
  // Extra Node flags for the server processes (e.g. BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile them).
  const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  for (const workload of ['W1', 'W2'] as const) {
    const testDb = await createTestDb();
    // The server logs as in production (LOG_LEVEL=info unless BENCH_LOG_LEVEL says otherwise),
    // into a file as a log pipeline would take it; its size is printed after the runs.
    // BENCH_LOG_FILE: a file the server writes itself instead (/dev/null: the lines are made and written, the file system keeps nothing).
    const ownLogFile = process.env.BENCH_LOG_FILE;
    const logFile = ownLogFile ?? path.join(os.tmpdir(), `svc-bench-${workload}-${process.pid}.log`);
    if (!ownLogFile) fs.rmSync(logFile, { force: true });
    // BENCH_TLOG_INTERVAL_MS: the transparency log's checkpoint interval (a large value all but stops its integrator, to measure its cost).
    const serverEnv: Record<string, string> = process.env.BENCH_TLOG_INTERVAL_MS ? { TLOG_CHECKPOINT_INTERVAL_MS: process.env.BENCH_TLOG_INTERVAL_MS } : {};
    // BENCH_ROLLUP_INTERVAL_S: the analytics rollup's period (ANALYTICS_ROLLUP_INTERVAL_SECONDS), to compare its cadence.
    if (process.env.BENCH_ROLLUP_INTERVAL_S) serverEnv.ANALYTICS_ROLLUP_INTERVAL_SECONDS = process.env.BENCH_ROLLUP_INTERVAL_S;
    // The log reaches its file through a pipe and a writer process of its own, as journald (the
    // systemd units of deploy/) or a container runtime takes a service's stderr; BENCH_LOG_FILE
    // makes the server write that file itself.
    const proc = await spawnApi(testDb.appUrl!, randomUUID(), { DATABASE_MIGRATION_URL: testDb.ownerUrl!, LOG_LEVEL: LOG_LEVEL, ...serverEnv }, ['api', 'context-grpc'], NODE_ARGS, { logFile, logWriter: !ownLogFile });
    try {
      const call = caller(proc.url);
      await publishCorpus(call, { workload, root: corpusDir });
      const apiKey = await benchAgent(call);
      const body = JSON.stringify({ task_type: 'code_review' });
      const probe = await caller(proc.url)('api', 'POST', '/api/context', { apiKey, body: { task_type: 'code_review' } });
      const size = Buffer.byteLength(JSON.stringify(probe.body));
      // The reference, measured just before each workload's REST run (the API server up and
      // idle): this machine's speed drifts within a session (hello-world 24,000-44,000 req/s in
      // one session of 2026-12-04), so a reference taken minutes earlier skewed the ratios.
      const helloBefore = await helloRun(DURATION / 2);
      b.print(`${fmt(helloBefore.perSecond)} req/s, p50 ${fmt(helloBefore.p50, 2)} ms, p99 ${fmt(helloBefore.p99, 2)} ms | bare node:http hello-world (reference for ${workload}, just before it, the API server idle) | - | - | ${CLIENTS} clients; server CPU ${fmt(helloCpuPerReq)} µs/request`);
      const before = await count(testDb.db);
      const cpu0 = cpuSeconds(proc.child.pid!);
      const pg0 = cpuSecondsOf('postgres');
      const m0 = machineCpu();
      const { r, answered } = await httpLoad(external, proc.url, '/api/context', { body, headers: { 'x-api-key': apiKey } }, DURATION, 2000);
      const cpuPerReq = ((cpuSeconds(proc.child.pid!) - cpu0) / answered) * 1e6;
      // Where the rest of the two cores went: PostgreSQL (when it runs here) and idle time.
      const pgPerReq = ((cpuSecondsOf('postgres') - pg0) / answered) * 1e6;
      const m1 = machineCpu();
      const machine = `; PostgreSQL CPU ${Number.isNaN(pgPerReq) ? 'not on this machine' : `${fmt(pgPerReq)} µs/request`}; machine idle ${fmt((100 * (m1.idle - m0.idle)) / (m1.total - m0.total))}%`;
      const ratio = r.perSecond / helloBefore.perSecond;
      b.print(line(r, `REST audited POST /api/context (${probe.body.scd_ids.length} SCDs, ${(size / 1024).toFixed(1)} KB)`, workload, 'PostgreSQL', `hello-world ratio ${ratio.toFixed(3)}`, `; server CPU ${fmt(cpuPerReq)} µs/request (hello-world ${fmt(helloCpuPerReq)}: CPU ratio ${(helloCpuPerReq / cpuPerReq).toFixed(3)})${machine}; statuses ${JSON.stringify(r.statuses)}${r.errors ? `; socket errors ${r.errors}` : ''}`));
      await auditCheck(b, testDb.db, before, answered, `${workload} REST`, external);

      if (workload === 'W1') {
        const g0 = await count(testDb.db);
        const gCpu0 = cpuSeconds(proc.child.pid!);
        let gAnswered = 0;
        let g: LoadResult;
        if (external) {
          const h = await h2loadGrpc(`${proc.grpcUrl}/svc.context.v1.ContextService/RequestContext`, grpcFrame(apiKey), { connections: 8, streams: CLIENTS / 8, seconds: DURATION / 1000, warmupSeconds: 2 });
          g = h;
          gAnswered = h.requests + h.warmupRequests;
          // h2load counts HTTP statuses; the gRPC outcome travels in-band: check one answer.
          const one = await createClient(ContextService, createGrpcTransport({ baseUrl: proc.grpcUrl! })).requestContext({ apiKey, taskType: 'code_review' });
          gAnswered++;
          g.statuses = { ...g.statuses, [`sample success=${one.success}, ${one.scdIds.length} SCDs`]: 1 };
        } else {
          const client = createClient(ContextService, createGrpcTransport({ baseUrl: proc.grpcUrl! }));
          g = await closedLoop(CLIENTS, 2000, DURATION, async () => {
            const res = await client.requestContext({ apiKey, taskType: 'code_review' });
            gAnswered++;
            return res.success ? 'ok' : res.errorCode;
          });
        }
        b.print(line(g, 'gRPC RequestContext', workload, 'PostgreSQL', `REST W1 ${fmt(r.perSecond)} req/s, ratio ${(g.perSecond / r.perSecond).toFixed(2)}`, `; server CPU ${fmt(((cpuSeconds(proc.child.pid!) - gCpu0) / gAnswered) * 1e6)} µs/request; outcomes ${JSON.stringify(g.statuses)}`));
        await auditCheck(b, testDb.db, g0, gAnswered, `${workload} gRPC`, external);
      }
    } finally {
      await proc.stop();
      await testDb.close();
      if (!ownLogFile) {
        const log = fs.readFileSync(logFile, 'utf8');
        b.print(`server log ${workload} (LOG_LEVEL=${LOG_LEVEL}): ${log.split('\n').length - 1} lines, ${fmt(log.length / 1e6, 1)} MB`);
        fs.rmSync(logFile, { force: true });
      }
    }
  }
  const helloAfter = await helloRun(DURATION / 2);
  b.print(`${fmt(helloAfter.perSecond)} req/s | bare node:http hello-world again, after the runs (drift check) | - | - | ${CLIENTS} clients`);
}

/** PGlite: the same paths in one process, smaller; figures are not the targets. */
async function embeddedRun(b: Bench, corpusDir: string, helloRun: (ms: number) => Promise<LoadResult>): Promise<void> {
  const DURATION = 3000;
  const hello = await helloRun(DURATION);
  b.print(`${fmt(hello.perSecond)} req/s | bare node:http hello-world (reference) | - | - | ${CLIENTS} clients`);
  const t = await startTestStack({ services: ['api', 'context-grpc'] });
  try {
    const call = caller(t.url('api'));
    await publishCorpus(call, { workload: 'W1', root: corpusDir });
    const apiKey = await benchAgent(call);
    const before = await count(t.testDb.db);
    const { r, answered } = await httpLoad(false, t.url('api'), '/api/context', { body: JSON.stringify({ task_type: 'code_review' }), headers: { 'x-api-key': apiKey } }, DURATION, 1000);
    b.print(line(r, 'REST audited POST /api/context (server and load in one process)', 'W1', 'PGlite', `hello-world ratio ${(r.perSecond / hello.perSecond).toFixed(3)}`));
    await auditCheck(b, t.testDb.db, before, answered, 'W1 REST');
    const client = createClient(ContextService, createGrpcTransport({ baseUrl: t.url('context-grpc') }));
    const g = await closedLoop(CLIENTS, 1000, DURATION, async () => ((await client.requestContext({ apiKey, taskType: 'code_review' })).success ? 'ok' : 'refused'));
    b.print(line(g, 'gRPC RequestContext (server and load in one process)', 'W1', 'PGlite', `REST W1 ratio ${(g.perSecond / r.perSecond).toFixed(2)}`));
  } finally {
    await t.close();
  }
}
