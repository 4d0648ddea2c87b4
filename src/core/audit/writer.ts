/**
 * The audit writer: appends context-request records to the hash chain with group commit.
 *
 * Invariants:
 * - A caller's promise resolves only after its record is committed (fail closed: the
 *   context API answers only then), and rejects when it could not be committed.
 * - The chain is serialized in the database (svc_audit_append_lists, migration 0019, takes a
 *   transaction-level advisory lock, reads the tip, assigns tip + 1 and the next leaf indexes
 *   of the transparency log, and finishes both hashes), so records of any number of
 *   processes form one gapless chain ordered by integer chain_sequence.
 * - Records waiting while a batch is in flight are written together in the next batch: one
 *   statement, one commit (and one WAL flush) for many requests.
 * - A batch that fails is retried record by record, so one unstorable record cannot take
 *   its batch-mates down with it.
 */
import { EventEmitter } from 'node:events';
import type { AppContext } from '../../shared/app-context.js';
import { observeAuditAppend, observeAuditCommit } from '../../shared/metrics.js';
import { canonicalJson, contentTailOf, recordContentTail, storableJson, storableText } from './hash.js';

/** What the context API hands to the writer: every stored field except the chain's own. */
export interface AuditEntry {
  requestId: string;
  agentId: string | null;
  taskType: string;
  requestParams: Record<string, string> | null;
  intentValid: boolean;
  validationErrors: Record<string, unknown> | null;
  contextBundleIds: string[] | null;
  contextScdIds: string[] | null;
  processingTimeMs: number | null;
  chainId: string | null;
  parentRequestId: string | null;
}

export interface CommittedAudit {
  requestId: string;
  chainSequence: number;
  /** The record's leaf in the transparency log (src/core/tlog). */
  leafIndex: number;
  requestedAt: Date;
}

interface Pending {
  entry: AuditEntry;
  /** performance.now() at append (the append latency metric). */
  at: number;
  resolve(c: CommittedAudit): void;
  reject(e: unknown): void;
}

export interface AuditWriterOptions {
  /** Most records per statement. */
  maxBatch?: number;
  /** Batches in flight at once (each waits for the chain lock in the database). */
  maxInFlight?: number;
}

