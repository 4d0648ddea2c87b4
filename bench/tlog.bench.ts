/**
 * Transparency-log benchmarks (issue 21), PostgreSQL only:
 *
 * 1. Inclusion and consistency proofs at TLOG_BENCH_PROOF_LEAVES (10,000,000) leaves, p99
 *    under 5 ms: a tree of synthetic leaf hashes (SHA-256 of the index; no records) built with
 *    the product's appendLeaves/writeTiles into a freshly migrated database, one signed
 *    checkpoint row at its size, then the domain verbs TransparencyLog.inclusion and
 *    .consistency timed in process (cold, not warmed: a new log, its tile cache empty; cold: a
 *    new log after its start warm-up, TransparencyLog.warm, on leaves new to it; warm: the
 *    same calls again), and the same over HTTP (the api service's app on a socket of this
 *    process, without its start hook: its start check refuses a tree larger than the records;
 *    its log warmed as the hook warms it); then the compiled API app (dist/) in a server
 *    process of its own, just started (its start warm-up, TransparencyLog.warm and the api
 *    service's warmUp, awaited; then 600 calls) and steady (3,000 more: V8 has
 *    optimized its request path by then), each on leaves new to its log.
 * 2. `svc audit verify --since` over TLOG_BENCH_VERIFY_LEAVES (1,000,000) new leaves,
 *    >= 500,000 leaves/s and < 256 MB: a chain of records bulk-loaded as audit.bench loads
 *    it (leaf_index 0..N-1), integrated after its first 10 records (the saved checkpoint) and
 *    again after the rest; the CLI runs as a child process against a spawned API, its wall
 *    time and peak RSS measured (GNU time, else VmHWM polled from /proc).
 * 3. Checkpoint lag under W1 for TLOG_BENCH_SECONDS (20): audited POST /api/context load on
 *    a spawned API; for each record of the window, the first checkpoint covering it
 *    (tree_size > leaf_index): its created_at - the record's requested_at, p50/p99/max.
 */
import { spawn } from 'node:child_process';
import { hash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import type { Bench } from './run.js';
import { closedLoop, cpuSeconds, fmt, httpCaller, percentile, startHelloWorld } from './load-gen.js';
import { hashFloorUs, loadChain, psqlCopyOut, rollupCaughtUp } from './audit.bench.js';
import { benchAgent } from './context.bench.js';
import { ADMIN_KEY, createTestDb, DB_PASSWORD, REAL, testEnv, TLOG_KEY } from '../test/harness.js';
import { NODE_FLAGS, SERVER_ENV, spawnApi } from '../test/audit/server-process.js';
import { benchCorpusDir, caller, publishCorpus } from '../test/fixtures/corpus.js';
import { createAppContext, ensureGenesis, systemClock } from '../src/shared/app-context.js';
import { loadConfig } from '../src/shared/config.js';
import { memoryLogger } from '../src/shared/logger.js';
import { TransparencyLog, transparencyLog } from '../src/core/tlog/log.js';
import { parseSignerKey } from '../src/core/tlog/note.js';
import { saveCheckpoint, verifyCheckpoint } from '../cli/lib/tlog-trust.js';
import { TlogClient } from '../cli/lib/tlog-client.js';
import { requestRowsCopy } from '../src/core/tlog/leaves.js';
import { apiService } from '../src/api/index.js';
import { rng } from '../test/rng.js';
import { appendSynthetic, storeCheckpoint } from '../test/tlog/synthetic-tree.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PROOF_LEAVES = Number(process.env.TLOG_BENCH_PROOF_LEAVES ?? 10_000_000);
const VERIFY_LEAVES = Number(process.env.TLOG_BENCH_VERIFY_LEAVES ?? 1_000_000);
const LOAD_SECONDS = Number(process.env.TLOG_BENCH_SECONDS ?? 20);
const BUNDLE_LEAVES = Number(process.env.TLOG_BENCH_BUNDLE_LEAVES ?? 200_000);
/** TLOG_BENCH_ONLY: a comma list of parts to run (proofs, verify, lag, bundles); all by default. */
const ONLY = (process.env.TLOG_BENCH_ONLY ?? '').split(',').filter(Boolean);
const part = (name: string) => ONLY.length === 0 || ONLY.includes(name);
/** Proofs timed per kind and pass, in process; and over HTTP. */
const PROOFS = 2000;
const HTTP_PROOFS = 300;
/** Leaves appended per appendLeaves/writeTiles call while building the synthetic tree (256 full level-0 tiles). */
const BUILD_BATCH = 65_536;
const ORIGIN = parseSignerKey(TLOG_KEY.signerKey).name;
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);


/** p50/p99/max of latencies in ms. */
function stats(ms: number[]): string {
  const s = Float64Array.from(ms).sort();
  return `p50 ${fmt(percentile(s, 50), 3)} ms, p99 ${fmt(percentile(s, 99), 3)} ms, max ${fmt(s[s.length - 1] ?? NaN, 3)} ms`;
}

async function timeEach<T>(items: readonly T[], one: (x: T) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (const x of items) {
    const t0 = performance.now();
    await one(x);
    out.push(performance.now() - t0);
  }
  return out;
}

export default async function tlogBench(b: Bench): Promise<void> {
  if (!b.real || !REAL) {
    b.print('skipped: the transparency-log benchmarks run on PostgreSQL only (SVC_TEST_REAL=1 and DATABASE_URL)');
    return;
  }
  if (part('proofs')) await proofBench(b);
  if (part('bundles')) await bundleBench(b);
  if (part('verify')) await verifySinceBench(b);
  if (part('lag')) await checkpointLagBench(b);
}

