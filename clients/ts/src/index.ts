/**
 * @svc/client: typed clients of svc's services, generated from its contract (spec/, through
 * `make gen` into src/gen). See README.md.
 */
export {
  createControlPlaneClient,
  createRulesClient,
  createTelemetryClient,
  createCollectorClient,
  createWebhookClient,
  type RestClientOptions,
  type AdminClientOptions,
  type ControlPlaneClientOptions,
  type WebhookClientOptions,
  type ControlPlaneClient,
  type RulesClient,
  type TelemetryClient,
  type CollectorClient,
  type WebhookClient,
} from './rest.js';
export {
  createContextClient,
  type ContextClient,
  type ContextClientOptions,
  type ContextProtocol,
  type RequestContextInput,
  type SubscribeInput,
} from './context.js';
export { ContextMessageType, ContextMessageSchema, RequestContextResponseSchema, type ContextMessage, type RequestContextResponse } from './gen/proto/context_pb.js';
export { Code, ConnectError, type CallOptions } from '@connectrpc/connect';
export { Http2SessionManager } from '@connectrpc/connect-node';
/** The wire types of each REST service (openapi-typescript's `paths`, `components`, `operations`). */
export type * as ControlPlane from './gen/openapi/control-plane.js';
export type * as Rules from './gen/openapi/rules.js';
export type * as Telemetry from './gen/openapi/telemetry.js';
export type * as Collector from './gen/openapi/collector.js';
export type * as Webhook from './gen/openapi/context-webhook.js';
