/**
 * `POST /api/context/token`: mints the short-lived HS256 JWT an agent passes as Subscribe's
 * `auth_token` (decisions.md), so that the long-lived API key need not travel to every
 * stream. The token is bound to the calling agent (`sub`), never outlives the calling key,
 * and Subscribe re-checks that the agent is still active.
 */
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import type { operations } from '../../../gen/openapi/control-plane.js';
import { errorResult, type OperationHandler } from '../../shared/http/openapi-app.js';
import { verifyAgentKey } from '../../core/keys/verify-key.js';
import { signSubscribeToken } from '../../core/tokens/jwt.js';

const DEFAULT_TOKEN_TTL_S = 900;

interface MintedToken {
  token: string;
  agentId: string;
  expiresAt: Date;
}

/** Signs a Subscribe token for `agentId`, expiring after `ttlSeconds` or with the key, whichever is first. */
async function mintSubscribeToken(ctx: AppContext, input: { agentId: string; keyExpiresAt: Date | null; ttlSeconds: number }): Promise<MintedToken> {
  const now = ctx.clock.now();
  let expSec = Math.floor(now.getTime() / 1000) + input.ttlSeconds;
  if (input.keyExpiresAt) expSec = Math.min(expSec, Math.floor(input.keyExpiresAt.getTime() / 1000));
  const expiresAt = new Date(expSec * 1000);
  const token = await signSubscribeToken(ctx.config.jwtSecret, input.agentId, now, expiresAt);
  return { token, agentId: input.agentId, expiresAt };
}

export const mintSubscribeTokenHandler: OperationHandler<operations['mintSubscribeToken'], AppContext> = async (req, ctx) => {
  const key = await verifyAgentKey(ctx, req.headers['x-api-key']);
  if (!key.ok) return errorResult(new AppError('auth_failed', key.reason));
  const minted = await mintSubscribeToken(ctx, { agentId: key.agentId, keyExpiresAt: key.expiresAt, ttlSeconds: req.body?.ttl_seconds ?? DEFAULT_TOKEN_TTL_S });
  return { status: 200, body: { token: minted.token, agent_id: minted.agentId, expires_at: minted.expiresAt.toISOString() } };
};
