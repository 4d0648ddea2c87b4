/**
 * The client's CPU per leaf in `svc audit verify --since` (no database, no network): W2-sized
 * context request records (request_params an object, 56 SCD ids; every fifth refused, with an
 * escaped quote in validation_errors and no SCDs, as audit.bench's chain has them), their
 * leaves written as the log writes them (auditRecordJson), then
 *
 * 1. LeafRecordChecker.check per leaf: the JSON.parse path (a parseOnly checker) and the
 *    default one (the byte-level fast path, the parse path for what it cannot prove), also on
 *    leaves whose SCD lists differ from one record to the next (the fast path compares a long
 *    value that repeats the previous leaf's instead of scanning it);
 * 2. verifyAppend over those leaves served from memory (entry bundles and hash tiles built
 *    once, before the clock starts): recheck, leaf hashes, tree extension and root.
 *
 * CPU (user + system, process.cpuUsage) per leaf over BENCH_LEAF_CHECK_LEAVES (100,000) leaves,
 * the two checkers in alternating rounds (the machine is shared: the lowest round is printed,
 * with the highest for scale).
 */
import { randomUUID } from 'node:crypto';
import type { Bench } from './run.js';
import { fmt } from './load-gen.js';
import { computeContentHash, computeRecordHash, sha256Hex, type ChainFields } from '../src/core/audit/hash.js';
import { auditRecordJson } from '../src/core/tlog/leaves.js';
import { appendLeaves, EMPTY_ROOT, leafHash, rootHash, TILE_WIDTH } from '../src/core/tlog/merkle.js';
import { LeafRecordChecker } from '../src/core/tlog/record-check.js';
import { entryBundle } from '../src/core/tlog/tile-path.js';
import { verifyAppend, type TlogSource } from '../src/core/tlog/verify-append.js';

const N = Number(process.env.BENCH_LEAF_CHECK_LEAVES ?? 100_000);
const ROUNDS = 5;
/** SCD ids per accepted record: 56 (W2); BENCH_LEAF_CHECK_SCDS=8 for lists as long as those of the records audit.bench and tlog.bench load. */
const SCD_COUNT = Number(process.env.BENCH_LEAF_CHECK_SCDS ?? 56);
const SCDS = Array.from({ length: SCD_COUNT }, (_, k) => `scd:${k % 3 ? 'project' : 'meta'}:policy-${['auth', 'input-validation', 'secrets', 'threat-model'][k % 4]}-${k}`);
const BUNDLES = ['bundle:meta:0.2.0', 'bundle:security:0.1.0', 'bundle:project:1.4.2'];

function fields(i: number, at: Date, vary: boolean): ChainFields {
  const refused = i % 5 === 4;
  // vary: each record's SCD list its own (rotated, one id renamed), so no two consecutive leaves share it.
  const scds = vary ? [...SCDS.slice(i % SCD_COUNT), ...SCDS.slice(0, i % SCD_COUNT)].map((x, k) => (k === 0 ? `${x}-${i}` : x)) : SCDS;
  return {
    chain_sequence: i + 1,
    request_id: randomUUID(),
    agent_id: `agent:bench-${i % 100}`,
    task_type: refused ? 'deploy_prod' : 'code_review',
    request_params: { ticket: `T-${i}`, repository: 'svc', paths: ['src/core', 'src/api'], depth: 3 },
    intent_valid: !refused,
    validation_errors: refused ? { error_code: 'INTENT_NOT_ALLOWED', error_message: 'Task type "deploy_prod" is not among the agent\'s allowed intents' } : null,
    context_bundle_ids: refused ? null : BUNDLES,
    context_scd_ids: refused ? null : scds,
    processing_time_ms: i % 7,
    requested_at: at,
    chain_id: null,
    parent_request_id: null,
  };
}

function leaves(n: number, vary = false): Buffer[] {
  const genesis = sha256Hex('leaf-check bench');
  let prevRh = genesis;
  let prevCh = genesis;
  const out: Buffer[] = [];
  const base = Date.now() - n;
  for (let i = 0; i < n; i++) {
    const f = fields(i, new Date(base + i), vary);
    const rh = computeRecordHash(f, prevRh);
    const ch = computeContentHash(f, prevCh);
    out.push(Buffer.from(auditRecordJson({ ...f, requested_at: f.requested_at.toISOString(), previous_hash: prevRh, record_hash: rh, content_hash: ch, leaf_index: i })));
    prevRh = rh;
    prevCh = ch;
  }
  return out;
}