/**
 * 4. The server's CPU per leaf serving full entry bundles (tile/entries/<N>): BUNDLE_LEAVES
 * records loaded as audit.bench loads them (its W2-like records: every third with
 * request_params, every fifth refused with validation_errors), integrated, then
 * TransparencyLog.tile('entries', N) for every full bundle, in process, user + system CPU of
 * this process (process.cpuUsage: the driver's parse, the JSON, the bundle) per leaf. Cold: a
 * new log, each bundle asked once; again: the same bundles a second time.
 */
async function bundleBench(b: Bench): Promise<void> {
  const n = BUNDLE_LEAVES - (BUNDLE_LEAVES % 256);
  const t = await createTestDb();
  const env = testEnv();
  try {
    await ensureGenesis(t.db, randomUUID(), systemClock);
    const [g] = await t.db.query<{ genesis_hash: string }>('SELECT genesis_hash FROM audit_chain_genesis');
    await loadChain(t, n, g!.genesis_hash);
    const config = loadConfig(env);
    const made = await new TransparencyLog({ db: t.db, config, logger: memoryLogger('warn') }).integrate();
    if (!made || made.treeSize !== n) throw new Error(`expected a checkpoint at ${n}, got ${made?.treeSize}`);
    const where = `${n} records (audit.bench's chain), ${n / 256} full bundles | PostgreSQL`;
    const log = new TransparencyLog({ db: t.db, config, logger: memoryLogger('warn') });
    let bytes = 0;
    for (const pass of ['cold (new log, each bundle once)', 'again (the same bundles a second time)']) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < n / 256; i++) bytes += (await log.tile('entries', i, undefined)).length;
      const wall = performance.now() - t0;
      const c = process.cpuUsage(c0);
      b.print(`${fmt((c.user + c.system) / n, 2)} µs CPU/leaf (${fmt((wall * 1000) / n, 2)} µs wall/leaf) | TransparencyLog.tile('entries', N) over every full bundle, ${pass}, CPU of this process (process.cpuUsage user + system) | ${where}`);
    }
    b.print(`${fmt(bytes / 2 / n)} bytes/leaf in the bundles | ${where}`);
  } finally {
    await t.close();
    fs.rmSync(env.SVC_DATA_DIR!, { recursive: true, force: true });
  }
}

