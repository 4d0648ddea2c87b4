/** The context service: gRPC on 8002 (RequestContext, Subscribe) and the tag-update webhook on 8003. */
import type { GrpcServiceDef } from '../shared/service.js';
import type { operations } from '../../gen/openapi/context-webhook.js';
import { docsRoutes } from '../shared/http/docs.js';
import { healthHandler, httpService } from '../shared/http/service-app.js';
import { readiness, readyHandler } from '../shared/readiness.js';
import { metricsResponse, metricsText } from '../shared/metrics.js';
import { routes as webhook } from './webhook/routes.js';
import { contextPreHandle, contextRoutes } from './grpc/routes.js';
import { startFanout } from './fanout/index.js';

export const contextWebhookService = httpService<operations>()({
  name: 'context-webhook',
  specFile: 'openapi-context-webhook.yaml',
  port: (c) => c.ports.contextWebhook,
  modules: [{ handlers: { getWebhookHealth: healthHandler('context'), getWebhookReady: readyHandler(), getWebhookMetrics: metricsResponse } }, webhook, docsRoutes('Webhook', 'openapi-context-webhook.yaml')],
});

export const contextGrpcService: GrpcServiceDef = {
  kind: 'grpc',
  name: 'context-grpc',
  port: (c) => c.ports.contextGrpc,
  host: (c) => c.host,
  routes: contextRoutes,
  // Plain binary gRPC RequestContext and Subscribe are served straight on the HTTP/2 stream
  // (see request-context-h2.ts and subscribe-h2.ts).
  preHandle: contextPreHandle,
  // GET /health, /ready and /metrics over HTTP/1.1 and HTTP/2, the answers of the other services.
  plainRoutes: (ctx) => {
    const health = healthHandler('context');
    const ready = readiness(ctx);
    return {
      '/health': () => ({ status: 200, body: JSON.stringify(health().body) }),
      '/metrics': async () => {
        const m = await metricsText();
        return { status: 200, headers: { 'Content-Type': m.contentType }, body: m.body };
      },
      '/ready': async () => {
        const body = await ready();
        return { status: body.status === 'ready' ? 200 : 503, headers: { 'Cache-Control': 'no-store' }, body: JSON.stringify(body) };
      },
    };
  },
  // Ends Subscribe streams cleanly before the server drains its connections.
  start: startFanout,
};
