/**
 * What every gRPC call on port 8002 leaves behind, whichever path serves it (the Connect
 * router, the hand-written fast paths, or an unknown method): one observation of
 * `svc_grpc_request_duration_seconds` and one `grpc call` line at info with the method, the
 * status code, the duration and the request id (the caller's `x-request-id`, else new).
 */
import type { Logger } from './logger.js';
import { grpcCodeName, grpcMethodTimer, type GrpcMethodTimer } from './metrics.js';

export { requestIdOf } from './request-id.js';

/** A method's recorder: its timer taken once; `done` per call. */
export interface GrpcCallRecorder {
  done(code: number, startedAt: number, requestId: string): void;
}

/** `method` is a registered path (`/svc.context.v1.ContextService/RequestContext`) or `unknown`. */
export function grpcCallRecorder(logger: Logger, method: string): GrpcCallRecorder {
  const timer: GrpcMethodTimer = grpcMethodTimer(method);
  return {
    done(code, startedAt, requestId) {
      const ms = performance.now() - startedAt;
      timer.observe(code, ms);
      logger.info('grpc call', { method, code: grpcCodeName(code), duration_ms: Math.round(ms * 100) / 100, request_id: requestId });
    },
  };
}
