/**
 * Builds a Hono app for one HTTP service, driven by its OpenAPI document (openapi-backend):
 * routing, the admin-key check (before any handler logic, even for routes not yet built),
 * request validation against the contract, and the error model at the edge.
 *
 * - unknown path: 404 `not_found`; known path, wrong method: 405 `method_not_allowed`
 * - AdminKey operations: 503 `Admin API not configured` when no admin key is configured,
 *   401 `Invalid admin API key` when the header is missing or wrong (constant time); the
 *   matched key's name is the request's `actor`. An operation that also lists AuditorKey (the
 *   reads) takes an auditor key (AUDITOR_API_KEYS) in the same header; no other does
 * - a request that violates the contract: 400 `validation_error` with the violations
 *   (a body that is not JSON, or JSON nested too deeply (wire-guards.ts), included; an
 *   integer parameter not written in decimal digits or past 2^53 - 1; a path whose
 *   percent-encoding is not UTF-8, after the key checks)
 * - a body in a media type the operation does not declare: 415 `unsupported_media_type`
 * - routing is on the raw request path: `/api/agents/.` names the agent `.` (refused by
 *   its pattern), never the list that URL normalization would make of it
 * - an operation with no handler yet: 501 `not_implemented`
 * - an unexpected error: opaque 500 `internal_error` with a request id; the cause is logged
 *
 * Every request is measured and logged here, whoever answers it: one `request` line at info
 * (method, OpenAPI route template, status, duration_ms, request_id) and one observation of
 * `svc_http_request_duration_seconds`. The request id is the client's `X-Request-Id` when it
 * is sane (requestIdOf), else a new UUID; it is echoed in `X-Request-Id` and carried by every
 * line the edge writes for the request.
 */
import { createAdminKeyring, type AdminKeyring } from '../admin-keys.js';
import type { IncomingMessage } from 'node:http';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { OpenAPIBackend, type Context as OaContext, type Document as OaDocument } from 'openapi-backend';
import addFormats from 'ajv-formats';
import { AppError, type ValidationIssue } from '../errors.js';
export type { ValidationIssue } from '../errors.js';
import type { Logger } from '../logger.js';
import { requestIdOf } from '../request-id.js';
import { httpRouteTimer, methodLabel, UNMATCHED_ROUTE, type HttpRouteTimer } from '../metrics.js';
import { compileMatcher } from './operation-router.js';
import { integerParams, jsonTooDeep, malformedIntegers, mediaTypeDeclared, SAFE_INT64, SAFE_INT64_MESSAGE, TOO_DEEP_ISSUE, type IntegerParam } from './wire-guards.js';
import type { ErrorReply, Handlers, OperationsShape, UncheckedRequest, UncheckedResult, ValidationFailHandler } from './contract-types.js';

export const BODY_LIMIT_BYTES = 16 * 1024 * 1024;

export type { ErrorReply, OperationHandler, OperationsShape, RequestInfo, UncheckedRequest } from './contract-types.js';

/**
 * The edge's view of a handler: any request, any result. The one place the typed handlers
 * are called with an unchecked request; openapi-backend has validated it against the same
 * document the types come from, which is what makes this cast true.
 */
type AnyHandler<C> = (req: UncheckedRequest, ctx: C, oa: OaContext) => Promise<UncheckedResult> | UncheckedResult;

export interface OpenApiAppOptions<Ops extends OperationsShape<Ops>, C> {
  /** Path of the OpenAPI document, or the parsed document. */
  definition: string | Record<string, unknown>;
  handlers: Handlers<Ops, C, OaContext>;
  ctx: C;
  logger: Logger;
  /** The service's name (the metrics' `service` label). */
  service: string;
  /** The admin keys accepted (ADMIN_API_KEY and ADMIN_API_KEYS), by name; none means not configured (503). */
  adminKeys: AdminKeyring;
  /** The read-only keys (AUDITOR_API_KEYS), accepted by the operations that list AuditorKey. */
  auditorKeys?: AdminKeyring;
  validationFail?: { [K in keyof Ops]?: ValidationFailHandler<Ops[K], C> };
  /** Called for an operation's unexpected error; answer with the operation's own error body. */
  internalError?: { [K in keyof Ops]?: (req: UncheckedRequest, ctx: C, requestId: string) => UncheckedResult };
  /** Called instead of the generic 413 for one operation (the context API answers and audits its own). */
  payloadTooLarge?: { [K in keyof Ops]?: (req: UncheckedRequest, ctx: C) => Promise<UncheckedResult> | UncheckedResult };
}