/** 1. Proofs at PROOF_LEAVES leaves. */
async function proofBench(b: Bench): Promise<void> {
  const n = PROOF_LEAVES;
  const where = `${n} leaves (synthetic hashes) | PostgreSQL`;
  const t = await createTestDb();
  const env = testEnv();
  try {
    // The tree, as the integrator stores it: batches of leaf hashes through appendLeaves and writeTiles.
    const t0 = performance.now();
    const idx = Buffer.alloc(8);
    for (let from = 0; from < n; from += BUILD_BATCH) {
      const count = Math.min(BUILD_BATCH, n - from);
      const hashes = new Array<Buffer>(count);
      for (let k = 0; k < count; k++) {
        idx.writeBigUInt64BE(BigInt(from + k));
        hashes[k] = hash('sha256', idx, 'buffer');
      }
      await appendSynthetic(t.db, from, hashes);
    }
    await storeCheckpoint(t.db, ORIGIN, n);
    await t.owner.query('ANALYZE audit_tlog_tiles');
    const buildS = (performance.now() - t0) / 1000;
    const [sz] = await t.owner.query<{ mb: number }>(`SELECT pg_total_relation_size('audit_tlog_tiles') / 1048576.0 AS mb`);
    b.print(`${fmt(buildS, 1)} s (${fmt(n / buildS)} leaves/s) | build: appendLeaves + writeTiles in batches of ${BUILD_BATCH}, root, signed checkpoint (set-up, not a target); tiles ${fmt(Number(sz!.mb))} MB | ${where}`);

    const config = loadConfig(env);
    const ctx = await createAppContext(config, { logger: memoryLogger('warn'), db: t.db, skipMigrations: true });
    try {
      const r = rng(21);
      const draw = () => {
        const leaves = Array.from({ length: PROOFS }, () => Math.floor(r() * n));
        const pairs = Array.from({ length: PROOFS }, () => {
          const a = 1 + Math.floor(r() * (n - 1));
          const c = 1 + Math.floor(r() * (n - 1));
          return { from: Math.min(a, c), to: Math.max(a, c) };
        });
        return { leaves, pairs };
      };
      // The first set is the one the runs before the start warm-up drew (the same seed): the
      // "cold, not warmed" lines compare with those; the second set is new to PostgreSQL's buffers too.
      const first = draw();
      const second = draw();
      // The third, for the server process's steady state (below): new to every log.
      const third = draw();
      const { leaves, pairs } = first;
      const target = 'target p99 < 5 ms';
      /** Times each call, and this process's CPU (user + system: the driver's work included) per call. */
      const timed = async (ids: number[], one: (i: number) => Promise<unknown>) => {
        const c0 = process.cpuUsage();
        const ms = await timeEach(ids, one);
        const c = process.cpuUsage(c0);
        return `${stats(ms)}, ${fmt((c.user + c.system) / ids.length, 0)} µs CPU/proof`;
      };
      for (const kind of ['inclusion', 'consistency'] as const) {
        const ids = leaves.map((_, i) => i);
        const what = kind === 'inclusion' ? `TransparencyLog.inclusion({leafIndex, treeSize: ${n}}), ${PROOFS} random leaves` : `TransparencyLog.consistency({from, to}), ${PROOFS} random pairs`;
        const call = (log: TransparencyLog, set: typeof first) =>
          kind === 'inclusion' ? (i: number) => log.inclusion({ leafIndex: set.leaves[i]!, treeSize: n }) : (i: number) => log.consistency(set.pairs[i]!);
        // Cold, not warmed: a new log, its tile cache empty (PostgreSQL's buffers as the build left them).
        b.print(`${await timed(ids, call(new TransparencyLog(ctx), first))} | ${what}, in process, cold, not warmed (new log, empty tile cache) | ${where} | ${target}`);
        // Cold: a new log as the server starts it (warm(): its full tiles of level >= 1 loaded),
        // other leaves and pairs: every level-0 tile and partial tile is read. Warm: the same calls again.
        const log = new TransparencyLog(ctx);
        const w0 = performance.now();
        const warmed = await log.warm();
        const warmMs = performance.now() - w0;
        b.print(`${await timed(ids, call(log, second))} | ${what} (another draw), in process, cold (new log after its start warm-up: ${warmed.tiles} tiles of level >= 1 in ${fmt(warmMs, 1)} ms; level-0 and partial tiles not cached) | ${where} | ${target}`);
        b.print(`${await timed(ids, call(log, second))} | ${what} (the same draw), in process, warm (the same calls again) | ${where} | ${target}`);
      }
      // Over HTTP: the api service's app (no start hook) on a socket of this process; client and server share its event loop.
      const app = await apiService.createApp(ctx);
      // The app's log (the context's), warmed as the module's start hook warms it (the hook
      // itself is not run, see above); the level-0 tiles it reads are those of the calls below.
      await transparencyLog(ctx).warm();
      await apiService.warmUp!(ctx, app, new AbortController().signal);
      const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
      await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())));
      const port = (server.address() as { port: number }).port;
      try {
        const get = async (p: string) => {
          const res = await fetch(`http://127.0.0.1:${port}${p}`);
          const body = (await res.json()) as { hashes?: unknown[] };
          if (res.status !== 200 || !Array.isArray(body.hashes)) throw new Error(`${p}: ${res.status} ${JSON.stringify(body)}`);
        };
        const inclPath = (l: number) => `/api/audit/proof/inclusion?leaf_index=${l}&tree_size=${n}`;
        const consPath = (p: { from: number; to: number }) => `/api/audit/proof/consistency?from=${p.from}&to=${p.to}`;
        /** The paths of `count` (HTTP_PROOFS) calls from the first draw's `from`th. */
        const incl = (from: number, count = HTTP_PROOFS) => leaves.slice(from, from + count).map(inclPath);
        const cons = (from: number, count = HTTP_PROOFS) => pairs.slice(from, from + count).map(consPath);
        const hl = incl(0);
        const hc = cons(0);
        await timeEach(hl.slice(0, 20), get); // connection and JIT warm-up
        b.print(`${stats(await timeEach(hl, get))} | GET /api/audit/proof/inclusion, ${HTTP_PROOFS} sequential calls, fetch in this process (the app's log warmed as at start; leaves of the first in-process draw, new to this log: level-0 tiles read) | ${where} | target p99 < 5 ms`);
        b.print(`${stats(await timeEach(hc, get))} | GET /api/audit/proof/consistency, ${HTTP_PROOFS} sequential calls, fetch in this process (pairs of the first in-process draw, new to this log) | ${where} | target p99 < 5 ms`);
        // As a client calls: from a process of its own, so that its CPU is not the server's
        // event loop's; the next leaves and pairs of the same draw, new to the app's log too.
        const [, li, lc] = await sequentialGets(port, [hl.slice(0, 20), incl(HTTP_PROOFS), cons(HTTP_PROOFS)]);
        b.print(`${stats(li)} | GET /api/audit/proof/inclusion, ${HTTP_PROOFS} sequential calls from a client process (node:http, keep-alive; other leaves of the draw, new to this log) | ${where} | target p99 < 5 ms`);
        b.print(`${stats(lc)} | GET /api/audit/proof/consistency, ${HTTP_PROOFS} sequential calls from a client process (other pairs of the draw, new to this log) | ${where} | target p99 < 5 ms`);
        // As deployed: the compiled API app in a server process of its own (NODE_FLAGS, SERVER_ENV),
        // its log warmed as at start; the next leaves and pairs of the draw, more of them. One
        // client process per protocol, kept from its warm-up to its timed calls (clientProcess).
        const own = await startProofServer(t.appUrl!, env);
        // Each client is started just before its lines, so that loading one (connect-node,
        // protobuf) does not run beside another's timed calls.
        const clients: Array<{ close(): Promise<void> }> = [];
        const start = <T>(c: ClientProcess<T>): ClientProcess<T> => (clients.push(c), c);
        try {
          const rest = start(getsClient(own.port));
          const perCall = (cpu: number, n: number) => `${fmt((cpu * 1e6) / n, 0)} µs server CPU/call`;
          const clientCpu = (us: number) => `${fmt(us, 0)} µs client CPU/call`;
          /** Each list's calls, timed, with the server's CPU and the client's a call. */
          const timed = async <T>(client: ClientProcess<T>, lists: T[][]): Promise<string[]> => {
            const out: string[] = [];
            for (const list of lists) {
              const c0 = cpuSeconds(own.pid);
              const { ms, cpuUs } = await client.run([list]);
              out.push(`${stats(ms[0]!)}, ${perCall(cpuSeconds(own.pid) - c0, list.length)}, ${clientCpu(cpuUs[0]!)}`);
            }
            return out;
          };
          /** Calls of the other draw (its inclusion leaves and consistency pairs in [from, to)), untimed. */
          const warmUp = (leaves: [number, number], pairs: [number, number]) =>
            rest.run([[...second.leaves.slice(...leaves).map(inclPath), ...second.pairs.slice(...pairs).map(consPath)]]);
          // Warm-up (JIT, connection): 600 calls of the other draw, as a server that has been up a while.
          await warmUp([0, 400], [0, 200]);
          const started = await timed(rest, [incl(2 * HTTP_PROOFS, 3 * HTTP_PROOFS), cons(2 * HTTP_PROOFS, 3 * HTTP_PROOFS)]);
          b.print(`${started[0]} | GET /api/audit/proof/inclusion, ${3 * HTTP_PROOFS} sequential calls from a client process to the compiled API app in a server process of its own, just started (its log warmed as at start: tiles, then ${own.warmUp}; then 600 calls of the other draw from the same client; other leaves of this draw, new to its log) | ${where} | target p99 < 5 ms`);
          b.print(`${started[1]} | GET /api/audit/proof/consistency, ${3 * HTTP_PROOFS} sequential calls from the same client to the same server (other pairs of the draw) | ${where} | target p99 < 5 ms`);
          // Steady state: after 600 calls V8 has not yet optimized the request path (a CPU
          // profile of 900 inclusion calls after 600: 781 ms of JavaScript; the same 900 calls
          // after 3,000: 360 ms). A server up a few seconds longer: 3,000 more calls of the
          // second draw, then leaves and pairs of a third draw, new to its log.
          await warmUp([400, 2000], [200, 1600]);
          const steady = await timed(rest, [third.leaves.slice(0, 3 * HTTP_PROOFS).map(inclPath), third.pairs.slice(0, 3 * HTTP_PROOFS).map(consPath)]);
          b.print(`${steady[0]} | GET /api/audit/proof/inclusion, ${3 * HTTP_PROOFS} sequential calls from the same client to the same server, steady (after 3,000 more calls of the other draw; leaves of a third draw, new to its log) | ${where} | target p99 < 5 ms`);
          b.print(`${steady[1]} | GET /api/audit/proof/consistency, ${3 * HTTP_PROOFS} sequential calls from the same client to the same server, steady (pairs of the third draw) | ${where} | target p99 < 5 ms`);
          // The same proofs over gRPC (TransparencyLogService on the same process's port 8002
          // service), from each gRPC client: as many calls of the second draw first as REST had
          // before its steady lines (3,600: connection, and JIT of the server's gRPC path and of
          // the client), then calls of the third draw, new to the log. Until 2026-12-05 each
          // list ran in a new client process, so the timed calls paid the client's JIT:
          // connect-node's client took 1,484-1,789 µs of CPU a call there, against 921-1,174
          // in its warm-up list.
          const inclCall = (l: number): GrpcCall => [l, n];
          const grpcWarmUp: GrpcCall[] = [...second.leaves.map(inclCall), ...second.pairs.slice(0, 1600)];
          await rest.close();
          const grpc = start(grpcClient(own.grpcPort));
          await grpc.run([grpcWarmUp]);
          const [gi, gc] = await timed(grpc, [third.leaves.slice(3 * HTTP_PROOFS, 6 * HTTP_PROOFS).map(inclCall), third.pairs.slice(3 * HTTP_PROOFS, 6 * HTTP_PROOFS)]);
          b.print(`${gi} | gRPC TransparencyLogService/GetInclusionProof, ${3 * HTTP_PROOFS} sequential calls from a client process (@connectrpc/connect-node's gRPC transport, one HTTP/2 connection) to the same server's port 8002 service, after 3,600 calls of the other draw from the same client, as REST's steady lines (leaves of the third draw, new to its log) | ${where} | target p99 < 5 ms`);
          b.print(`${gc} | gRPC TransparencyLogService/GetConsistencyProof, ${3 * HTTP_PROOFS} sequential calls from the same client to the same service (pairs of the third draw) | ${where} | target p99 < 5 ms`);
          await grpc.close();
          const h2 = start(h2GrpcClient(own.grpcPort));
          await h2.run([grpcWarmUp]);
          const fourth = draw();
          const [hi, hc] = await timed(h2, [fourth.leaves.slice(0, 3 * HTTP_PROOFS).map(inclCall), fourth.pairs.slice(0, 3 * HTTP_PROOFS)]);
          b.print(`${hi} | gRPC TransparencyLogService/GetInclusionProof, ${3 * HTTP_PROOFS} sequential calls from a plain node:http2 client process (one gRPC message a request, as the REST lines' node:http client; after the same 3,600 calls of warm-up) to the same service (leaves of a fourth draw, new to its log) | ${where} | target p99 < 5 ms`);
          b.print(`${hc} | gRPC TransparencyLogService/GetConsistencyProof, ${3 * HTTP_PROOFS} sequential calls from the same node:http2 client to the same service (pairs of the fourth draw) | ${where} | target p99 < 5 ms`);
        } finally {
          await Promise.all(clients.map((c) => c.close()));
          await own.stop();
        }
        // The machine's floor for the lines above: the same client against a bare node:http server.
        const hello = await startHelloWorld();
        try {
          const [, h] = await sequentialGets(Number(new URL(hello.url).port), [Array(20).fill('/'), Array(HTTP_PROOFS * 2).fill('/')]);
          b.print(`${stats(h!)} | GET / on a bare node:http hello-world in a process of its own, ${HTTP_PROOFS * 2} sequential calls from the same client (the machine's floor for the two lines above) | ${where}`);
        } finally {
          hello.stop();
        }
      } finally {
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    } finally {
      await ctx.close();
    }
  } finally {
    await t.close();
    fs.rmSync(env.SVC_DATA_DIR!, { recursive: true, force: true });
  }
}

