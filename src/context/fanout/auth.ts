/**
 * Who may hold a Subscribe stream (decisions.md): the bearer of a Subscribe token minted for
 * the agent by `POST /api/context/token`, or of the agent's own API key; `agent_id` must be
 * that agent, and the agent must be active. Checked when the stream opens, and again for open
 * streams when keys or agents change (a revoked key or a suspended agent loses its streams).
 */
import { Code, ConnectError } from '@connectrpc/connect';
import type { AppContext } from '../../shared/app-context.js';
import { KEY_REASONS, verifyAgentKey } from '../../core/keys/verify-key.js';
import { looksLikeJwt, verifySubscribeToken } from '../../core/tokens/jwt.js';
import type { Subscriber } from './subscriber.js';

export interface SubscribeAuth {
  agentId: string;
  authMethod: 'token' | 'api_key';
  keyId: string | null;
}

const unauthenticated = (m: string) => new ConnectError(m, Code.Unauthenticated);
const denied = (m: string) => new ConnectError(m, Code.PermissionDenied);
const NOT_YOURS = 'auth_token does not belong to agent_id';
const INACTIVE = 'agent is not active';

/** Authenticates a Subscribe call; throws a ConnectError carrying the stream's final status. */
export async function authenticateSubscriber(ctx: AppContext, agentId: string, authToken: string): Promise<SubscribeAuth> {
  const token = authToken.trim();
  if (!token) throw unauthenticated('auth_token is required');
  if (token.startsWith('sk_')) {
    const r = await verifyAgentKey(ctx, token);
    if (r.ok) {
      if (r.agentId !== agentId) throw denied(NOT_YOURS);
      return { agentId, authMethod: 'api_key', keyId: r.keyId };
    }
    if (r.reason === KEY_REASONS.agentSuspended || r.reason === KEY_REASONS.agentRevoked) {
      throw denied(r.agentId === agentId ? INACTIVE : NOT_YOURS);
    }
    throw unauthenticated(`invalid auth_token: ${r.reason}`);
  }
  if (!looksLikeJwt(token)) throw unauthenticated('invalid auth_token: neither a Subscribe token nor an agent API key');
  const v = await verifySubscribeToken(token, ctx.config.jwtSecret, ctx.clock.now());
  if (!v.ok) throw unauthenticated(`invalid auth_token: ${v.reason}`);
  if (v.claims.sub !== agentId) throw denied(NOT_YOURS);
  const [agent] = await ctx.db.query<{ status: string }>('SELECT status FROM agents WHERE agent_id = $1', [agentId]);
  if (agent?.status !== 'active') throw denied(INACTIVE);
  return { agentId, authMethod: 'token', keyId: null };
}

/** The open streams among `subs` that must end, with the status to end them with. */
export async function findRevokedStreams(ctx: AppContext, subs: Subscriber[]): Promise<Array<[Subscriber, ConnectError]>> {
  const agentIds = [...new Set(subs.map((s) => s.info.agentId))];
  const keyIds = [...new Set(subs.map((s) => s.info.keyId).filter((k): k is string => k !== null))];
  const agents = await ctx.db.query<{ agent_id: string; status: string }>('SELECT agent_id, status FROM agents WHERE agent_id = ANY($1::text[])', [agentIds]);
  const activeAgents = new Set(agents.filter((a) => a.status === 'active').map((a) => a.agent_id));
  const validKeys = new Set<string>();
  if (keyIds.length) {
    const now = ctx.clock.now().getTime();
    const keys = await ctx.db.query<{ key_id: string; status: string; expires_at: Date | null }>(
      'SELECT key_id, status, expires_at FROM agent_api_keys WHERE key_id = ANY($1::text[])',
      [keyIds],
    );
    for (const k of keys) if (k.status === 'active' && (!k.expires_at || k.expires_at.getTime() > now)) validKeys.add(k.key_id);
  }
  const out: Array<[Subscriber, ConnectError]> = [];
  for (const s of subs) {
    if (!activeAgents.has(s.info.agentId)) out.push([s, denied(INACTIVE)]);
    else if (s.info.keyId !== null && !validKeys.has(s.info.keyId)) out.push([s, unauthenticated('the API key of this stream is no longer valid')]);
  }
  return out;
}
