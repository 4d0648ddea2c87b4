/**
 * RequestContext for plain binary gRPC (`application/grpc[+proto]`, uncompressed), served
 * straight on the HTTP/2 stream before the Connect router (GrpcServiceDef.preHandle). Why:
 * through Connect a unary call cost about seven times the CPU of the same REST call; here
 * the request is decoded, `callRequestContext` (the very same call Connect makes) answers,
 * and the response is written as one gRPC frame: the small per-call fields encoded per call,
 * then the selection's fields as their once-per-selection encoding (no copy).
 *
 * Everything else (gRPC-Web, Connect, JSON codecs, compressed requests, other methods) is
 * left to the Connect router.
 */
import type http2 from 'node:http2';
import { ConnectError } from '@connectrpc/connect';
import type { AppContext } from '../../shared/app-context.js';
import { RequestContextRequestSchema } from '../../../gen/proto/context_pb.js';
import { callRequestContext, responseParts } from './request-context.js';
import { finish, isPlainGrpc, readMessage, writeMessage } from './h2.js';

export const REQUEST_CONTEXT_PATH = '/svc.context.v1.ContextService/RequestContext';
const MAX_REQUEST_BYTES = 1024 * 1024;

/** The pre-handler: true when it took the request. */
export function requestContextH2(ctx: AppContext): (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => boolean {
  return (req, res) => {
    if (!isPlainGrpc(req, REQUEST_CONTEXT_PATH)) return false;
    req.stream.on('error', () => {}); // a reset by the client is an ordinary end here
    answer(ctx, req, res).catch((e: unknown) => finish(res, ConnectError.from(e)));
    return true;
  };
}

async function answer(ctx: AppContext, req: http2.Http2ServerRequest, res: http2.Http2ServerResponse): Promise<void> {
  const request = await readMessage(req.stream, RequestContextRequestSchema, MAX_REQUEST_BYTES);
  const { head, tail } = responseParts(await callRequestContext(ctx, request));
  if (res.stream.destroyed || res.stream.closed) return;
  writeMessage(res, head, tail);
  finish(res, null);
}
