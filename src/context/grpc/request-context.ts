/**
 * gRPC `RequestContext` (spec 4.8): the same verb as REST `POST /api/context`, answered
 * in-band. A refusal (AUTH_FAILED, INTENT_NOT_ALLOWED, VALIDATION_ERROR, INTERNAL_ERROR after
 * its audit record was written) is a normal response with `success = false`; a transport
 * status is used only when the request could not be processed at all: the audit record
 * could not be committed (INTERNAL), so no context leaves.
 */
import { randomUUID } from 'node:crypto';
import { create, toBinary } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { Code, ConnectError, type ServiceImpl } from '@connectrpc/connect';
import type { AppContext } from '../../shared/app-context.js';
import type { ValidationIssue } from '../../shared/http/openapi-app.js';
import {
  ContextExplanationSchema,
  RequestContextResponseSchema,
  type ContextExplanation,
  type ContextService,
  type RequestContextRequest,
  type RequestContextResponse,
} from '../../../gen/proto/context_pb.js';
import { requestContext, type ContextOutcome } from '../../core/context/request-context.js';
import { connectError } from './errors.js';
import type { ContextExplanation as Explanation } from '../../core/graph/explain.js';
import type { SelectedContext } from '../../core/graph/select.js';

/** Field numbers of RequestContextResponse (spec/context.proto). */
const SCD_IDS = 6;
const SCD_CONTENT = 7;
const CONTEXT_BUNDLE_IDS = 12;
const CONTENT_REVISION = 14;
const EXPLANATION = 15;

/**
 * The selection's fields (scd_ids, scd_content, context_bundle_ids) encoded once per shared,
 * frozen selection, as the protobuf bytes of those field occurrences: encoding 40-90 KB of
 * map entries per request would dominate the call. Protobuf lets fields appear in any order,
 * so an answer is its small per-call fields followed by these bytes. Binary codecs only; a
 * JSON client gets the ordinary fields.
 */
