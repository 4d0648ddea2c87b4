/**
 * Tag move until 1,000 subscribers hold the UPDATE (benchmarks.md; target p99 < 500 ms), on
 * W1 content: the real corpus published and deployed (publishCorpus W1), two tags:
 * 1. on the project bundle: its flattened context is every SCD of the resolved bundles
 *    (tag streams are not role-filtered), about 180 KB per message with context_yaml;
 *    moved back and forth between two versions of the project bundle;
 * 2. on the security concern bundle: the role-sized content (the 4 security SCDs of W1's
 *    agent), about 12 KB per message; repointed at each move (a new updated_at).
 * Moves go through `PUT /api/tags/{tag}` (the real path: API, commit, broker message,
 * re-read, fan-out); a sample is the time from just before the move request until the last
 * of the 1,000 streams has received the whole UPDATE; p50/p99 over the moves, plus the
 * per-stream delivery latencies of every move.
 *
 * The subscribers are grpc-js streams in a worker thread (their own event loop), spread over
 * several HTTP/2 connections. PostgreSQL with Redis when DATABASE_URL / REDIS_URL are set
 * (`make bench`); otherwise a smaller run on PGlite with the in-process broker, labelled so.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import semver from 'semver';
import { startTestStack, type TestStack } from '../test/harness.js';
import { benchCorpusDir, corpusBundlePayload, publishCorpus } from '../test/fixtures/corpus.js';

interface Bench {
  real: boolean;
  print(line: string): void;
}

const PROTO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../spec/context.proto');
const require = createRequire(import.meta.url);
/** HTTP/2 flow-control window of the client connections (grpc-js defaults to 64 KiB; grpc-go and grpc-java grow theirs to the bandwidth-delay product). */
const FLOW_WINDOW = 8 * 1024 * 1024;

/**
 * The subscribers: plain JS run in a worker thread (no TypeScript loader needed there).
 * They are grpc-js streams (HTTP/2, gRPC framing, flow control: a real gRPC client) whose
 * deserializer reads only the top-level fields it needs (type, bundle_version) and skips
 * the content by its length prefixes: a real subscriber decodes on its own CPU, and one
 * thread decoding 1,000 x ~180 KB per move would measure this harness, not the service.
 * Stream 0 decodes every message fully (proto-loader) to check that it is a whole
 * ContextMessage with its content.
 */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { performance } = require('node:perf_hooks');
