/**
 * The beacon payload (interface spec 2.11): exactly six non-personal fields, built from the
 * registry counts; its canonical JSON form and HMAC-SHA256 signature (spec 5.3).
 */
import { createHash, createHmac } from 'node:crypto';
import { canonicalJson } from '../../shared/canonical-json.js';
import type { AppContext } from '../../shared/app-context.js';
import { SERVICE_VERSION } from '../../shared/version.js';
import type { components } from '../../../gen/openapi/telemetry.js';

/** The six fields, and nothing else, that ever leave the deployment (contract: BeaconPayload). */
export type BeaconPayload = components['schemas']['BeaconPayload'];

const PAYLOAD_FIELDS = ['active_agent_count', 'agent_count', 'deployment_id', 'license_key_hash', 'reported_at', 'scp_version'] as const;

/** Counts kept in the local log only (never transmitted). */
export interface ReportCounts {
  agent_count: number;
  active_agent_count: number;
  context_request_count: number;
  bundle_count: number;
}

export const SIGNATURE_HEADER = 'X-svc-Signature';

/** Lowercase hex SHA-256 of the license key (the key itself is never sent or logged). */
export function licenseKeyHash(licenseKey: string | null): string | null {
  return licenseKey ? createHash('sha256').update(licenseKey, 'utf8').digest('hex') : null;
}

/**
 * Canonical JSON (RFC 8785, src/shared/canonical-json.ts): object keys sorted by UTF-16 code
 * unit, compact separators. For the payload (ASCII strings, integers, null) this is byte for
 * byte Python's `json.dumps(x, sort_keys=True, separators=(",", ":"))`, so a receiver can
 * recompute it.
 */
export { canonicalJson };

/** Header value `sha256=<hex>`: HMAC-SHA256 of the canonical JSON text with the secret. */
export function signatureHeaderValue(canonicalBody: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(canonicalBody, 'utf8').digest('hex')}`;
}

/** Returns the payload with only the six fields, keys in canonical (sorted) order. */
export function pickPayload(x: Record<string, unknown>): BeaconPayload {
  const out: Record<string, unknown> = {};
  for (const k of PAYLOAD_FIELDS) out[k] = x[k] ?? null;
  return out as unknown as BeaconPayload;
}

/** Reads the counts from the registry, the audit log and the bundle store in one statement. */
export async function readCounts(ctx: Pick<AppContext, 'db'>): Promise<ReportCounts> {
  const [row] = await ctx.db.query<{ agent_count: number; active_agent_count: number; context_request_count: number; bundle_count: number }>(
    `SELECT (SELECT count(*) FROM agents)::int AS agent_count,
            (SELECT count(*) FROM agents WHERE status = 'active')::int AS active_agent_count,
            (SELECT count(*) FROM agent_context_requests)::int8 AS context_request_count,
            (SELECT count(*) FROM bundles)::int AS bundle_count`,
  );
  return {
    agent_count: Number(row!.agent_count),
    active_agent_count: Number(row!.active_agent_count),
    context_request_count: Number(row!.context_request_count),
    bundle_count: Number(row!.bundle_count),
  };
}

/** Builds one report generated at `at`: the payload and its local counts. */
export async function buildReport(ctx: Pick<AppContext, 'db' | 'config'>, at: Date): Promise<{ payload: BeaconPayload; counts: ReportCounts }> {
  const counts = await readCounts(ctx);
  const reportedAt = new Date(at.getTime());
  const payload = pickPayload({
    deployment_id: ctx.config.deploymentId,
    license_key_hash: licenseKeyHash(ctx.config.licenseKey),
    agent_count: counts.agent_count,
    active_agent_count: counts.active_agent_count,
    reported_at: reportedAt.toISOString(),
    scp_version: SERVICE_VERSION,
  });
  return { payload, counts };
}
