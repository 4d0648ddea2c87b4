/**
 * Collector ingest (benchmarks.md): events per second and peak RSS while the coding-CLI
 * collector tails an OTLP JSON-lines file of 1,000,000 log events into its SQLite store,
 * through the real path (line parsing, AnyValue decoding, event typing, redaction with
 * HMAC, deterministic ids, one transaction per batch of about 1 MiB of lines with the offset).
 * Target: >= 50,000 events/s, memory flat in file size: measured at two file sizes, each in
 * its own child process so that peak RSS is the ingest's alone.
 *
 * The collector store is SQLite whatever DATABASE_URL says; the figures do not depend on it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';

interface Bench {
  real: boolean;
  print(line: string): void;
}

const SELF = fileURLToPath(import.meta.url);
const PER_LINE = 50;
const BIG = 1_000_000;
const SMALL = 100_000;

const s = (k: string, v: string) => `{"key":"${k}","value":{"stringValue":"${v}"}}`;
const iv = (k: string, v: number) => `{"key":"${k}","value":{"intValue":"${v}"}}`;
const RESOURCE = `{"attributes":[${s('host.arch', 'arm64')},${s('os.type', 'darwin')},${s('os.version', '24.1.0')},${s('service.name', 'vendor-code')},${s('service.version', '2.1.200')}]}`;
const SCOPE = '{"name":"com.vendor.vendor_code.events","version":"2.1.200"}';
const BASE_NS = 1767225600000000000n;

/** One record in the CLI's shape; the event kind rotates through the five typed ones. */
function record(n: number): string {
  const ns = (BASE_NS + BigInt(n) * 1_000_000n).toString();
  const user = n % 97;
  const std = [
    s('user.id', `9f0c1d2e3f4a5b6c7d8e9f0011223344556677889${String(user).padStart(2, '0')}abbccddeeff0011223344`),
    s('session.id', `5e7a0c2b-1111-4222-8333-${String(n % 1013).padStart(12, '0')}`),
    s('organization.id', '0b1c2d3e-0000-4000-8000-00000000abcd'),
    s('user.email', `dev${user}@example.com`),
    s('user.account_id', `user_01SYNTH${String(user).padStart(14, '0')}`),
    s('terminal.type', 'vscode'),
    s('event.timestamp', new Date(Number(ns.slice(0, -6))).toISOString()),
    iv('event.sequence', n),
    s('prompt.id', `c0ffee00-1234-4abc-8def-${String(n % 100_003).padStart(12, '0')}`),
  ];
  let name: string;
  let extra: string[];
  switch (n % 5) {
    case 0:
      name = 'tool_result';
      extra = [s('tool_name', 'Bash'), s('tool_use_id', `toolu_${n}`), s('success', 'true'), iv('duration_ms', n % 1000), s('decision_type', 'accept'), s('decision_source', 'config'), s('tool_result_size_bytes', '59')];
      break;
    case 1:
      name = 'api_request';
      extra = [s('model', 'vendor-model-1'), `{"key":"cost_usd","value":{"doubleValue":0.0123}}`, iv('duration_ms', 2100), iv('input_tokens', 1200), iv('output_tokens', 350), s('request_id', `req_${n}`)];
      break;
    case 2:
      name = 'user_prompt';
      extra = [s('prompt_length', '42'), s('prompt', '<REDACTED>')];
      break;
    case 3:
      name = 'tool_decision';
      extra = [s('tool_name', 'Edit'), s('tool_use_id', `toolu_${n}`), s('decision', 'accept'), s('source', 'user_temporary')];
      break;
    default:
      name = 'api_error';
      extra = [s('model', 'vendor-model-1'), s('error', 'Request timed out'), iv('status_code', 529), iv('duration_ms', 30000)];
  }
  return `{"timeUnixNano":"${ns}","observedTimeUnixNano":"${ns}","body":{"stringValue":"vendor_code.${name}"},"attributes":[${[...std, s('event.name', name), ...extra].join(',')}],"traceId":"","spanId":""}`;
}

