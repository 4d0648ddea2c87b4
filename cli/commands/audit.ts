/**
 * `svc audit keygen|checkpoint|prove|verify`: the client side of the audit transparency log
 * (issue 21). Nothing here trusts the server beyond the log's verifier key: checkpoints are
 * opened with it, proofs are checked against the signed roots, and leaves are rehashed.
 */
import type { CAC } from 'cac';
import { generateWitnessKey } from '../../src/core/tlog/cosignature.js';
import { leafHash, TILE_WIDTH, verifyConsistency, verifyInclusion } from '../../src/core/tlog/merkle.js';
import { generateNoteKey } from '../../src/core/tlog/note.js';
import { parseEntryBundle } from '../../src/core/tlog/tile-path.js';
import { verifyAppend } from '../../src/core/tlog/verify-append.js';
import { CliError, EXIT, usageError } from '../lib/errors.js';
import { err, out } from '../lib/io.js';
import { connectionFrom, TlogClient } from '../lib/tlog-client.js';
import { describe, fetchCheckpoint, loadCheckpoint, resolveLogKey, saveCheckpoint } from '../lib/tlog-trust.js';

export const AUDIT_SUBCOMMANDS = ['keygen', 'checkpoint', 'prove', 'verify'];

interface Conn { endpoint?: string; key?: string; logKey?: string }

const withConnection = <T extends ReturnType<CAC['command']>>(c: T): T =>
  c.option('--endpoint <url>', 'Control-plane API base URL (default $SVC_API_ENDPOINT, else http://127.0.0.1:8000)')
    .option('--key <admin-key>', 'Admin key for entry bundles (default $SVC_API_KEY)')
    .option('--log-key <vkey>', "The log's note verifier key (default $SVC_TLOG_KEY, else a saved checkpoint's, else fetched: trust on first use)") as T;

/** Strings only: mri turns numeric-looking values into numbers. */
const str = (v: unknown) => (v === undefined || v === null || v === true ? undefined : String(v));

