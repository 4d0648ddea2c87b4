/**
 * gRPC over HTTP/2 written by hand, for the calls served before the Connect router
 * (request-context-h2.ts, subscribe-h2.ts) on the lean HTTP/2 server (shared/http2): which
 * requests they may take, reading the one length-prefixed request message, writing a
 * response message, and the status trailers.
 */
import { fromBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { encodeHeaders } from '../../shared/http2/hpack.js';
import { StreamResetError, type H2Stream } from '../../shared/http2/server.js';

/** The response headers of every call, encoded once. */
const RESPONSE_HEADERS = encodeHeaders([':status', '200', 'content-type', 'application/grpc+proto', 'grpc-accept-encoding', 'identity']);
const OK_TRAILERS = encodeHeaders(['grpc-status', '0']);

/**
 * True for a plain binary gRPC call of `path`: POST, `application/grpc[+proto]`, no request
 * compression. gRPC-Web, Connect, JSON codecs and compressed requests are the router's.
 */
export function isPlainGrpc(stream: H2Stream, path: string): boolean {
  if (stream.method !== 'POST' || stream.path.split('?', 1)[0] !== path) return false;
  const type = (stream.header('content-type') ?? '').toLowerCase();
  if (type !== 'application/grpc' && type !== 'application/grpc+proto') return false;
  const encoding = stream.header('grpc-encoding');
  return encoding === undefined || encoding === 'identity';
}

/**
 * Reads the request to its end and decodes its one uncompressed message. A request over
 * `maxBytes` is read on without keeping it, then refused (RESOURCE_EXHAUSTED); a missing,
 * compressed, truncated or extra message, or bytes that are not a `schema`, are refused.
 */
export async function readMessage<Desc extends DescMessage>(stream: H2Stream, schema: Desc, maxBytes: number): Promise<MessageShape<Desc>> {
  let body: Buffer;
  let size: number;
  try {
    ({ body, size } = await stream.readAll(maxBytes));
  } catch (e) {
    if (e instanceof StreamResetError) throw new ConnectError('the client closed the stream', Code.Canceled);
    throw e;
  }
  if (size > maxBytes) throw new ConnectError(`request exceeds ${maxBytes} bytes`, Code.ResourceExhausted);
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
 * `shared` (bytes shared between answers, never copied here). Protobuf fields may come in
 * any order, so head + shared is one message. False when the stream holds much unsent
 * (wait for stream.drain()).
 */
export function writeMessage(stream: H2Stream, head: Uint8Array, shared: Uint8Array | null): boolean {
  const first = Buffer.allocUnsafe(5 + head.length);
  first[0] = 0; // not compressed
  first.writeUInt32BE(head.length + (shared?.length ?? 0), 1);
  first.set(head, 5);
  if (!stream.responded) stream.respond(RESPONSE_HEADERS);
  let flowing = stream.write(first);
  if (shared?.length) flowing = stream.write(shared);
  return flowing;
}

/** Ends the call with its status in the trailers (after the messages, or after none). */
export function finish(stream: H2Stream, err: ConnectError | null): void {
  if (stream.isClosed) return;
  if (!stream.responded) stream.respond(RESPONSE_HEADERS);
  stream.end(err ? encodeHeaders(['grpc-status', String(err.code), 'grpc-message', encodeURIComponent(err.rawMessage)]) : OK_TRAILERS);
}
