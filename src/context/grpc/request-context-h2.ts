/**
 * RequestContext for plain binary gRPC (`application/grpc[+proto]`, uncompressed), served
 * straight on the HTTP/2 stream before the Connect router (GrpcServiceDef.preHandle). Why:
 * through Connect a unary call cost about seven times the CPU of the same REST call; here
 * the request is decoded, `runRequestContext` (the very same call Connect makes) answers,
 * and the response is written as one gRPC frame: the small per-call fields encoded per call,
 * then the selection's fields as their once-per-selection encoding (no copy).
 *
 * Everything else (gRPC-Web, Connect, JSON codecs, compressed requests, other methods) is
 * left to the Connect router.
 */
import type http2 from 'node:http2';
import { fromBinary } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import type { AppContext } from '../../shared/app-context.js';
import { RequestContextRequestSchema } from '../../../gen/proto/context_pb.js';
import { callRequestContext, responseParts } from './request-context.js';

export const REQUEST_CONTEXT_PATH = '/svc.context.v1.ContextService/RequestContext';
const MAX_REQUEST_BYTES = 1024 * 1024;
const EMPTY = Buffer.alloc(0);
const GRPC_HEADERS = { 'content-type': 'application/grpc+proto', 'grpc-accept-encoding': 'identity' };

/** The pre-handler: true when it took the request. */
export function requestContextH2(ctx: AppContext): (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => boolean {
  return (req, res) => {
    if (req.method !== 'POST' || req.url !== REQUEST_CONTEXT_PATH) return false;
    const type = String(req.headers['content-type'] ?? '').toLowerCase();
    if (type !== 'application/grpc' && type !== 'application/grpc+proto') return false;
    const encoding = req.headers['grpc-encoding'];
    if (encoding !== undefined && encoding !== 'identity') return false;
    req.stream.on('error', () => {}); // a reset by the client is an ordinary end here
    const chunks: Buffer[] = [];
    let size = 0;
    req.stream.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_REQUEST_BYTES) chunks.push(c);
    });
    req.stream.on('end', () => {
      void answer(ctx, Buffer.concat(chunks), size, res).catch((e: unknown) => finish(res, ConnectError.from(e)));
    });
    return true;
  };
}

async function answer(ctx: AppContext, body: Buffer, size: number, res: http2.Http2ServerResponse): Promise<void> {
  if (size > MAX_REQUEST_BYTES) throw new ConnectError(`request exceeds ${MAX_REQUEST_BYTES} bytes`, Code.ResourceExhausted);
  if (body.length < 5) throw new ConnectError('request message missing', Code.InvalidArgument);
  if (body[0] !== 0) throw new ConnectError('compressed message without grpc-encoding', Code.Internal);
  if (body.length !== 5 + body.readUInt32BE(1)) throw new ConnectError('expected exactly one request message', Code.InvalidArgument);
  let req;
  try {
    req = fromBinary(RequestContextRequestSchema, body.subarray(5));
  } catch {
    throw new ConnectError('request is not a RequestContextRequest', Code.InvalidArgument);
  }
  const parts = responseParts(await callRequestContext(ctx, req));
  const head = parts.head;
  const tail = parts.tail ?? EMPTY;
  if (res.stream.destroyed || res.stream.closed) return;
  // The length prefix and the per-call fields in one chunk, the shared selection bytes as is.
  const first = Buffer.allocUnsafe(5 + head.length);
  first[0] = 0;
  first.writeUInt32BE(head.length + tail.length, 1);
  first.set(head, 5);
  res.writeHead(200, GRPC_HEADERS);
  res.stream.cork();
  res.write(first);
  if (tail.length) res.write(tail);
  res.stream.uncork();
  finish(res, null);
}

/** Ends the call with its status in the trailers (after the message, or after none). */
function finish(res: http2.Http2ServerResponse, err: ConnectError | null): void {
  if (res.stream.destroyed || res.stream.closed || res.writableEnded) return;
  if (!res.headersSent) res.writeHead(200, GRPC_HEADERS);
  res.addTrailers({ 'grpc-status': String(err?.code ?? 0), ...(err ? { 'grpc-message': encodeURIComponent(err.rawMessage) } : {}) });
  res.end();
}