export function registerAudit(cli: CAC): void {
  cli
    .command('audit keygen', 'Print a new Ed25519 key pair for the log (note signer) or for a witness (cosignature/v1)')
    .option('--name <name>', 'Key name: the log origin (e.g. svc.example.com/audit-log) or the witness name (required)')
    .option('--witness', 'A witness key (cosignature/v1) instead of a log key')
    .option('--signer-only', 'Print only the signer key, one line (for scripts)')
    .example('svc audit keygen --name svc.example.com/audit-log')
    .action((opts: { name?: unknown; witness?: boolean; signerOnly?: boolean }) => {
      const name = str(opts.name);
      if (!name) throw usageError('--name is required');
      let pair: { signerKey: string; verifierKey: string };
      try { pair = opts.witness ? generateWitnessKey(name) : generateNoteKey(name); } catch (e) { throw usageError((e as Error).message); }
      out(opts.witness ? pair.signerKey : `TLOG_SIGNING_KEY=${pair.signerKey}`);
      if (!opts.signerOnly) out(`verifier key: ${pair.verifierKey}`);
      return EXIT.ok;
    });

  withConnection(cli.command('audit checkpoint', "Fetch the log's latest checkpoint, verify its signature and print it (or save it)"))
    .option('--save <file>', 'Save it (JSON: origin, tree_size, root, note, log_key) for `svc audit verify --since`')
    .example('svc audit checkpoint --save audit-checkpoint.json')
    .action(async (opts: Conn & { save?: unknown }) => {
      const client = new TlogClient(connectionFrom({ endpoint: str(opts.endpoint), key: str(opts.key) }));
      const c = await fetchCheckpoint(client, await resolveLogKey(client, str(opts.logKey)));
      out(`checkpoint verified: ${describe(c)}`);
      const save = str(opts.save);
      if (save) {
        saveCheckpoint(save, c);
        out(`saved to ${save}`);
      } else out(c.note.trimEnd());
      return EXIT.ok;
    });

  withConnection(cli.command('audit prove <request-id>', "Prove that a context request's audit record is in the log's latest checkpoint"))
    .example('svc audit prove 6f1c2d3e-...')
    .action(async (requestId: unknown, opts: Conn) => {
      const client = new TlogClient(connectionFrom({ endpoint: str(opts.endpoint), key: str(opts.key) }));
      const c = await fetchCheckpoint(client, await resolveLogKey(client, str(opts.logKey)));
      if (c.size === 0) throw new CliError('the log is empty');
      const id = String(requestId);
      const proof = await client.inclusionProof({ requestId: id, treeSize: c.size });
      const i = proof.leaf_index;
      if (i >= c.size) throw new CliError(`the proof names leaf ${i}, past the checkpoint's ${c.size} leaves`);
      const b = Math.floor(i / TILE_WIDTH);
      const width = Math.min(TILE_WIDTH, c.size - b * TILE_WIDTH);
      const entries = parseEntryBundle(await client.entryBundle(b, width === TILE_WIDTH ? undefined : width));
      const data = entries[i % TILE_WIDTH];
      if (!data) throw new CliError(`entry bundle ${b} has no leaf ${i}`);
      let record: Record<string, unknown>;
      try { record = JSON.parse(data.toString('utf8')) as Record<string, unknown>; } catch { throw new CliError(`leaf ${i} is not JSON`); }
      const included = verifyInclusion(leafHash(data), i, c.size, proof.hashes, c.root);
      const named = record.request_id === id && 'chain_sequence' in record && record.leaf_index === i;
      out(`checkpoint: ${describe(c)}`);
      out(`leaf ${i}: request_id ${String(record.request_id)}, chain_sequence ${String(record.chain_sequence)}, record_hash ${String(record.record_hash)}`);
      out(`inclusion proof: ${proof.hashes.length} hashes, ${included ? 'verifies' : 'does NOT verify'} against the checkpoint root`);
      if (!named) err(`svc: leaf ${i} is not the context request record of ${id}`);
      return included && named ? EXIT.ok : EXIT.failed;
    });

  withConnection(cli.command('audit verify', 'Verify the log grew append-only since a saved checkpoint, and recheck every new leaf'))
    .option('--since <file>', 'A checkpoint saved by `svc audit checkpoint --save` (required)')
    .option('--save [file]', 'After success, save the new checkpoint (into FILE, else into the --since file)')
    .option('--concurrency <n>', 'Entry bundles fetched at once', { default: 8 })
    .example('svc audit verify --since audit-checkpoint.json --save')
    .action(async (opts: Conn & { since?: unknown; save?: unknown; concurrency?: unknown }) => {
      const since = str(opts.since);
      if (!since) throw usageError('--since <file> is required');
      const concurrency = Number(opts.concurrency);
      if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) throw usageError('--concurrency must be an integer 1..64');
      const old = loadCheckpoint(since);
      const client = new TlogClient(connectionFrom({ endpoint: str(opts.endpoint), key: str(opts.key) }));
      const cur = await fetchCheckpoint(client, await resolveLogKey(client, str(opts.logKey), old.logKey));
      out(`old: ${describe(old)}`);
      out(`new: ${describe(cur)}`);
      const failed = (why: string) => { err(`svc: verification failed: ${why}`); return EXIT.failed; };
      if (cur.origin !== old.origin) return failed(`the origin changed from ${old.origin} to ${cur.origin}`);
      if (cur.size < old.size) return failed(`the tree shrank from ${old.size} to ${cur.size} leaves`);
      const proof = await client.consistencyProof(old.size, cur.size);
      if (!verifyConsistency(old.size, cur.size, proof.hashes, old.root, cur.root)) return failed(`the consistency proof ${old.size} -> ${cur.size} does not verify`);
      out(`consistency proof ${old.size} -> ${cur.size}: verifies (${proof.hashes.length} hashes)`);
      const t0 = performance.now();
      const r = await verifyAppend(client, old, cur, { concurrency });
      const secs = (performance.now() - t0) / 1000;
      if (!r.ok) return failed(r.leafIndex !== undefined ? `leaf ${r.leafIndex}: ${r.reason}` : String(r.reason));
      out(`leaves ${old.size}..${cur.size - 1}: ${r.leaves} rechecked (${r.requests} context requests, ${r.outputs} outputs, ${r.events} management events), root recomputed and equal`);
      out(`${r.leaves} leaves in ${secs.toFixed(2)} s (${secs > 0 ? Math.round(r.leaves / secs) : r.leaves} leaves/s)`);
      if (opts.save !== undefined && opts.save !== false) {
        const file = str(opts.save) ?? since;
        saveCheckpoint(file, cur);
        out(`saved the new checkpoint to ${file}`);
      }
      return EXIT.ok;
    });
}
