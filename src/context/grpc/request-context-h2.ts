/**
 * RequestContext for plain binary gRPC (`application/grpc[+proto]`, uncompressed), served
 * straight on node:http2's stream before the Connect router (GrpcServiceDef.preHandle): the
 * request is decoded, `callRequestContext` (the very same call Connect makes) answers, and
 * the response is written as one gRPC message: the small per-call fields encoded per call,
 * then the selection's fields as their once-per-selection encoding (no copy).
 *
 * Why not through connect-node's adapter: measured on 2026-11-25 (W1, 40 KB answers,
 * h2load 64 streams on 8 connections, PostgreSQL; the same database and build, both servers
 * in one run, the machine shared with other work), the adapter path cost 680-1,635 µs of
 * server CPU per call and served 173-463 calls/s where this path cost 127-203 µs and served
 * 1,447-2,144/s (REST in the same runs: 103-181 µs, 1,532-3,040/s). The router builds the
 * whole response message and re-encodes the selection's tens of KB for every call, and its
 * garbage dominates.
 *
 * Everything else (gRPC-Web, Connect, JSON codecs, compressed requests, other methods) is
 * left to the Connect router.
 */
import type { AppContext } from '../../shared/app-context.js';
import type http2 from 'node:http2';
import { RequestContextRequestSchema } from '../../../gen/proto/context_pb.js';
import { callRequestContext, responseParts } from './request-context.js';
import { answerUnary, isPlainGrpc, readMessage, serveUnary } from './h2.js';
import { MAX_MESSAGE_BYTES } from '../../shared/h2c.js';
import { grpcCallRecorder } from '../../shared/grpc-observe.js';

const REQUEST_CONTEXT_PATH = '/svc.context.v1.ContextService/RequestContext';

/** The pre-handler: true when it took the request. */
export function requestContextH2(ctx: AppContext): (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean {
  const calls = grpcCallRecorder(ctx.logger.child({ service: 'context-grpc' }), REQUEST_CONTEXT_PATH);
  return (stream, headers) => {
    if (!isPlainGrpc(headers, REQUEST_CONTEXT_PATH)) return false;
    serveUnary(stream, headers, calls, () => answer(ctx, stream));
    return true;
  };
}

/** Answers the call; its status code (CANCELLED when the client left before the answer). */
async function answer(ctx: AppContext, stream: http2.ServerHttp2Stream): Promise<number> {
  // The same limit as the Connect router's (its other protocols and compressed calls).
  const request = await readMessage(stream, RequestContextRequestSchema, MAX_MESSAGE_BYTES);
  const { head, tail } = responseParts(await callRequestContext(ctx, request));
  return answerUnary(stream, head, tail);
}
