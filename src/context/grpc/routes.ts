/**
 * Connect-RPC routes of port 8002: the context service (spec 4.8: RequestContext and
 * Subscribe), the transparency log (transparency-log.ts), gRPC health (health.ts) and server reflection v1 and v1alpha (reflection.ts).
 */
import type { ConnectRouter } from '@connectrpc/connect';
import type { AppContext } from '../../shared/app-context.js';
import type { GrpcPreHandler } from '../../shared/service.js';
import { ContextService, TransparencyLogService } from '../../../gen/proto/context_pb.js';
import { Health } from '../../../gen/proto/grpc/health/v1/health_pb.js';
import { ServerReflection as ReflectionV1 } from '../../../gen/proto/grpc/reflection/v1/reflection_pb.js';
import { ServerReflection as ReflectionV1alpha } from '../../../gen/proto/grpc/reflection/v1alpha/reflection_pb.js';
import { registerHealth } from './health.js';
import { registerReflection } from './reflection.js';
import { requestContextHandler } from './request-context.js';
import { subscribeHandler } from './subscribe.js';
import { transparencyLogHandlers } from './transparency-log.js';
import { transparencyLogH2 } from './transparency-log-h2.js';
import { subscribeH2 } from './subscribe-h2.js';
import { requestContextH2 } from './request-context-h2.js';

export function contextRoutes(ctx: AppContext): (router: ConnectRouter) => void {
  return (router) => {
    router.service(ContextService, { requestContext: requestContextHandler(ctx), subscribe: subscribeHandler(ctx) });
    router.service(TransparencyLogService, transparencyLogHandlers(ctx));
    // The context service and the transparency log need the database; health and reflection do not.
    registerHealth(router, ctx, [ContextService.typeName, TransparencyLogService.typeName], [Health.typeName, ReflectionV1.typeName, ReflectionV1alpha.typeName]);
    registerReflection(router, [ContextService, TransparencyLogService, Health, ReflectionV1, ReflectionV1alpha]);
  };
}

/**
 * Plain binary gRPC calls served straight on the HTTP/2 stream before the router (see
 * subscribe-h2.ts and request-context-h2.ts); anything they decline goes to Connect.
 */
export function contextPreHandle(ctx: AppContext): GrpcPreHandler {
  const subscribe = subscribeH2(ctx);
  const requestContext = requestContextH2(ctx);
  const tlog = transparencyLogH2(ctx);
  return (stream, headers) => requestContext(stream, headers) || subscribe(stream, headers) || tlog(stream, headers);
}