/** CPU microseconds of `run`, per leaf. */
function cpuPerLeaf(run: () => void, n: number): number {
  const c0 = process.cpuUsage();
  run();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
}

async function cpuPerLeafAsync(run: () => Promise<void>, n: number): Promise<number> {
  const c0 = process.cpuUsage();
  await run();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
}

const range = (xs: number[]) => `${fmt(Math.min(...xs), 2)} µs/leaf (rounds ${xs.map((x) => fmt(x, 1)).join(', ')})`;

export default async function leafCheckBench(b: Bench): Promise<void> {
  const data = leaves(N);
  const bytes = data.reduce((s, d) => s + d.length, 0);
  const where = `${N} ${SCD_COUNT === 56 ? 'W2-sized ' : ''}leaves (${fmt(bytes / N)} bytes each on average; ${SCD_COUNT} SCD ids, every fifth refused) | in process, no database`;

  const checkAll = (parseOnly: boolean) => () => {
    const c = new LeafRecordChecker(null, false, { parseOnly });
    for (let i = 0; i < N; i++) {
      const problem = c.check(i, data[i]!);
      if (problem) throw new Error(`leaf ${i}: ${problem}`);
    }
    fast = (c as { fastLeaves?: number }).fastLeaves ?? 0;
  };
  let fast = 0;
  const parse: number[] = [];
  const byBytes: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    parse.push(cpuPerLeaf(checkAll(true), N));
    byBytes.push(cpuPerLeaf(checkAll(false), N));
  }
  b.print(`${range(parse)} | LeafRecordChecker.check, the JSON.parse path (parseOnly), CPU | ${where}`);
  b.print(`${range(byBytes)} | LeafRecordChecker.check, default (${fmt((100 * fast) / N, 1)}% of the leaves by the byte-level fast path), CPU | ${where}`);
  {
    const varied = leaves(N, true);
    const xs: number[] = [];
    for (let r = 0; r < 3; r++) {
      xs.push(
        cpuPerLeaf(() => {
          const c = new LeafRecordChecker(null);
          for (let i = 0; i < N; i++) if (c.check(i, varied[i]!)) throw new Error(`leaf ${i}`);
        }, N),
      );
    }
    b.print(`${range(xs)} | LeafRecordChecker.check, default, every record's SCD list different from the one before (no value repeats from leaf to leaf), CPU | ${where}`);
  }
  const lh: number[] = [];
  for (let r = 0; r < ROUNDS; r++) lh.push(cpuPerLeaf(() => data.forEach((d) => leafHash(d)), N));
  b.print(`${range(lh)} | merkle.leafHash per leaf (a Buffer.concat and a Buffer digest each), CPU | ${where}`);

  // verifyAppend from size 0 over bundles held in memory.
  const bundles: Buffer[] = [];
  for (let k = 0; k < N; k += TILE_WIDTH) bundles.push(entryBundle(data.slice(k, k + TILE_WIDTH)));
  const tiles = new Map<string, Uint8Array>();
  for (const t of appendLeaves(0, new Map(), data.map((d) => leafHash(d))).tiles) tiles.set(`${t.level}/${t.index}`, t.data);
  const read = async (level: number, index: number) => tiles.get(`${level}/${index}`)!;
  const root = await rootHash(read, N);
  const src: TlogSource = {
    hashTile: async (level, index, width) => tiles.get(`${level}/${index}`)!.subarray(0, (width ?? TILE_WIDTH) * 32),
    entryBundle: async (index) => bundles[index]!,
    inclusionProof: async () => ({ hashes: [] }),
  };
  const va: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    va.push(
      await cpuPerLeafAsync(async () => {
        const rep = await verifyAppend(src, { size: 0, root: EMPTY_ROOT }, { size: N, root });
        if (!rep.ok) throw new Error(`verifyAppend: ${rep.reason}`);
      }, N),
    );
  }
  b.print(`${range(va)} | verifyAppend from size 0: recheck, leaf hashes, tree extension, root (bundles and tiles from memory), CPU | ${where}`);
}
