/**
 * Starts services on their ports and stops them cleanly: stop accepting, drain in-flight
 * requests (up to a grace period), end streams, then close the context (database, broker).
 */
import http from 'node:http';
import http2 from 'node:http2';
import type net from 'node:net';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import type { DescMethod } from '@bufbuild/protobuf';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { createH2cServer, MAX_MESSAGE_BYTES, type H2cServer } from './shared/h2c.js';
import { applyCors } from './shared/http/cors.js';
import { rpcPortHandler } from './shared/http/rpc-port.js';
import type { AppContext } from './shared/app-context.js';
import type { ServiceName } from './shared/service.js';
import { answerClientError } from './shared/http/wire-guards.js';
import { grpcCallRecorder, requestIdOf, type GrpcCallRecorder } from './shared/grpc-observe.js';
import { UNKNOWN_GRPC_METHOD } from './shared/metrics.js';
import type { Logger } from './shared/logger.js';
import { loadService } from './services.js';

interface RunningService {
  name: ServiceName;
  host: string;
  port: number;
  url: string;
  /** The listening socket server (tests count its connections at teardown). */
  server: net.Server;
  close(): Promise<void>;
}

export interface RunningStack {
  services: Partial<Record<ServiceName, RunningService>>;
  /** The service's base URL (throws if not running). */
  url(name: ServiceName): string;
  close(): Promise<void>;
}

const DRAIN_MS = 5000;

function listening(server: net.Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

async function startOne(ctx: AppContext, name: ServiceName, portOverride?: number): Promise<RunningService> {
  const def = await loadService(name);
  const host = def.host(ctx.config);
  const wanted = portOverride ?? def.port(ctx.config);
  let server: net.Server;
  let h2: H2cServer | null = null;
  const warming = new AbortController();
  let warmUp: (() => Promise<number>) | null = null;
  if (def.kind === 'http') {
    const app = await def.createApp(ctx);
    const w = def.warmUp;
    if (w) warmUp = () => w(ctx, app, warming.signal);
    // A service may serve some requests itself before the app (see HttpServiceDef.preHandle).
    const pre = def.preHandle?.(ctx);
    // A service with a CORS policy (the control plane) answers browsers of the CORS_ORIGINS
    // (see http/cors.ts), its fast path included: the headers are set on node's response
    // before either writes it.
    const origins = new Set(ctx.config.corsOrigins);
    const policy = def.cors;
    const cors = policy ? (req: http.IncomingMessage, res: http.ServerResponse) => applyCors(origins, policy, req.method, req.headers, res) : null;
    // serve() always calls createServer(serverOptions, listener); the cast names that call as node:http's overloads.
    const createServer = (
      pre || cors
        ? (o: http.ServerOptions, listener: http.RequestListener) =>
            http.createServer(o, (req, res) => void (cors?.(req, res) || pre?.(req, res) || listener(req, res)))
        : http.createServer
    ) as typeof http.createServer;
    server = serve({ fetch: app.fetch, port: wanted, hostname: host, createServer, autoCleanupIncoming: false }) as http.Server;
    // What node's parser refuses gets the spec's error body, not node's bare status line.
    server.on('clientError', answerClientError);
    // serve() listens by itself; wait for it.
    await new Promise<void>((resolve, reject) => {
      if (server.listening) return resolve();
      server.once('listening', () => resolve());
      server.once('error', reject);
    });
  } else {
    // Responses are not compressed (compressed requests are still accepted): every common
    // gRPC client advertises gzip, and gzipping each context answer and each Subscribe
    // message (tens of KB, for every stream of a tag) costs far more CPU than loopback or
    // LAN bandwidth saves. A message is compressed only from compressMinBytes up.
    const routes = def.routes(ctx);
    const grpcLog = ctx.logger.child({ service: name });
    // The router's request paths, as it registers them (the port answers 404 for others).
    const rpcPaths = new Set<string>();
    const unknownCalls = grpcCallRecorder(grpcLog, UNKNOWN_GRPC_METHOD);
    const connect = connectNodeAdapter({
      routes: (router) => {
        routes(router);
        for (const h of router.handlers) rpcPaths.add(h.requestPath);
      },
      compressMinBytes: Number.MAX_SAFE_INTEGER,
      readMaxBytes: MAX_MESSAGE_BYTES,
      interceptors: [observeCalls(grpcLog)],
    });
    // CORS, the plain routes (/health) and the router, on both protocols (http/rpc-port.ts).
    const plainRoutes = def.plainRoutes?.(ctx) ?? {};
    const handle = rpcPortHandler({
      connect,
      rpcPaths,
      plainRoutes,
      corsOrigins: new Set(ctx.config.corsOrigins),
      logger: ctx.logger.child({ service: name }),
    });
    // A service may serve some requests itself before the router (see GrpcServiceDef.preHandle);
    // the others get node's compatibility request and response, as http2.createServer's own
    // 'request' event would give them (minus Expect: 100-continue, which gRPC does not use).
    const pre = def.preHandle?.(ctx);
    h2 = createH2cServer({
      onStream: (stream, headers, rawHeaders) => {
        if (pre?.(stream, headers)) return;
        const path = headers[':path'];
        const q = path ? path.indexOf('?') : -1;
        const p = q < 0 ? (path ?? '') : path!.slice(0, q);
        if (!rpcPaths.has(p) && !(p in plainRoutes)) {
          // Answered 404 by the port (rpc-port.ts); measured and logged as one `unknown` call.
          const startedAt = performance.now();
          const id = headers['x-request-id'];
          const requestId = requestIdOf(typeof id === 'string' ? id : undefined);
          stream.once('close', () => unknownCalls.done(Code.Unimplemented, startedAt, requestId));
        }
        handle(new http2.Http2ServerRequest(stream, headers, {}, rawHeaders), new http2.Http2ServerResponse(stream));
      },
      onStreamError: (e) => ctx.logger.debug('grpc stream error', { error: e.message }),
      // HTTP/1.1 on the same port (browsers, HTTP/1.1 proxies): Connect unary, gRPC-Web, /health.
      onHttp1Request: handle,
      idleTimeoutMs: h2IdleTimeoutMs(ctx.config.contextStream.heartbeatSeconds),
    });
    server = h2.server;
    await listening(server, wanted, host);
  }
  const port = (server.address() as AddressInfo).port;
  let stopJobs: Awaited<ReturnType<NonNullable<typeof def.start>>> | undefined;
  try {
    stopJobs = def.start ? await def.start(ctx) : undefined;
  } catch (e) {
    // A service that refuses to start (the transparency log's check) leaves no port open.
    h2?.destroySessions();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw e;
  }
  // The service's warm-up (HttpServiceDef.warmUp), in the background: callers are served meanwhile.
  const warmed = warmUp
    ? warmUp().then(
        (requests) => requests > 0 && ctx.logger.info('warm-up done', { service: name, requests }),
        (e) => ctx.logger.warn('warm-up failed', { service: name, error: e as Error }),
      )
    : null;
  let closing: Promise<void> | null = null;
  return {
    name,
    host,
    port,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    server,
    close() {
      closing ??= (async () => {
        warming.abort();
        await warmed;
        if (stopJobs) await stopJobs();
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            if ('closeAllConnections' in server) (server as http.Server).closeAllConnections();
            h2?.destroySessions();
          }, DRAIN_MS);
          timer.unref();
          server.close(() => {
            clearTimeout(timer);
            resolve();
          });
          if ('closeIdleConnections' in server) (server as http.Server).closeIdleConnections();
          h2?.closeSessions();
        });
      })();
      return closing;
    },
  };
}

