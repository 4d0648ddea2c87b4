/**
 * gRPC over HTTP/2 written by hand, for the calls served before the Connect router
 * (request-context-h2.ts, subscribe-h2.ts): which requests they may take, reading the one
 * length-prefixed request message, writing a response message, and the status trailers.
 * Through the compatibility request/response of node:http2, which owns the stream's
 * trailers (it answers 'wantTrailers' itself), so the status goes in with addTrailers.
 */
import type http2 from 'node:http2';
import { fromBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';

export const GRPC_HEADERS = { 'content-type': 'application/grpc+proto', 'grpc-accept-encoding': 'identity' };

/**
 * True for a plain binary gRPC call of `path`: POST, `application/grpc[+proto]`, no request
 * compression. gRPC-Web, Connect, JSON codecs and compressed requests are the router's.
 */
export function isPlainGrpc(req: http2.Http2ServerRequest, path: string): boolean {
  if (req.method !== 'POST' || req.url.split('?', 1)[0] !== path) return false;
  const type = String(req.headers['content-type'] ?? '').toLowerCase();
  if (type !== 'application/grpc' && type !== 'application/grpc+proto') return false;
  const encoding = req.headers['grpc-encoding'];
  return encoding === undefined || encoding === 'identity';
}

/**
 * Reads the request to its end and decodes its one uncompressed message. A request over
 * `maxBytes` is read on without keeping it, then refused (RESOURCE_EXHAUSTED); a missing,
 * compressed, truncated or extra message, or bytes that are not a `schema`, are refused.
 */
export function readMessage<Desc extends DescMessage>(stream: http2.ServerHttp2Stream, schema: Desc, maxBytes: number): Promise<MessageShape<Desc>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let ended = false;
    stream.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= maxBytes) chunks.push(c);
    });
    stream.once('close', () => {
      if (!ended) reject(new ConnectError('the client closed the stream', Code.Canceled));
    });
    stream.once('end', () => {
      ended = true;
      try {
        resolve(decode(Buffer.concat(chunks), size, schema, maxBytes));
      } catch (e) {
        reject(e);
      }
    });
  });
}

function decode<Desc extends DescMessage>(body: Buffer, size: number, schema: Desc, maxBytes: number): MessageShape<Desc> {
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
 * `shared` (bytes shared between answers, never copied here) in one vectored write. Protobuf
 * fields may come in any order, so head + shared is one message. False when the stream's
 * buffer is full (wait for 'drain').
 */
export function writeMessage(res: http2.Http2ServerResponse, head: Uint8Array, shared: Uint8Array | null): boolean {
  const first = Buffer.allocUnsafe(5 + head.length);
  first[0] = 0; // not compressed
  first.writeUInt32BE(head.length + (shared?.length ?? 0), 1);
  first.set(head, 5);
  if (!res.headersSent) res.writeHead(200, GRPC_HEADERS);
  res.stream.cork();
  let flowing = res.write(first);
  if (shared?.length) flowing = res.write(shared);
  res.stream.uncork();
  return flowing;
}

/** Ends the call with its status in the trailers (after the messages, or after none). */
export function finish(res: http2.Http2ServerResponse, err: ConnectError | null): void {
  if (res.stream.destroyed || res.stream.closed || res.writableEnded) return;
  if (!res.headersSent) res.writeHead(200, GRPC_HEADERS);
  res.addTrailers({ 'grpc-status': String(err?.code ?? 0), ...(err ? { 'grpc-message': encodeURIComponent(err.rawMessage) } : {}) });
  res.end();
}
