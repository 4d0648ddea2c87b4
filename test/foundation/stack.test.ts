import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import type { ServiceName } from '../../src/shared/service.js';

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
});
afterAll(async () => {
  await t?.close();
});

describe('every service boots and answers health', () => {
  const http: Array<[ServiceName, string, string]> = [
    ['api', '/health', 'api'],
    ['api', '/api/context/health', 'context'],
    ['rules', '/health', 'rules'],
    ['context-webhook', '/health', 'context'],
    ['telemetry', '/health', 'telemetry'],
    ['collector', '/health', 'collector'],
  ];
  it.each(http)('%s %s', async (svc, p, name) => {
    const r = await t.call(svc, 'GET', p);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ status: 'ok', service: name, version: '0.3.0' });
  });
});

describe('edge behaviour driven by the contract', () => {
  it('unknown path is 404 not_found', async () => {
    const r = await t.call('api', 'GET', '/nope');
    expect(r.status).toBe(404);
    expect(r.body.error).toBe('not_found');
  });
  it('wrong method is 405', async () => {
    const r = await t.call('api', 'DELETE', '/health');
    expect(r.status).toBe(405);
    expect(r.body.error).toBe('method_not_allowed');
  });
  it('admin route without key is 401 before anything else', async () => {
    const r = await t.call('api', 'POST', '/api/agents', { body: '{not json' });
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ error: 'auth_failed', message: 'Invalid admin API key' });
  });
  it('invalid JSON with the admin key is 400', async () => {
    const r = await t.call('api', 'POST', '/api/agents', { body: '{not json', admin: true });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('validation_error');
  });
  it('a contract violation is 400 with details', async () => {
    const r = await t.call('api', 'POST', '/api/agents', { body: { agent_id: 'bad id' }, admin: true });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('validation_error');
    expect(Array.isArray(r.body.details.errors)).toBe(true);
  });
});
