/**
 * `svc audit keygen|checkpoint|prove|verify --since`: the client side of the audit
 * transparency log (issue 21). Nothing here trusts the server beyond the log's verifier key:
 * checkpoints are opened with it, proofs are checked against the signed roots, and leaves
 * are rehashed.
 *
 * `svc audit verify` (without --since), `requests`, `events` and `tail`: the server's own
 * audit API (issue 23): its verdict on every chain, the records and management events, and
 * the live stream of records (SSE, resumed after a disconnect).
 */
import type { CAC } from 'cac';
import { generateWitnessKey } from '../../src/core/tlog/cosignature.js';
import { leafHash, TILE_WIDTH, verifyConsistency, verifyInclusion } from '../../src/core/tlog/merkle.js';
import { generateNoteKey } from '../../src/core/tlog/note.js';
import { parseEntryBundle } from '../../src/core/tlog/tile-path.js';
import { verifyAppend } from '../../src/core/tlog/verify-append.js';
import { apiError, call, connection, controlPlane, describeNetworkError, UnreachableError, withApiOptions, type Connection } from '../lib/api.js';
import { CliError, EXIT, usageError } from '../lib/errors.js';
import { text, withPrefix } from '../lib/resources.js';
import { fields, outputFormat, paint, table, withOutputOption } from '../lib/output.js';
import { err, json, out } from '../lib/io.js';
import { TlogClient } from '../lib/tlog-client.js';
import { describe, fetchCheckpoint, loadCheckpoint, resolveLogKey, saveCheckpoint } from '../lib/tlog-trust.js';

export const AUDIT_SUBCOMMANDS = ['verify', 'requests', 'events', 'tail', 'keygen', 'checkpoint', 'prove'];

interface Conn { endpoint?: string; key?: string; logKey?: string }

const withConnection = <T extends ReturnType<CAC['command']>>(c: T): T =>
  c.option('--endpoint <url>', 'Control-plane API base URL (default $SVC_API_ENDPOINT, else http://127.0.0.1:8000)')
    .option('--key <admin-key>', 'Admin key (default $SVC_API_KEY, else config api.key): for entry bundles, and for verify without --since')
    .option('--log-key <vkey>', "The log's note verifier key (default $SVC_TLOG_KEY, else a saved checkpoint's, else fetched: trust on first use)") as T;

/** Strings only: mri turns numeric-looking values into numbers. */
const str = (v: unknown) => (v === undefined || v === null || v === true ? undefined : String(v));

