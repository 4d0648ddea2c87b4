/**
 * gRPC over HTTP/2 written by hand on node:http2's ServerHttp2Stream, for the calls served
 * before the Connect router (request-context-h2.ts, transparency-log-h2.ts, subscribe-h2.ts): which requests they
 * may take, reading the one length-prefixed request message, writing a response message,
 * and the status trailers (headers sent with `waitForTrailers`, trailers on 'wantTrailers').
 */
import type http2 from 'node:http2';
import { fromBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { requestIdOf, type GrpcCallRecorder } from '../../shared/grpc-observe.js';

const RESPONSE_HEADERS = { ':status': 200, 'content-type': 'application/grpc+proto', 'grpc-accept-encoding': 'identity' };
const OK_TRAILERS = { 'grpc-status': '0' };
/** The trailers a call ends with, once its headers went out with waitForTrailers. */
const trailersOf = new WeakMap<http2.ServerHttp2Stream, http2.OutgoingHttpHeaders>();

function onWantTrailers(this: http2.ServerHttp2Stream): void {
  this.sendTrailers(trailersOf.get(this) ?? OK_TRAILERS);
}

/**
 * True for a plain binary gRPC call of `path`: POST, `application/grpc[+proto]`, no request
 * compression. gRPC-Web, Connect, JSON codecs and compressed requests are the router's.
 */
export function isPlainGrpc(headers: http2.IncomingHttpHeaders, path: string): boolean {
  if (headers[':method'] !== 'POST' || headers[':path']?.split('?', 1)[0] !== path) return false;
  const type = (headers['content-type'] ?? '').toLowerCase();
  if (type !== 'application/grpc' && type !== 'application/grpc+proto') return false;
  const encoding = headers['grpc-encoding'];
  return encoding === undefined || encoding === 'identity';
}

/** Aborted when the stream closes (answered, reset by the client, or its session ended). */
export function closedSignal(stream: http2.ServerHttp2Stream): AbortSignal {
  const ac = new AbortController();
  if (stream.closed) ac.abort();
  else stream.once('close', () => ac.abort());
  return ac.signal;
}

/**
 * Reads the request to its end and decodes its one uncompressed message. A message over
 * `maxBytes` (its 5-byte prefix not counted, as Connect's readMaxBytes does not count it) is
 * read on without keeping it, then refused (RESOURCE_EXHAUSTED); a missing,
 * compressed, truncated or extra message, or bytes that are not a `schema`, are refused.
 */
export async function readMessage<Desc extends DescMessage>(stream: http2.ServerHttp2Stream, schema: Desc, maxBytes: number): Promise<MessageShape<Desc>> {
  const limit = 5 + maxBytes;
  const body = await new Promise<Buffer | null>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= limit) chunks.push(c);
    });
    // The close listener goes once the request has ended: every answered stream closes, and
    // a ConnectError built there for nothing (its stack trace) cost about 5% of a call's CPU.
    const onClose = (): void => reject(new ConnectError('the client closed the stream', Code.Canceled));
    stream.once('end', () => {
      stream.off('close', onClose);
      resolve(size > limit ? null : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    stream.once('close', onClose);
  });
  if (body === null) throw new ConnectError(`request exceeds ${maxBytes} bytes`, Code.ResourceExhausted);
  if (body.length < 5) throw new ConnectError('request message missing', Code.InvalidArgument);
  if (body[0] !== 0) throw new ConnectError('compressed message without grpc-encoding', Code.Internal);
  if (body.length !== 5 + body.readUInt32BE(1)) throw new ConnectError('expected exactly one request message', Code.InvalidArgument);
  try {
    return fromBinary(schema, body.subarray(5));
  } catch {
    throw new ConnectError(`request is not a ${schema.name}`, Code.InvalidArgument);
  }
}

/**
 * Writes one uncompressed response message: its length prefix and `head` in one chunk, then
 * `shared` (bytes shared between answers, never copied here), handed to nghttp2 together.
 * Protobuf fields may come in any order, so head + shared is one message. False when the
 * stream holds much unsent (wait for 'drain').
 */
export function writeMessage(stream: http2.ServerHttp2Stream, head: Uint8Array, shared: Uint8Array | null): boolean {
  const first = Buffer.allocUnsafe(5 + head.length);
  first[0] = 0; // not compressed
  first.writeUInt32BE(head.length + (shared?.length ?? 0), 1);
  first.set(head, 5);
  if (!stream.headersSent) respond(stream);
  if (!shared?.length) return stream.write(first);
  stream.cork();
  stream.write(first);
  const flowing = stream.write(shared);
  stream.uncork();
  return flowing;
}

/**
 * Answers a unary call with one message (writeMessage) and the OK status; its status code,
 * CANCELLED when the client left before the answer.
 */
export function answerUnary(stream: http2.ServerHttp2Stream, head: Uint8Array, shared: Uint8Array | null): number {
  if (stream.closed) return Code.Canceled;
  writeMessage(stream, head, shared);
  finish(stream, null);
  return 0; // OK
}

/**
 * Ends the call with its status in the trailers, after the messages or after none: headers
 * then trailers, as port 8002 always answered. (A Trailers-Only answer, one HEADERS frame,
 * is valid gRPC too, but a client listening for node:http2's 'trailers' event misses it.)
 */
export function finish(stream: http2.ServerHttp2Stream, err: ConnectError | null): void {
  if (stream.closed || stream.destroyed || stream.writableEnded) return;
  if (!stream.headersSent) respond(stream);
  if (err) trailersOf.set(stream, { ...Object.fromEntries(err.metadata), 'grpc-status': String(err.code), 'grpc-message': encodeURIComponent(err.rawMessage) });
  stream.end();
}

function respond(stream: http2.ServerHttp2Stream): void {
  stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
  stream.once('wantTrailers', onWantTrailers);
}

/**
 * Serves one unary call taken by a pre-handler: `answer` reads the request and writes the
 * answer, resolving to its status code (CANCELLED when the client left first); a throw ends
 * the call with that error's status. Either way the call is measured and logged on `calls`,
 * as the router's calls are.
 */
export function serveUnary(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, calls: GrpcCallRecorder, answer: () => Promise<number>): void {
  const startedAt = performance.now();
  const id = headers['x-request-id'];
  const requestId = requestIdOf(typeof id === 'string' ? id : undefined);
  answer().then(
    (code) => calls.done(code, startedAt, requestId),
    (e: unknown) => {
      const err = ConnectError.from(e);
      finish(stream, err);
      calls.done(err.code, startedAt, requestId);
    },
  );
}