/**
 * The compiled API app (dist/, `make build`) in a process of its own, as the API runs it
 * (NODE_FLAGS, SERVER_ENV) but for its start hook: the transparency log's start check would
 * refuse a tree of synthetic leaves that no records back. Its log is warmed as the hook warms
 * it. Answers its port on IPC; ends on a message.
 */
const PROOF_SERVER_SRC = `
const imp = (p) => import(process.cwd() + '/dist/src/' + p);
const { createAppContext } = await imp('shared/app-context.js');
const { loadConfig } = await imp('shared/config.js');
const { openDb } = await imp('core/db/index.js');
const { memoryLogger } = await imp('shared/logger.js');
const { apiService } = await imp('api/index.js');
const { transparencyLog } = await imp('core/tlog/log.js');
const { serve } = await import('@hono/node-server');
const db = await openDb({ url: process.env.PROOF_DB_URL, password: process.env.PROOF_DB_PASSWORD, max: 10 });
const ctx = await createAppContext(loadConfig(JSON.parse(process.env.PROOF_ENV)), { logger: memoryLogger('warn'), db, skipMigrations: true });
const app = await apiService.createApp(ctx);
await transparencyLog(ctx).warm();
// As the launcher does once the service is up, in the background there (the benchmark waits for it: a server up the few seconds it takes).
const w0 = performance.now();
const proofs = (await apiService.warmUp?.(ctx, app, new AbortController().signal)) ?? 0; // ?.: a build from before it, for A/B
// Port 8002's service as the launcher starts it (node:http2, the Connect router): the same log's proofs over gRPC.
const { startStack } = await imp('launcher.js');
const grpc = await startStack(ctx, ['context-grpc'], { 'context-grpc': 0 });
const grpcPort = Number(new URL(grpc.url('context-grpc')).port);
const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => process.send({ port: info.port, grpcPort, proofs, ms: performance.now() - w0 }));
process.once('message', () => server.close(async () => { await grpc.close(); await ctx.close(); await db.close(); process.exit(0); }));
`;

