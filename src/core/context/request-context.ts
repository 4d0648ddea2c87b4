/**
 * `requestContext`: the intent-based context request (spec 4.1), shared by REST
 * `POST /api/context` and gRPC `RequestContext`. It never sees HTTP or protobuf.
 *
 * The six steps, in order: authenticate the key (and the agent), [validate the body],
 * check the intent (agent's allowed intents, narrowed by the key's scopes), [wait for the
 * content revision the body asks for with `at_least_revision`, up to 2 s], select the
 * role's SCDs, apply overrides and restrictions (both inside selectContext), then write the
 * audit record and answer.
 *
 * Invariants:
 * - every call that returns writes exactly one audit record first, accepted or refused
 *   (also for a missing or unknown key and a bad body), and returns only after it is
 *   committed; when the record cannot be committed the call throws and no context leaves
 *   (fail closed);
 * - a refusal says why without revealing anything about other agents.
 */
import type { components } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import type { ValidationIssue } from '../../shared/errors.js';
import { verifyAgentKey } from '../keys/verify-key.js';
import { selectContext, type SelectedContext } from '../graph/select.js';
import { explainSelection, type ContextExplanation } from '../graph/explain.js';
import { contentCache, type ContentCache } from '../graph/materialization.js';
import { appendAudit, type AuditEntry } from '../audit/writer.js';
import { countContextRequest, type ContextOutcomeLabel } from '../../shared/metrics.js';

const OUTCOME: Record<RefusalCode, ContextOutcomeLabel> = {
  AUTH_FAILED: 'refused_auth',
  INTENT_NOT_ALLOWED: 'refused_intent',
  VALIDATION_ERROR: 'refused_validation',
  INTERNAL_ERROR: 'refused_internal',
  REVISION_NOT_REACHED: 'refused_revision',
};

/** The context API's refusal codes: the contract's `ContextError.error_code` (REST) and gRPC `error_code`. */
export type ContextErrorCode = components['schemas']['ContextError']['error_code'];

/**
 * Every refusal's code, as the audit record's `validation_errors.error_code` stores it. A
 * REVISION_NOT_REACHED is not a ContextError on the wire: REST answers 409 with the general
 * error body, gRPC the status ABORTED.
 */
type RefusalCode = ContextErrorCode | 'REVISION_NOT_REACHED';

/** How long (ms) a request with `at_least_revision` waits for that content revision. */
const REVISION_WAIT_MS = 2000;

export interface ContextRequestInput {
  /** The audit record's id (a UUID v4). */
  requestId: string;
  /** X-API-Key / api_key as presented. */
  apiKey: string | null | undefined;
  /** The body as received (may be anything when `issues` is set). */
  body: unknown;
  /** Contract violations of the body, or null when it is valid. */
  issues: ValidationIssue[] | null;
  /** performance.now() when the request arrived. */
  startedAt: number;
}

interface Common {
  requestId: string;
  /** The audit record's leaf in the transparency log. */
  leafIndex: number;
  agentId: string | null;
  roleId: string | null;
  taskType: string;
  /** Unix seconds. */
  timestamp: number;
  processingTimeMs: number;
}

export type ContextOutcome =
  | (Common & { ok: true; agentId: string; roleId: string; selected: SelectedContext; explanation?: ContextExplanation })
  | (Common & { ok: false; code: ContextErrorCode; message: string })
  | (Common & { ok: false; code: 'REVISION_NOT_REACHED'; message: string; contentRevision: number; atLeastRevision: number });

/** Longest stored parameter value and most parameters (as the contract's ContextRequest). */
const MAX_PARAMS = 100;
const MAX_PARAM_VALUE = 4096;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The parts of a (possibly invalid) body that can be recorded as given. */
function recordable(body: unknown): {
  taskType: string;
  params: Record<string, string> | null;
  chainId: string | null;
  parentRequestId: string | null;
  explain: boolean;
  atLeastRevision: number | null;
} {
  const b = isRecord(body) ? body : {};
  const text = (v: unknown, max: number) => (typeof v === 'string' && v.length > 0 && v.length <= max ? v : null);
  let params: Record<string, string> | null = null;
  if (isRecord(b.params)) {
    const entries = Object.entries(b.params);
    if (entries.length <= MAX_PARAMS && entries.every(([, v]) => typeof v === 'string' && v.length <= MAX_PARAM_VALUE)) params = b.params as Record<string, string>;
  }
  return {
    taskType: typeof b.task_type === 'string' ? b.task_type : '',
    params,
    chainId: text(b.chain_id, 128),
    parentRequestId: text(b.parent_request_id, 128),
    // Neither is stored in the audit record; both are read only from a valid body.
    explain: b.explain === true,
    atLeastRevision: typeof b.at_least_revision === 'number' ? b.at_least_revision : null,
  };
}

/** Runs the context request flow and writes its audit record. Throws only when the record cannot be committed. */
export async function requestContext(ctx: AppContext, input: ContextRequestInput): Promise<ContextOutcome> {
  try {
    const out = await run(ctx, input);
    countContextRequest(out.ok ? 'served' : OUTCOME[out.code]);
    return out;
  } catch (e) {
    countContextRequest('error');
    throw e;
  }
}

