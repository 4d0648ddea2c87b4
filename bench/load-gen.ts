/**
 * Load generation for the context benchmarks: closed-loop clients over keep-alive
 * node:http (REST) or one HTTP/2 connection per 16 clients (gRPC, Connect's gRPC transport),
 * a bare node:http hello-world server in its own process (the reference of benchmarks.md),
 * and the server's own CPU time read from /proc (to tell server cost from machine noise).
 */
import http from 'node:http';
import fs from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { create, toBinary } from '@bufbuild/protobuf';
import { RequestContextRequestSchema } from '../gen/proto/context_pb.js';

export interface LoadResult {
  requests: number;
  perSecond: number;
  p50: number;
  p99: number;
  statuses: Record<string, number>;
  errors: number;
}

/** The p-th percentile of ascending `sorted` (NaN when empty). */
export function percentile(sorted: Float64Array, p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Runs `clients` closed loops of `one()` for `warmupMs` then `durationMs`; only the second window counts. */
export async function closedLoop(clients: number, warmupMs: number, durationMs: number, one: () => Promise<string>): Promise<LoadResult> {
  const lat: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  let measuring = false;
  let stop = false;
  const t0 = performance.now();
  let tStart = 0;
  let tEnd = 0;
  const timerW = setTimeout(() => {
    measuring = true;
    tStart = performance.now();
  }, warmupMs);
  const timerE = setTimeout(() => {
    stop = true;
    tEnd = performance.now();
  }, warmupMs + durationMs);
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (!stop) {
        const s = performance.now();
        let status: string;
        try {
          status = await one();
        } catch {
          errors++;
          continue;
        }
        if (measuring && !stop) {
          lat.push(performance.now() - s);
          statuses[status] = (statuses[status] ?? 0) + 1;
        }
      }
    }),
  );
  clearTimeout(timerW);
  clearTimeout(timerE);
  void t0;
  const sorted = Float64Array.from(lat).sort();
  return { requests: lat.length, perSecond: lat.length / ((tEnd - tStart) / 1000), p50: percentile(sorted, 50), p99: percentile(sorted, 99), statuses, errors };
}

/** A keep-alive POST (or GET without body) that resolves with the status once the body is read. */
export function httpCaller(base: string, path: string, opts: { method?: string; body?: string; headers?: Record<string, string>; sockets: number }): () => Promise<string> {
  const u = new URL(base);
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.sockets });
  const headers: Record<string, string | number> = { ...(opts.headers ?? {}) };
  if (opts.body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = Buffer.byteLength(opts.body);
  }
  return () =>
    new Promise<string>((resolve, reject) => {
      const req = http.request({ host: u.hostname, port: u.port, path, method: opts.method ?? 'POST', agent, headers }, (res) => {
        res.on('data', () => {});
        res.on('end', () => resolve(String(res.statusCode)));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(opts.body);
    });
}

const HELLO_SRC = `
const http = require('node:http');
const s = http.createServer((req, res) => { req.resume(); req.on('end', () => { res.writeHead(200, {'content-type': 'text/plain'}); res.end('hello world'); }); });
s.listen(0, '127.0.0.1', () => process.send(s.address().port));
`;

/** The bare node:http hello-world in its own process. */
export async function startHelloWorld(): Promise<{ url: string; pid: number; stop(): void }> {
  const child: ChildProcess = spawn(process.execPath, ['-e', HELLO_SRC], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve) => child.once('message', (m) => resolve(Number(m))));
  return { url: `http://127.0.0.1:${port}`, pid: child.pid!, stop: () => child.kill('SIGKILL') };
}

/** A process's name and its /proc/<pid>/stat fields after the name (Linux), or null once it has ended. */
function procStat(pid: number | string): { comm: string; fields: string[] } | null {
  try {
    const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return { comm: f.slice(f.indexOf('(') + 1, f.lastIndexOf(')')), fields: f.slice(f.lastIndexOf(')') + 2).split(' ') };
  } catch {
    return null;
  }
}

/** User + system CPU seconds a process has used so far (Linux /proc). */
export function cpuSeconds(pid: number): number {
  const st = procStat(pid);
  return st ? (Number(st.fields[11]) + Number(st.fields[12])) / 100 : NaN;
}

/**
 * CPU seconds used so far by every process named `comm` (for example `postgres`, when the
 * database runs on this machine): their own user + system time and that of their children
 * already reaped. NaN when there is none.
 */
export function cpuSecondsOf(comm: string): number {
  let total = 0;
  let found = false;
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const st = procStat(pid);
    if (st?.comm !== comm) continue;
    total += Number(st.fields[11]) + Number(st.fields[12]) + Number(st.fields[13]) + Number(st.fields[14]);
    found = true;
  }
  return found ? total / 100 : NaN;
}

/** The machine's idle and total CPU seconds so far, over all cores (Linux /proc/stat). */
export function machineCpu(): { idle: number; total: number } {
  const f = fs.readFileSync('/proc/stat', 'utf8');
  const v = f.slice(0, f.indexOf('\n')).split(/\s+/).slice(1, 9).map(Number);
  // user nice system idle iowait irq softirq steal
  return { idle: (v[3]! + v[4]!) / 100, total: v.reduce((a, b) => a + b, 0) / 100 };
}

/** Peak resident set size of a process in MB (VmHWM), or NaN. */
export function peakRssMb(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

export const fmt = (n: number, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');

/** The gRPC request frame (uncompressed flag, length, message) of RequestContext. */
export function grpcFrame(apiKey: string): Buffer {
  const msg = toBinary(RequestContextRequestSchema, create(RequestContextRequestSchema, { apiKey, taskType: 'code_review' }));
  const frame = Buffer.alloc(5 + msg.length);
  frame.writeUInt32BE(msg.length, 1);
  frame.set(msg, 5);
  return frame;
}
