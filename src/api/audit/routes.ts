/**
 * Audit routes (spec 4.5, decisions.md): verify, reads (records and management events), the SSE stream and the chain of one
 * multi-agent request (admin key, checked at the edge), and agent output logging (agent key,
 * checked here: 401 `auth_failed` for any refused key, whatever the reason).
 */
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import { errorResult, type RequestInfo, type UncheckedRequest } from '../../shared/http/openapi-app.js';
import type { operations } from '../../../gen/openapi/control-plane.js';
import type { RouteModule } from '../../shared/service.js';
import { verifyAgentKey } from '../../core/keys/verify-key.js';
import { verifyAudit } from '../../core/audit/verify.js';
import { getAuditChain, listAuditRequests } from '../../core/audit/read.js';
import { listManagementEvents } from '../../core/audit/list-events.js';
import { auditStreams, openAuditStream } from './stream.js';
import { getAgentOutput, logAgentOutput } from '../../core/audit/output.js';

/** The calling agent, or an AppError('auth_failed') saying why not. */
async function callingAgent(req: Pick<UncheckedRequest, 'headers'>, ctx: AppContext): Promise<string> {
  const key = await verifyAgentKey(ctx, req.headers['x-api-key']);
  if (!key.ok) throw new AppError('auth_failed', key.reason);
  return key.agentId;
}

/** `Last-Event-ID` (wins) or `after_sequence`; null when neither is given. */
function streamStart(req: RequestInfo<operations['streamAuditRequests']>): number | null {
  const header = req.headers['last-event-id'];
  if (header !== undefined && header !== '') {
    if (!/^\d{1,15}$/.test(header.trim())) {
      throw new AppError('validation_error', 'Last-Event-ID must be a chain_sequence (a non-negative integer)', {
        details: { errors: [{ path: '/headers/last-event-id', rule: 'type', message: 'must be a non-negative integer' }] },
      });
    }
    return Number(header.trim());
  }
  return req.query.after_sequence ?? null;
}

export const routes = {
  handlers: {
    async verifyAuditChain(_req, ctx) {
      return { status: 200, body: await verifyAudit(ctx) };
    },
    async listAuditRequests(req, ctx) {
      const q = req.query;
      const page = await listAuditRequests(ctx, {
        agentId: q.agent_id,
        taskType: q.task_type,
        intentValid: q.intent_valid,
        since: q.since,
        until: q.until,
        requestId: q.request_id,
        errorCode: q.error_code,
        afterSequence: q.after_sequence,
        beforeSequence: q.before_sequence,
        order: q.order,
        limit: q.limit ?? 100,
      });
      return { status: 200, body: page };
    },
    async listManagementEvents(req, ctx) {
      const q = req.query;
      const page = await listManagementEvents(ctx, {
        resourceType: q.resource_type,
        resourceId: q.resource_id,
        eventType: q.event_type,
        actor: q.actor,
        since: q.since,
        until: q.until,
        cursor: q.cursor,
        limit: q.limit ?? 100,
      });
      return { status: 200, body: page };
    },
    async streamAuditRequests(req, ctx) {
      const stream = await openAuditStream(ctx, streamStart(req), req.raw.signal);
      return new Response(stream, {
        status: 200,
        headers: {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache, no-transform',
          'x-accel-buffering': 'no',
          'x-request-id': req.requestId,
        },
      });
    },
    async getAuditChain(req, ctx) {
      return { status: 200, body: await getAuditChain(ctx, req.params.chain_id) };
    },
    async logAgentOutput(req, ctx) {
      const agentId = await callingAgent(req, ctx);
      return { status: 201, body: await logAgentOutput(ctx, agentId, req.body) };
    },
    async getAgentOutput(req, ctx) {
      const agentId = await callingAgent(req, ctx);
      return { status: 200, body: await getAgentOutput(ctx, agentId, req.params.output_id) };
    },
  },
  // Agent-gated operations authenticate before the body is judged: a stranger learns nothing.
  validationFail: {
    async logAgentOutput(req, ctx, errors) {
      await callingAgent(req, ctx);
      return errorResult(new AppError('validation_error', 'The request does not match the contract', { details: { errors } }));
    },
    async getAgentOutput(req, ctx, errors) {
      await callingAgent(req, ctx);
      return errorResult(new AppError('validation_error', 'The request does not match the contract', { details: { errors } }));
    },
  },
  start(ctx) {
    // Open event streams end before the server drains its connections.
    return () => auditStreams(ctx).closeAll();
  },
} satisfies RouteModule<operations>;
