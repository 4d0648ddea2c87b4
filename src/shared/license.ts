/**
 * License enforcement (spec 2.10, 3.5): LICENSE_KEY is an RS256 JWT, verified with jose
 * against the embedded public key, or LICENSE_PUBLIC_KEY (a PEM SPKI key) which overrides it.
 * The private half of the embedded key never enters this repository.
 *
 * - unset: warning, uncapped (development only)
 * - bad signature, wrong issuer, missing claims: start-up refused
 * - expired: start-up aborted
 * - expires in under 30 days: warning at every start
 */
import { errors as joseErrors, importSPKI, jwtVerify } from 'jose';
import type { Config } from './config.js';
import type { Logger } from './logger.js';

export const LICENSE_ISSUER = 'svc-license-authority';

export const EMBEDDED_LICENSE_PUBLIC_KEY = `-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA0yyEjXR9O7s5ZeIl2c7/
2JAcKHtDqtwla50HXbbz0fC4mGIUQphLx46vTyEBUcGHgS6mG8g1Mct15H3ZFVqZ
TfRexq9HxniGy19PnqLU1u3ffDF5iHuz0zCEiFixGueULUfBCMsSb5LbLuYeFBLD
mvkHaQKb3JLdb817rFAQF/yIPQH0y6rEgzRar3ypFJrkoVxB72CjFC0xcuh6kbet
S8uRrGSOu02DrwKgwo5bhCpYjuuMVJlG/u103YZjTepxl3hQGCG7c+SkyIc5WyZa
TaY44R+uQkhi0X2rnf2eL3U+TFKKLk4weaPMWc9aQBZeznI/k2/PKTaQEkPHZF8F
fQIDAQAB
-----END PUBLIC KEY-----
`;

export interface LicenseClaims {
  sub: string;
  deployment_id: string;
  /** Maximum non-revoked agents; 0 means unlimited. */
  agent_cap: number;
  tier: 'standard' | 'regulated';
  iss: string;
  iat: number;
  exp: number;
}

export class LicenseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LicenseError';
  }
}

const THIRTY_DAYS_S = 30 * 24 * 3600;

/** Verifies a license token; throws LicenseError naming what is wrong. */
async function verifyLicense(token: string, publicKeyPem: string, now: Date): Promise<LicenseClaims> {
  let key;
  try {
    key = await importSPKI(publicKeyPem, 'RS256');
  } catch {
    throw new LicenseError('LICENSE_PUBLIC_KEY is not a PEM (SPKI) RSA public key');
  }
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, key, { algorithms: ['RS256'], issuer: LICENSE_ISSUER, currentDate: now, clockTolerance: 0 }));
  } catch (e) {
    if (e instanceof joseErrors.JWTExpired) throw new LicenseError('LICENSE_KEY has expired: the service will not start with an expired license');
    if (e instanceof joseErrors.JWTClaimValidationFailed && e.claim === 'iss') throw new LicenseError(`LICENSE_KEY has the wrong issuer (expected ${LICENSE_ISSUER})`);
    throw new LicenseError(`LICENSE_KEY is not a valid license: ${(e as Error).message}`);
  }
  const missing: string[] = [];
  const p = payload;
  if (typeof p.sub !== 'string' || !p.sub) missing.push('sub');
  if (typeof p.deployment_id !== 'string' || !p.deployment_id) missing.push('deployment_id');
  if (typeof p.agent_cap !== 'number' || !Number.isInteger(p.agent_cap) || p.agent_cap < 0) missing.push('agent_cap');
  if (p.tier !== 'standard' && p.tier !== 'regulated') missing.push('tier');
  if (typeof p.iat !== 'number') missing.push('iat');
  if (typeof p.exp !== 'number') missing.push('exp');
  if (missing.length) throw new LicenseError(`LICENSE_KEY is missing or has invalid claims: ${missing.join(', ')}`);
  return p as unknown as LicenseClaims;
}

/** Start-up license check (section 3.5). Returns null when no license is set (uncapped). */
export async function loadLicense(config: Config, logger: Logger, clock: { now(): Date }): Promise<LicenseClaims | null> {
  if (!config.licenseKey) {
    logger.warn('LICENSE_KEY is not set: running uncapped (development only)');
    return null;
  }
  const claims = await verifyLicense(config.licenseKey, config.licensePublicKey ?? EMBEDDED_LICENSE_PUBLIC_KEY, clock.now());
  if (claims.deployment_id !== config.deploymentId) {
    logger.warn('license deployment_id differs from DEPLOYMENT_ID', { license_deployment_id: claims.deployment_id });
  }
  const left = claims.exp - Math.floor(clock.now().getTime() / 1000);
  if (left < THIRTY_DAYS_S) {
    logger.warn('license expires in fewer than 30 days', { expires_at: new Date(claims.exp * 1000).toISOString(), days_left: Math.floor(left / 86400) });
  }
  logger.info('license verified', { sub: claims.sub, tier: claims.tier, agent_cap: claims.agent_cap, expires_at: new Date(claims.exp * 1000).toISOString() });
  return claims;
}
