/**
 * The share of a process's CPU spent in named parts of the code, from a V8 CPU profile
 * (`node --cpu-prof`; for the bench's servers: BENCH_NODE_ARGS="--cpu-prof
 * --cpu-prof-dir=DIR" make bench ONLY=context). A sample counts for a part when any frame of
 * its stack belongs to it (inclusive time: the part's own code and what it calls). Two totals:
 * JavaScript (idle, garbage collection and `(program)`, V8's native work, left out) and busy
 * (only idle left out); the share of busy is the share of the process's CPU.
 *
 *   npx tsx bench/cpu-share.ts DIR/*.cpuprofile
 *
 * Parts: metrics (prom-client, src/shared/metrics.ts), request logs (pino and its streams,
 * src/shared/logger.ts).
 */
import fs from 'node:fs';

interface ProfileNode { id: number; callFrame: { functionName: string; url: string }; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

const PARTS: Record<string, RegExp> = {
  metrics: /\/node_modules\/prom-client\/|\/src\/shared\/metrics\.ts/,
  'request logs': /\/node_modules\/(pino|pino-std-serializers|sonic-boom|thread-stream|fast-redact|quick-format-unescaped|atomic-sleep|on-exit-leak-free)\/|\/src\/shared\/logger\.ts/,
};
const OUTSIDE = new Set(['(idle)', '(garbage collector)', '(program)']);

function shares(p: Profile): { total: number; busy: number; parts: Record<string, number> } {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Which parts each node's stack (itself and its ancestors) touches, memoised per node.
  const memo = new Map<number, Set<string>>();
  const partsOf = (id: number): Set<string> => {
    const hit = memo.get(id);
    if (hit) return hit;
    const n = byId.get(id)!;
    const up = parent.has(id) ? partsOf(parent.get(id)!) : new Set<string>();
    const own = Object.entries(PARTS).filter(([, re]) => re.test(n.callFrame.url)).map(([k]) => k);
    const s = own.length ? new Set([...up, ...own]) : up;
    memo.set(id, s);
    return s;
  };
  let total = 0;
  let busy = 0;
  const parts: Record<string, number> = Object.fromEntries(Object.keys(PARTS).map((k) => [k, 0]));
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    const fn = byId.get(id)!.callFrame.functionName;
    if (fn !== '(idle)') busy += dt;
    if (OUTSIDE.has(fn)) return;
    total += dt;
    for (const k of partsOf(id)) parts[k] += dt;
  });
  return { total, busy, parts };
}

for (const file of process.argv.slice(2)) {
  const { total, busy, parts } = shares(JSON.parse(fs.readFileSync(file, 'utf8')) as Profile);
  const cells = Object.entries(parts).map(([k, v]) => `${k} ${((v / total) * 100).toFixed(2)}% of JavaScript, ${((v / busy) * 100).toFixed(2)}% of busy`);
  console.log(`${file}: busy ${(busy / 1e6).toFixed(1)} s, JavaScript ${(total / 1e6).toFixed(1)} s; ${cells.join('; ')}`);
}