async function startProofServer(dbUrl: string, env: Record<string, string | undefined>): Promise<{ port: number; grpcPort: number; pid: number; warmUp: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [...NODE_FLAGS, ...NODE_ARGS, '--input-type=module', '-e', PROOF_SERVER_SRC], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...SERVER_ENV, PROOF_DB_URL: dbUrl, PROOF_DB_PASSWORD: DB_PASSWORD, PROOF_ENV: JSON.stringify(env) },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', () => resolve())));
  const { port, grpcPort, proofs, ms } = await new Promise<{ port: number; grpcPort: number; proofs: number; ms: number }>((resolve, reject) => {
    child.once('message', (m) => resolve(m as { port: number; grpcPort: number; proofs: number; ms: number }));
    child.once('exit', (code) => reject(new Error(`the proof server exited (${code}) before listening`)));
  });
  return {
    port,
    grpcPort,
    pid: child.pid!,
    warmUp: `${proofs} proof requests of warm-up in ${fmt(ms / 1000, 1)} s`,
    async stop() {
      if (child.exitCode === null) child.send('stop');
      await exited;
    },
  };
}

/**
 * The client processes of the proof lines. Each is given a port, then lists of calls, one
 * message each; it makes each list's calls one at a time on one connection (kept between
 * lists: a warm-up list and the timed lists that follow it run in the same process, with its
 * JIT and connection warm, as a client that has been calling for a while), and answers the
 * milliseconds of each call and its own CPU (user + system) per call of each list. 'stop' ends it.
 */
const CLIENT_LOOP = `
let call = null;
process.on('message', async (m) => {
  if (m === 'stop') return process.exit(0);
  call ??= await open(m.port);
  const ms = [];
  const cpuUs = [];
  for (const list of m.lists) {
    const out = [];
    const c0 = process.cpuUsage();
    for (const c of list) {
      const t0 = performance.now();
      await call(c);
      out.push(performance.now() - t0);
    }
    const c = process.cpuUsage(c0);
    ms.push(out);
    cpuUs.push(list.length ? (c.user + c.system) / list.length : 0);
  }
  process.send({ ms, cpuUs });
});
`;

/** GETs of paths (node:http, one keep-alive connection); a proof's body must hold its hashes. */
const GETS_SRC = `
const http = require('node:http');
async function open(port) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  return (path) => new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const proof = path.startsWith('/api/') ? JSON.parse(Buffer.concat(chunks).toString()) : { hashes: [] };
        if (res.statusCode !== 200 || !Array.isArray(proof.hashes)) reject(new Error(path + ': ' + res.statusCode));
        else resolve();
      });
    }).on('error', reject);
  });
}
${CLIENT_LOOP}`;

/**
 * A gRPC call of the proof lines: [leafIndex, treeSize] (an inclusion proof) or {from, to} (a
 * consistency proof), as the TransparencyLogService method's key and request message.
 */
const GRPC_REQUEST = `
const toRequest = (c) => Array.isArray(c)
  ? ['getInclusionProof', { leaf: { case: 'leafIndex', value: BigInt(c[0]) }, treeSize: BigInt(c[1]) }]
  : ['getConsistencyProof', { from: BigInt(c.from), to: BigInt(c.to) }];
`;

/** TransparencyLogService over gRPC with @connectrpc/connect-node's gRPC transport (one HTTP/2 connection). */
const GRPC_CALLS_SRC = `
const { createClient } = await import('@connectrpc/connect');
const { createGrpcTransport } = await import('@connectrpc/connect-node');
const { TransparencyLogService } = await import(process.cwd() + '/dist/gen/proto/context_pb.js');
${GRPC_REQUEST}
async function open(port) {
  const client = createClient(TransparencyLogService, createGrpcTransport({ baseUrl: 'http://127.0.0.1:' + port }));
  return async (c) => {
    const [key, msg] = toRequest(c);
    const r = await client[key](msg);
    if (!Array.isArray(r.hashes)) throw new Error('no hashes in ' + JSON.stringify(c));
  };
}
${CLIENT_LOOP}`;