const grpc = require(workerData.grpcPath);
const loader = require(workerData.loaderPath);
const def = loader.loadSync(workerData.proto, { keepCase: true, longs: Number, enums: String, defaults: true });
const method = def['svc.context.v1.ContextService'].Subscribe;
const TYPES = { 1: 'SNAPSHOT', 2: 'UPDATE', 3: 'HEARTBEAT' };
function light(buf) {
  let pos = 0, type = 0, version = '';
  const varint = () => { let x = 0, mul = 1, b; do { b = buf[pos++]; x += (b & 0x7f) * mul; mul *= 128; } while (b & 0x80); return x; };
  while (pos < buf.length) {
    const key = varint(), no = key >>> 3, wt = key & 7;
    if (wt === 0) { const v = varint(); if (no === 1) type = v; }
    else if (wt === 2) { const len = varint(); if (no === 4) version = buf.toString('utf8', pos, pos + len); pos += len; }
    else if (wt === 1) pos += 8; else if (wt === 5) pos += 4; else throw new Error('wire type ' + wt);
  }
  return { type: TYPES[type], version, buf };
}
const now = () => performance.timeOrigin + performance.now();
const clients = [];
for (let i = 0; i < workerData.connections; i++) {
  clients.push(new grpc.Client(workerData.target, grpc.credentials.createInsecure(), {
    'grpc.use_local_subchannel_pool': 1,
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    'grpc-node.flow_control_window': workerData.window,
  }));
}
const calls = [];
// arrivals[k]: when each stream received its k-th context message (k = 0 is the SNAPSHOT).
const arrivals = [];
let failed = null;
for (let i = 0; i < workerData.streams; i++) {
  const call = clients[i % clients.length].makeServerStreamRequest('/svc.context.v1.ContextService/Subscribe', method.requestSerialize, light, workerData.request);
  let k = 0;
  call.on('data', (m) => {
    if (m.type === 'HEARTBEAT') return;
    const t = now();
    const a = (arrivals[k] ??= { n: 0, times: new Array(workerData.streams), version: m.version, types: new Set(), bytes: 0, full: null });
    a.times[i] = t;
    a.n++;
    a.types.add(m.type);
    if (i === 0) {
      const full = method.responseDeserialize(m.buf);
      a.bytes = m.buf.length;
      a.full = { type: full.type, version: full.bundle_version, scds: full.scd_ids.length, contents: Object.keys(full.scd_content).length, yaml: full.context_yaml.length };
    }
    if (a.n === workerData.streams) parentPort.postMessage({ kind: 'complete', k, times: a.times, version: a.version, types: [...a.types], bytes: a.bytes, full: a.full });
    k++;
  });
  call.on('error', (e) => {
    if (e.code !== grpc.status.CANCELLED && !failed) {
      failed = e.message;
      parentPort.postMessage({ kind: 'error', message: e.message });
    }
  });
  calls.push(call);
}
parentPort.on('message', (m) => {
  if (m === 'stop') {
    for (const c of calls) c.cancel();
    setTimeout(() => {
      for (const c of clients) c.close();
      parentPort.postMessage({ kind: 'stopped' });
    }, 200);
  }
});
`;

interface Complete {
  kind: 'complete';
  k: number;
  times: number[];
  version: string;
  types: string[];
  bytes: number;
  full: { type: string; version: string; scds: number; contents: number; yaml: number } | null;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
const ms = (v: number) => v.toFixed(1);

async function mustCall(t: TestStack, method: string, p: string, body?: unknown, apiKey?: string): Promise<any> {
  const r = await t.call('api', method, p, { body, admin: !apiKey, apiKey });
  if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

interface Phase {
  label: string;
  tag: string;
  bundleId: string;
  /** The version the i-th move (from 1) points the tag to. */
  versionOf(i: number): string;
}

/** Opens `streams` subscribers on the phase's tag in a worker, moves the tag `moves` times, prints the figures. */
async function runPhase(b: Bench, t: TestStack, phase: Phase, o: { streams: number; moves: number; connections: number; dbLabel: string; token: string; agentId: string }): Promise<void> {
  const completes = new Map<number, (c: Complete) => void>();
  const done = new Map<number, Complete>();
  let workerError: string | null = null;
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: {
      grpcPath: require.resolve('@grpc/grpc-js'),
      loaderPath: require.resolve('@grpc/proto-loader'),
      proto: PROTO,
      target: new URL(t.url('context-grpc')).host,
      connections: o.connections,
      window: FLOW_WINDOW,
      streams: o.streams,
      request: { tag: phase.tag, agent_id: o.agentId, auth_token: o.token },
    },
  });
  worker.on('message', (m: Complete | { kind: 'error'; message: string }) => {
    if (m.kind === 'error') workerError = m.message;
    if (m.kind !== 'complete') return;
    done.set(m.k, m);
    completes.get(m.k)?.(m);
  });
  const complete = (k: number, timeoutMs = 30_000) =>
    new Promise<Complete>((resolve, reject) => {
      const have = done.get(k);
      if (have) return resolve(have);
      const timer = setTimeout(() => reject(new Error(`message ${k} not on all ${o.streams} streams after ${timeoutMs} ms${workerError ? ` (${workerError})` : ''}`)), timeoutMs);
      completes.set(k, (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
  try {
    const openStart = performance.timeOrigin + performance.now();
    const snap = await complete(0, 120_000);
    const openMs = Math.max(...snap.times) - openStart;
    if (snap.types.join() !== 'SNAPSHOT' || !snap.full || snap.full.scds === 0 || snap.full.contents !== snap.full.scds) throw new Error(`bad SNAPSHOT: ${JSON.stringify(snap.full)}`);
    const size = `${(snap.bytes / 1024).toFixed(1)} KB per message: ${snap.full.scds} SCDs, ${(snap.full.yaml / 1024).toFixed(1)} KB of it context_yaml`;
    b.print(`${ms(openMs)} ms  open ${o.streams} Subscribe streams until each holds its SNAPSHOT, ${phase.label} (${size}; ${o.connections} HTTP/2 connections), ${o.dbLabel}`);

    const allHold: number[] = [];
    const perStream: number[] = [];
    for (let i = 1; i <= o.moves; i++) {
      const version = phase.versionOf(i);
      await new Promise((r) => setTimeout(r, 100)); // let the previous round settle
      const t0 = performance.timeOrigin + performance.now();
      await mustCall(t, 'PUT', `/api/tags/${encodeURIComponent(phase.tag)}`, { bundle_id: phase.bundleId, bundle_version: version });
      const c = await complete(i);
      if (c.version !== version || c.types.join() !== 'UPDATE' || c.full?.version !== version) throw new Error(`move ${i}: streams received ${c.types} ${c.version}, expected UPDATE ${version}`);
      allHold.push(Math.max(...c.times) - t0);
      for (const x of c.times) perStream.push(x - t0);
    }
    allHold.sort((x, y) => x - y);
    perStream.sort((x, y) => x - y);
    b.print(
      `${ms(pct(allHold, 50))} ms p50, ${ms(pct(allHold, 99))} ms p99 (max ${ms(allHold[allHold.length - 1]!)} ms)  tag move until all ${o.streams} subscribers hold the UPDATE, ${o.moves} moves, ${phase.label} (${(snap.bytes / 1024).toFixed(1)} KB per message), ${o.dbLabel} (target p99 < 500 ms at 1,000)`,
    );
    b.print(`${ms(pct(perStream, 50))} ms p50, ${ms(pct(perStream, 99))} ms p99  per-stream UPDATE latency after the move request (${perStream.length} deliveries), ${phase.label}, ${o.dbLabel}`);
  } finally {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 3000);
      worker.on('message', (m: { kind: string }) => {
        if (m.kind === 'stopped') {
          clearTimeout(timer);
          resolve();
        }
      });
      worker.postMessage('stop');
    });
    await worker.terminate();
  }
}

export default async function subscribeBench(b: Bench): Promise<void> {
  const corpusDir = benchCorpusDir(b.print);
  if (!corpusDir) return;
  const streams = b.real ? 1000 : 200;
  const moves = b.real ? 20 : 6;
  const connections = b.real ? 10 : 4;
  const dbLabel = b.real ? `PostgreSQL${process.env.REDIS_URL ? ' + Redis (broker path)' : ''}` : 'PGlite (embedded, in-process broker; smaller run)';

  const t = await startTestStack({ services: ['api', 'context-grpc'], env: { LOG_LEVEL: 'warn' } });
  try {
    const corpus = await publishCorpus(t.call.bind(t) as any, { workload: 'W1', root: corpusDir });
    // A second version of the project bundle (same imports) to move the tag between.
    const v1 = corpus.project.version;
    const v2 = semver.inc(v1, 'patch');
    if (!v2) throw new Error(`the corpus project version ${v1} is not a semantic version`);
    // publishCorpus publishes meta first and the domain just before the project.
    const meta = corpus.bundles[0]!;
    const domain = corpus.bundles[corpus.bundles.length - 2]!;
    const project = corpusBundlePayload('project-bundle.yaml', corpusDir);
    await mustCall(t, 'POST', '/api/bundles', { ...project, version: v2, imports: [meta, domain] });

    const run = Date.now().toString(36);
    const agentId = `agent:bench-sub-${run}`;
    await mustCall(t, 'POST', '/api/agents', { agent_id: agentId, name: 'Subscribe bench', role_id: 'role:security', allowed_intents: ['code_review'] });
    const key = await mustCall(t, 'POST', `/api/agents/${agentId}/api-keys`, {});
    const token = (await mustCall(t, 'POST', '/api/context/token', undefined, key.api_key)).token as string;
    const o = { streams, moves, connections, dbLabel, token, agentId };

    // 1. The whole deployment: a tag on the project bundle (every SCD of meta + the 11 concerns).
    const projectTag = `bench-project-${run}:prod`;
    await mustCall(t, 'POST', '/api/tags', { tag: projectTag, bundle_id: corpus.project.id, bundle_version: v1 });
    await runPhase(b, t, { label: 'W1 content, project tag (whole deployment)', tag: projectTag, bundleId: corpus.project.id, versionOf: (i) => (i % 2 === 1 ? v2 : v1) }, o);

    // 2. Role-sized: a tag on the security concern bundle (the 4 SCDs W1's agent gets beside
    //    the meta ones), repointed to its version at each move (a new updated_at: an UPDATE).
    const security = corpus.concernBundles['security']!;
    const secId = security.slice(0, security.lastIndexOf(':'));
    const secVersion = security.slice(security.lastIndexOf(':') + 1);
    const securityTag = `bench-security-${run}:prod`;
    await mustCall(t, 'POST', '/api/tags', { tag: securityTag, bundle_id: secId, bundle_version: secVersion });
    await runPhase(b, t, { label: 'W1 content, security concern tag (role-sized)', tag: securityTag, bundleId: secId, versionOf: () => secVersion }, o);
  } finally {
    await t.close();
  }
}