/** Hono's per-request variables set by the edge. */
type EdgeEnv = { Variables: { requestId: string; route: { operationId?: string; path: string; method: string } | undefined } };

/**
 * The bindings of a request the service makes to its own app as it starts (see
 * HttpServiceDef.warmUp): answered as any other, but neither logged nor measured.
 */
export const WARM_UP_BINDINGS = Object.freeze({ warmUp: true });

/**
 * The edge's admin-key refusal, for an operation that needs the key only sometimes (the
 * transparency log's entry bundles, public when TLOG_PUBLIC=1): null when `presented` is one
 * of `keys`, else the error the edge answers for AdminKey operations.
 */
export function adminKeyRefusal(keys: AdminKeyring, presented: string | undefined, readers?: AdminKeyring): AppError | null {
  if (!keys.configured && !readers?.configured) return new AppError('unavailable', 'Admin API not configured');
  return keys.match(presented) !== null || (readers?.match(presented) ?? null) !== null ? null : new AppError('auth_failed', 'Invalid admin API key');
}

/** The answer for an AppError: its status from the one code-to-status table, the spec's Error body. */
export function errorResult(err: AppError, extraHeaders?: Record<string, string>): ErrorReply {
  return { status: err.status, body: err.toBody(), headers: extraHeaders } as ErrorReply;
}


function formatValidationErrors(errors: NonNullable<OaContext['validation']>['errors']): ValidationIssue[] {
  return (errors ?? []).slice(0, 50).map((e) => {
    let p = String(e.instancePath ?? '')
      .replace(/^\/requestBody/, '/body')
      .replace(/^\/params/, '/path');
    if (e.params?.missingProperty) p += `/${e.params.missingProperty}`;
    if (e.params?.additionalProperty) p += `/${e.params.additionalProperty}`;
    p = p.replace(/^\/requestBody/, '/body');
    if (!p.startsWith('/')) p = `/body${p}`;
    const extra = e.params?.allowedValues ? ` (${e.params.allowedValues.join(', ')})` : '';
    if (e.keyword === 'format' && e.params?.format === 'int64') return { path: p, rule: 'format', message: SAFE_INT64_MESSAGE };
    return { path: p, rule: String(e.keyword ?? 'schema'), message: `${e.message ?? 'is invalid'}${extra}` };
  });
}

/**
 * Creates the Hono app. The returned promise resolves once the contract is loaded and every
 * handler name is checked against its operationIds (a misspelt handler fails start-up).
 */