/**
 * The same calls as GRPC_CALLS_SRC from a plain node:http2 client: each request framed as one
 * gRPC message (@bufbuild/protobuf's toBinary, the method's schemas from the service
 * descriptor), the answer decoded and its grpc-status checked. What the REST lines' node:http
 * client is to HTTP/1.1: the machine's gRPC path without a client library's own cost per call.
 */
const GRPC_H2_SRC = `
const http2 = await import('node:http2');
const { create, toBinary, fromBinary } = await import('@bufbuild/protobuf');
const { TransparencyLogService } = await import(process.cwd() + '/dist/gen/proto/context_pb.js');
${GRPC_REQUEST}
async function open(port) {
  const session = http2.connect('http://127.0.0.1:' + port);
  const unary = (method, msg) => new Promise((resolve, reject) => {
    const body = toBinary(method.input, create(method.input, msg));
    const frame = Buffer.alloc(5 + body.length);
    frame.writeUInt32BE(body.length, 1);
    frame.set(body, 5);
    const req = session.request({ ':method': 'POST', ':path': '/' + TransparencyLogService.typeName + '/' + method.name, 'content-type': 'application/grpc', te: 'trailers' });
    const chunks = [];
    let status = null;
    req.on('data', (c) => chunks.push(c));
    req.on('trailers', (t) => (status = t['grpc-status']));
    req.on('end', () => {
      if (status !== '0') return reject(new Error(method.name + ': grpc-status ' + status));
      const b = Buffer.concat(chunks);
      resolve(fromBinary(method.output, b.subarray(5, 5 + b.readUInt32BE(1))));
    });
    req.on('error', reject);
    req.end(frame);
  });
  return async (c) => {
    const [key, msg] = toRequest(c);
    const r = await unary(TransparencyLogService.method[key], msg);
    if (!Array.isArray(r.hashes)) throw new Error('no hashes in ' + JSON.stringify(c));
  };
}
${CLIENT_LOOP}`;

type GrpcCall = [number, number] | { from: number; to: number };

/** A client process (CLIENT_LOOP) on 127.0.0.1:port: `run` sends it lists of calls and answers each call's ms and the client's CPU a call of each list. */
interface ClientProcess<T> {
  run(lists: T[][]): Promise<{ ms: number[][]; cpuUs: number[] }>;
  close(): Promise<void>;
}

function clientProcess<T>(args: string[], port: number): ClientProcess<T> {
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    run(lists) {
      const answer = new Promise<{ ms: number[][]; cpuUs: number[] }>((resolve, reject) => {
        const onExit = (code: number | null) => reject(new Error(`the client process exited (${code}) without an answer`));
        child.once('exit', onExit);
        child.once('message', (m) => {
          child.off('exit', onExit);
          resolve(m as { ms: number[][]; cpuUs: number[] });
        });
      });
      child.send({ port, lists });
      return answer;
    },
    async close() {
      if (child.exitCode === null) child.send('stop');
      await exited;
    },
  };
}

const getsClient = (port: number) => clientProcess<string>(['-e', GETS_SRC], port);
const grpcClient = (port: number) => clientProcess<GrpcCall>(['--input-type=module', '-e', GRPC_CALLS_SRC], port);
const h2GrpcClient = (port: number) => clientProcess<GrpcCall>(['--input-type=module', '-e', GRPC_H2_SRC], port);

/** GETs each list's paths from a client process of its own, which then ends; answers each call's ms. */
async function sequentialGets(port: number, lists: string[][]): Promise<number[][]> {
  const c = getsClient(port);
  try {
    return (await c.run(lists)).ms;
  } finally {
    await c.close();
  }
}



/** Runs `node --import tsx cli/main.ts args` and measures its wall time and peak RSS. */
async function runCli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string; seconds: number; peakMb: number; cpuS: number; how: string }> {
  const gnuTime = fs.existsSync('/usr/bin/time');
  // BENCH_NODE_ARGS: extra Node flags for the CLI and the server, as in the other benchmarks (--cpu-prof ...).
  const node = [process.execPath, ...NODE_ARGS, '--import', 'tsx', 'cli/main.ts', ...args];
  const argv = gnuTime ? ['/usr/bin/time', '-v', ...node] : node;
  const t0 = performance.now();
  const child = spawn(argv[0]!, argv.slice(1), { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  let polled = 0;
  const poll = gnuTime
    ? null
    : setInterval(() => {
        try {
          const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'));
          if (m) polled = Math.max(polled, Number(m[1]) / 1024);
        } catch {
          /* exited */
        }
      }, 10);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  const seconds = (performance.now() - t0) / 1000;
  if (poll) clearInterval(poll);
  const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr);
  const peakMb = gnuTime ? (m ? Number(m[1]) / 1024 : NaN) : polled;
  const cpu = /User time \(seconds\): ([\d.]+)[\s\S]*System time \(seconds\): ([\d.]+)/.exec(stderr);
  const cpuS = cpu ? Number(cpu[1]) + Number(cpu[2]) : NaN;
  return { code, stdout, stderr, seconds, peakMb, cpuS, how: gnuTime ? 'GNU time -v, maximum resident set size' : 'VmHWM polled every 10 ms' };
}

/** Entry bundles first..last fetched through `client`, `concurrency` at once, each given back unread: their bytes, the wall time and this process's CPU. */
async function fetchBundles(client: TlogClient, first: number, last: number, concurrency: number): Promise<{ seconds: number; bytes: number; cpuS: number }> {
  let next = first;
  let bytes = 0;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next <= last) {
        const data = await client.entryBundle(next++);
        bytes += data.length;
        client.release(data);
      }
    }),
  );
  const c = process.cpuUsage(c0);
  return { seconds: (performance.now() - t0) / 1000, bytes, cpuS: (c.user + c.system) / 1e6 };
}