const encoded = new WeakMap<SelectedContext, Buffer>();
function selectionBytes(s: SelectedContext): Buffer {
  let b = encoded.get(s);
  if (b === undefined) {
    const w = new BinaryWriter();
    for (const id of s.scdIds) w.tag(SCD_IDS, WireType.LengthDelimited).string(id);
    for (const id of s.scdIds) {
      w.tag(SCD_CONTENT, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string(id).tag(2, WireType.LengthDelimited).string(s.scdContent[id] ?? '').join();
    }
    for (const id of s.bundleIds) w.tag(CONTEXT_BUNDLE_IDS, WireType.LengthDelimited).string(id);
    if (s.revision) w.tag(CONTENT_REVISION, WireType.Varint).int64(s.revision);
    const u8 = w.finish();
    b = Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
    encoded.set(s, b);
  }
  return b;
}

/** The contract's ContextRequest rules, for a message protobuf already typed. */
function validateRequestContext(req: RequestContextRequest): ValidationIssue[] {
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
  const r = req.atLeastRevision;
  if (r !== undefined && (r < 0n || r > BigInt(Number.MAX_SAFE_INTEGER))) {
    issues.push({ path: '/at_least_revision', rule: r < 0n ? 'minimum' : 'maximum', message: r < 0n ? 'must be >= 0' : `must be <= ${Number.MAX_SAFE_INTEGER}` });
  }
  return issues.slice(0, 50);
}

/** The RequestContext implementation, for `router.service(ContextService, { requestContext, ... })`. */
export function requestContextHandler(ctx: AppContext): ServiceImpl<typeof ContextService>['requestContext'] {
  // Through the router (gRPC-Web, Connect, JSON, compressed calls) the message is encoded
  // whole; plain binary gRPC takes the fast path of request-context-h2.ts.
  return async (req: RequestContextRequest) => responseMessage(await callRequestContext(ctx, req));
}

/**
 * Runs one RequestContext call: the shared verb with the message's fields as its body.
 * Throws ConnectError(UNAVAILABLE) when the database could not be reached, INTERNAL when the
 * audit record could not be committed otherwise.
 */
export async function callRequestContext(ctx: AppContext, req: RequestContextRequest): Promise<ContextOutcome> {
  const startedAt = performance.now();
  const issues = validateRequestContext(req);
  // Empty proto3 fields mean "not given".
  const body = {
    task_type: req.taskType,
    params: Object.keys(req.params).length ? req.params : undefined,
    chain_id: req.chainId || undefined,
    parent_request_id: req.parentRequestId || undefined,
    explain: req.explain || undefined,
    at_least_revision: req.atLeastRevision === undefined ? undefined : Number(req.atLeastRevision),
  };
  let out: ContextOutcome;
  try {
    out = await requestContext(ctx, { requestId: randomUUID(), apiKey: req.apiKey, body, issues: issues.length ? issues : null, startedAt });
  } catch (e) {
    ctx.logger.error('context request failed', { error: e as Error });
    throw connectError(e);
  }
  if (!out.ok && out.code === 'REVISION_NOT_REACHED') {
    // Not in-band: ABORTED is HTTP 409 in the Connect protocol, as REST answers (audited already).
    const metadata = new Headers({ 'svc-content-revision': String(out.contentRevision), 'svc-request-id': out.requestId });
    throw new ConnectError(out.message, Code.Aborted, metadata);
  }
  return out;
}

/** The explanation as the proto message (the same fields as REST's ContextExplanation). */
function explanationMessage(e: Explanation): ContextExplanation {
  const selected = Object.fromEntries(
    Object.entries(e.selected).map(([id, x]) => [
      id,
      { reason: x.reason, roleId: x.role_id ?? '', governs: x.governs ?? [], bundleId: x.bundle_id, bundleVersion: x.bundle_version, importPath: x.import_path, override: x.override },
    ]),
  );
  const excluded = Object.fromEntries(
    Object.entries(e.excluded).map(([id, x]) => [
      id,
      {
        reason: x.reason,
        roles: x.roles ?? [],
        referencedBy: x.referenced_by ?? [],
        override: x.override ?? false,
        bundleId: x.bundle_id ?? '',
        bundleVersion: x.bundle_version ?? '',
        importPath: x.import_path ?? [],
      },
    ]),
  );
  return create(ContextExplanationSchema, { selected, excluded });
}

/** The whole RequestContextResponse of an outcome, as a message (the Connect router's path). */
export function responseMessage(out: ContextOutcome): RequestContextResponse {
  const common = {
    requestId: out.requestId,
    agentId: out.agentId ?? '',
    roleId: out.roleId ?? '',
    taskType: out.taskType,
    timestamp: BigInt(out.timestamp),
    processingTimeMs: out.processingTimeMs,
    auditLeafIndex: BigInt(out.leafIndex),
  };
  if (!out.ok) return create(RequestContextResponseSchema, { ...common, success: false, errorCode: out.code, errorMessage: out.message });
  const s = out.selected;
  return create(RequestContextResponseSchema, {
    ...common,
    success: true,
    scdIds: s.scdIds,
    scdContent: s.scdContent,
    contextBundleIds: s.bundleIds,
    contentRevision: BigInt(s.revision),
    ...(out.explanation && { explanation: explanationMessage(out.explanation) }),
  });
}

/**
 * The same response as bytes, for the plain gRPC fast path: the per-call fields encoded by
 * hand (create() and toBinary() of a seven-field message cost more than writing them), then
 * the selection's once-per-selection bytes (selectionBytes). Field numbers are those of
 * spec/context.proto; proto3 leaves default values out. Equal, decoded, to responseMessage.
 */
export function responseParts(out: ContextOutcome): { head: Uint8Array; tail: Buffer | null } {
  const w = new BinaryWriter();
  if (out.ok) w.tag(1, WireType.Varint).bool(true);
  if (out.requestId) w.tag(2, WireType.LengthDelimited).string(out.requestId);
  if (out.agentId) w.tag(3, WireType.LengthDelimited).string(out.agentId);
  if (out.roleId) w.tag(4, WireType.LengthDelimited).string(out.roleId);
  if (out.taskType) w.tag(5, WireType.LengthDelimited).string(out.taskType);
  if (out.timestamp) w.tag(8, WireType.Varint).int64(out.timestamp);
  if (out.processingTimeMs) w.tag(9, WireType.Varint).int32(out.processingTimeMs);
  if (!out.ok) {
    w.tag(10, WireType.LengthDelimited).string(out.code);
    w.tag(11, WireType.LengthDelimited).string(out.message);
  }
  // proto3 `optional`: written even when 0 (the first leaf).
  w.tag(13, WireType.Varint).int64(out.leafIndex);
  if (!out.ok) return { head: w.finish(), tail: null };
  const tail = selectionBytes(out.selected);
  if (!out.explanation) return { head: w.finish(), tail };
  // Asked for only: the explanation is encoded per call and follows the shared bytes.
  const x = new BinaryWriter().tag(EXPLANATION, WireType.LengthDelimited).bytes(toBinary(ContextExplanationSchema, explanationMessage(out.explanation))).finish();
  return { head: w.finish(), tail: Buffer.concat([tail, x]) };
}
