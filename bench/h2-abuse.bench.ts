/**
 * Abuse resistance of port 8002 (`make bench ONLY=h2`), beside a bare node:http2 hello server
 * measured in the same run as the reference: the port must hold at least as well.
 *
 * For each server: the p50 and max latency of a normal client's unary calls (one at a time
 * on its own connection) with no abuse, during a SETTINGS flood and during a PING flood from
 * another connection; and how many streams a "rapid reset" client (HEADERS then RST_STREAM,
 * stream after stream, on one connection) gets through before the server cuts it. The
 * abusers run in a child process of their own (test/context/h2-abuser.ts), bounded in
 * frames, streams and time; loopback only. On PostgreSQL the real server is a separate
 * process (`src/main.ts api context-grpc`); on PGlite it runs in this process, labelled so.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http2 from 'node:http2';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Bench } from './run.js';
import { fmt, grpcFrame, percentile } from './load-gen.js';
import { ADMIN_KEY, createTestDb, startTestStack } from '../test/harness.js';
import { spawnApi } from '../test/audit/server-process.js';
import type { AbuseKind, AbuseOptions, AbuseResult } from '../test/context/h2-abuser.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Each latency phase: this long, or this many calls, whichever comes first. */
const PHASE_MS = 3000;
const PHASE_CALLS = 5000;
/** Flood bounds (frames) and rapid-reset bounds (streams). */
const FLOOD_FRAMES = 100_000_000;
const RESET_STREAMS = 200_000;
const RESET_MS = 5000;

const HELLO_H2 = `
const http2 = require('node:http2');
const s = http2.createServer();
s.on('stream', (stream) => { stream.on('error', () => {}); stream.resume(); stream.on('end', () => { if (!stream.closed) { stream.respond({ ':status': 200, 'content-type': 'text/plain' }); stream.end('hello world'); } }); });
s.listen(0, '127.0.0.1', () => process.send(s.address().port));
`;

interface Target {
  name: string;
  port: number;
  /** One unary call's request: headers and body. */
  headers: http2.OutgoingHttpHeaders;
  body: Buffer;
  stop(): Promise<void>;
}

/** The abuser child process: one run per message. */
async function startAbuser(): Promise<{ run(o: AbuseOptions): Promise<AbuseResult>; stop(): void }> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'test/context/h2-abuser.ts'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await new Promise<void>((resolve) => child.once('message', () => resolve()));
  return {
    run: (o) =>
      new Promise((resolve) => {
        child.once('message', (m) => resolve(m as AbuseResult));
        child.send(o);
      }),
    stop: () => child.kill('SIGKILL'),
  };
}

/** Sequential unary calls on one connection while `during` runs (or for PHASE_MS); latencies in ms. */
async function calls(t: Target, during: Promise<unknown> | null): Promise<{ lat: Float64Array; failed: number }> {
  const session = http2.connect(`http://127.0.0.1:${t.port}`);
  session.on('error', () => {});
  const lat: number[] = [];
  let failed = 0;
  let over = false;
  const timer = setTimeout(() => (over = true), PHASE_MS);
  void during?.then(() => (over = true));
  try {
    while (!over && lat.length + failed < PHASE_CALLS) {
      const s = performance.now();
      const ok = await new Promise<boolean>((resolve) => {
        const req = session.request(t.headers);
        let status = 0;
        req.on('response', (h) => (status = Number(h[':status'])));
        req.on('data', () => {});
        req.on('close', () => resolve(status === 200 && req.rstCode === http2.constants.NGHTTP2_NO_ERROR));
        req.on('error', () => resolve(false));
        req.end(t.body);
      });
      if (ok) lat.push(performance.now() - s);
      else failed++;
    }
  } finally {
    clearTimeout(timer);
    session.close();
  }
  return { lat: Float64Array.from(lat).sort(), failed };
}