export async function generate(file: string, events: number): Promise<number> {
  const out = fs.createWriteStream(file);
  for (let n = 0; n < events; n += PER_LINE) {
    const recs: string[] = [];
    for (let k = n; k < Math.min(events, n + PER_LINE); k++) recs.push(record(k));
    const line = `{"resourceLogs":[{"resource":${RESOURCE},"scopeLogs":[{"scope":${SCOPE},"logRecords":[${recs.join(',')}]}]}]}\n`;
    if (!out.write(line)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((r, j) => out.end((e?: Error | null) => (e ? j(e) : r())));
  return fs.statSync(file).size;
}

/**
 * CPU seconds of this process's main thread (Linux: /proc/self/task/<pid>/stat), or null.
 * The main thread runs every SQLite commit, the one stage that cannot be spread over threads.
 */
function mainThreadCpu(): number | null {
  try {
    const st = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in clock ticks (USER_HZ, 100 on Linux)
  } catch {
    return null;
  }
}

/** Child process: ingest `file` into a fresh store at `db`; prints one JSON line. */
const SECRET = 'bench-secret-0123456789abcdef';

async function worker(file: string, db: string, inThread: boolean): Promise<void> {
  const { CollectorStore } = await import('../src/collector/store/store.js');
  const { Redactor } = await import('../src/collector/redact/redactor.js');
  const { FileTailer } = await import('../src/collector/tail/tailer.js');
  const { processOtlpLine } = await import('../src/collector/otlp/lines.js');
  const { codeCli } = await import('../src/collector/code-cli/definition.js');
  const { createLogger } = await import('../src/shared/logger.js');
  const { ParsePool, poolProcessor } = await import('../src/collector/tail/processor.js');
  const logger = createLogger({ level: 'warn' });
  const store = new CollectorStore(db);
  store.registerSource(codeCli.profile.sourceId, codeCli.description, codeCli.coverage);
  const redactor = new Redactor(SECRET);
  // As the service runs it: parsing threads shared by the file collectors, pipelined commits.
  const pool = inThread ? null : new ParsePool({ size: Math.min(2, os.availableParallelism()), hmacSecret: SECRET, logger });
  await pool?.warm(); // start the threads outside the timed part
  const processor = pool
    ? poolProcessor(pool, codeCli.profile.sourceId, (line, rows, counters, now) => processOtlpLine(line, { profile: codeCli.profile, redactor, now }, rows, counters))
    : undefined;
  const rssBefore = process.memoryUsage().rss;
  const tailer = new FileTailer({
    sourceId: codeCli.profile.sourceId,
    path: file,
    store,
    logger,
    clock: { now: () => new Date() },
    intervalMs: 1000,
    processor,
    pipelineDepth: 3,
    processLine: (line, rows, counters, now) => processOtlpLine(line, { profile: codeCli.profile, redactor, now }, rows, counters),
  });
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
  const t0 = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  const elu0 = performance.eventLoopUtilization();
  const main0 = mainThreadCpu();
  await tailer.tick();
  await tailer.stop();
  await pool?.close();
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const mainBusy = performance.eventLoopUtilization(elu0).utilization;
  const mainCpu = main0 === null ? null : mainThreadCpu()! - main0;
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  clearInterval(sampler);
  const events = (store.db.prepare('SELECT count(*) AS n FROM observed_activity_log').get() as { n: number }).n;
  const t1 = process.hrtime.bigint();
  const stats = store.stats();
  const statsMs = Number(process.hrtime.bigint() - t1) / 1e6;
  const t2 = process.hrtime.bigint();
  store.listObserved({ limit: 500 });
  const listMs = Number(process.hrtime.bigint() - t2) / 1e6;
  store.close();
  const maxRssKb = process.resourceUsage().maxRSS;
  process.stdout.write(
    JSON.stringify({ events, seconds, cpuSeconds, mainBusy, mainCpu, peakRss: Math.max(peak, maxRssKb * 1024), rssBefore, statsMs, listMs, total: stats.total_events, dbBytes: fs.statSync(db).size }) + '\n',
  );
}

function runWorker(file: string, db: string): Promise<{ events: number; seconds: number; cpuSeconds: number; mainBusy: number; mainCpu: number | null; peakRss: number; rssBefore: number; statsMs: number; listMs: number; dbBytes: number }> {
  return new Promise((resolve, reject) => {
    const tsx = path.resolve(path.dirname(SELF), '../node_modules/.bin/tsx');
    const child = spawn(tsx, [SELF, '--collector-ingest-worker', file, db], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      try {
        resolve(JSON.parse(line));
      } catch {
        reject(new Error(`worker exited ${code}: ${out.slice(0, 500)}`));
      }
    });
  });
}

const mb = (n: number) => (n / 1024 / 1024).toFixed(0);

/** Linux CPU pressure (share of time runnable threads waited for a core, last 60 s), or '?'. */
function cpuPressure(): string {
  try {
    return fs.readFileSync('/proc/pressure/cpu', 'utf8').match(/some avg10=[\d.]+ avg60=([\d.]+)/)?.[1] ?? '?';
  } catch {
    return '?';
  }
}

export default async function collectorBench(b: Bench): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-collector-bench-'));
  const label = 'database: SQLite collector store (WAL, synchronous=NORMAL)';
  try {
    const results: Record<number, Awaited<ReturnType<typeof runWorker>>> = {};
    for (const events of [SMALL, BIG]) {
      const file = path.join(dir, `otlp-${events}.json`);
      const t0 = Date.now();
      const bytes = await generate(file, events);
      b.print(`# generated ${events} events (${PER_LINE} per line, ${mb(bytes)} MB) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      const r = await runWorker(file, path.join(dir, `store-${events}.sqlite`));
      results[events] = r;
      fs.rmSync(file, { force: true });
      const rate = Math.round(r.events / r.seconds);
      b.print(
        `${rate} events/s | collector ingest | ${r.events} OTLP log events in one file (${mb(bytes)} MB), coding-CLI collector, redaction on | ${label} | target >= 50000/s | ${rate >= 50_000 ? 'MET' : 'NOT MET'}`,
      );
      b.print(
        `${Math.round(r.events / r.cpuSeconds)} events per CPU-second | collector ingest CPU cost (main thread + parsing threads + checkpointer) | the same file | ${label} | load average during the run ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores`,
      );
      b.print(
        `${((r.cpuSeconds * 1e6) / r.events).toFixed(1)} CPU s per million events | collector ingest CPU cost, the same figure inverted (less sensitive than events/s to other load on the machine) | the same file | ${label} | main thread (SQLite commits) busy ${(r.mainBusy * 100).toFixed(0)}% of the run${r.mainCpu === null ? '' : `, ${((r.mainCpu * 1e6) / r.events).toFixed(1)} CPU s per million events of it`}; CPU pressure after it ${cpuPressure()}% (time threads waited for a core)`,
      );
      b.print(`${mb(r.peakRss)} MB | collector ingest peak RSS | the same ${r.events}-event file | ${label} | (process RSS before ingest ${mb(r.rssBefore)} MB)`);
      b.print(`${r.statsMs.toFixed(0)} ms | GET /api/activity/stats query | over ${r.events} rows | ${label} | -`);
      b.print(`${r.listMs.toFixed(1)} ms | GET /api/activity/observed?limit=500 query | over ${r.events} rows | ${label} | -`);
    }
    const ratio = results[BIG].peakRss / results[SMALL].peakRss;
    b.print(
      `${ratio.toFixed(2)} ratio | collector peak RSS, ${BIG} vs ${SMALL} events (file 10x larger) | ${label} | target: flat (about 1.0) | ${ratio < 1.25 ? 'MET' : 'NOT MET'}`,
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url && process.argv[2] === '--collector-ingest-worker') {
  await worker(process.argv[3], process.argv[4], process.argv[5] === 'in-thread');
}
