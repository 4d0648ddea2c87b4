/**
 * The hot path of `POST /api/context`, served straight on node:http before the edge
 * (HttpServiceDef.preHandle). Why: a context request is the product's most frequent call,
 * and the generic edge (a fetch Request per call, openapi-backend's routing and parsing)
 * cost more CPU than the whole context verb.
 *
 * It takes only the plain case: exactly `POST /api/context`, a JSON content type and a
 * declared Content-Length up to 64 KiB. Anything else (query strings, chunked or large
 * bodies, other content types) is left to the edge, which answers the same way. The body
 * is checked against the contract's own `ContextRequest` schema (compiled from
 * spec/openapi-control-plane.yaml), with issues formatted as the edge formats them, and the
 * answer comes from the same `answerContext` as the edge's handlers.
 *
 * Measured and logged as the edge does it (one `request` line, one histogram observation,
 * X-Request-Id taken or made and echoed), with the route's label children and logger taken
 * once, so that a request adds two additions and one log line.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Ajv, type ErrorObject } from 'ajv';
import type { AppContext } from '../../shared/app-context.js';
import type { ValidationIssue } from '../../shared/http/openapi-app.js';
import type { HttpPreHandler } from '../../shared/service.js';
import { specDocument } from '../../shared/http/service-app.js';
import { jsonTooDeep, TOO_DEEP_ISSUE } from '../../shared/http/wire-guards.js';
import { requestIdOf } from '../../shared/request-id.js';
import { httpRouteTimer } from '../../shared/metrics.js';
import { answerContext, auditIdOf, CONTENT_TYPE } from './answer.js';

const MAX_FAST_BODY = 64 * 1024;
const JSON_TYPE = /^application\/json\s*(;|$)/i;

/** The contract's ContextRequest validator (with TaskType resolved from the same document). */
function compileContextRequest(): (body: unknown) => ValidationIssue[] | null {
  const doc = specDocument('openapi-control-plane.yaml') as { components: Record<string, unknown> };
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajv.addSchema({ $id: 'svc-control-plane', components: doc.components });
  const validate = ajv.compile({ $ref: 'svc-control-plane#/components/schemas/ContextRequest' });
  return (body) => (validate(body) ? null : formatIssues(validate.errors ?? []));
}

/** As the edge formats contract violations: `/body`-prefixed JSON pointers, the keyword, the message. */
function formatIssues(errors: ErrorObject[]): ValidationIssue[] {
  return errors.slice(0, 50).map((e) => {
    let p = `/body${e.instancePath}`;
    const params = e.params as { missingProperty?: string; additionalProperty?: string; allowedValues?: unknown[] };
    if (params.missingProperty) p += `/${params.missingProperty}`;
    if (params.additionalProperty) p += `/${params.additionalProperty}`;
    const extra = params.allowedValues ? ` (${params.allowedValues.join(', ')})` : '';
    return { path: p, rule: e.keyword, message: `${e.message ?? 'is invalid'}${extra}` };
  });
}

function header(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** The pre-handler for the API service: true when it took the request. */
export function contextFastPath(ctx: AppContext): HttpPreHandler {
  const check = compileContextRequest();
  const route = '/api/context';
  const timer = httpRouteTimer('api', 'POST', route);
  const log = ctx.logger.child({ service: 'api' });
  return (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST' || req.url !== '/api/context') return false;
    if (!JSON_TYPE.test(req.headers['content-type'] ?? '')) return false;
    const length = Number(req.headers['content-length']);
    if (!Number.isInteger(length) || length <= 0 || length > MAX_FAST_BODY || req.headers['transfer-encoding'] !== undefined) return false;
    const startedAt = performance.now();
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_FAST_BODY) chunks.push(c);
    });
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const given = header(req.headers['x-request-id']);
      const requestId = requestIdOf(given);
      let body: unknown;
      let issues: ValidationIssue[] | null;
      try {
        const text = Buffer.concat(chunks, Math.min(size, MAX_FAST_BODY)).toString('utf8');
        if (size > MAX_FAST_BODY) issues = [{ path: '/body', rule: 'maxBodySize', message: 'body longer than its Content-Length' }];
        else if (jsonTooDeep(text)) issues = [TOO_DEEP_ISSUE];
        else issues = check((body = JSON.parse(text)));
      } catch {
        body = undefined;
        issues = [{ path: '/body', rule: 'json', message: 'body is not valid JSON' }];
      }
      void answerContext(ctx, { requestId: auditIdOf(requestId, given), apiKey: header(req.headers['x-api-key']), body, issues, startedAt }).then((a) => {
        if (res.destroyed) return;
        res.writeHead(a.status, { 'content-type': CONTENT_TYPE, 'content-length': a.head.length + a.tail.length, 'x-request-id': requestId });
        if (a.tail.length) res.write(a.head);
        res.end(a.tail.length ? a.tail : a.head);
        const ms = performance.now() - startedAt;
        timer.observe(a.status, ms);
        log.info('request', { method: 'POST', route, status: a.status, duration_ms: Math.round(ms * 100) / 100, request_id: requestId });
      });
    });
    return true;
  };
}