export async function createOpenApiApp<Ops extends OperationsShape<Ops>, C>(opts: OpenApiAppOptions<Ops, C>): Promise<Hono> {
  const { logger, ctx, service } = opts;
  const api = new OpenAPIBackend({ definition: opts.definition as string | OaDocument, strict: true, validate: true, coerceTypes: true, quick: false, ajvOpts: { allErrors: true, strict: false },
    // Formats (date-time, uuid, uri) are checked, not ignored.
    customizeAjv: (ajv) => {
      (addFormats as unknown as (a: unknown) => void)(ajv);
      ajv.addFormat('int64', SAFE_INT64);
      return ajv;
    },
  });
  await api.init();
  // openapi-backend rebuilds its operation list (a lodash chain over every path) on each
  // call, several times per request; the definition never changes after init.
  const operations = api.router.getOperations();
  api.router.getOperations = () => operations;
  // And it compiles every operation's path pattern on each match: compiled once here.
  api.router.matchOperation = compileMatcher(api.router);
  // Loose views of the per-operation tables, for the routing below (keyed by operationId at run time).
  const handlers = opts.handlers as Record<string, AnyHandler<C> | undefined>;
  const validationFail = (opts.validationFail ?? {}) as Record<string, ((req: UncheckedRequest, ctx: C, errors: ValidationIssue[]) => Promise<UncheckedResult> | UncheckedResult) | undefined>;
  const internalError = (opts.internalError ?? {}) as Record<string, ((req: UncheckedRequest, ctx: C, requestId: string) => UncheckedResult) | undefined>;
  const payloadTooLarge = (opts.payloadTooLarge ?? {}) as Record<string, ((req: UncheckedRequest, ctx: C) => Promise<UncheckedResult> | UncheckedResult) | undefined>;

  const opIds = new Set(api.getOperations().map((o) => o.operationId));
  for (const name of Object.keys(handlers)) {
    if (!opIds.has(name)) throw new Error(`handler ${name} names no operation of the contract`);
  }

  const keyring = opts.adminKeys;
  const auditors = opts.auditorKeys ?? createAdminKeyring([]);
  const toReq = (c: OaContext, raw: Request, requestId: string, body: unknown): UncheckedRequest => ({
    requestId,
    // The acting key's name (management events' actor); no hashing without the header. An
    // auditor key reaches only reads, which record nothing.
    actor: actorOf(keyring, auditors, (c.request?.headers as Record<string, string> | undefined)?.['x-admin-key']),
    method: raw.method,
    path: c.request?.path ?? new URL(raw.url).pathname,
    params: c.request?.params ?? {},
    query: c.request?.query ?? {},
    headers: (c.request?.headers as Record<string, string>) ?? {},
    body,
    raw,
  });

  const isAdmin = (presented: unknown) => keyring.match(typeof presented === 'string' ? presented : undefined) !== null;
  const isAuditor = (presented: unknown) => auditors.match(typeof presented === 'string' ? presented : undefined) !== null;
  // Agent keys and bearer tokens are checked by the handlers themselves: the context API
  // answers its own error body and audits refused requests. Only AdminKey and AuditorKey are
  // checked here (an operation listing both passes with either).
  for (const name of Object.keys(api.definition.components?.securitySchemes ?? {})) {
    const check = name === 'AdminKey' ? isAdmin : name === 'AuditorKey' ? isAuditor : null;
    api.registerSecurityHandler(name, check ? (c) => check(c.request.headers['x-admin-key']) : () => true);
  }
  /** False when the operation needs an admin (or, where it lists one, an auditor) key and `presented` is none. */
  const keyAccepted = (op: { security?: Array<Record<string, unknown>> }, presented: unknown) => {
    const sec = op.security ?? [];
    if (!sec.some((s) => 'AdminKey' in s || 'AuditorKey' in s)) return true;
    return (sec.some((s) => 'AdminKey' in s) && isAdmin(presented)) || (sec.some((s) => 'AuditorKey' in s) && isAuditor(presented));
  };
  /** The refusal for a key not accepted: 503 when none of the keys the operation takes is configured. */
  const keyRefusal = (op: { security?: Array<Record<string, unknown>> } | undefined) => {
    const configured = keyring.configured || (auditors.configured && (op?.security ?? []).some((s) => 'AuditorKey' in s));
    return configured ? errorResult(new AppError('auth_failed', 'Invalid admin API key')) : errorResult(new AppError('unavailable', 'Admin API not configured'));
  };

  // The handlers' arguments after openapi-backend's context: the request, its id, its body,
  // Hono's context (where the matched operation is noted for the request line), and the
  // request's URL as the edge parsed it once.
  type HonoCtx = { set(key: 'route', value: EdgeEnv['Variables']['route']): void };
  type Args = [Request, string, unknown, HonoCtx, URL];
  const mark = (c: OaContext, hc: HonoCtx) => {
    if (c.operation) hc.set('route', c.operation);
  };
  api.register({
    notFound: () => errorResult(new AppError('not_found', 'No such route')),
    methodNotAllowed: () => errorResult(new AppError('method_not_allowed', 'Method not allowed on this route')),
    unauthorizedHandler: (c: OaContext, ...[, , , hc]: Args) => {
      mark(c, hc);
      return keyRefusal(c.operation);
    },
    validationFail: (c: OaContext, raw: Request, requestId: string, body: unknown, hc: HonoCtx) => {
      mark(c, hc);
      const errors = formatValidationErrors(c.validation?.errors);
      const special = validationFail[c.operation.operationId!];
      if (special) return special(toReq(c, raw, requestId, body), ctx, errors);
      return errorResult(new AppError('validation_error', 'The request does not match the contract', { details: { errors } }));
    },
    notImplemented: (c: OaContext, ...[, , , hc]: Args) => {
      mark(c, hc);
      return errorResult(new AppError('not_implemented', `${c.operation.operationId} is not implemented yet`));
    },
  });
  // The integer parameters of each operation that has any, whose texts the validator does not
  // check as written (malformedIntegers): checked once it has passed the request.
  const integers = new Map<string, IntegerParam[]>();
  for (const op of operations) {
    const list = integerParams(op.parameters);
    if (list.length && op.operationId) integers.set(op.operationId, list);
  }
  for (const [opId, handler] of Object.entries(handlers)) {
    if (!handler) continue;
    const ints = integers.get(opId);
    api.register(opId, (c: OaContext, ...[raw, requestId, body, hc, url]: Args) => {
      mark(c, hc);
      if (ints) {
        const issues = malformedIntegers(ints, url.searchParams, (c.request?.headers as Record<string, string>) ?? {}, () =>
          api.router.parseRequest({ method: raw.method, path: c.request.path, headers: {} }, c.operation).params,
        );
        if (issues.length) return errorResult(new AppError('validation_error', 'The request does not match the contract', { details: { errors: issues } }));
      }
      return handler(toReq(c, raw, requestId, body), ctx, c);
    });
  }

  const app = new Hono<EdgeEnv>();
  // Timers per operation and, for unmatched requests, per method (label children taken once).
  const opTimers = new Map<string, HttpRouteTimer>();
  const unmatchedTimers = new Map<string, HttpRouteTimer>();
  const timerOf = (method: string, route: EdgeEnv['Variables']['route']): HttpRouteTimer => {
    const key = route ? (route.operationId ?? `${route.method} ${route.path}`) : methodLabel(method);
    const table = route ? opTimers : unmatchedTimers;
    let t = table.get(key);
    if (t === undefined) table.set(key, (t = httpRouteTimer(service, route ? route.method.toUpperCase() : method, route ? route.path : UNMATCHED_ROUTE)));
    return t;
  };
  // First: the request id, and the measurement and request line of whatever answers.
  app.use('*', async (c, next) => {
    const startedAt = performance.now();
    const raw = c.req.raw;
    const requestId = requestIdOf(raw.headers.get('x-request-id'));
    c.set('requestId', requestId);
    await next();
    const res = c.res;
    try {
      res.headers.set('x-request-id', requestId);
    } catch {
      // A Response with immutable headers (none of ours): it keeps its own.
    }
    if (c.env === WARM_UP_BINDINGS) return;
    const ms = performance.now() - startedAt;
    const t = timerOf(raw.method, c.get('route'));
    t.observe(res.status, ms);
    logger.info('request', { method: t.method, route: t.route, status: res.status, duration_ms: Math.round(ms * 100) / 100, request_id: requestId });
  });
  const limitBody = bodyLimit({
    maxSize: BODY_LIMIT_BYTES,
    onError: async (c) => {
      const raw = c.req.raw;
      const path = rawPath(c.env as { incoming?: IncomingMessage } | undefined) ?? new URL(raw.url).pathname;
      const op = safeMatch(api, raw.method, path);
      c.set('route', op);
      const special = op ? payloadTooLarge[op.operationId!] : undefined;
      if (!special) return c.json(new AppError('payload_too_large', `Request body exceeds ${BODY_LIMIT_BYTES} bytes`).toBody(), 413);
      const headers: Record<string, string> = {};
      raw.headers.forEach((v, k) => (headers[k] = v));
      const requestId = c.get('requestId');
      const r = await special({ requestId, actor: null, method: raw.method, path, params: {}, query: {}, headers, body: undefined, raw }, ctx);
      if (r instanceof Response) return r;
      return new Response(JSON.stringify(r.body), { status: r.status, headers: { 'content-type': 'application/json; charset=utf-8', ...(r.headers ?? {}) } });
    },
  });
  // A GET or HEAD has no body (node-server's Request never gives one), so the limit has nothing to
  // measure; asking for `raw.body` would make node-server build the whole WHATWG Request (with
  // its AbortSignal, which outlives a young-generation collection), about 10 KB a GET.
  app.use('*', (c, next) => (c.req.method === 'GET' || c.req.method === 'HEAD' ? next() : limitBody(c, next)));
  app.all('*', async (c) => {
    const requestId = c.get('requestId');
    const raw = c.req.raw;
    const url = new URL(raw.url);
    const path = rawPath(c.env as { incoming?: IncomingMessage } | undefined) ?? url.pathname;
    let result: UncheckedResult;
    let opId: string | undefined;
    try {
      let body: unknown = undefined;
      let text = '';
      if (raw.method !== 'GET' && raw.method !== 'HEAD') {
        try {
          text = await c.req.text();
        } catch (e) {
          // Anything else (the body limit's own error, which its middleware answers with 413) goes on.
          if ((e as { code?: string })?.code !== 'ECONNRESET' && !raw.signal?.aborted) throw e;
          // The client left before its body was read (node's `aborted`): nobody is there to
          // answer, and nothing failed here. One warn line, no stack: a slow-body client that
          // hangs up must not flood the log with 500 errors.
          logger.warn('client left before its request body was read', { request_id: requestId, method: raw.method, path, reason: (e as Error)?.message });
          return new Response(null, { status: 400 });
        }
      }
      const headers: Record<string, string> = {};
      raw.headers.forEach((v, k) => (headers[k] = v));
      // What is wrong with the path's encoding or with the body itself, found before either is
      // decoded and handed on.
      let refusal: { status: 415; issue: ValidationIssue } | { status: 400; issue: ValidationIssue; message: string } | undefined;
      let op: ReturnType<typeof safeMatch>;
      if (!pathDecodes(path)) {
        op = safeMatch(api, raw.method, path);
        refusal = { status: 400, issue: BAD_PATH_ENCODING, message: 'The request path is not percent-encoded UTF-8' };
      } else if (text.length > 0) {
        op = safeMatch(api, raw.method, path);
        const declared = op?.requestBody && 'content' in op.requestBody ? Object.keys(op.requestBody.content ?? {}) : [];
        if (declared.length > 0 && !mediaTypeDeclared(headers['content-type'], declared)) {
          refusal = { status: 415, issue: { path: '/headers/content-type', rule: 'mediaType', message: `body must be ${declared.join(' or ')} (got ${headers['content-type'] ? `"${headers['content-type']}"` : 'no Content-Type'})` } };
        } else if (declared.includes('text/plain') && mediaTypeDeclared(headers['content-type'], ['text/plain'])) {
          // A text operation (a witness's cosignature note) gets the text as it came.
          body = text;
        } else if (jsonTooDeep(text)) {
          refusal = { status: 400, issue: TOO_DEEP_ISSUE, message: 'Request body is nested too deeply' };
        } else {
          try {
            body = JSON.parse(text);
          } catch {
            refusal = { status: 400, issue: { path: '/body', rule: 'json', message: 'body is not valid JSON' }, message: 'Request body is not valid JSON' };
          }
        }
      }
      if (refusal) {
        // Routed first, so that the admin check still comes before anything about the body.
        opId = op?.operationId;
        c.set('route', op);
        if (op && !keyAccepted(op, headers['x-admin-key'])) {
          result = keyRefusal(op);
        } else if (!op) {
          result = errorResult(new AppError('not_found', 'No such route'));
        } else if (validationFail[op.operationId!]) {
          // An operation with its own error body (the context API) answers, and audits, in it.
          const fake = { request: { path, params: {}, query: {}, headers }, operation: op } as unknown as OaContext;
          // Their 400 (the caller passed their checks) becomes the 415 of a refused media type;
          // one answering its own bytes (a Response) sets that status itself.
          const r = await validationFail[op.operationId!]!(toReq(fake, raw, requestId, undefined), ctx, [refusal.issue]);
          result = refusal.status === 415 && !(r instanceof Response) && r.status === 400 ? unsupportedMediaType(refusal.issue) : r;
        } else if (refusal.status === 415) {
          result = unsupportedMediaType(refusal.issue);
        } else {
          result = errorResult(new AppError('validation_error', refusal.message, { details: { errors: [refusal.issue] } }));
        }
      } else {
        result = await api.handleRequest({ method: raw.method, path, query: url.search.slice(1), headers, body }, raw, requestId, body, c, url);
      }
    } catch (e) {
      const op = c.get('route') ?? safeMatch(api, raw.method, path);
      c.set('route', op);
      opId ??= op?.operationId;
      if (e instanceof AppError && e.code !== 'internal_error') {
        result = errorResult(e);
      } else {
        logger.child({ request_id: requestId }).error('unhandled error', { method: raw.method, path, error: e as Error });
        const special = opId ? internalError[opId] : undefined;
        result = special
          ? special({ requestId, actor: null, method: raw.method, path, params: {}, query: {}, headers: {}, body: undefined, raw }, ctx, requestId)
          : errorResult(new AppError('internal_error', 'Internal error', { details: { request_id: requestId } }));
      }
    }
    if (result instanceof Response) return result;
    const headers = { 'x-request-id': requestId, ...(result.headers ?? {}) };
    if (result.body === undefined || result.status === 204) return new Response(null, { status: result.status, headers });
    return new Response(JSON.stringify(result.body), { status: result.status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers } });
  });
  return app as unknown as Hono;
}