/** A PostgreSQL array literal of text elements, every element quoted. */
export function textArrayLiteral(a: readonly string[]): string {
  let out = '{';
  for (let i = 0; i < a.length; i++) {
    const s = a[i]!;
    out += (i ? ',"' : '"') + (s.includes('"') || s.includes('\\') ? s.replace(/[\\"]/g, '\\$&') : s) + '"';
  }
  return out + '}';
}

/**
 * A list of ids as the writer sends it: normalized (storableText), and as its entry in a
 * batch's list of lists (svc_audit_append_lists, migration 0019): the JSON-escaped array
 * literal of the statement and its canonical JSON (its text in the content chain's input and
 * in the leaf). Computed once per frozen array: a context request's bundle and SCD ids are
 * its selection's shared, frozen arrays, the same for every request of a role, and working
 * them out per record cost more than the rest of the record. A list that was not frozen is
 * normalized into a frozen copy, which is remembered, so that the writer finds it again.
 */
interface IdList {
  ids: readonly string[];
  entry: string;
}
const idLists = new WeakMap<readonly string[], IdList>();
function idList(a: readonly string[]): IdList {
  let l = idLists.get(a);
  if (l === undefined) {
    const normalized = a.map((x) => storableText(x));
    const ids = Object.isFrozen(a) && normalized.every((x, i) => x === a[i]) ? a : Object.freeze(normalized);
    l = { ids, entry: `{"l":${JSON.stringify(textArrayLiteral(ids))},"j":${JSON.stringify(canonicalJson(ids))}}` };
    // Only frozen lists are remembered: a mutable one could change under its entry.
    if (Object.isFrozen(a)) idLists.set(a, l);
    idLists.set(ids, l);
  }
  return l;
}

export class AuditWriter {
  /** Emits 'committed' (CommittedAudit[]) after each commit: the SSE stream wakes on it. */
  readonly events = new EventEmitter();
  private pending: Pending[] = [];
  private inFlight = 0;
  private scheduled = false;
  private lastAt = 0;
  private idle: Array<() => void> = [];
  private readonly maxBatch: number;
  private readonly maxInFlight: number;

  constructor(
    private readonly ctx: Pick<AppContext, 'db' | 'clock' | 'logger'>,
    opts: AuditWriterOptions = {},
  ) {
    this.maxBatch = opts.maxBatch ?? 1000;
    // PGlite runs one statement at a time: a second batch in flight would only queue. On
    // PostgreSQL a few batches wait at the chain lock while one holds it, so the lock passes
    // straight to the next batch at each commit; with two, requests arriving meanwhile waited
    // a whole extra batch in this process and the W1 benchmark left a third of the CPU idle.
    this.maxInFlight = opts.maxInFlight ?? (ctx.db.kind === 'postgres' ? 4 : 1);
    this.events.setMaxListeners(0);
  }

  /** Appends one record (normalized first, see normalizeEntry); resolves once it is committed. */
  append(entry: AuditEntry): Promise<CommittedAudit> {
    return new Promise((resolve, reject) => {
      this.pending.push({ entry: normalizeEntry(entry), at: performance.now(), resolve, reject });
      this.schedule();
    });
  }

  /** Resolves when nothing is pending or in flight. */
  drain(): Promise<void> {
    if (!this.pending.length && !this.inFlight) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    // One macrotask of grace gathers the records of requests handled in the same turn.
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    while (this.pending.length && this.inFlight < this.maxInFlight) {
      const batch = this.pending.splice(0, this.maxBatch);
      this.inFlight++;
      void this.flush(batch).finally(() => {
        this.inFlight--;
        if (this.pending.length) this.schedule();
        else if (!this.inFlight) for (const f of this.idle.splice(0)) f();
      });
    }
  }

  private async flush(batch: Pending[]): Promise<void> {
    try {
      this.settle(batch, await this.write(batch));
    } catch (e) {
      if (batch.length === 1) {
        this.ctx.logger.error('audit write failed', { error: e as Error, request_id: batch[0]!.entry.requestId });
        batch[0]!.reject(e);
        return;
      }
      this.ctx.logger.warn('audit batch failed; retrying its records one by one', { error: e as Error, size: batch.length });
      for (const p of batch) {
        try {
          this.settle([p], await this.write([p]));
        } catch (e1) {
          this.ctx.logger.error('audit write failed', { error: e1 as Error, request_id: p.entry.requestId });
          p.reject(e1);
        }
      }
    }
  }

  private settle(batch: Pending[], committed: CommittedAudit[]): void {
    const now = performance.now();
    observeAuditCommit(batch.length);
    for (let i = 0; i < batch.length; i++) {
      observeAuditAppend(now - batch[i]!.at);
      batch[i]!.resolve(committed[i]!);
    }
    if (this.events.listenerCount('committed')) this.events.emit('committed', committed);
  }

  /**
   * Writes one batch in one statement; returns what each record got. Each distinct id list
   * of the batch is sent once (svc_audit_append_lists, migration 0019), and each record names
   * its lists by index: a role's requests share their selection's lists.
   */
  private async write(batch: Pending[]): Promise<CommittedAudit[]> {
    // Wall clock at insert, millisecond precision as stored; never decreasing in this process.
    const now = Math.max(this.ctx.clock.now().getTime(), this.lastAt);
    this.lastAt = now;
    const requestedAt = new Date(now);
    const iso = requestedAt.toISOString();
    const at = JSON.stringify(iso);
    const lists = new Map<IdList, number>();
    let listsJson = '';
    const indexOf = (l: IdList | null): string => {
      if (!l) return 'null';
      let k = lists.get(l);
      if (k === undefined) {
        k = lists.size;
        lists.set(l, k);
        listsJson += (k ? ',' : '') + l.entry;
      }
      return String(k);
    };
    let records = '';
    for (let i = 0; i < batch.length; i++) {
      const e = batch[i]!.entry;
      const bundles = e.contextBundleIds ? idList(e.contextBundleIds) : null;
      const scds = e.contextScdIds ? idList(e.contextScdIds) : null;
      const r = JSON.stringify(e.requestId);
      const a = canonicalJson(e.agentId);
      const t = JSON.stringify(e.taskType);
      const p = canonicalJson(e.requestParams);
      const v = e.intentValid ? 'true' : 'false';
      const err = canonicalJson(e.validationErrors);
      const m = canonicalJson(e.processingTimeMs);
      const c = canonicalJson(e.chainId);
      const pr = canonicalJson(e.parentRequestId);
      // The two hash inputs the database finishes under the chain lock (hash.ts), from the
      // canonical texts already at hand: the content netstrings before the two id lists and
      // after them (the database puts in the lists' own).
      const rc = recordContentTail({ request_id: e.requestId, agent_id: e.agentId, task_type: e.taskType, intent_valid: e.intentValid }, iso);
      const c0 = contentTailOf([r, a, t, p, v, err]);
      const c1 = contentTailOf([m, at, c, pr]);
      // The record's canonical JSON as GET /api/audit/requests returns it (its leaf in the
      // transparency log), in five pieces around the values the database decides under the
      // chain lock (chain_sequence, content_hash, leaf_index, previous_hash, record_hash) and
      // the two id lists it holds once: svc_audit_append_lists puts them in and stores the
      // leaf hash.
      const lj = JSON.stringify([
        `{"agent_id":${a},"chain_id":${c},"chain_sequence":`,
        `,"intent_valid":${v},"leaf_index":`,
        `,"parent_request_id":${pr},"previous_hash":"`,
        `","processing_time_ms":${m},"record_hash":"`,
        `","request_id":${r},"request_params":${p},"requested_at":${at},"task_type":${t},"validation_errors":${err}}`,
      ]);
      if (i) records += ',';
      records +=
        `{"r":${r},"a":${a},"t":${t},"p":${p},"v":${v},"e":${err},"b":${indexOf(bundles)},"s":${indexOf(scds)},` +
        `"m":${m},"at":${at},"c":${c},"pr":${pr},"rc":${JSON.stringify(rc)},"c0":${JSON.stringify(c0)},"c1":${JSON.stringify(c1)},"lj":${lj}}`;
    }
    const json = `{"L":[${listsJson}],"R":[${records}]}`;
    const [row] = await this.ctx.db.query<{ first_seq: number; first_leaf: number }>('SELECT first_seq, first_leaf FROM svc_audit_append_lists($1::jsonb)', [json]);
    const first = Number(row!.first_seq);
    const leaf = Number(row!.first_leaf);
    return batch.map((p, i) => ({ requestId: p.entry.requestId, chainSequence: first + i, leafIndex: leaf + i, requestedAt }));
  }
}

/**
 * Makes an entry storable exactly as hashed: text with NUL or lone surrogates would be
 * refused or altered by PostgreSQL, so every string is normalized first (see storableText).
 * `task_type` is capped so that a rejected oversized body cannot bloat the log.
 */
function normalizeEntry(e: AuditEntry): AuditEntry {
  const text = (s: string | null, max: number) => (s === null ? null : storableText(s.length > max ? s.slice(0, max) : s));
  // A non-finite time is stored as NULL (as the hashes of stored records took it); canonical JSON refuses it.
  const ms = e.processingTimeMs;
  return {
    ...e,
    agentId: text(e.agentId, 256),
    taskType: text(e.taskType, MAX_AUDITED_TEXT)!,
    requestParams: e.requestParams ? storableJson(e.requestParams) : null,
    validationErrors: e.validationErrors ? storableJson(e.validationErrors) : null,
    contextBundleIds: e.contextBundleIds ? (idList(e.contextBundleIds).ids as string[]) : null,
    contextScdIds: e.contextScdIds ? (idList(e.contextScdIds).ids as string[]) : null,
    processingTimeMs: typeof ms === 'number' && Number.isFinite(ms) ? ms : null,
    chainId: text(e.chainId, MAX_AUDITED_TEXT),
    parentRequestId: text(e.parentRequestId, MAX_AUDITED_TEXT),
  };
}

/** Longest task_type, chain_id or parent_request_id kept in a record (a longer one is refused anyway). */
export const MAX_AUDITED_TEXT = 1024;

/** The process's writer (one per AppContext); pending records are flushed at close. */
export function auditWriter(ctx: AppContext): AuditWriter {
  return ctx.singleton('audit-writer', () => {
    const w = new AuditWriter(ctx);
    ctx.onClose(() => w.drain());
    return w;
  });
}

/** Appends one record through the context's writer; resolves once committed. */
export function appendAudit(ctx: AppContext, entry: AuditEntry): Promise<CommittedAudit> {
  return auditWriter(ctx).append(entry);
}
