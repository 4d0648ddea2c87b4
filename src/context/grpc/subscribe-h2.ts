/**
 * Subscribe for plain binary gRPC (`application/grpc[+proto]`, uncompressed request), served
 * straight on node:http2's stream. Why: a tag's context is large (the corpus's W1 project tag:
 * about 180 KB per message) and a move goes to every stream at once; through Connect each
 * stream re-serializes and copies the message three times (buffer growth, slice, envelope),
 * which at 1,000 streams is most of the fan-out's time and garbage. Here the shared part of
 * the message is encoded once per tag move (TagState.bytes) and the very same buffer is
 * written to every stream behind a small per-stream head (type, tag, sequence, timestamp):
 * protobuf fields may come in any order, so head + shared bytes is the same ContextMessage.
 *
 * Everything else (gRPC-Web, Connect, JSON codecs, compressed requests, any other method)
 * is left to the Connect router. The stream logic, authentication, records and statuses are
 * those of `subscriptionFrames`; only the framing is written here (gRPC over HTTP/2: length-
 * prefixed messages, the status in trailers).
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import type { AppContext } from '../../shared/app-context.js';
import type http2 from 'node:http2';
import { ContextMessageSchema, SubscribeRequestSchema } from '../../../gen/proto/context_pb.js';
import { subscriptionFrames } from './subscribe.js';
import { closedSignal, finish, isPlainGrpc, readMessage, writeMessage } from './h2.js';
import { grpcCallRecorder, requestIdOf } from '../../shared/grpc-observe.js';

const SUBSCRIBE_PATH = '/svc.context.v1.ContextService/Subscribe';
const MAX_REQUEST_BYTES = 64 * 1024;
const TIMEOUT_UNITS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/**
 * The pre-handler the launcher runs before the Connect router: true when it took the
 * request (a plain binary gRPC Subscribe), false to leave it to Connect.
 */
export function subscribeH2(ctx: AppContext): (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean {
  const calls = grpcCallRecorder(ctx.logger.child({ service: 'context-grpc' }), SUBSCRIBE_PATH);
  return (stream, headers) => {
    if (!isPlainGrpc(headers, SUBSCRIBE_PATH)) return false;
    const startedAt = performance.now();
    const id = headers['x-request-id'];
    const requestId = requestIdOf(typeof id === 'string' ? id : undefined);
    serve(ctx, stream, headers['grpc-timeout']).then(
      (code) => calls.done(code, startedAt, requestId),
      (e: unknown) => {
        ctx.logger.error('subscribe stream failed', { error: e as Error, request_id: requestId });
        finish(stream, new ConnectError('internal error', Code.Internal));
        calls.done(Code.Internal, startedAt, requestId);
      },
    );
    return true;
  };
}

/** Serves the stream to its end; its status code. */
async function serve(ctx: AppContext, stream: http2.ServerHttp2Stream, timeout: string | string[] | undefined): Promise<number> {
  const gone = closedSignal(stream);
  const deadline = deadlineSignal(timeout);
  const signal = deadline ? AbortSignal.any([gone, deadline.signal]) : gone;
  try {
    const request = await readMessage(stream, SubscribeRequestSchema, MAX_REQUEST_BYTES);
    for await (const f of subscriptionFrames(ctx, request, signal)) {
      const head = toBinary(ContextMessageSchema, create(ContextMessageSchema, { type: f.type, tag: f.tag, sequence: f.sequence, timestamp: f.timestamp }));
      // The shared buffer is the same for every stream of the tag.
      if (!writeMessage(stream, head, f.state?.bytes ?? null)) await drained(stream, signal);
    }
    if (deadline?.signal.aborted && !gone.aborted) throw new ConnectError('deadline exceeded', Code.DeadlineExceeded);
    finish(stream, null);
    return gone.aborted ? Code.Canceled : 0;
  } catch (e) {
    const err = ConnectError.from(e);
    finish(stream, err);
    return err.code;
  } finally {
    deadline?.clear();
  }
}

/** The stream's queue has gone to nghttp2, or the stream closed or the deadline passed (`signal`). */
function drained(stream: http2.ServerHttp2Stream, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      signal.removeEventListener('abort', done);
      stream.off('drain', done);
      resolve();
    };
    stream.once('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** The client's deadline (`grpc-timeout`: up to 8 digits and a unit), if any. */
function deadlineSignal(header: string | string[] | undefined): { signal: AbortSignal; clear(): void } | null {
  const m = typeof header === 'string' ? /^(\d{1,8})([HMSmun])$/.exec(header) : null;
  if (!m) return null;
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), Math.max(1, Math.ceil(Number(m[1]) * TIMEOUT_UNITS[m[2]!]!)));
  timer.unref();
  return { signal: ac.signal, clear: () => clearTimeout(timer) };
}