/** The name of the admin or auditor key presented, or null. */
function actorOf(admins: AdminKeyring, auditors: AdminKeyring, presented: string | undefined): string | null {
  if (presented === undefined) return null;
  return admins.match(presented) ?? auditors.match(presented);
}

function unsupportedMediaType(issue: ValidationIssue): ErrorReply {
  return errorResult(new AppError('unsupported_media_type', 'The body is not in a media type this operation accepts', { details: { errors: [issue] } }));
}

/**
 * The request's path as the client sent it (node's request target, query dropped), not the
 * fetch Request's URL, which resolves `.` and `..` segments (`%2e` too): routing on that
 * made `GET /api/agents/.` the agent list and `DELETE /api/agents/A/api-keys/..` a
 * deletion of agent A. Undefined outside node:http (app.fetch in a test), or for a target
 * that is not a path (`*`, absolute form), where the URL's path stands.
 */
function rawPath(env: { incoming?: IncomingMessage } | undefined): string | undefined {
  const target = env?.incoming?.url;
  if (!target || target[0] !== '/') return undefined;
  const q = target.indexOf('?');
  return q < 0 ? target : target.slice(0, q);
}

/** The refusal of a path whose percent-encoding is not UTF-8 (`%zz`, `%C0%AF`). */
const BAD_PATH_ENCODING: ValidationIssue = { path: '/path', rule: 'encoding', message: 'the path has a percent-encoded sequence that is not UTF-8' };

/**
 * False when the path's percent-encoding does not decode (a `%` without two hex digits, bytes
 * that are not UTF-8): openapi-backend decodes each path parameter as it hands it on, and
 * threw there, a 500 for `GET /api/agents/%C0%AF`.
 */
function pathDecodes(path: string): boolean {
  if (!path.includes('%')) return true;
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

function safeMatch(api: OpenAPIBackend, method: string, path: string) {
  try {
    return api.router.matchOperation({ method, path, headers: {} }) || undefined;
  } catch {
    return undefined;
  }
}
