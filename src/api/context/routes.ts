/**
 * REST context API (spec 4.1, 7.1): `POST /api/context`. The context API always answers its
 * own body, `ContextError` `{success: false, error_code, error_message, request_id?}`: for a
 * refused key or intent, for a body the contract refuses (the edge calls `validationFail`,
 * which still authenticates first and writes the audit record) and for an unexpected failure.
 *
 * The common request (a small JSON body) is served by `fast-path.ts` straight on node:http;
 * everything else goes through the edge. Both end in `answerContext` below.
 */
import type { AppContext } from '../../shared/app-context.js';
import { BODY_LIMIT_BYTES, type UncheckedRequest, type ValidationIssue } from '../../shared/http/openapi-app.js';
import type { operations } from '../../../gen/openapi/control-plane.js';
import type { RouteModule } from '../../shared/service.js';
import { answerBytes, answerContext, auditIdOf, CONTENT_TYPE, internalErrorAnswer, type ContextAnswer } from './answer.js';
import { mintSubscribeTokenHandler } from './token.js';
import { contextFastPath } from './fast-path.js';

/** The answer's bytes (the edge adds X-Request-Id). */
function toResponse(a: ContextAnswer): Response {
  return new Response(answerBytes(a) as Uint8Array<ArrayBuffer>, { status: a.status, headers: { 'content-type': CONTENT_TYPE } });
}


/**
 * The context API's answer through the edge: its own bytes (a Response), so the JSON body is
 * not checked against `ContextResponse` here; answer.ts builds it (and the fast path shares it).
 */
async function viaEdge(req: UncheckedRequest, ctx: AppContext, issues: ValidationIssue[] | null, refusedWith?: 413 | 415): Promise<Response> {
  const requestId = auditIdOf(req.requestId, req.headers['x-request-id']);
  return toResponse(await answerContext(ctx, { requestId, apiKey: req.headers['x-api-key'], body: req.body, issues, refusedWith }));
}

export const routes = {
  handlers: {
    requestContext: (req, ctx) => viaEdge(req, ctx, null),
    mintSubscribeToken: mintSubscribeTokenHandler,
  },
  validationFail: {
    // The edge reports a body in an undeclared media type as a `mediaType` issue: 415.
    requestContext: (req, ctx, errors) => viaEdge(req, ctx, errors, errors.some((e) => e.rule === 'mediaType') ? 415 : undefined),
  },
  internalError: {
    requestContext: () => toResponse(internalErrorAnswer()),
  },
  payloadTooLarge: {
    requestContext: (req, ctx) => viaEdge(req, ctx, [{ path: '/body', rule: 'maxBodySize', message: `must NOT be larger than ${BODY_LIMIT_BYTES} bytes` }], 413),
  },
  preHandle: contextFastPath,
} satisfies RouteModule<operations>;
