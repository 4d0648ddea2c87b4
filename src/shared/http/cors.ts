/**
 * Cross-origin requests from browsers, for the origins listed in CORS_ORIGINS (exact
 * origins; none by default). Written on node's request and response, so that it serves
 * node:http (8000, with its fast path before the Hono app; 8002 over HTTP/1.1) and
 * node:http2's compatibility API (8002 over HTTP/2) alike.
 *
 * - A listed origin: every answer carries `Access-Control-Allow-Origin: <origin>` and the
 *   exposed headers; its preflight (OPTIONS with Access-Control-Request-Method) is answered
 *   204 with the allowed methods and headers.
 * - Any other origin: no allow header on any answer; its preflight is answered 403 with the
 *   error body (the browser refuses the call either way; the body says why to a person
 *   reading it with curl).
 * - Every answer carries `Vary: Origin` (a shared cache must not reuse one origin's answer
 *   for another).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { cors as connectCors } from '@connectrpc/connect';
import { AppError } from '../errors.js';

/** What one port allows a listed origin. */
export interface CorsPolicy {
  methods: readonly string[];
  /** Request headers a page may send. */
  headers: readonly string[];
  /** Response headers a page may read. */
  expose: readonly string[];
}

/** Preflight answers may be cached by the browser for 10 minutes. */
const MAX_AGE_SECONDS = '600';

/** 8002: Connect's and gRPC-Web's headers (connect's cors helpers) and our keys. */
export const RPC_CORS: CorsPolicy = {
  methods: connectCors.allowedMethods,
  headers: [...connectCors.allowedHeaders, 'X-API-Key', 'Authorization'],
  expose: connectCors.exposedHeaders,
};

/** 8000: the REST methods and the headers the control plane reads and answers. */
export const REST_CORS: CorsPolicy = {
  methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
  headers: ['Content-Type', 'X-API-Key', 'X-Admin-Key', 'X-Request-Id', 'Authorization'],
  expose: ['X-Request-Id'],
};

/** The parts of node:http's and node:http2's compatibility response that CORS needs. */
interface CorsResponse {
  setHeader(name: string, value: string): unknown;
  writeHead(status: number, headers?: Record<string, string | number>): unknown;
  end(body?: string): unknown;
}

/**
 * Sets the CORS headers of one request's answer; answers a preflight itself. True when it
 * answered (a preflight), false when the request goes on to its handler.
 */
export function applyCors(origins: ReadonlySet<string>, policy: CorsPolicy, method: string | undefined, headers: IncomingHttpHeaders, res: CorsResponse): boolean {
  const origin = headers.origin;
  if (origin === undefined) return false;
  res.setHeader('Vary', 'Origin');
  const listed = origins.has(origin);
  if (method === 'OPTIONS' && headers['access-control-request-method'] !== undefined) {
    if (!listed) {
      const body = JSON.stringify(new AppError('forbidden', `Origin ${origin} is not allowed (CORS_ORIGINS)`).toBody());
      res.writeHead(403, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
      return true;
    }
    res.writeHead(204, {
      'Access-Control-Allow-Origin': origin,
      'Access-Control-Allow-Methods': policy.methods.join(', '),
      'Access-Control-Allow-Headers': policy.headers.join(', '),
      'Access-Control-Max-Age': MAX_AGE_SECONDS,
    });
    res.end();
    return true;
  }
  if (listed) {
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Expose-Headers', policy.expose.join(', '));
  }
  return false;
}
