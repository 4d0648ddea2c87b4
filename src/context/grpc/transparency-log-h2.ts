/**
 * TransparencyLogService's three calls for plain binary gRPC (`application/grpc[+proto]`,
 * uncompressed), served straight on node:http2's stream before the Connect router
 * (GrpcServiceDef.preHandle), as RequestContext is (request-context-h2.ts): the request is
 * decoded, the same call the router makes answers (transparency-log.ts), and the answer is
 * written as one gRPC message. Measured like the router's calls (grpcCallRecorder: the
 * `grpc call` log line and the gRPC metrics).
 *
 * Why not through connect-node's adapter: the proofs' p99 target (under 5 ms at 10,000,000
 * leaves). In `make bench ONLY=tlog` on 2026-11-29 (TLOG_BENCH_ONLY=proofs, PostgreSQL, a
 * slow machine), GetInclusionProof over the adapter cost the server 2,589-2,667 µs of CPU a
 * call at p50 3.3-3.8 ms and p99 16.0-16.3 ms, where the same proofs over REST on the same
 * server cost 1,022-1,367 µs at p50 1.9-2.0 ms; the README's figures give this path's.
 *
 * Everything else (gRPC-Web, Connect, JSON codecs, compressed requests) is left to the router.
 */
import { create, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from '@bufbuild/protobuf';
import type http2 from 'node:http2';
import type { AppContext } from '../../shared/app-context.js';
import {
  ConsistencyProofSchema,
  GetCheckpointRequestSchema,
  GetCheckpointResponseSchema,
  GetConsistencyProofRequestSchema,
  GetInclusionProofRequestSchema,
  InclusionProofSchema,
  TransparencyLogService,
} from '../../../gen/proto/context_pb.js';
import { transparencyLogHandlers } from './transparency-log.js';
import { answerUnary, isPlainGrpc, readMessage, serveUnary } from './h2.js';
import { MAX_MESSAGE_BYTES } from '../../shared/h2c.js';
import { grpcCallRecorder, type GrpcCallRecorder } from '../../shared/grpc-observe.js';
import type { GrpcPreHandler } from '../../shared/service.js';
import type { Logger } from '../../shared/logger.js';

interface Method {
  path: string;
  answer(stream: http2.ServerHttp2Stream): Promise<number>;
  calls: GrpcCallRecorder;
}

/** One unary method: decode, call, encode. */
function method<I extends DescMessage, O extends DescMessage>(
  logger: Logger,
  name: string,
  input: I,
  output: O,
  call: (req: MessageShape<I>) => Promise<MessageInitShape<O>>,
): Method {
  const path = `/${TransparencyLogService.typeName}/${name}`;
  return {
    path,
    calls: grpcCallRecorder(logger, path),
    async answer(stream) {
      const request = await readMessage(stream, input, MAX_MESSAGE_BYTES);
      return answerUnary(stream, toBinary(output, create(output, await call(request))), null);
    },
  };
}

/** The pre-handler: true when it took the request. */
export function transparencyLogH2(ctx: AppContext): GrpcPreHandler {
  const impl = transparencyLogHandlers(ctx);
  const logger = ctx.logger.child({ service: 'context-grpc' });
  const methods = [
    method(logger, 'GetInclusionProof', GetInclusionProofRequestSchema, InclusionProofSchema, impl.getInclusionProof),
    method(logger, 'GetConsistencyProof', GetConsistencyProofRequestSchema, ConsistencyProofSchema, impl.getConsistencyProof),
    method(logger, 'GetCheckpoint', GetCheckpointRequestSchema, GetCheckpointResponseSchema, impl.getCheckpoint),
  ];
  const prefix = `/${TransparencyLogService.typeName}/`;
  return (stream, headers) => {
    if (!headers[':path']?.startsWith(prefix)) return false;
    const m = methods.find((x) => isPlainGrpc(headers, x.path));
    if (!m) return false;
    serveUnary(stream, headers, m.calls, () => m.answer(stream));
    return true;
  };
}