async function measure(b: Bench, t: Target, abuser: Awaited<ReturnType<typeof startAbuser>>): Promise<void> {
  const report = (what: string, r: { lat: Float64Array; failed: number }, extra = '') =>
    b.print(`p50 ${fmt(percentile(r.lat, 50), 2)} ms, max ${fmt(r.lat[r.lat.length - 1] ?? NaN, 2)} ms (${r.lat.length} calls${r.failed ? `, ${r.failed} failed` : ''}) | unary calls ${what} | ${t.name}${extra}`);
  await calls(t, null); // warm-up
  report('alone', await calls(t, null));
  for (const kind of ['settings', 'ping'] as AbuseKind[]) {
    const flood = abuser.run({ kind, port: t.port, maxCount: FLOOD_FRAMES, maxMs: PHASE_MS });
    const r = await calls(t, flood);
    const f = await flood;
    report(`during a ${kind.toUpperCase()} flood from another connection`, r, ` | flood: ${f.sent} frames written in ${fmt(f.ms)} ms over ${f.connections} connection(s), ${f.cut ? `each cut by the server${f.goawayCode !== null ? ` (GOAWAY code ${f.goawayCode})` : ''} and reopened` : 'never cut'}`);
  }
  const rr = await abuser.run({ kind: 'rapid-reset', port: t.port, maxCount: RESET_STREAMS, maxMs: RESET_MS });
  const how = rr.cut ? `cut${rr.goawayCode !== null ? ` (GOAWAY code ${rr.goawayCode})` : ' (closed)'}` : `not cut within the bounds (${RESET_STREAMS} streams, ${RESET_MS} ms)`;
  b.print(`${rr.accepted ?? 'n/a'} streams taken by the server (GOAWAY's last stream id) | rapid reset (HEADERS + RST_STREAM) on one connection: ${how} after ${fmt(rr.ms)} ms; ${rr.sent} streams written by the client | ${t.name}`);
  const after = await calls(t, null);
  report('after the rapid reset', after);
}

async function helloTarget(): Promise<Target> {
  const child = spawn(process.execPath, ['-e', HELLO_H2], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve) => child.once('message', (m) => resolve(Number(m))));
  return { name: 'bare node:http2 hello server (reference; node defaults)', port, headers: { ':method': 'POST', ':path': '/' }, body: Buffer.from('hi'), stop: async () => void child.kill('SIGKILL') };
}

/** Port 8002's server with one agent and key and no content: the unary call is RequestContext (a small answer, audited). */
async function realTarget(b: Bench): Promise<Target> {
  let base: string;
  let grpc: string;
  let stop: () => Promise<void>;
  if (b.real) {
    const testDb = await createTestDb();
    const proc = await spawnApi(testDb.appUrl!, randomUUID(), { DATABASE_MIGRATION_URL: testDb.ownerUrl!, LOG_LEVEL: 'error' }, ['api', 'context-grpc']);
    base = proc.url;
    grpc = proc.grpcUrl!;
    stop = async () => {
      await proc.stop();
      await testDb.close();
    };
  } else {
    const t = await startTestStack({ services: ['api', 'context-grpc'] });
    base = t.url('api');
    grpc = t.url('context-grpc');
    stop = () => t.close();
  }
  const post = async (p: string, body: unknown) => {
    const r = await fetch(base + p, { method: 'POST', headers: { 'x-admin-key': ADMIN_KEY, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (r.status !== 201) throw new Error(`${p}: ${r.status} ${await r.text()}`);
    return (await r.json()) as Record<string, string>;
  };
  const agentId = `agent:abuse-${randomUUID().slice(0, 8)}`;
  await post('/api/agents', { agent_id: agentId, name: 'Abuse bench agent', role_id: 'role:security', allowed_intents: ['code_review'] });
  const key = await post(`/api/agents/${agentId}/api-keys`, {});
  return {
    name: `port 8002's server (RequestContext, plain gRPC; ${b.real ? 'PostgreSQL, own process' : 'PGlite, in this process'})`,
    port: Number(new URL(grpc).port),
    headers: { ':method': 'POST', ':path': '/svc.context.v1.ContextService/RequestContext', 'content-type': 'application/grpc', te: 'trailers' },
    body: grpcFrame(key.api_key!),
    stop,
  };
}

export default async function h2AbuseBench(b: Bench): Promise<void> {
  b.print(`abuse: floods of at most ${FLOOD_FRAMES} frames or ${PHASE_MS} ms, rapid reset of at most ${RESET_STREAMS} streams or ${RESET_MS} ms; the normal client calls one at a time on its own connection for ${PHASE_MS} ms per phase`);
  const abuser = await startAbuser();
  try {
    for (const make of [helloTarget, () => realTarget(b)]) {
      const t = await make();
      try {
        await measure(b, t, abuser);
      } finally {
        await t.stop();
      }
    }
  } finally {
    abuser.stop();
  }
}
