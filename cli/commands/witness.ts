/**
 * `svc witness`: a C2SP tlog-witness-style witness of the audit log. It cosigns (cosignature/v1)
 * a checkpoint only when it is consistent with the last one it cosigned, and stops (exit 2)
 * printing the evidence when the log presents a split view: a smaller tree, the same size
 * with another root, a failing consistency proof, or another origin.
 */
import { readFileSync } from 'node:fs';
import type { CAC } from 'cac';
import { cosign, parseWitnessSignerKey } from '../../src/core/tlog/cosignature.js';
import { verifyConsistency } from '../../src/core/tlog/merkle.js';
import type { ParsedSignerKey } from '../../src/core/tlog/note.js';
import { CliError, EXIT, usageError } from '../lib/errors.js';
import { err, out } from '../lib/io.js';
import { connection } from '../lib/api.js';
import { TlogClient } from '../lib/tlog-client.js';
import { describe, fetchCheckpoint, resolveLogKey, verifyCheckpoint, type VerifiedCheckpoint } from '../lib/tlog-trust.js';
import { loadWitnessState, saveWitnessState } from '../lib/witness-state.js';

/** Exit code of a split view (the two checkpoints and the proof are printed). */
const EXIT_CONFLICT = 2;

export type WitnessDecision =
  | { action: 'cosign'; first: boolean }
  | { action: 'unchanged' }
  | { action: 'check-consistency' }
  | { action: 'conflict'; why: string };

/** What to do with checkpoint `cur` after having cosigned `last` (null: nothing yet). */
export function decide(last: Pick<VerifiedCheckpoint, 'origin' | 'size' | 'root'> | null, cur: Pick<VerifiedCheckpoint, 'origin' | 'size' | 'root'>): WitnessDecision {
  if (!last) return { action: 'cosign', first: true };
  if (cur.origin !== last.origin) return { action: 'conflict', why: `the origin changed from ${last.origin} to ${cur.origin}` };
  if (cur.size < last.size) return { action: 'conflict', why: `the tree shrank from ${last.size} to ${cur.size} leaves` };
  if (cur.size === last.size) return Buffer.compare(cur.root, last.root) === 0 ? { action: 'unchanged' } : { action: 'conflict', why: `two roots for tree size ${cur.size}` };
  return { action: 'check-consistency' };
}

interface Opts { log?: unknown; key?: unknown; state?: unknown; once?: boolean; intervalMs?: unknown; logKey?: unknown; adminKey?: unknown }

const str = (v: unknown) => (v === undefined || v === null || v === true ? undefined : String(v));

function readSignerKey(file: string): ParsedSignerKey {
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch (e) { throw new CliError(`${file}: ${(e as Error).message}`, EXIT.unreadable); }
  const line = text.split('\n').map((l) => l.trim()).find((l) => l.startsWith('PRIVATE+KEY+'));
  if (!line) throw new CliError(`${file}: no witness signer key (PRIVATE+KEY+...) in it (svc audit keygen --witness --name NAME --signer-only > ${file})`, EXIT.unreadable);
  try { return parseWitnessSignerKey(line); } catch (e) { throw new CliError(`${file}: ${(e as Error).message}`, EXIT.unreadable); }
}

function printConflict(why: string, last: VerifiedCheckpoint, cur: VerifiedCheckpoint, proof: Buffer[] | null): number {
  err(`svc witness: SPLIT VIEW: ${why}; not cosigning`);
  err('--- last checkpoint cosigned ---');
  err(last.note.trimEnd());
  err('--- checkpoint now served ---');
  err(cur.note.trimEnd());
  if (proof) {
    err(`--- consistency proof ${last.size} -> ${cur.size} (${proof.length} hashes) ---`);
    for (const h of proof) err(h.toString('base64'));
  }
  return EXIT_CONFLICT;
}

export function registerWitness(cli: CAC): void {
  cli
    .command('witness', "Witness the audit log: cosign each new checkpoint consistent with the last one cosigned")
    .option('--log <url>', 'Control-plane API base URL of the log (default $SVC_API_ENDPOINT, else http://127.0.0.1:8000)')
    .option('--key <file>', 'File holding the witness signer key (svc audit keygen --witness) (required)')
    .option('--state <dir>', 'State directory: the log key trusted and the last checkpoint cosigned (required)')
    .option('--log-key <vkey>', "The log's verifier key on the first run (default $SVC_TLOG_KEY, else fetched: trust on first use)")
    .option('--once', 'Check and cosign once, then exit')
    .option('--interval-ms <n>', 'Polling interval', { default: 5000 })
    .example('svc witness --log https://svc.example.com --key witness.key --state /var/lib/svc-witness')
    .action(async (opts: Opts) => {
      const keyFile = str(opts.key);
      const dir = str(opts.state);
      if (!keyFile || !dir) throw usageError('--key <file> and --state <dir> are required');
      const interval = Number(opts.intervalMs);
      if (!Number.isInteger(interval) || interval < 100) throw usageError('--interval-ms must be an integer >= 100');
      const signer = readSignerKey(keyFile);
      const client = new TlogClient(connection({ endpoint: str(opts.log) }));
      const state = loadWitnessState(dir);
      const logKey = await resolveLogKey(client, str(opts.logKey), state?.logKey);
      let last = state?.last ?? null;
      if (!state) saveWitnessState(dir, logKey, null);

      let stop = false;
      let wake: (() => void) | null = null;
      const onSignal = () => { stop = true; wake?.(); };
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        for (;;) {
          let code: number | null;
          try {
            code = await step();
          } catch (e) {
            if (opts.once || !(e instanceof CliError)) throw e;
            err(`svc witness: ${e.message} (retrying in ${interval} ms)`);
            code = null;
          }
          if (code !== null && (code !== EXIT.ok || opts.once)) return code;
          if (stop) return EXIT.ok;
          await new Promise<void>((resolve) => { const t = setTimeout(resolve, interval); wake = () => { clearTimeout(t); resolve(); }; });
          if (stop) return EXIT.ok;
        }
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }

      /** One round: null to go on polling, an exit code to stop with (EXIT.ok ends only --once). */
      async function step(): Promise<number | null> {
        const cur = await fetchCheckpoint(client, logKey);
        const d = decide(last, cur);
        if (d.action === 'conflict') return printConflict(d.why, last!, cur, null);
        if (d.action === 'unchanged') {
          out(`unchanged: ${describe(cur)} (cosigned before)`);
          return opts.once ? EXIT.ok : null;
        }
        if (d.action === 'check-consistency') {
          const proof = await client.consistencyProof(last!.size, cur.size);
          if (!verifyConsistency(last!.size, cur.size, proof.hashes, last!.root, cur.root)) {
            return printConflict(`the consistency proof ${last!.size} -> ${cur.size} does not verify`, last!, cur, proof.hashes);
          }
          out(`consistent: ${last!.size} -> ${cur.size} (${proof.hashes.length} hashes)`);
        } else out(`first checkpoint: ${describe(cur)} (no earlier one to check it against)`);
        const line = cosign(cur.text, signer, Math.floor(Date.now() / 1000));
        const note = cur.note + line;
        const res = await client.postCosignature(note);
        if (res.status !== 201 && res.status !== 200) throw new CliError(`the log refused the cosignature of size ${cur.size}: HTTP ${res.status} ${res.body.slice(0, 300)}`);
        last = verifyCheckpoint(note, logKey);
        saveWitnessState(dir!, logKey, last);
        out(`cosigned ${describe(cur)} as ${signer.name} (HTTP ${res.status})`);
        return opts.once ? EXIT.ok : null;
      }
    });
}
