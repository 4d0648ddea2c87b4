/**
 * `GET /api/audit/stream`: Server-Sent Events of committed audit records, in ascending
 * chain_sequence order, resumable with `Last-Event-ID` (= chain_sequence).
 *
 * Records are read from the database (never from memory), so a stream misses nothing and
 * repeats nothing: commits happen in chain order (the chain lock), so every record after
 * the last one sent is either visible already or committed later. The stream reads when the
 * consumer wants more (pull), wakes on this process's commits and polls every second for
 * other processes' commits, and sends `: keep-alive` after 15 s of silence.
 */
import type { AppContext } from '../../shared/app-context.js';
import { auditWriter } from '../../core/audit/writer.js';
import { lastSequence, readAuditAfter } from '../../core/audit/read.js';

const KEEPALIVE_MS = 15_000;
const POLL_MS = 1_000;
const PAGE = 200;

/** The open streams of a context, ended at shutdown. */
class StreamRegistry {
  private open = new Set<() => void>();
  add(end: () => void): () => void {
    this.open.add(end);
    return () => this.open.delete(end);
  }
  closeAll(): void {
    for (const end of [...this.open]) end();
  }
}

export function auditStreams(ctx: AppContext): StreamRegistry {
  return ctx.singleton('audit-streams', () => new StreamRegistry());
}

/** Opens the event stream after `after` (null: after the current end of the log). */
export async function openAuditStream(ctx: AppContext, after: number | null, signal?: AbortSignal): Promise<ReadableStream<Uint8Array>> {
  let last = after ?? (await lastSequence(ctx));
  const enc = new TextEncoder();
  const writer = auditWriter(ctx);
  let closed = false;
  let wake: (() => void) | null = null;
  let lastSentAt = Date.now();
  const onCommit = () => wake?.();
  let unregister: () => unknown = () => undefined;
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | null = null;

  const end = () => {
    if (closed) return;
    closed = true;
    writer.events.off('committed', onCommit);
    unregister();
    signal?.removeEventListener('abort', end);
    wake?.();
    try {
      controllerRef?.close();
    } catch {
      /* already closed or cancelled */
    }
  };

  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        controllerRef = controller;
        writer.events.on('committed', onCommit);
        unregister = auditStreams(ctx).add(end);
        if (signal?.aborted) end();
        else signal?.addEventListener('abort', end, { once: true });
        // Sent at once so that clients (and proxies) see the stream open. Its id is where the
        // stream starts: a client that reconnects before any record came (EventSource keeps the
        // id of an event with no data) resumes there and misses nothing committed meanwhile.
        controller.enqueue(enc.encode(`: stream open\nid: ${last}\n\n`));
      },
      async pull(controller) {
        while (!closed) {
          let records;
          try {
            records = await readAuditAfter(ctx, last, PAGE);
          } catch (e) {
            // The client resumes with Last-Event-ID; nothing is lost by ending here.
            if (!closed) ctx.logger.warn('audit stream read failed; ending the stream', { error: e as Error });
            end();
            return;
          }
          if (closed) return;
          if (records.length) {
            let chunk = '';
            for (const r of records) chunk += `id: ${r.chain_sequence}\nevent: audit-record\ndata: ${JSON.stringify(r)}\n\n`;
            last = records[records.length - 1]!.chain_sequence;
            lastSentAt = Date.now();
            controller.enqueue(enc.encode(chunk));
            return;
          }
          const silentFor = Date.now() - lastSentAt;
          if (silentFor >= KEEPALIVE_MS) {
            lastSentAt = Date.now();
            controller.enqueue(enc.encode(': keep-alive\n\n'));
            return;
          }
          await new Promise<void>((resolve) => {
            const timer = setTimeout(done, Math.min(POLL_MS, KEEPALIVE_MS - silentFor));
            function done() {
              clearTimeout(timer);
              wake = null;
              resolve();
            }
            wake = done;
          });
        }
      },
      cancel() {
        end();
      },
    },
    { highWaterMark: 1 },
  );
}