async function run(ctx: AppContext, input: ContextRequestInput): Promise<ContextOutcome> {
  const { requestId, startedAt } = input;
  const given = recordable(input.body);
  const elapsed = () => Math.max(0, Math.round(performance.now() - startedAt));

  /** Writes the refusal's audit record; the outcome without its code-specific fields. */
  const refused = async (code: RefusalCode, message: string, agentId: string | null, roleId: string | null, extra: Record<string, unknown>) => {
    const processingTimeMs = elapsed();
    // intent_valid says whether the intent was allowed: only an internal failure and a revision not reached come after that check.
    const intentValid = code === 'INTERNAL_ERROR' || code === 'REVISION_NOT_REACHED';
    const audit = await appendAudit(ctx, entry(requestId, given, agentId, intentValid, { error_code: code, error_message: message, ...extra }, null, processingTimeMs));
    return { ok: false as const, message, requestId, leafIndex: audit.leafIndex, agentId, roleId, taskType: given.taskType, timestamp: unixSeconds(ctx), processingTimeMs };
  };
  const refuse = async (code: ContextErrorCode, message: string, agentId: string | null, roleId: string | null, extra: Record<string, unknown> = {}): Promise<ContextOutcome> => ({
    ...(await refused(code, message, agentId, roleId, extra)),
    code,
  });

  // 1. The key and its agent.
  const key = await verifyAgentKey(ctx, input.apiKey);
  if (!key.ok) return refuse('AUTH_FAILED', key.reason, key.agentId, null);

  // The body, once the caller is known (a stranger learns nothing about the contract).
  if (input.issues) return refuse('VALIDATION_ERROR', 'The request body is invalid', key.agentId, key.roleId, { errors: input.issues });

  // 2. The intent: in the agent's allowed intents and, when the key has scopes, in them.
  const task = given.taskType;
  if (!key.allowedIntents.includes(task)) {
    return refuse('INTENT_NOT_ALLOWED', `Task type "${task}" is not among the agent's allowed intents`, key.agentId, key.roleId);
  }
  if (key.scopes !== null && !key.scopes.includes(task)) {
    return refuse('INTENT_NOT_ALLOWED', `Task type "${task}" is not among this API key's scopes`, key.agentId, key.roleId);
  }

  // A consistency token: wait (after the caller and intent are known, so that no stranger can
  // hold a request open) until this process has the content revision asked for.
  if (given.atLeastRevision !== null) {
    const wanted = given.atLeastRevision;
    let waited: Awaited<ReturnType<ContentCache['atLeast']>>;
    try {
      waited = await contentCache(ctx).atLeast(wanted, REVISION_WAIT_MS);
    } catch (e) {
      ctx.logger.error('content revision check failed', { request_id: requestId, error: e as Error });
      return refuse('INTERNAL_ERROR', 'Internal error', key.agentId, key.roleId);
    }
    const { snapshot, reached } = waited;
    if (!reached) {
      const message = `Content revision ${wanted} was not reached within ${REVISION_WAIT_MS / 1000} s (this process has ${snapshot.version}); retry later`;
      const out = await refused('REVISION_NOT_REACHED', message, key.agentId, key.roleId, { content_revision: snapshot.version, at_least_revision: wanted });
      return { ...out, code: 'REVISION_NOT_REACHED', contentRevision: snapshot.version, atLeastRevision: wanted };
    }
  }

  // 3-4. The role's SCDs, overrides added, restrictions removed.
  const want = { roleId: key.roleId, overrides: key.overrides, restrictions: key.restrictions };
  let selected: SelectedContext;
  let explanation: ContextExplanation | undefined;
  try {
    selected = await selectContext(ctx, want);
    if (given.explain) explanation = await explainSelection(ctx, selected, want);
  } catch (e) {
    ctx.logger.error('context selection failed', { request_id: requestId, error: e as Error });
    return refuse('INTERNAL_ERROR', 'Internal error', key.agentId, key.roleId);
  }

  // 5-6. The audit record, committed before the answer.
  const processingTimeMs = elapsed();
  const audit = await appendAudit(ctx, entry(requestId, given, key.agentId, true, null, selected, processingTimeMs));
  const out: ContextOutcome = { ok: true, requestId, leafIndex: audit.leafIndex, agentId: key.agentId, roleId: key.roleId, taskType: task, selected, timestamp: unixSeconds(ctx), processingTimeMs };
  if (explanation) out.explanation = explanation;
  return out;
}

function unixSeconds(ctx: AppContext): number {
  return Math.floor(ctx.clock.now().getTime() / 1000);
}

function entry(
  requestId: string,
  given: ReturnType<typeof recordable>,
  agentId: string | null,
  intentValid: boolean,
  validationErrors: Record<string, unknown> | null,
  selected: SelectedContext | null,
  processingTimeMs: number,
): AuditEntry {
  return {
    requestId,
    agentId,
    taskType: given.taskType,
    requestParams: given.params,
    intentValid,
    validationErrors,
    contextBundleIds: selected ? selected.bundleIds : null,
    contextScdIds: selected ? selected.scdIds : null,
    processingTimeMs,
    chainId: given.chainId,
    parentRequestId: given.parentRequestId,
  };
}