/** 2. `svc audit verify --since` over VERIFY_LEAVES - 10 new leaves. */
async function verifySinceBench(b: Bench): Promise<void> {
  const n = VERIFY_LEAVES;
  const FIRST = 10;
  const t = await createTestDb();
  const env = testEnv();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-tlog-bench-'));
  try {
    const deploymentId = randomUUID();
    await ensureGenesis(t.db, deploymentId, systemClock);
    const [g] = await t.db.query<{ genesis_hash: string }>('SELECT genesis_hash FROM audit_chain_genesis');
    const baseMs = Date.now() - n;
    const log = new TransparencyLog({ db: t.db, config: loadConfig(env), logger: memoryLogger('warn') });
    // The checkpoint the client saved: after the first records.
    await loadChain(t, FIRST, g!.genesis_hash, { first: 0, prevRh: g!.genesis_hash, prevCh: g!.genesis_hash, baseMs });
    const old = await log.integrate();
    if (!old || old.treeSize !== FIRST) throw new Error(`expected a checkpoint at ${FIRST}, got ${old?.treeSize}`);
    const [tip] = await t.db.query<{ record_hash: string; content_hash: string }>('SELECT record_hash, content_hash FROM agent_context_requests ORDER BY chain_sequence DESC LIMIT 1');
    const loadS = await loadChain(t, n - FIRST, g!.genesis_hash, { first: FIRST, prevRh: tip!.record_hash, prevCh: tip!.content_hash, baseMs });
    const t0 = performance.now();
    const cur = await log.integrate();
    const integrateS = (performance.now() - t0) / 1000;
    if (!cur || cur.treeSize !== n) throw new Error(`expected a checkpoint at ${n}, got ${cur?.treeSize}`);
    const where = `${n - FIRST} new leaves (checkpoint ${FIRST} -> ${n}) | PostgreSQL`;
    b.print(`${fmt((n - FIRST) / loadS)} records/s | set-up: chain generation + COPY as owner (not a target) | ${where}`);
    b.print(`${fmt((n - FIRST) / integrateS)} leaves/s (${fmt(integrateS, 1)} s) | TransparencyLog.integrate of the new records (tiles + signed checkpoint), in process | ${where}`);

    const since = path.join(dir, 'since.json');
    saveCheckpoint(since, verifyCheckpoint(old.note, TLOG_KEY.verifierKey));
    const proc = await spawnApi(t.appUrl!, deploymentId, { DATABASE_MIGRATION_URL: t.ownerUrl!, LOG_LEVEL: 'error' }, ['api'], NODE_ARGS);
    try {
      const rollupS = await rollupCaughtUp(t);
      b.print(`${rollupS.toFixed(1)} s | waited after the server's start until the analytics rollup had counted the new records (set-up, not a target: the verify is timed alone) | ${where}`);
      const cpu0 = cpuSeconds(proc.child.pid!);
      const r = await runCli(['audit', 'verify', '--since', since, '--endpoint', proc.url, '--log-key', TLOG_KEY.verifierKey], {
        HOME: dir,
        SVC_API_KEY: ADMIN_KEY,
      });
      const own = /(\d+) leaves in ([\d.]+) s \((\d+) leaves\/s\)/.exec(r.stdout);
      const status = r.code === 0 ? 'exit 0 (verified)' : `EXIT ${r.code}: ${(r.stderr.split('\n').find((l) => l.startsWith('svc:')) ?? r.stderr.slice(0, 500)).trim()}`;
      b.print(`${fmt((n - FIRST) / r.seconds)} leaves/s (${fmt(r.seconds, 2)} s) | svc audit verify --since, child process wall time, Node and tsx start-up included; ${status} | ${where} | target >= 500,000 leaves/s`);
      if (own) b.print(`${own[3]} leaves/s (${own[2]} s) | the same, the CLI's own figure (entry bundles fetched and rechecked, root recomputed; after the checkpoint and consistency proof) | ${where} | target >= 500,000 leaves/s`);
      b.print(`${fmt(r.cpuS, 2)} s CPU in the CLI process, ${fmt(cpuSeconds(proc.child.pid!) - cpu0, 2)} s CPU in the server process, during the verify (user + system; where the time goes) | ${where}`);
      if (r.code !== 0) b.print(`the server's log, last 4,000 characters (the verify failed): ${proc.output().slice(-4000)}`);
      b.print(`${fmt(r.peakMb)} MB | peak RSS of the svc audit verify process (${r.how}) | ${where} | target < 256 MB`);
      // References in the same run, each a bound on the check: the same bundles fetched by the
      // CLI's client with nothing checked (what the server and the transport allow), and the
      // database alone reading the rows the server writes them from (psql, one COPY).
      const client = new TlogClient({ endpoint: proc.url, adminKey: ADMIN_KEY });
      const fetchCpu0 = cpuSeconds(proc.child.pid!);
      const fullBundles = Math.floor(n / 256);
      const fetched = await fetchBundles(client, 0, fullBundles - 1, 8);
      const fetchCpu = cpuSeconds(proc.child.pid!) - fetchCpu0;
      const got = fullBundles * 256;
      b.print(`${fmt(got / fetched.seconds)} leaves/s (${fmt(fetched.seconds, 2)} s, ${fmt(fetched.bytes / 1e6)} MB) | the full entry bundles of the same leaves (${fmt(got)}) fetched by the CLI's client (8 at once) with nothing checked, in this process: the server's and the transport's bound; ${fmt((fetchCpu / got) * 1e6, 2)} µs of server CPU a leaf, ${fmt((fetched.cpuS / got) * 1e6, 2)} µs of the fetching process's | ${where}`);
    } finally {
      await proc.stop();
    }
    const p0 = performance.now();
    await psqlCopyOut(t.ownerUrl!, requestRowsCopy(FIRST, n));
    const pgS = (performance.now() - p0) / 1000;
    const pgUs = (pgS / (n - FIRST)) * 1e6;
    b.print(`${fmt((n - FIRST) / pgS)} leaves/s (${fmt(pgS, 2)} s) | PostgreSQL alone: the rows the server writes these entry bundles from (the same columns, in leaf order), one COPY read by psql into /dev/null | ${where}`);
    // The CLI hashes each new leaf's four inputs (its leaf data, both chains' inputs, one tree
    // node) whatever else it does, and the database reads each leaf's row for the server to
    // write it: two cores shared by both, with nothing else to do, bound the check.
    const floor = hashFloorUs(100_000);
    b.print(`${fmt(2e6 / floor)} leaves/s | two cores doing nothing but SHA-256 of each leaf's four inputs (${fmt(floor, 2)} µs a leaf, audit.bench's floor measured now), no parsing, no protocol, no server, no database | ${where} | target >= 500,000 leaves/s`);
    b.print(`${fmt(2e6 / (floor + pgUs))} leaves/s | the ceiling of such a check on this machine: two cores over that floor plus the database's ${fmt(pgUs, 2)} µs a leaf (psql's read above), no parsing, no protocol, no server | ${where} | target >= 500,000 leaves/s`);
  } finally {
    await t.close();
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(env.SVC_DATA_DIR!, { recursive: true, force: true });
  }
}

