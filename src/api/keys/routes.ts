/** Agent API key routes (spec 4.2, 3.2) and the expiry job started with the API. */
import { AppError } from '../../shared/errors.js';
import type { operations } from '../../../gen/openapi/control-plane.js';
import type { RouteModule } from '../../shared/service.js';
import { startExpiryJob } from '../../core/keys/expiry-job.js';
import { issueApiKey, listApiKeys, readApiKey, revokeApiKey } from '../../core/keys/manage-keys.js';
import { rotateApiKey } from '../../core/keys/rotate-key.js';
import { whoOf } from '../../shared/http/who.js';

/** `revoked_by` comes as the query parameter or the JSON body; both given must agree. */
function revokedBy(query: Record<string, unknown>, body: unknown): string {
  const q = typeof query.revoked_by === 'string' ? query.revoked_by : undefined;
  const b = body && typeof body === 'object' && typeof (body as { revoked_by?: unknown }).revoked_by === 'string' ? (body as { revoked_by: string }).revoked_by : undefined;
  const issue = (message: string) =>
    new AppError('validation_error', message, { details: { errors: [{ path: '/query/revoked_by', rule: 'revoked_by', message }] } });
  if (q === undefined && b === undefined) throw issue('revoked_by is required (query parameter or JSON body)');
  if (q !== undefined && b !== undefined && q !== b) throw issue('revoked_by differs between the query parameter and the body');
  return (q ?? b)!;
}

export const routes = {
  handlers: {
    listAgentApiKeys: async (req, ctx) => ({ status: 200, body: await listApiKeys(ctx, req.params.agent_id) }),
    // The body carries the plaintext key: no cache may keep it.
    issueAgentApiKey: async (req, ctx) => ({
      status: 201,
      body: await issueApiKey(ctx, req.params.agent_id, req.body ?? {}, whoOf(req)),
      headers: { 'cache-control': 'no-store' },
    }),
    getAgentApiKey: async (req, ctx) => ({ status: 200, body: await readApiKey(ctx, req.params.agent_id, req.params.key_id) }),
    // Same as issue: the body carries the new plaintext key.
    rotateAgentApiKey: async (req, ctx) => ({
      status: 201,
      body: await rotateApiKey(ctx, req.params.agent_id, req.params.key_id, req.body ?? {}, whoOf(req)),
      headers: { 'cache-control': 'no-store' },
    }),
    revokeAgentApiKey: async (req, ctx) => {
      await revokeApiKey(ctx, req.params.agent_id, req.params.key_id, revokedBy(req.query, req.body), whoOf(req));
      return { status: 204 };
    },
  },
  start: (ctx) => startExpiryJob(ctx),
} satisfies RouteModule<operations>;
