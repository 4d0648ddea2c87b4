/**
 * The shared admin-auth suite, over every AdminKey operation of every contract (the list
 * comes from the spec, not from a hand-written list): no key and a wrong key answer 401
 * `Invalid admin API key`; with ADMIN_API_KEY unset (empty) 503 `Admin API not configured`.
 * The check runs before any handler logic, so it holds even for unimplemented routes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { loadOperations, type LoadedOp } from './operations.js';
import { Rng, valid, type Schema } from './gen-values.js';

let ops: LoadedOp[];
let configured: TestStack;
let unconfigured: TestStack;

beforeAll(async () => {
  ops = (await loadOperations()).filter((o) => o.security.includes('AdminKey'));
  configured = await startTestStack();
  unconfigured = await startTestStack({ env: { ADMIN_API_KEY: '' }, testDb: configured.testDb });
});
afterAll(async () => {
  await unconfigured?.close();
  await configured?.close();
});

function requestFor(o: LoadedOp, base: string, r: Rng): { url: string; init: RequestInit } {
  let p = o.op.path;
  for (const prm of (o.op.parameters ?? []) as Array<{ name: string; in: string; schema?: Schema }>) {
    if (prm.in === 'path') p = p.replace(`{${prm.name}}`, encodeURIComponent(String(valid(prm.schema, r)).replace(/\//g, '_')));
  }
  const rb = (o.op.requestBody as any)?.content?.['application/json']?.schema as Schema | undefined;
  return { url: base + p, init: { method: o.op.method.toUpperCase(), headers: { 'content-type': 'application/json' }, body: rb ? JSON.stringify(valid(rb, r)) : undefined } };
}

async function expectRefused(o: LoadedOp, stack: TestStack, headers: Record<string, string>, status: number, message: string) {
  const { url, init } = requestFor(o, stack.url(o.service), new Rng(o.id.length));
  const res = await fetch(url, { ...init, headers: { ...(init.headers as Record<string, string>), ...headers, connection: 'close' } });
  const body = await res.json();
  expect({ op: o.id, status: res.status, body }).toEqual({ op: o.id, status, body: { error: status === 401 ? 'auth_failed' : 'unavailable', message } });
}

describe('admin-gated operations', () => {
  it('exist in the contract', () => {
    expect(ops.length).toBeGreaterThan(30);
  });
  it('refuse a missing admin key with 401', async () => {
    for (const o of ops) await expectRefused(o, configured, {}, 401, 'Invalid admin API key');
  });
  it('refuse a wrong admin key with 401', async () => {
    for (const o of ops) await expectRefused(o, configured, { 'x-admin-key': 'admin_wrong-key-000000000000000000' }, 401, 'Invalid admin API key');
  });
  it('refuse a key of the right length but one character off with 401', async () => {
    const { ADMIN_KEY } = await import('../harness.js');
    const off = ADMIN_KEY.slice(0, -1) + (ADMIN_KEY.endsWith('A') ? 'B' : 'A');
    for (const o of ops) await expectRefused(o, configured, { 'x-admin-key': off }, 401, 'Invalid admin API key');
  });
  it('answer 503 when ADMIN_API_KEY is not configured, whatever key is sent', async () => {
    for (const o of ops) {
      await expectRefused(o, unconfigured, {}, 503, 'Admin API not configured');
      await expectRefused(o, unconfigured, { 'x-admin-key': '' }, 503, 'Admin API not configured');
    }
  });
});

describe('ADMIN_API_KEYS: further admin keys, for rotation', () => {
  it('accepts ADMIN_API_KEY and every ADMIN_API_KEYS entry, on every service; any other key is 401; the keys alone (no ADMIN_API_KEY) configure the admin API', async () => {
    const { ADMIN_KEY } = await import('../harness.js');
    const { randomBytes } = await import('node:crypto');
    const next = `admin_${randomBytes(24).toString('base64url')}`;
    const third = `admin_${randomBytes(24).toString('base64url')}`;
    const rotating = await startTestStack({ env: { ADMIN_API_KEYS: `${next},${third}` }, testDb: configured.testDb, services: ['api', 'rules', 'telemetry'] });
    const onlyList = await startTestStack({ env: { ADMIN_API_KEY: '', ADMIN_API_KEYS: next }, testDb: configured.testDb, services: ['api'] });
    try {
      const get = (s: TestStack, svc: 'api' | 'rules' | 'telemetry', p: string, key: string) =>
        fetch(s.url(svc) + p, { headers: { 'x-admin-key': key, connection: 'close' } }).then((r) => r.status);
      for (const [svc, p] of [['api', '/api/agents'], ['rules', '/api/rules/rule-sets'], ['telemetry', '/stats']] as const) {
        for (const key of [ADMIN_KEY, next, third]) expect({ svc, status: await get(rotating, svc, p, key) }).toEqual({ svc, status: 200 });
        expect(await get(rotating, svc, p, `admin_${randomBytes(24).toString('base64url')}`)).toBe(401);
        expect(await get(rotating, svc, p, `${next},${third}`)).toBe(401);
      }
      expect(await get(onlyList, 'api', '/api/agents', next)).toBe(200);
      expect(await get(onlyList, 'api', '/api/agents', ADMIN_KEY)).toBe(401);
    } finally {
      await onlyList.close();
      await rotating.close();
    }
  });
});

describe('AUDITOR_API_KEYS: read-only keys', () => {
  it('an auditor key opens every operation that lists AuditorKey (the reads) and no other; with only auditor keys configured the admin-only operations answer 503', async () => {
    const { randomBytes } = await import('node:crypto');
    const aud = `audit_${randomBytes(24).toString('base64url')}`;
    const both = await startTestStack({ env: { AUDITOR_API_KEYS: `compliance:${aud}` }, testDb: configured.testDb, services: ['api'] });
    const onlyAuditors = await startTestStack({ env: { ADMIN_API_KEY: '', AUDITOR_API_KEYS: `compliance:${aud}` }, testDb: configured.testDb, services: ['api'] });
    try {
      const apiOps = ops.filter((o) => o.service === 'api');
      const reads = apiOps.filter((o) => o.security.includes('AuditorKey'));
      expect(reads.map((o) => o.op.method).every((m) => m === 'get')).toBe(true);
      expect(reads.length).toBeGreaterThan(15);
      for (const o of reads) {
        for (const stack of [both, onlyAuditors]) {
          const { url, init } = requestFor(o, stack.url('api'), new Rng(o.id.length));
          const res = await fetch(url, { ...init, headers: { 'x-admin-key': aud, connection: 'close' } });
          await res.body?.cancel(); // the audit stream stays open
          expect({ op: o.id, accepted: res.status !== 401 && res.status !== 503 }).toEqual({ op: o.id, accepted: true });
        }
      }
      for (const o of apiOps.filter((x) => !x.security.includes('AuditorKey'))) {
        await expectRefused(o, both, { 'x-admin-key': aud }, 401, 'Invalid admin API key');
        await expectRefused(o, onlyAuditors, { 'x-admin-key': aud }, 503, 'Admin API not configured');
      }
      // The tlog's entry bundles (admin key unless TLOG_PUBLIC=1) take an auditor key too.
      const entries = await fetch(`${both.url('api')}/api/audit/tlog/tile/entries/000.p/1`, { headers: { 'x-admin-key': aud, connection: 'close' } });
      await entries.body?.cancel();
      expect(entries.status).not.toBe(401);
    } finally {
      await onlyAuditors.close();
      await both.close();
    }
  });
});
