/**
 * Spawns the real server (`tsx src/main.ts api`) as a separate OS process against a test
 * database, and a small load generator for it: what the multi-process and crash tests of
 * the audit chain need.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ADMIN_KEY, freePort, JWT_SECRET, TLOG_KEY } from '../harness.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface ServerProcess {
  url: string;
  /** The gRPC context service's address (when started with 'context-grpc'). */
  grpcUrl: string | null;
  child: ChildProcess;
  output(): string;
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>;
  kill(signal: NodeJS.Signals): Promise<void>;
}

/** The Node flags `make run` starts the server with (Makefile NODE_FLAGS). */
export const NODE_FLAGS = ['--max-semi-space-size=16', '--heap-growing-percent=100'];
/**
 * The environment `make run` and the systemd units give the server beside its configuration
 * (Makefile SERVER_ENV). BENCH_MALLOC_ARENA_MAX overrides the arenas for a comparison (16 is
 * glibc's default on two cores).
 */
export const SERVER_ENV = { MALLOC_ARENA_MAX: process.env.BENCH_MALLOC_ARENA_MAX ?? '2' };
/**
 * What the process runs: the sources through tsx (tests), or with SVC_SERVER=dist the compiled
 * server that `make run`, the systemd units and `make bench` run (`make build` makes it).
 */
const ENTRY = process.env.SVC_SERVER === 'dist' ? ['dist/src/main.js'] : ['--import', 'tsx', 'src/main.ts'];

/** Starts `src/main.ts api` (and `services`) against `databaseUrl` (svc_app) and waits until /health answers. */
export async function spawnApi(
  databaseUrl: string,
  deploymentId: string,
  extraEnv: Record<string, string> = {},
  services: string[] = ['api'],
  nodeArgs: string[] = [],
  opts: { logFile?: string; logWriter?: boolean } = {},
): Promise<ServerProcess> {
  const port = await freePort();
  const grpcPort = services.includes('context-grpc') ? await freePort() : 0;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-proc-'));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    DATABASE_URL: databaseUrl,
    DB_PASSWORD: 'test-password-unused-under-trust',
    ADMIN_API_KEY: ADMIN_KEY,
    JWT_SECRET,
    TLOG_SIGNING_KEY: TLOG_KEY.signerKey,
    DEPLOYMENT_ID: deploymentId,
    API_PORT: String(port),
    CONTEXT_GRPC_PORT: String(grpcPort),
    SVC_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    ...SERVER_ENV,
    ...extraEnv,
  };
  // With `logFile`, the server's stderr (its log) goes to that file instead of into this
  // process's memory: a benchmark at LOG_LEVEL=info writes a line per request. With
  // `logWriter` too, through a pipe to a process of its own (`cat`) that appends to the file,
  // as journald or a container runtime reads a service's stderr; otherwise the server writes
  // the file itself.
  const logFd = opts.logFile ? fs.openSync(opts.logFile, 'a') : null;
  const writer = logFd !== null && opts.logWriter ? spawn('cat', [], { stdio: ['pipe', logFd, 'ignore'] }) : null;
  const writerDone = writer ? new Promise<void>((resolve) => writer.once('exit', () => resolve())) : Promise.resolve();
  const child = spawn(process.execPath, [...NODE_FLAGS, ...nodeArgs, ...ENTRY, ...services], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', writer ? writer.stdin! : (logFd ?? 'pipe')],
  });
  // The server holds the pipe's write end now: this process lets go of its copy, so that the
  // writer sees the end of the log when the server exits.
  writer?.stdin!.destroy();
  if (logFd !== null) fs.closeSync(logFd);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  const output = () => (opts.logFile ? out + fs.readFileSync(opts.logFile, 'utf8').slice(-20_000) : out);
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Generous: on a loaded machine tsx and the contract's validators take a while.
  const deadline = Date.now() + 150_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early (${child.exitCode}): ${output()}`);
    try {
      const r = await fetch(`${url}/health`);
      if (r.ok) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server did not start: ${output()}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const kill = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
    await writerDone;
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  return { url, grpcUrl: grpcPort ? `http://127.0.0.1:${grpcPort}` : null, child, output, stop: () => kill('SIGTERM'), kill };
}

export interface Answer {
  status: number;
  requestId: string | null;
}

export interface LoadOptions {
  clients: number;
  /** Stop after this many requests in total (all clients together)... */
  total?: number;
  /** ...or when this returns true. */
  stop?: () => boolean;
  /** Called for every answer received. */
  onAnswer?(a: Answer): void;
  /** Request i: its API key and body. */
  request(i: number): { apiKey?: string; body: unknown };
}

/**
 * `clients` concurrent loops of POST /api/context. Answers (any HTTP status) are collected
 * with the request_id they carried; a request that got no answer (connection reset) is
 * counted in `failed`.
 */
export async function loadContext(url: string, opts: LoadOptions): Promise<{ answers: Answer[]; failed: number }> {
  const answers: Answer[] = [];
  let failed = 0;
  let next = 0;
  const more = () => (opts.total === undefined || next < opts.total) && !(opts.stop?.() ?? false);
  await Promise.all(
    Array.from({ length: opts.clients }, async () => {
      while (more()) {
        const { apiKey, body } = opts.request(next++);
        try {
          const r = await fetch(`${url}/api/context`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...(apiKey ? { 'x-api-key': apiKey } : {}) },
            body: JSON.stringify(body),
          });
          const j = (await r.json()) as { request_id?: string };
          const a = { status: r.status, requestId: j.request_id ?? null };
          answers.push(a);
          opts.onAnswer?.(a);
        } catch {
          failed++;
          if (opts.total === undefined) await new Promise((r) => setTimeout(r, 20));
        }
      }
    }),
  );
  return { answers, failed };
}
