/**
 * gRPC `RequestContext` (spec 4.8): the same verb as REST `POST /api/context`, answered
 * in-band. A refusal (AUTH_FAILED, INTENT_NOT_ALLOWED, VALIDATION_ERROR, INTERNAL_ERROR after
 * its audit record was written) is a normal response with `success = false`; a transport
 * status is used only when the request could not be processed at all: the audit record
 * could not be committed (INTERNAL), so no context leaves.
 */
import { randomUUID } from 'node:crypto';
import { create, type UnknownField } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import type { AppContext } from '../../shared/app-context.js';
import type { ValidationIssue } from '../../shared/http/openapi-app.js';
import { RequestContextResponseSchema, type ContextService, type RequestContextRequest, type RequestContextResponse } from '../../../gen/proto/context_pb.js';
import { requestContext } from '../../api/context/request-context.js';
import type { SelectedContext } from '../../api/graph/select.js';

/** Field numbers of RequestContextResponse (spec/context.proto). */
const SCD_IDS = 6;
const SCD_CONTENT = 7;
const CONTEXT_BUNDLE_IDS = 12;

/**
 * The selection's fields (scd_ids, scd_content, context_bundle_ids) encoded once per shared,
 * frozen selection, as protobuf field occurrences the binary writer copies verbatim
 * (`$unknown`): encoding 40-90 KB of map entries per request would dominate the call. Used
 * for binary codecs only; a JSON client gets the ordinary fields.
 */
const encoded = new WeakMap<SelectedContext, UnknownField[]>();
function selectionFields(s: SelectedContext): UnknownField[] {
  let f = encoded.get(s);
  if (f === undefined) {
    const str = (v: string) => new BinaryWriter().string(v).finish();
    f = [
      ...s.scdIds.map((id) => ({ no: SCD_IDS, wireType: WireType.LengthDelimited, data: str(id) })),
      ...s.scdIds.map((id) => {
        const entry = new BinaryWriter().tag(1, WireType.LengthDelimited).string(id).tag(2, WireType.LengthDelimited).string(s.scdContent[id] ?? '').finish();
        return { no: SCD_CONTENT, wireType: WireType.LengthDelimited, data: new BinaryWriter().bytes(entry).finish() };
      }),
      ...s.bundleIds.map((id) => ({ no: CONTEXT_BUNDLE_IDS, wireType: WireType.LengthDelimited, data: str(id) })),
    ];
    encoded.set(s, f);
  }
  return f;
}

/** The contract's ContextRequest rules, for a message protobuf already typed. */
export function validateRequestContext(req: RequestContextRequest): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const maxLength = (path: string, v: string, max: number) => {
    if (v.length > max) issues.push({ path, rule: 'maxLength', message: `must NOT have more than ${max} characters` });
  };
  if (req.taskType.length === 0) issues.push({ path: '/task_type', rule: 'minLength', message: 'must NOT have fewer than 1 characters' });
  maxLength('/task_type', req.taskType, 128);
  const params = Object.entries(req.params);
  if (params.length > 100) issues.push({ path: '/params', rule: 'maxProperties', message: 'must NOT have more than 100 properties' });
  for (const [k, v] of params) maxLength(`/params/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, v, 4096);
  maxLength('/chain_id', req.chainId, 128);
  maxLength('/parent_request_id', req.parentRequestId, 128);
  return issues.slice(0, 50);
}

/** The RequestContext implementation, for `router.service(ContextService, { requestContext, ... })`. */
export function requestContextHandler(ctx: AppContext): ServiceImpl<typeof ContextService>['requestContext'] {
  return (req: RequestContextRequest, hctx: HandlerContext) => runRequestContext(ctx, req, /json/i.test(hctx.requestHeader.get('content-type') ?? ''));
}

/**
 * Runs one RequestContext call. With `json` false the selection's fields are attached
 * pre-encoded (`$unknown`, see selectionFields); a JSON codec needs the ordinary fields.
 * Throws ConnectError(INTERNAL) only when the audit record could not be committed.
 */
export async function runRequestContext(ctx: AppContext, req: RequestContextRequest, json: boolean): Promise<RequestContextResponse> {
  {
    const startedAt = performance.now();
    const issues = validateRequestContext(req);
    // Empty proto3 fields mean "not given".
    const body = {
      task_type: req.taskType,
      params: Object.keys(req.params).length ? req.params : undefined,
      chain_id: req.chainId || undefined,
      parent_request_id: req.parentRequestId || undefined,
    };
    let out;
    try {
      out = await requestContext(ctx, { requestId: randomUUID(), apiKey: req.apiKey, body, issues: issues.length ? issues : null, startedAt });
    } catch (e) {
      ctx.logger.error('context request failed', { error: e as Error });
      throw new ConnectError('Internal error', Code.Internal);
    }
    const common = {
      requestId: out.requestId,
      agentId: out.agentId ?? '',
      roleId: out.roleId ?? '',
      taskType: out.taskType,
      timestamp: BigInt(out.timestamp),
      processingTimeMs: out.processingTimeMs,
    };
    if (!out.ok) return create(RequestContextResponseSchema, { ...common, success: false, errorCode: out.code, errorMessage: out.message });
    const s = out.selected;
    if (json) {
      return create(RequestContextResponseSchema, { ...common, success: true, scdIds: s.scdIds, scdContent: s.scdContent, contextBundleIds: s.bundleIds });
    }
    const res = create(RequestContextResponseSchema, { ...common, success: true });
    res.$unknown = selectionFields(s);
    return res;
  }
}
