/**
 * `make bench`: runs every bench/*.bench.ts module and prints one line per figure.
 * Benchmarks report; they never fail the run (exit 0 whatever the figures).
 * Run on PostgreSQL by setting DATABASE_URL (the figures that count); without it they run
 * smaller on PGlite and are labelled so.
 */
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import postgres from 'postgres';

export interface Bench {
  real: boolean;
  print(line: string): void;
}

const dir = path.dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const files = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort();
const real = !!process.env.DATABASE_URL;
// The server processes the benchmarks start run what production runs: dist/, compiled by
// `make build` (run here, a no-op when dist/ is current), unless SVC_SERVER says otherwise
// (SVC_SERVER=tsx: the sources through tsx, as tests run them).
process.env.SVC_SERVER ??= 'dist';
if (process.env.SVC_SERVER === 'dist') {
  const built = spawnSync('make', ['-s', 'build'], { cwd: path.resolve(dir, '..'), stdio: 'inherit' });
  if (built.status !== 0) throw new Error('make build failed: the benchmarks run the compiled server (SVC_SERVER=tsx runs the sources)');
}
const b: Bench = { real, print: (line) => process.stdout.write(`${line}\n`) };
b.print(`# svc benchmarks on ${real ? 'PostgreSQL (DATABASE_URL)' : 'PGlite (embedded; figures printed apart, not the targets)'}, ${new Date().toISOString()}, server processes run ${process.env.SVC_SERVER === 'dist' ? 'dist/ (make build)' : 'the sources through tsx'}`);
if (real) b.print(`# ${await sharedMemory(process.env.DATABASE_URL!)}`);
for (const f of files) {
  b.print(`## ${f}`);
  const t0 = Date.now();
  try {
    const mod = await import(pathToFileURL(path.join(dir, f)).href);
    await mod.default(b);
  } catch (e) {
    // fetch's own message ("fetch failed") says nothing: the reason is its cause.
    const cause = (e as Error)?.cause;
    b.print(`!! ${f} failed: ${(e as Error)?.stack ?? e}${cause ? `\ncaused by: ${(cause as Error)?.stack ?? cause}` : ''}`);
  }
  b.print(`## ${f} took ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}
process.exit(0);

/**
 * PostgreSQL's shared buffers and whether its shared memory is on huge pages (read from the
 * mappings of the backend that answers, when it runs on this machine): on this machine's VM,
 * W1 and verify differ by a quarter and more between the two (README, "PostgreSQL on huge
 * pages"), so every run says which it had.
 */
async function sharedMemory(url: string): Promise<string> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [r] = await sql<Array<{ sb: string; hp: string; pid: number }>>`SELECT current_setting('shared_buffers') AS sb, current_setting('huge_pages') AS hp, pg_backend_pid() AS pid`;
    let pages = "'s pages unknown (the server is not on this machine, or its mappings cannot be read)";
    try {
      // The shared memory is the backend's largest shared mapping; its KernelPageSize says which pages hold it.
      const maps = fs.readFileSync(`/proc/${r!.pid}/smaps`, 'utf8').split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/);
      const sizes = maps.map((m) => ({ kb: Number(/^Size:\s+(\d+) kB/m.exec(m)?.[1] ?? 0), page: Number(/^KernelPageSize:\s+(\d+) kB/m.exec(m)?.[1] ?? 0) }));
      const shm = sizes.sort((a, b) => b.kb - a.kb)[0];
      if (shm) pages = shm.page >= 2048 ? ` on huge pages (${shm.page} kB)` : ` on ${shm.page} kB pages, not huge pages`;
    } catch {
      /* not local, or not readable */
    }
    return `PostgreSQL: shared_buffers ${r!.sb}, huge_pages=${r!.hp}; its shared memory${pages}`;
  } catch (e) {
    return `PostgreSQL's shared memory: not read (${(e as Error).message})`;
  } finally {
    await sql.end({ timeout: 1 });
  }
}
