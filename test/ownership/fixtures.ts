/** Helpers of the ownership tests: unique owner ids, agents with an owner, transfers, events. */
import { expect } from 'vitest';
import type { TestStack } from '../harness.js';
import { agentId } from '../identity/fixtures.js';

let seq = 0;
/** A unique owner id for this run. */
export function ownerId(label = 'o'): string {
  return `${label}-${process.pid}-${Date.now().toString(36)}-${(seq++).toString(36)}@example.org`;
}

export async function agentOwnedBy(t: TestStack, owner: string | undefined, over: Record<string, unknown> = {}): Promise<any> {
  const body = { agent_id: agentId('own'), name: 'Owned agent', role_id: 'role:nurse', allowed_intents: ['triage'], ...(owner && { owner_id: owner }), ...over };
  const r = await t.call('api', 'POST', '/api/agents', { admin: true, body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

export async function requestTransfer(t: TestStack, agent: string, to: string, over: Record<string, unknown> = {}): Promise<any> {
  const r = await t.call('api', 'POST', `/api/agents/${agent}/ownership/transfer`, { admin: true, body: { to_owner_id: to, reason: 'team change', ...over } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

export function step(t: TestStack, agent: string, transfer: string, verb: 'accept' | 'reject' | 'cancel' | 'force-assign', opts: { token?: string; body?: unknown } = {}) {
  return t.call('api', 'POST', `/api/agents/${agent}/ownership/transfer/${transfer}/${verb}`, {
    admin: true,
    headers: opts.token ? { 'x-acceptance-token': opts.token } : {},
    body: opts.body,
  });
}

export async function ownerOf(t: TestStack, agent: string): Promise<string> {
  const r = await t.call('api', 'GET', `/api/agents/${agent}`, { admin: true });
  return r.body.owner_id;
}

/** The management events about these resources, in chain order. */
export async function eventsOf(t: TestStack, ...resourceIds: string[]): Promise<any[]> {
  return t.testDb.owner.query(
    `SELECT event_type, resource_type, resource_id, actor, "before", "after", leaf_index FROM audit_management_events WHERE resource_id = ANY($1::text[]) ORDER BY event_sequence`,
    [resourceIds],
  );
}