/** 3. Checkpoint lag under W1 load for LOAD_SECONDS. */
async function checkpointLagBench(b: Bench): Promise<void> {
  const corpusDir = benchCorpusDir(b.print);
  if (!corpusDir) return;
  const t = await createTestDb();
  const intervalMs = 1000;
  const proc = await spawnApi(t.appUrl!, randomUUID(), { DATABASE_MIGRATION_URL: t.ownerUrl!, LOG_LEVEL: 'error', TLOG_CHECKPOINT_INTERVAL_MS: String(intervalMs) });
  try {
    const call = caller(proc.url);
    await publishCorpus(call, { workload: 'W1', root: corpusDir });
    const apiKey = await benchAgent(call);
    const post = httpCaller(proc.url, '/api/context', { body: JSON.stringify({ task_type: 'code_review' }), headers: { 'x-api-key': apiKey }, sockets: 64 });
    const from = new Date();
    const load = await closedLoop(64, 0, LOAD_SECONDS * 1000, post);
    const to = new Date();
    // Wait until a checkpoint covers every record (the loop signs one every interval).
    const deadline = Date.now() + 20 * intervalMs;
    for (;;) {
      const [c] = await t.db.query<{ covered: boolean }>(
        'SELECT coalesce((SELECT max(tree_size) FROM audit_tlog_checkpoints), 0) > (SELECT max(leaf_index) FROM agent_context_requests) AS covered',
      );
      if (c!.covered || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // requested_at is the audit writer's clock just before its batch's INSERT and commit (writer.ts);
    // created_at is the checkpoint row's default, now(): the start of the integrating transaction.
    const [s] = await t.db.query<{ n: number; uncovered: number; p50: number; p99: number; max: number; min: number; checkpoints: number }>(
      `WITH w AS (SELECT leaf_index, requested_at FROM agent_context_requests WHERE requested_at >= $1 AND requested_at <= $2),
            lag AS (SELECT extract(epoch FROM (c.created_at - w.requested_at)) * 1000 AS ms
                      FROM w LEFT JOIN LATERAL (SELECT created_at FROM audit_tlog_checkpoints c WHERE c.tree_size > w.leaf_index ORDER BY c.tree_size LIMIT 1) c ON true)
       SELECT count(*)::int AS n, count(*) FILTER (WHERE ms IS NULL)::int AS uncovered,
              percentile_disc(0.5) WITHIN GROUP (ORDER BY ms)::float8 AS p50, percentile_disc(0.99) WITHIN GROUP (ORDER BY ms)::float8 AS p99,
              max(ms)::float8 AS max, min(ms)::float8 AS min,
              (SELECT count(*)::int FROM audit_tlog_checkpoints WHERE created_at >= $1 AND created_at <= $2) AS checkpoints
         FROM lag`,
      [from, to],
    );
    const where = `W1, 64 clients, ${LOAD_SECONDS} s, ${fmt(load.perSecond)} req/s (p99 ${fmt(load.p99, 1)} ms, statuses ${JSON.stringify(load.statuses)}), TLOG_CHECKPOINT_INTERVAL_MS=${intervalMs} | PostgreSQL`;
    b.print(
      `p50 ${fmt(s!.p50)} ms, p99 ${fmt(s!.p99)} ms, max ${fmt(s!.max)} ms | checkpoint lag: first covering checkpoint's created_at - record's requested_at, ${s!.n} records of the window (${s!.uncovered} not covered; min ${fmt(s!.min)} ms), ${s!.checkpoints} checkpoints in the window | ${where} | target p99 < 1,500 ms`,
    );
  } finally {
    await proc.stop();
    await t.close();
  }
}
