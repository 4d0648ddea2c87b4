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
import { ConnectError } from '@connectrpc/connect';
import type { AppContext } from '../../shared/app-context.js';
import type http2 from 'node:http2';
import { RequestContextRequestSchema } from '../../../gen/proto/context_pb.js';
import { callRequestContext, responseParts } from './request-context.js';
import { finish, isPlainGrpc, readMessage, writeMessage } from './h2.js';
import { MAX_MESSAGE_BYTES } from '../../shared/h2c.js';

export const REQUEST_CONTEXT_PATH = '/svc.context.v1.ContextService/RequestContext';

/** The pre-handler: true when it took the request. */
export function requestContextH2(ctx: AppContext): (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean {
  return (stream, headers) => {
    if (!isPlainGrpc(headers, REQUEST_CONTEXT_PATH)) return false;
    answer(ctx, stream).catch((e: unknown) => finish(stream, ConnectError.from(e)));
    return true;
  };
}

async function answer(ctx: AppContext, stream: http2.ServerHttp2Stream): Promise<void> {
  // The same limit as the Connect router's (its other protocols and compressed calls).
  const request = await readMessage(stream, RequestContextRequestSchema, MAX_MESSAGE_BYTES);
  const { head, tail } = responseParts(await callRequestContext(ctx, request));
  if (stream.closed) return;
  writeMessage(stream, head, tail);
  finish(stream, null);
}
