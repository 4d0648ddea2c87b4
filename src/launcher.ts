/**
 * Starts services on their ports and stops them cleanly: stop accepting, drain in-flight
 * requests (up to a grace period), end streams, then close the context (database, broker).
 */
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import type { AppContext } from './shared/app-context.js';
import type { ServiceName } from './shared/service.js';
import { SERVICES } from './services.js';

export interface RunningService {
  name: ServiceName;
  host: string;
  port: number;
  url: string;
  close(): Promise<void>;
}

export interface RunningStack {
  services: Partial<Record<ServiceName, RunningService>>;
  /** The service's base URL (throws if not running). */
  url(name: ServiceName): string;
  close(): Promise<void>;
}

const DRAIN_MS = 5000;

function listening(server: http.Server | http2.Http2Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

async function startOne(ctx: AppContext, name: ServiceName, portOverride?: number): Promise<RunningService> {
  const def = SERVICES[name];
  const host = def.host(ctx.config);
  const wanted = portOverride ?? def.port(ctx.config);
  let server: http.Server | http2.Http2Server;
  const sessions = new Set<http2.Http2Session>();
  if (def.kind === 'http') {
    const app = await def.createApp(ctx);
    // A service may serve some requests itself before the app (see HttpServiceDef.preHandle).
    const pre = def.preHandle?.(ctx);
    const createServer = pre
      ? (o: http.ServerOptions, listener: http.RequestListener) => http.createServer(o, (req, res) => void (pre(req, res) || listener(req, res)))
      : http.createServer;
    server = serve({ fetch: app.fetch, port: wanted, hostname: host, createServer, autoCleanupIncoming: false } as any) as http.Server;
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
    const connect = connectNodeAdapter({ routes: def.routes(ctx), compressMinBytes: Number.MAX_SAFE_INTEGER });
    // A service may serve some requests itself before the router (see GrpcServiceDef.preHandle).
    const pre = def.preHandle?.(ctx);
    const handler: typeof connect = pre ? (req, res) => void (pre(req as http2.Http2ServerRequest, res as http2.Http2ServerResponse) || connect(req, res)) : connect;
    const h2 = http2.createServer(handler);
    h2.on('session', (s) => {
      sessions.add(s);
      s.once('close', () => sessions.delete(s));
    });
    server = h2;
    await listening(h2, wanted, host);
  }
  const port = (server.address() as AddressInfo).port;
  const stopJobs = def.start ? await def.start(ctx) : undefined;
  let closing: Promise<void> | null = null;
  return {
    name,
    host,
    port,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close() {
      closing ??= (async () => {
        if (stopJobs) await stopJobs();
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            if ('closeAllConnections' in server) (server as http.Server).closeAllConnections();
            for (const s of sessions) s.destroy();
          }, DRAIN_MS);
          timer.unref();
          server.close(() => {
            clearTimeout(timer);
            resolve();
          });
          if ('closeIdleConnections' in server) (server as http.Server).closeIdleConnections();
          for (const s of sessions) s.close();
        });
      })();
      return closing;
    },
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
      await Promise.all(Object.values(services).map((s) => s!.close()));
    },
  };
}
