/** Small factories for content tests: unique bundle and SCD ids, payloads, publish/deploy through HTTP. */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { TestStack } from '../harness.js';

export const uid = (): string => randomUUID().replace(/-/g, '').slice(0, 10);

const PROVENANCE = { created_by: 'tests@example.com', created_at: '2026-01-01T00:00:00Z' };

/** A strictly conforming SCD document. */
export function scdDoc(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const tier = id.split(':')[1]!;
  return {
    id,
    type: tier,
    title: `Title of ${id}`,
    version: '1.0.0',
    description: `Description of ${id}`,
    content: { summary: `Summary of ${id}` },
    provenance: PROVENANCE,
    ...extra,
  };
}

export interface BundleOpts {
  version?: string;
  imports?: string[];
  scds?: string[];
  documents?: Array<Record<string, unknown>>;
  applies_to?: { roles: string[] };
  [k: string]: unknown;
}

export function bundle(id: string, type: string, o: BundleOpts = {}): Record<string, unknown> {
  const { version = '1.0.0', imports = [], scds, documents, ...rest } = o;
  const docs = documents ?? (scds ?? []).map((s) => scdDoc(s));
  const body: Record<string, unknown> = {
    id,
    type,
    version,
    title: `Bundle ${id}`,
    description: `Test bundle ${id}`,
    imports,
    scds: scds ?? docs.map((d) => d.id),
    provenance: PROVENANCE,
    ...rest,
  };
  if (docs.length) body.documents = docs;
  return body;
}

/** A concern bundle with `n` fresh project SCDs (ids returned). */
export function concern(name: string, n: number, o: BundleOpts = {}): { body: Record<string, unknown>; scds: string[]; id: string } {
  const id = `bundle:${name}`;
  const scds = o.scds ?? Array.from({ length: n }, (_, i) => `scd:project:${name}-${i}`);
  return { body: bundle(id, 'concern', { ...o, scds }), scds, id };
}

export async function publish(t: TestStack, body: Record<string, unknown>, status = 201): Promise<any> {
  const r = await t.call('api', 'POST', '/api/bundles', { admin: true, body });
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
}

export async function deploy(t: TestStack, bundles: Array<[string, string]>, status = 201): Promise<any> {
  const r = await t.call('api', 'POST', '/api/deploy', { admin: true, body: { project_bundles: bundles.map(([id, version]) => ({ id, version })) } });
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
}

export const path = (id: string, version: string): string => `/api/bundles/${encodeURIComponent(id)}/versions/${version}`;
