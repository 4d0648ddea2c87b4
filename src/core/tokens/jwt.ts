/**
 * The two HS256 JWTs signed with JWT_SECRET (decisions.md): the control plane's calls to the
 * tag-update webhook, and the Subscribe `auth_token` minted by `POST /api/context/token`.
 *
 * Each kind has its own audience, so that one can never be replayed as the other, and only
 * HS256 is accepted (`none` and every other algorithm are refused by jose's allow-list).
 */
import { randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';

const TOKEN_ISSUER = 'svc-control-plane';
const WEBHOOK_AUDIENCE = 'svc-context-webhook';
const SUBSCRIBE_AUDIENCE = 'svc-subscribe';
/** A webhook call's token lives at most this long (`exp - iat`). */
const WEBHOOK_MAX_LIFETIME_S = 300;
/** A Subscribe token lives at most this long (the contract's `ttl_seconds` maximum). */
const SUBSCRIBE_MAX_LIFETIME_S = 86_400;

const keyOf = (secret: string) => new TextEncoder().encode(secret);

export type VerifyResult<C> = { ok: true; claims: C } | { ok: false; reason: string };

async function verify(token: string, secret: string, audience: string, maxLifetime: number, now: Date, issuer?: string): Promise<VerifyResult<{ sub?: string; iat: number; exp: number; jti?: string }>> {
  try {
    const { payload } = await jwtVerify(token, keyOf(secret), {
      algorithms: ['HS256'],
      audience,
      issuer,
      currentDate: now,
      requiredClaims: ['iat', 'exp'],
      clockTolerance: 5,
    });
    const iat = payload.iat!;
    const exp = payload.exp!;
    if (exp - iat > maxLifetime) return { ok: false, reason: `token lifetime exceeds ${maxLifetime} seconds` };
    if (iat > Math.floor(now.getTime() / 1000) + 5) return { ok: false, reason: 'token issued in the future' };
    return { ok: true, claims: { sub: payload.sub, iat, exp, jti: payload.jti } };
  } catch (e) {
    if (e instanceof joseErrors.JWTExpired) return { ok: false, reason: 'token expired' };
    if (e instanceof joseErrors.JWTClaimValidationFailed) return { ok: false, reason: `token claim "${e.claim}" is invalid` };
    if (e instanceof joseErrors.JOSEAlgNotAllowed) return { ok: false, reason: 'token algorithm not allowed (HS256 only)' };
    if (e instanceof joseErrors.JWSSignatureVerificationFailed) return { ok: false, reason: 'token signature is invalid' };
    return { ok: false, reason: 'token is malformed' };
  }
}

/** Signs the bearer token for one call to `POST /webhook/tag-update` (60 s by default). */
export async function signWebhookToken(secret: string, now: Date, lifetimeSeconds = 60): Promise<string> {
  const iat = Math.floor(now.getTime() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(TOKEN_ISSUER)
    .setAudience(WEBHOOK_AUDIENCE)
    .setIssuedAt(iat)
    .setExpirationTime(iat + lifetimeSeconds)
    .setJti(randomUUID())
    .sign(keyOf(secret));
}

export function verifyWebhookToken(token: string, secret: string, now: Date): Promise<VerifyResult<{ iat: number; exp: number }>> {
  return verify(token, secret, WEBHOOK_AUDIENCE, WEBHOOK_MAX_LIFETIME_S, now);
}

/** Signs a Subscribe `auth_token` for one agent, expiring at `expiresAt` (whole seconds). */
export async function signSubscribeToken(secret: string, agentId: string, now: Date, expiresAt: Date): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(TOKEN_ISSUER)
    .setAudience(SUBSCRIBE_AUDIENCE)
    .setSubject(agentId)
    .setIssuedAt(Math.floor(now.getTime() / 1000))
    .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
    .setJti(randomUUID())
    .sign(keyOf(secret));
}

export async function verifySubscribeToken(token: string, secret: string, now: Date): Promise<VerifyResult<{ sub: string; iat: number; exp: number }>> {
  const r = await verify(token, secret, SUBSCRIBE_AUDIENCE, SUBSCRIBE_MAX_LIFETIME_S, now, TOKEN_ISSUER);
  if (!r.ok) return r;
  if (!r.claims.sub) return { ok: false, reason: 'token has no subject' };
  return { ok: true, claims: { sub: r.claims.sub, iat: r.claims.iat, exp: r.claims.exp } };
}

/** Three base64url segments: what a JWT looks like (an agent key starts with `sk_`). */
export const looksLikeJwt = (s: string) => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(s);
