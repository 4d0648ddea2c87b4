/** Connect-RPC routes of the context service (spec 4.8): RequestContext and Subscribe. */
import type { ConnectRouter } from '@connectrpc/connect';
import type { AppContext } from '../../shared/app-context.js';
import { ContextService } from '../../../gen/proto/context_pb.js';
import { requestContextHandler } from './request-context.js';
import { subscribeHandler } from './subscribe.js';

export function contextRoutes(ctx: AppContext): (router: ConnectRouter) => void {
  return (router) => {
    router.service(ContextService, { requestContext: requestContextHandler(ctx), subscribe: subscribeHandler(ctx) });
  };
}