/**
 * How long an HTTP/2 session on 8002 may pass with no frame before it is destroyed: two
 * Subscribe heartbeats and a minute (90 s by default), so a healthy stream never reaches it.
 */
function h2IdleTimeoutMs(heartbeatSeconds: number): number {
  return (2 * heartbeatSeconds + 60) * 1000;
}

/**
 * Measures and logs every call the Connect router serves (any protocol): one `grpc call`
 * line and one duration observation per call, a stream's when it ends. Also logs what a
 * handler threw that is not a ConnectError (an unexpected failure; the client gets INTERNAL
 * or UNKNOWN); the handlers log their own expected failures. What the adapter cannot hand
 * us: a response whose writing fails other than by the client leaving (which it ignores as
 * ABORTED), which connectNodeAdapter prints with console.error.
 */
function observeCalls(logger: Logger): Interceptor {
  const recorders = new Map<DescMethod, GrpcCallRecorder>();
  const recorderOf = (m: DescMethod): GrpcCallRecorder => {
    let r = recorders.get(m);
    if (r === undefined) recorders.set(m, (r = grpcCallRecorder(logger, `/${m.parent.typeName}/${m.name}`)));
    return r;
  };
  return (next) => async (req) => {
    const startedAt = performance.now();
    const requestId = requestIdOf(req.header.get('x-request-id'));
    const calls = recorderOf(req.method);
    const failed = (e: unknown): never => {
      if (!(e instanceof ConnectError)) logger.error('grpc handler failed', { method: `/${req.method.parent.typeName}/${req.method.name}`, request_id: requestId, error: e as Error });
      calls.done(e instanceof ConnectError ? e.code : Code.Unknown, startedAt, requestId);
      throw e;
    };
    let res;
    try {
      res = await next(req);
    } catch (e) {
      return failed(e);
    }
    if (!res.stream) {
      calls.done(0, startedAt, requestId);
      return res;
    }
    const messages = res.message;
    return {
      ...res,
      message: (async function* () {
        // A stream its consumer stopped reading (the client left) ends in `finally` only.
        let code: number | null = Code.Canceled;
        try {
          yield* messages;
          code = req.signal.aborted ? Code.Canceled : 0;
        } catch (e) {
          code = null;
          failed(e);
        } finally {
          if (code !== null) calls.done(code, startedAt, requestId);
        }
      })(),
    };
  };
}

/** Starts the named services (all by default). `ports` overrides ports (tests pass 0). */
export async function startStack(ctx: AppContext, names: ServiceName[], ports: Partial<Record<ServiceName, number>> = {}): Promise<RunningStack> {
  const services: Partial<Record<ServiceName, RunningService>> = {};
  try {
    for (const n of names) services[n] = await startOne(ctx, n, ports[n]);
  } catch (e) {
    await Promise.all(Object.values(services).map((s) => s!.close()));
    throw e;
  }
  return {
    services,
    url(name) {
      const s = services[name];
      if (!s) throw new Error(`service ${name} is not running`);
      return s.url;
    },
    async close() {
      // Readiness and gRPC health answer "not ready" from here on (open health Watch streams end).
      ctx.draining = true;
      await Promise.all(Object.values(services).map((s) => s!.close()));
    },
  };
}
