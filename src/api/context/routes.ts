/**
 * REST context API (spec 4.1, 7.1): `POST /api/context`. The context API always answers its
 * own body, `ContextError` `{success: false, error_code, error_message, request_id?}`: for a
 * refused key or intent, for a body the contract refuses (the edge calls `validationFail`,
 * which still authenticates first and writes the audit record) and for an unexpected failure.
 */
import type { AppContext } from '../../shared/app-context.js';
import { BODY_LIMIT_BYTES, type HandlerResult, type RequestInfo, type ValidationIssue } from '../../shared/http/openapi-app.js';
import type { RouteModule } from '../../shared/service.js';
import type { SelectedContext } from '../graph/select.js';
import { requestContext, type ContextErrorCode, type ContextOutcome } from './request-context.js';
import { mintSubscribeTokenHandler } from './token.js';

const STATUS: Record<ContextErrorCode, number> = { AUTH_FAILED: 401, INTENT_NOT_ALLOWED: 403, VALIDATION_ERROR: 400, INTERNAL_ERROR: 500 };

const internalError = (): HandlerResult => ({
  status: 500,
  body: { success: false, error_code: 'INTERNAL_ERROR', error_message: 'Internal error' },
});

/**
 * The selection's part of the answer, serialized and UTF-8 encoded once per (shared, frozen)
 * selection: W1 answers carry about 40 KB of SCD content and W2 about 87 KB, and serializing
 * and encoding them per request would dominate. A request adds only its own small head.
 */
const fragments = new WeakMap<SelectedContext, Buffer>();
function selectionBytes(s: SelectedContext): Buffer {
  let f = fragments.get(s);
  if (f === undefined) {
    f = Buffer.from(`"scd_ids":${JSON.stringify(s.scdIds)},"scd_content":${s.scdContentJson},"context_bundle_ids":${JSON.stringify(s.bundleIds)}`, 'utf8');
    fragments.set(s, f);
  }
  return f;
}

function toResult(out: ContextOutcome, requestId: string): HandlerResult {
  if (!out.ok) {
    return { status: STATUS[out.code], body: { success: false, error_code: out.code, error_message: out.message, request_id: out.requestId } };
  }
  const head =
    `{"success":true,"request_id":"${out.requestId}","agent_id":${JSON.stringify(out.agentId)},"role_id":${JSON.stringify(out.roleId)},` +
    `"task_type":${JSON.stringify(out.taskType)},"timestamp":${out.timestamp},"processing_time_ms":${out.processingTimeMs},`;
  const body = Buffer.concat([Buffer.from(head, 'utf8'), selectionBytes(out.selected), CLOSE]);
  return new Response(body, { status: 200, headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId } });
}
const CLOSE = Buffer.from('}');

async function answer(req: RequestInfo, ctx: AppContext, issues: ValidationIssue[] | null, tooLarge = false): Promise<HandlerResult> {
  const startedAt = performance.now();
  try {
    // The edge's request id is the audit record's id: x-request-id and request_id agree.
    const out = await requestContext(ctx, { requestId: req.requestId, apiKey: req.headers['x-api-key'], body: req.body, issues, startedAt });
    const result = toResult(out, req.requestId);
    // A body over the limit was never read: 413 once the caller is known (401 before that).
    if (tooLarge && !(result instanceof Response) && result.status === 400) return { ...result, status: 413 };
    return result;
  } catch (e) {
    // The audit record could not be committed: no context leaves (fail closed).
    ctx.logger.error('context request failed', { request_id: req.requestId, error: e as Error });
    return internalError();
  }
}

export const routes: RouteModule = {
  handlers: {
    requestContext: (req, ctx) => answer(req, ctx, null),
    mintSubscribeToken: mintSubscribeTokenHandler,
  },
  validationFail: {
    requestContext: (req, ctx, errors) => answer(req, ctx, errors),
  },
  internalError: {
    requestContext: internalError,
  },
  payloadTooLarge: {
    requestContext: (req, ctx) => answer(req, ctx, [{ path: '/body', rule: 'maxBodySize', message: `must NOT be larger than ${BODY_LIMIT_BYTES} bytes` }], true),
  },
};
