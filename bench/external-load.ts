/**
 * Load from a second process in C, as benchmarks.md's reference figures were measured:
 * `wrk` (HTTP/1.1 keep-alive) for REST and the hello-world, `h2load` (nghttp2) for gRPC over
 * HTTP/2. A load generator written in Node takes most of a core itself on this 2-core machine
 * and caps the hello-world near 11,000 req/s instead of the 60,000+ these reach, so every
 * figure (and every ratio to the hello-world) would describe the generator, not the server.
 *
 * Both come from Debian's packages (`wrk`, `nghttp2-client`); `make bench` installs them when
 * missing and the benchmarks fall back to the Node generator (labelled so) when they cannot.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { percentile, type LoadResult } from './load-gen.js';

const run = promisify(execFile);
/** Whole seconds, at least one: both tools take durations in whole seconds. */
const secs = (s: number) => String(Math.max(1, Math.round(s)));

/** True when `tool` is on PATH. */
export function haveTool(tool: string): boolean {
  return (process.env.PATH ?? '').split(':').some((d) => d && fs.existsSync(path.join(d, tool)));
}

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-'));

/** wrk's duration like "7.18ms", "850.00us", "1.02s" in milliseconds. */
function wrkMs(v: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(v.trim());
  if (!m) return NaN;
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 'ms' ? n : m[2] === 's' ? n * 1000 : n * 60_000;
}

/** Parses `wrk --latency` output. */
function parseWrk(out: string): LoadResult {
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const errs = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    requests,
    perSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    p50: wrkMs(/^\s+50%\s+(\S+)/m.exec(out)?.[1] ?? ''),
    p99: wrkMs(/^\s+99%\s+(\S+)/m.exec(out)?.[1] ?? ''),
    statuses: { '2xx': requests - non2xx, other: non2xx },
    errors: errs ? errs.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
  };
}

/**
 * `wrk` with `connections` keep-alive connections on 2 threads for `seconds`, after a warm-up
 * of `warmupSeconds` that is not counted. `body` makes it a POST with that JSON body.
 */
export async function wrkRun(url: string, opts: { connections: number; seconds: number; warmupSeconds?: number; body?: string; headers?: Record<string, string> }): Promise<LoadResult & { warmupRequests: number }> {
  const dir = tmp();
  try {
    const args = ['-t2', `-c${opts.connections}`, '--latency'];
    if (opts.body !== undefined || opts.headers) {
      const lua = [
        `wrk.method = ${opts.body !== undefined ? '"POST"' : '"GET"'}`,
        ...(opts.body !== undefined ? [`wrk.body = ${luaString(opts.body)}`, 'wrk.headers["Content-Type"] = "application/json"'] : []),
        ...Object.entries(opts.headers ?? {}).map(([k, v]) => `wrk.headers[${luaString(k)}] = ${luaString(v)}`),
      ].join('\n');
      fs.writeFileSync(path.join(dir, 'req.lua'), lua);
      args.push('-s', path.join(dir, 'req.lua'));
    }
    const warm = opts.warmupSeconds ? parseWrk((await run('wrk', [...args, `-d${secs(opts.warmupSeconds)}s`, url], { maxBuffer: 1 << 20 })).stdout).requests : 0;
    const { stdout } = await run('wrk', [...args, `-d${secs(opts.seconds)}s`, url], { maxBuffer: 1 << 20 });
    return { ...parseWrk(stdout), warmupRequests: warm };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function luaString(s: string): string {
  return `"${s.replace(/[\\"]/g, '\\$&').replace(/\n/g, '\\n')}"`;
}

/**
 * `h2load` posting one gRPC message (`frame`: the 5-byte prefix and the message) to `url`
 * over `connections` HTTP/2 connections with `streams` concurrent streams each, for
 * `seconds` after an uncounted warm-up; latency percentiles from its per-request log.
 */
export async function h2loadGrpc(url: string, frame: Buffer, opts: { connections: number; streams: number; seconds: number; warmupSeconds?: number }): Promise<LoadResult & { warmupRequests: number }> {
  const dir = tmp();
  try {
    fs.writeFileSync(path.join(dir, 'req.bin'), frame);
    const args = ['-c', String(opts.connections), '-m', String(opts.streams), '-t', '1', '-d', path.join(dir, 'req.bin'), '-H', 'content-type: application/grpc', '-H', 'te: trailers'];
    const warm = opts.warmupSeconds ? Number(/(\d+) done/.exec((await run('h2load', [...args, '-D', secs(opts.warmupSeconds), url], { maxBuffer: 1 << 20 })).stdout)?.[1] ?? 0) : 0;
    const log = path.join(dir, 'log.tsv');
    const { stdout } = await run('h2load', [...args, '-D', secs(opts.seconds), `--log-file=${log}`, url], { maxBuffer: 1 << 20 });
    // One line per request: start (µs since epoch), HTTP status, duration (µs).
    const lat: number[] = [];
    const statuses: Record<string, number> = {};
    for (const line of fs.readFileSync(log, 'utf8').split('\n')) {
      const [, status, us] = line.split('\t');
      if (!us) continue;
      lat.push(Number(us) / 1000);
      statuses[status!] = (statuses[status!] ?? 0) + 1;
    }
    const sorted = Float64Array.from(lat).sort();
    const failed = Number(/(\d+) failed/.exec(stdout)?.[1] ?? 0) + Number(/(\d+) errored/.exec(stdout)?.[1] ?? 0);
    return { warmupRequests: warm, requests: lat.length, perSecond: Number(/finished in [^,]+, ([\d.]+) req\/s/.exec(stdout)?.[1] ?? NaN), p50: percentile(sorted, 50), p99: percentile(sorted, 99), statuses, errors: failed };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
