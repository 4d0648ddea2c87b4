/**
 * How a service is described to the launcher. A service is built from an AppContext with
 * no side effects (`createApp`); `start` runs its background jobs; only the launcher listens.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type { ConnectRouter } from '@connectrpc/connect';
import type { Hono } from 'hono';
import type { AppContext } from './app-context.js';
import type { Config } from './config.js';
import type { Context as OaContext } from 'openapi-backend';
import type { CorsPolicy } from './http/cors.js';
import type { PlainRoute } from './http/rpc-port.js';
import type { Handlers, OperationsShape, UncheckedRequest, UncheckedResult, ValidationFailHandler } from './http/contract-types.js';

export type ServiceName = 'api' | 'rules' | 'context-grpc' | 'context-webhook' | 'telemetry' | 'collector';
export const SERVICE_NAMES: ServiceName[] = ['api', 'rules', 'context-grpc', 'context-webhook', 'telemetry', 'collector'];

interface ServiceBase {
  name: ServiceName;
  port(config: Config): number;
  host(config: Config): string;
  /** Background work started with the service; returns a stop function. */
  start?(ctx: AppContext): Promise<(() => Promise<void> | void) | void> | (() => Promise<void> | void) | void;
}

export interface HttpServiceDef extends ServiceBase {
  kind: 'http';
  /** Absolute path of the service's OpenAPI document. */
  spec: string;
  createApp(ctx: AppContext): Promise<Hono>;
  /**
   * Optional: runs before the app on every request and answers true when it served the
   * request itself (a hot path on node:http), false to leave it to the app.
   */
  preHandle?(ctx: AppContext): HttpPreHandler;
  /**
   * Optional: once the service is up, the launcher runs this in the background (stopped
   * through `signal` when the service closes): requests made to the service's own app, not
   * logged nor measured, so that V8 has compiled a path before callers come (the modules'
   * `warmUp` paths). Answers the number of requests made.
   */
  warmUp?(ctx: AppContext, app: Hono, signal: AbortSignal): Promise<number>;
  /**
   * Optional: what a browser page of a CORS_ORIGINS origin may send and read (preflights
   * answered, allow headers set, before preHandle and the app; see http/cors.ts).
   */
  cors?: CorsPolicy;
}

/** A hot-path handler on node:http: true when it took the request. */
export type HttpPreHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

export interface GrpcServiceDef extends ServiceBase {
  kind: 'grpc';
  routes(ctx: AppContext): (router: ConnectRouter) => void;
  /**
   * Optional: runs before the Connect router on every request and answers true when it
   * served the request itself (a hot path written straight on node:http2's stream), false
   * to leave it to the router.
   */
  preHandle?(ctx: AppContext): GrpcPreHandler;
  /**
   * Optional: plain HTTP routes served on the same port beside the RPCs, over HTTP/1.1 and
   * HTTP/2, GET and HEAD only, by exact path (`/health`; `/metrics`, `/ready`). Other
   * methods get 405, other paths 404, each with the error body (see http/rpc-port.ts).
   */
  plainRoutes?(ctx: AppContext): Record<string, PlainRoute>;
}

/** A hot-path handler on node:http2: true when it took the stream. */
export type GrpcPreHandler = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => boolean;

export type ServiceDef = HttpServiceDef | GrpcServiceDef;

/**
 * A resource folder's contribution to an HTTP service, typed by that service's generated
 * `operations`: every key is one of its operationIds, and each handler's request and result
 * are those of its operation (see http/contract-types.ts).
 */
export interface RouteModule<Ops extends OperationsShape<Ops>> {
  handlers: Handlers<Ops, AppContext, OaContext>;
  /** Answers a request the contract refused, for one operation (instead of the generic 400). */
  validationFail?: { [K in keyof Ops]?: ValidationFailHandler<Ops[K], AppContext> };
  /** Answers an unexpected error of one operation with its own body (instead of the generic 500). */
  internalError?: { [K in keyof Ops]?: (req: UncheckedRequest, ctx: AppContext, requestId: string) => UncheckedResult };
  /** Answers a body over the size limit for one operation (instead of the generic 413). */
  payloadTooLarge?: { [K in keyof Ops]?: (req: UncheckedRequest, ctx: AppContext) => Promise<UncheckedResult> | UncheckedResult };
  /** Requests this module serves itself before the edge (see HttpServiceDef.preHandle). */
  preHandle?: (ctx: AppContext) => HttpPreHandler;
  start?: ServiceBase['start'];
  /** GET paths run through the app once the service is up (see HttpServiceDef.warmUp). */
  warmUp?: (ctx: AppContext) => Promise<string[]>;
}
