/**
 * Test fixtures for the agent-identity area: license minting with keypairs generated here
 * (the product's private key never exists in the repository), a settable clock, and small
 * factories that go through the HTTP API.
 */
import { randomUUID } from 'node:crypto';
import { exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { LICENSE_ISSUER } from '../../src/shared/license.js';
import type { TestStack } from '../harness.js';

export interface LicenseAuthority {
  publicKeyPem: string;
  mint(claims?: Record<string, unknown>, opts?: { omit?: string[] }): Promise<string>;
}

/** A fresh RS256 keypair acting as the license authority. */
export async function licenseAuthority(): Promise<LicenseAuthority> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const publicKeyPem = await exportSPKI(publicKey);
  return {
    publicKeyPem,
    async mint(claims = {}, opts = {}) {
      const now = Math.floor(Date.now() / 1000);
      const all: Record<string, unknown> = {
        sub: 'customer-test',
        deployment_id: randomUUID(),
        agent_cap: 0,
        tier: 'standard',
        iss: LICENSE_ISSUER,
        iat: now,
        exp: now + 365 * 86400,
        ...claims,
      };
      for (const k of opts.omit ?? []) delete all[k];
      return new SignJWT(all).setProtectedHeader({ alg: 'RS256', typ: 'JWT' }).sign(privateKey);
    },
  };
}

/** A clock tests can move forward. */
export function settableClock(start = Date.now()) {
  let offset = 0;
  const base = start;
  return {
    now: () => new Date(base + offset + (Date.now() - start)),
    advance(ms: number) {
      offset += ms;
    },
  };
}

let seq = 0;
/** A unique agent id for this run. */
export function agentId(label = 'a'): string {
  return `agent:${label}-${process.pid}-${Date.now().toString(36)}-${(seq++).toString(36)}`;
}

export async function makeAgent(t: TestStack, over: Record<string, unknown> = {}): Promise<any> {
  const body = { agent_id: agentId(), name: 'Test agent', role_id: 'role:nurse', allowed_intents: ['medication_review', 'triage'], ...over };
  const r = await t.call('api', 'POST', '/api/agents', { admin: true, body });
  if (r.status !== 201) throw new Error(`makeAgent: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

export async function issueKey(t: TestStack, agent: string, body: Record<string, unknown> = {}): Promise<any> {
  const r = await t.call('api', 'POST', `/api/agents/${agent}/api-keys`, { admin: true, body });
  if (r.status !== 201) throw new Error(`issueKey: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}