export function registerAudit(cli: CAC): void {
  registerAuditLog(cli);
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
      const client = new TlogClient(connection({ endpoint: str(opts.endpoint), key: str(opts.key) }));
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
      const client = new TlogClient(connection({ endpoint: str(opts.endpoint), key: str(opts.key) }));
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

  withOutputOption(withConnection(cli.command('audit verify', "Verify the audit log: the server's check of every chain (default), or with --since FILE that the transparency log grew append-only since a saved checkpoint, rechecked here")))
    .option('--since <file>', 'A checkpoint saved by `svc audit checkpoint --save`: verify the transparency log from it on this side (consistency proof, every new leaf rechecked) instead of asking the server')
    .option('--save [file]', 'After success, save the new checkpoint (into FILE, else into the --since file)')
    .option('--concurrency <n>', 'Entry bundles fetched at once', { default: 8 })
    .example('svc audit verify')
    .example('svc audit verify --since audit-checkpoint.json --save')
    .action(async (opts: Conn & { since?: unknown; save?: unknown; concurrency?: unknown; output?: unknown }) => {
      const format = outputFormat(opts.output);
      const since = str(opts.since);
      if (!since) {
        if (opts.save !== undefined) throw usageError('--save needs --since <file>');
        return verifyOnServer(connection(opts), format);
      }
      if (format === 'json') throw usageError('-o json is not available with --since (text only)');
      const concurrency = Number(opts.concurrency);
      if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) throw usageError('--concurrency must be an integer 1..64');
      const old = loadCheckpoint(since);
      const client = new TlogClient(connection({ endpoint: str(opts.endpoint), key: str(opts.key) }));
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

/** `svc audit verify` without --since: GET /api/audit/verify, one verdict line per part; exit 1 naming what was tampered. */
async function verifyOnServer(conn: Connection, format: 'text' | 'json'): Promise<number> {
  const v = await call(controlPlane(conn).GET('/api/audit/verify'), conn);
  const me = v.management_events;
  const tl = v.transparency_log;
  const requestsOk = v.tampered_at_sequence === null;
  const problems: string[] = [];
  if (!requestsOk) problems.push(`context request chain at sequence ${v.tampered_at_sequence} (${v.tampered_field_chain ?? 'record_hash'}): ${v.error ?? 'mismatch'}`);
  if (me.status !== 'ok') problems.push(`management events at event_sequence ${me.tampered_at_sequence}: ${me.error ?? 'mismatch'}`);
  if (tl.status !== 'ok') problems.push(`transparency log${tl.tampered_at_leaf !== null ? ` at leaf ${tl.tampered_at_leaf}` : ''}: ${tl.error ?? 'mismatch'}`);
  if (v.status !== 'ok' && !problems.length) problems.push(v.error ?? 'the server reports the log tampered');
  if (format === 'json') json(v);
  else {
    const mark = (ok: boolean) => (ok ? paint('ok', 'green') : paint('TAMPERED', 'red'));
    const chained = v.record_count - me.event_count - v.legacy_record_count;
    fields([
      ['context requests', `${mark(requestsOk)}  ${chained} chained record(s)${v.legacy_record_count ? `, ${v.legacy_record_count} legacy` : ''}, first chained sequence ${v.first_chained_sequence ?? '-'}${requestsOk ? '' : `; tampered at sequence ${v.tampered_at_sequence} (${v.tampered_field_chain ?? 'record_hash'})`}`],
      ['management events', `${mark(me.status === 'ok')}  ${me.event_count} event(s)${me.status === 'ok' ? '' : `; tampered at event_sequence ${me.tampered_at_sequence}`}`],
      ['transparency log', `${mark(tl.status === 'ok')}  ${tl.leaf_count} leaves (context requests, outputs, management events), tree ${tl.tree_size}, checkpoint ${tl.checkpoint_tree_size ?? '-'}${tl.status === 'ok' ? '' : tl.tampered_at_leaf !== null ? `; tampered at leaf ${tl.tampered_at_leaf}` : ''}`],
      ['genesis', v.genesis_hash ? `${String(v.genesis_hash).slice(0, 16)}... (deployment ${v.deployment_id}, ${v.initialized_at})` : '-'],
      ['verdict', `${v.status === 'ok' ? paint('ok', 'green') : paint('TAMPERED', 'red')} (verified at ${v.last_verified_at})`],
    ]);
  }
  if (v.status === 'ok' && !problems.length) return EXIT.ok;
  for (const p of problems) err(`svc: audit log tampered: ${p}`);
  return EXIT.failed;
}

/** A time option: an ISO date-time, or a duration back from now (`90s`, `15m`, `2h`, `7d`). */
function timeOption(name: string, v: unknown): string | undefined {
  const s = str(v);
  if (s === undefined) return undefined;
  const rel = /^(\d+)([smhd])$/.exec(s);
  if (rel) return new Date(Date.now() - Number(rel[1]) * { s: 1e3, m: 6e4, h: 3.6e6, d: 8.64e7 }[rel[2] as 's']).toISOString();
  if (!/^\d{4}-\d\d-\d\d/.test(s) || Number.isNaN(Date.parse(s))) throw usageError(`--${name} must be a date-time (2026-01-31T12:00:00Z) or a duration back from now (15m, 2h, 7d), not '${s}'`);
  return new Date(Date.parse(s)).toISOString();
}

function limitOption(v: unknown, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 1_000_000) throw usageError(`--limit must be an integer 1..1000000, not '${String(v)}'`);
  return n;
}

/** `--agent`: an agent id, its `agent:` prefix optional as in every command. */
const agentOpt = (opts: Record<string, unknown>): string | undefined => {
  const a = text(opts, 'agent', 'agent');
  return a === undefined ? undefined : withPrefix('agent', a);
};

type AuditRecord = { chain_sequence: number; requested_at: string; agent_id: string | null; task_type: string; intent_valid: boolean; validation_errors: Record<string, unknown> | null; context_scd_ids: string[]; request_id: string; leaf_index: number | null };

const recordColumns: Array<[string, (r: AuditRecord) => unknown]> = [
  ['seq', (r) => r.chain_sequence],
  ['requested_at', (r) => r.requested_at],
  ['agent', (r) => r.agent_id],
  ['task', (r) => r.task_type],
  ['result', (r) => (r.validation_errors ? String(r.validation_errors.error_code ?? 'refused') : 'ok')],
  ['scds', (r) => r.context_scd_ids?.length ?? 0],
  ['request_id', (r) => r.request_id],
];

const recordLine = (r: AuditRecord): string =>
  recordColumns.map(([h, f]) => `${h === 'seq' ? '#' : ''}${h === 'scds' ? `${String(f(r))} scds` : String(f(r) ?? '-')}`).join('  ');

function registerAuditLog(cli: CAC): void {
  withOutputOption(withApiOptions(cli.command('audit requests', 'List the audit records of context requests (oldest first; GET /api/audit/requests)')))
    .option('--agent <agent-id>', 'Only this agent\'s requests')
    .option('--since <time>', 'From this time on (inclusive): a date-time or a duration back from now (15m, 2h, 7d)')
    .option('--until <time>', 'Before this time (exclusive)')
    .option('--limit <n>', 'At most this many records (pages are fetched as needed)', { default: 100 })
    .example('svc audit requests --agent agent:triage-bot --since 1h')
    .action(async (opts: { endpoint?: unknown; key?: unknown; output?: unknown; agent?: unknown; since?: unknown; until?: unknown; limit?: unknown }) => {
      const format = outputFormat(opts.output);
      const limit = limitOption(opts.limit, 100);
      const agent = agentOpt(opts);
      const query = { agent_id: agent, since: timeOption('since', opts.since), until: timeOption('until', opts.until) };
      const conn = connection(opts);
      const api = controlPlane(conn);
      const records: AuditRecord[] = [];
      let after: number | undefined;
      while (records.length < limit) {
        const page = await call(api.GET('/api/audit/requests', { params: { query: { ...query, limit: Math.min(1000, limit - records.length), after_sequence: after } } }), conn);
        records.push(...(page.records as AuditRecord[]));
        if (page.next_after_sequence === null || page.next_after_sequence === undefined) break;
        after = page.next_after_sequence;
      }
      if (format === 'json') json(records);
      else table(records, recordColumns, '(no audit records)');
      return EXIT.ok;
    });

  withOutputOption(withApiOptions(cli.command('audit events', 'List management events: who changed what (newest first; GET /api/audit/events)')))
    .option('--resource-type <type>', 'Only events on this kind of resource (agent, api_key, bundle, tag, deployment, ...)')
    .option('--resource-id <id>', 'Only events on this resource')
    .option('--type <event-type>', 'Only this event type (agent.created, key.revoked, ...)')
    .option('--actor <name>', 'Only events made by this admin key name (or system:<job>)')
    .option('--since <time>', 'From this time on (inclusive): a date-time or a duration back from now (15m, 2h, 7d)')
    .option('--until <time>', 'Before this time (exclusive)')
    .option('--limit <n>', 'At most this many events (pages are fetched as needed)', { default: 100 })
    .example('svc audit events --resource-type agent --since 1d')
    .action(async (opts: { endpoint?: unknown; key?: unknown; output?: unknown; resourceType?: unknown; resourceId?: unknown; type?: unknown; actor?: unknown; since?: unknown; until?: unknown; limit?: unknown }) => {
      const format = outputFormat(opts.output);
      const limit = limitOption(opts.limit, 100);
      const query = {
        resource_type: text(opts, 'resourceType', 'resource-type'), resource_id: text(opts, 'resourceId', 'resource-id'), event_type: text(opts, 'type', 'type'),
        actor: text(opts, 'actor', 'actor'), since: timeOption('since', opts.since), until: timeOption('until', opts.until),
      };
      const conn = connection(opts);
      const api = controlPlane(conn);
      type Ev = { event_sequence: number; occurred_at: string; actor: string; event_type: string; resource_type: string; resource_id: string; request_id: string | null };
      const events: Ev[] = [];
      let cursor: string | undefined;
      while (events.length < limit) {
        const page = await call(api.GET('/api/audit/events', { params: { query: { ...query, limit: Math.min(1000, limit - events.length), cursor } } }), conn);
        events.push(...(page.events as Ev[]));
        if (!page.next_cursor) break;
        cursor = page.next_cursor;
      }
      if (format === 'json') json(events);
      else {
        table(events, [
          ['seq', (e) => e.event_sequence], ['occurred_at', (e) => e.occurred_at], ['actor', (e) => e.actor], ['event', (e) => e.event_type],
          ['resource', (e) => `${e.resource_type} ${e.resource_id}`],
        ], '(no management events)');
      }
      return EXIT.ok;
    });

  withOutputOption(withApiOptions(cli.command('audit tail', 'Follow the audit records as they are committed (GET /api/audit/stream), resuming after a disconnect, until Ctrl-C; -o json prints one JSON record per line')))
    .option('--agent <agent-id>', 'Only this agent\'s requests (filtered here; the stream carries every record)')
    .option('--after <sequence>', 'Start after this chain_sequence (replays the records since), instead of at the end of the log')
    .example('svc audit tail --agent agent:triage-bot')
    .example('svc audit tail -o json | jq .task_type   # one JSON record per line')
    .action(async (opts: { endpoint?: unknown; key?: unknown; output?: unknown; agent?: unknown; after?: unknown }) => {
      const format = outputFormat(opts.output);
      const agent = agentOpt(opts);
      let last: string | undefined;
      if (opts.after !== undefined) {
        const a = String(opts.after);
        if (!/^\d{1,16}$/.test(a)) throw usageError(`--after must be a chain_sequence (a non-negative integer), not '${a}'`);
        last = a;
      }
      const conn = connection(opts);
      return tail(conn, { agent, last, format });
    });
}

/** A connection attempt or stream that failed after the first one succeeded: retried. */
class StreamDrop extends Error {
  constructor(why: string, cause: unknown) { super(why, { cause }); }
}

const IDLE_MS = 45_000; // the server sends `: keep-alive` every 15 s
const BACKOFF_MS = [250, 500, 1000, 2000, 5000];

/** Follows the SSE stream: prints each record, reconnects with Last-Event-ID, ends on SIGINT/SIGTERM (exit 0). */
async function tail(conn: Connection, o: { agent?: string; last?: string; format: 'text' | 'json' }): Promise<number> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // The reader went away (`svc audit tail | head -3`): stop, as tail -f does.
  const onStdoutError = (e: NodeJS.ErrnoException) => { if (e.code === 'EPIPE') stop.abort(); else throw e; };
  process.stdout.on('error', onStdoutError);
  let last = o.last;
  let connectedOnce = false;
  let failures = 0;
  const sleep = (ms: number) => new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() { clearTimeout(timer); stop.signal.removeEventListener('abort', done); resolve(); }
    stop.signal.addEventListener('abort', done, { once: true });
  });
  const emitRecord = (data: string) => {
    let r: AuditRecord;
    try { r = JSON.parse(data) as AuditRecord; } catch { err(`svc: skipped an event that is not JSON: ${data.slice(0, 80)}`); return; }
    if (o.agent && r.agent_id !== o.agent) return;
    if (stop.signal.aborted) return;
    if (o.format === 'json') process.stdout.write(`${data}\n`);
    else out(recordLine(r));
  };
  try {
    while (!stop.signal.aborted) {
      const attempt = new AbortController();
      const abortAttempt = () => attempt.abort();
      stop.signal.addEventListener('abort', abortAttempt, { once: true });
      let idle: NodeJS.Timeout | undefined;
      const touch = () => { clearTimeout(idle); idle = setTimeout(() => attempt.abort(new Error('idle')), IDLE_MS); };
      let why: string;
      try {
        const url = new URL(`${conn.endpoint}/api/audit/stream`);
        const headers: Record<string, string> = { accept: 'text/event-stream' };
        if (conn.adminKey) headers['x-admin-key'] = conn.adminKey;
        if (last !== undefined) headers['last-event-id'] = last;
        touch();
        let res: Response;
        try {
          res = await fetch(url, { headers, signal: attempt.signal });
        } catch (e) {
          if (stop.signal.aborted) break;
          const cause = describeNetworkError(e);
          if (!connectedOnce) throw new UnreachableError(conn.endpoint, cause);
          throw new StreamDrop(cause, e);
        }
        if (!res.ok) {
          const text = await res.text();
          let body: unknown = text;
          try { body = JSON.parse(text); } catch { /* not JSON */ }
          // A server restarting answers 5xx for a moment: retried once the stream has worked; a refusal (4xx) ends the command.
          if (connectedOnce && res.status >= 500) throw new StreamDrop(apiError(res.status, body, conn).message, undefined);
          throw apiError(res.status, body, conn);
        }
        // The server fixes where the stream starts before it answers: from here on nothing is missed.
        if (connectedOnce) err(`svc: reconnected${last !== undefined ? `, resuming after sequence ${last}` : ''}`);
        else err(`svc: following ${conn.endpoint}/api/audit/stream ${last !== undefined ? `after sequence ${last}` : 'from the end of the log'} (Ctrl-C to stop)`);
        connectedOnce = true;
        failures = 0;
        const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          touch();
          buf += value.replace(/\r\n?/g, '\n');
          let i: number;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            let id: string | undefined;
            let event = 'message';
            const data: string[] = [];
            for (const line of block.split('\n')) {
              if (!line || line.startsWith(':')) continue;
              const c = line.indexOf(':');
              const f = c < 0 ? line : line.slice(0, c);
              const v = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
              if (f === 'id') id = v;
              else if (f === 'event') event = v;
              else if (f === 'data') data.push(v);
            }
            if (event === 'audit-record' && data.length) emitRecord(data.join('\n'));
            if (id !== undefined) last = id;
          }
        }
        why = 'the server ended the stream';
      } catch (e) {
        if (stop.signal.aborted) break;
        if (e instanceof CliError) throw e;
        why = e instanceof StreamDrop ? e.message : attempt.signal.aborted ? 'no data for 45 s' : describeNetworkError(e);
      } finally {
        clearTimeout(idle);
        stop.signal.removeEventListener('abort', abortAttempt);
      }
      const wait = BACKOFF_MS[Math.min(failures, BACKOFF_MS.length - 1)];
      failures++;
      err(`svc: ${why}; reconnecting in ${wait / 1000} s${last !== undefined ? ` (after sequence ${last})` : ''}`);
      await sleep(wait);
    }
    return EXIT.ok;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
