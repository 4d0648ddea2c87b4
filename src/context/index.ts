/** The context service: gRPC on 8002 (RequestContext, Subscribe) and the tag-update webhook on 8003. */
import type { GrpcServiceDef } from '../shared/service.js';
import { healthHandler, httpService } from '../shared/http/service-app.js';
import { routes as webhook } from './webhook/routes.js';
import { contextRoutes } from './grpc/routes.js';
import { startFanout } from './fanout/index.js';
import { subscribeH2 } from './grpc/subscribe-h2.js';

export const contextWebhookService = httpService({
  name: 'context-webhook',
  specFile: 'openapi-context-webhook.yaml',
  port: (c) => c.ports.contextWebhook,
  modules: [{ handlers: { getWebhookHealth: healthHandler('context') } }, webhook],
});

export const contextGrpcService: GrpcServiceDef = {
  kind: 'grpc',
  name: 'context-grpc',
  port: (c) => c.ports.contextGrpc,
  host: (c) => c.host,
  routes: contextRoutes,
  // Plain binary gRPC Subscribe is written straight on the HTTP/2 stream (see subscribe-h2.ts).
  preHandle: subscribeH2,
  // Ends Subscribe streams cleanly before the server drains its connections.
  start: startFanout,
};
