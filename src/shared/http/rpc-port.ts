/**
 * What the gRPC port (8002) does with a request that the HTTP/2 fast path did not take, on
 * HTTP/1.1 and HTTP/2 alike (node:http's request and response, or node:http2's
 * compatibility pair):
 *
 * - CORS first (cors.ts): a preflight is answered here; a listed origin's answer gets its
 *   allow headers.
 * - a plain route (`GET /health`, and whatever the service adds: see
 *   GrpcServiceDef.plainRoutes) answers GET and HEAD;
 * - an RPC path (`/svc.context.v1.ContextService/RequestContext`) goes to the Connect router
 *   on POST (gRPC, gRPC-Web, Connect);
 * - anything else gets the error body: 404 `not_found` for an unknown path, 405
 *   `method_not_allowed` (with `Allow`) for a known path in another method.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import { applyCors, RPC_CORS } from './cors.js';

/** What a plain route answers (built without the request: health, readiness, metrics). */
interface PlainAnswer {
  status: number;
  /** Content-Type included; defaults to JSON when absent. */
  headers?: Record<string, string>;
  body: string;
}

export type PlainRoute = () => Promise<PlainAnswer> | PlainAnswer;

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

function send(res: Res, status: number, body: string, headers: Record<string, string> = {}, head = false): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const h: Record<string, string | number> = { 'Content-Type': 'application/json; charset=utf-8', ...headers, 'Content-Length': Buffer.byteLength(body) };
  (res as ServerResponse).writeHead(status, h);
  (res as ServerResponse).end(head ? undefined : body);
}

function sendError(res: Res, err: AppError, headers?: Record<string, string>): void {
  send(res, err.status, JSON.stringify(err.toBody()), headers);
}

export interface RpcPortOptions {
  /** The Connect router (connectNodeAdapter). */
  connect: (req: Req, res: Res) => void;
  /** The request paths the router serves. */
  rpcPaths: ReadonlySet<string>;
  plainRoutes: Readonly<Record<string, PlainRoute>>;
  corsOrigins: ReadonlySet<string>;
  logger: Logger;
}

export function rpcPortHandler(opts: RpcPortOptions): (req: Req, res: Res) => void {
  const { connect, rpcPaths, plainRoutes, corsOrigins, logger } = opts;
  return (req, res) => {
    if (applyCors(corsOrigins, RPC_CORS, req.method, req.headers, res as ServerResponse)) return;
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (rpcPaths.has(path)) {
      if (req.method === 'POST') return connect(req, res);
      return sendError(res, new AppError('method_not_allowed', `${path} is an RPC: POST it (gRPC, gRPC-Web or Connect)`), { Allow: 'POST' });
    }
    const plain = Object.hasOwn(plainRoutes, path) ? plainRoutes[path] : undefined;
    if (!plain) return sendError(res, new AppError('not_found', 'No such route'));
    if (req.method !== 'GET' && req.method !== 'HEAD') return sendError(res, new AppError('method_not_allowed', 'Method not allowed on this route'), { Allow: 'GET, HEAD' });
    // The request has no body to read; it is drained so that a keep-alive connection goes on.
    req.resume();
    void (async () => {
      try {
        const a = await plain();
        send(res, a.status, a.body, a.headers, req.method === 'HEAD');
      } catch (e) {
        logger.error('plain route failed', { path, error: e as Error });
        sendError(res, new AppError('internal_error', 'Internal error'));
      }
    })();
  };
}
