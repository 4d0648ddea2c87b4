/**
 * Renders a context request's answer, transport-neutral (REST through the edge and the
 * node:http fast path share it): the JSON body as bytes, never throwing.
 */
import { randomUUID } from 'node:crypto';
import type { components } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import type { ValidationIssue } from '../../shared/http/openapi-app.js';
import { scdContentJsonBytes, type SelectedContext } from '../../core/graph/select.js';
import { requestContext, type ContextErrorCode, type ContextOutcome } from '../../core/context/request-context.js';

const STATUS: Record<ContextErrorCode, number> = { AUTH_FAILED: 401, INTENT_NOT_ALLOWED: 403, VALIDATION_ERROR: 400, INTERNAL_ERROR: 500 };

/**
 * A context answer, transport-neutral: the JSON body as bytes, in two parts so that the
 * shared selection bytes are written as they are, never copied per request.
 */
export interface ContextAnswer {
  status: number;
  head: Buffer;
  /** The rest of the body after `head` (empty for refusals). */
  tail: Buffer;
}

const EMPTY = Buffer.alloc(0);
/** A refusal: the contract's ContextError (the success body is written as bytes below). */
const json = (status: number, body: components['schemas']['ContextError']): ContextAnswer => ({ status, head: Buffer.from(JSON.stringify(body), 'utf8'), tail: EMPTY });
/** The whole body in one buffer (for the edge, which wants one). */
export const answerBytes = (a: ContextAnswer): Buffer => (a.tail.length ? Buffer.concat([a.head, a.tail]) : a.head);
export const internalErrorAnswer = (): ContextAnswer => json(500, { success: false, error_code: 'INTERNAL_ERROR', error_message: 'Internal error' });

/**
 * The selection's part of the answer (and the body's closing brace), serialized and UTF-8 encoded once per (shared, frozen)
 * selection: W1 answers carry about 40 KB of SCD content and W2 about 87 KB, and serializing
 * and encoding them per request would dominate. A request adds only its own small head.
 */
const fragments = new WeakMap<SelectedContext, Buffer>();
function selectionBytes(s: SelectedContext): Buffer {
  let f = fragments.get(s);
  if (f === undefined) {
    f = scdContentJsonBytes(
      s,
      Buffer.from(`"scd_ids":${JSON.stringify(s.scdIds)},"scd_content":`, 'utf8'),
      Buffer.from(`,"context_bundle_ids":${JSON.stringify(s.bundleIds)},"content_revision":${s.revision}}`, 'utf8'),
    );
    fragments.set(s, f);
  }
  return f;
}

/** The 409 of a consistency token not reached: the general error body (spec: ContextRevisionNotReached). */
function revisionNotReached(out: Extract<ContextOutcome, { code: 'REVISION_NOT_REACHED' }>): ContextAnswer {
  const details: components['schemas']['ContextRevisionDetails'] = {
    content_revision: out.contentRevision,
    at_least_revision: out.atLeastRevision,
    request_id: out.requestId,
    audit_leaf_index: out.leafIndex,
  };
  const body: components['schemas']['Error'] = { error: 'conflict', message: out.message, details };
  return { status: 409, head: Buffer.from(JSON.stringify(body), 'utf8'), tail: EMPTY };
}

/**
 * The selection's bytes with `"explanation":{...}` before the closing brace: only for a
 * request that asked for it, so the shared bytes stay untouched.
 */
function withExplanation(tail: Buffer, explanation: components['schemas']['ContextExplanation']): Buffer {
  return Buffer.concat([tail.subarray(0, tail.length - 1), Buffer.from(`,"explanation":${JSON.stringify(explanation)}}`, 'utf8')]);
}

function toAnswer(out: ContextOutcome): ContextAnswer {
  if (!out.ok && out.code === 'REVISION_NOT_REACHED') return revisionNotReached(out);
  if (!out.ok) return json(STATUS[out.code], { success: false, error_code: out.code, error_message: out.message, request_id: out.requestId, audit_leaf_index: out.leafIndex });
  const head =
    `{"success":true,"request_id":"${out.requestId}","audit_leaf_index":${out.leafIndex},"agent_id":${JSON.stringify(out.agentId)},"role_id":${JSON.stringify(out.roleId)},` +
    `"task_type":${JSON.stringify(out.taskType)},"timestamp":${out.timestamp},"processing_time_ms":${out.processingTimeMs},`;
  const tail = selectionBytes(out.selected);
  return { status: 200, head: Buffer.from(head, 'utf8'), tail: out.explanation ? withExplanation(tail, out.explanation) : tail };
}

/**
 * Runs the context request and renders its answer. `requestId` becomes the audit record's id
 * (and the X-Request-Id header). Never throws.
 */
export async function answerContext(
  ctx: AppContext,
  input: { requestId: string; apiKey: string | undefined; body: unknown; issues: ValidationIssue[] | null; refusedWith?: 413 | 415; startedAt?: number },
): Promise<ContextAnswer> {
  try {
    const out = await requestContext(ctx, { requestId: input.requestId, apiKey: input.apiKey, body: input.body, issues: input.issues, startedAt: input.startedAt ?? performance.now() });
    const a = toAnswer(out);
    // A body over the limit (never read) or in an undeclared media type: 413 or 415 once the
    // caller is known (401 before that), with the VALIDATION_ERROR body.
    return input.refusedWith && a.status === 400 ? { ...a, status: input.refusedWith } : a;
  } catch (e) {
    // The audit record could not be committed: no context leaves (fail closed).
    ctx.logger.error('context request failed', { request_id: input.requestId, error: e as Error });
    return internalErrorAnswer();
  }
}

export const CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * The audit record's id (the body's `request_id`): the edge's request id when the edge made
 * it, a new UUID when it is the client's own X-Request-Id (a client's value is neither a
 * UUID nor unique, and the record's id is its primary key).
 */
export function auditIdOf(requestId: string, given: string | undefined): string {
  return given === requestId ? randomUUID() : requestId;
}
