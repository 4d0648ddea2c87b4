import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson, licenseKeyHash, pickPayload, signatureHeaderValue } from './payload.js';
import { backoffMs, MAX_BACKOFF_MS, sleep, AbortedError } from './sender.js';
import { displayEndpoint, dueOn, utcDay } from './beacon.js';

describe('canonical JSON', () => {
  it('sorts keys recursively and uses compact separators', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: true, y: null }], c: 'x' } })).toBe('{"a":{"c":"x","d":[1,{"y":null,"z":true}]},"b":1}');
  });
  it('is what Python json.dumps(sort_keys=True, separators=(",", ":")) gives for the payload', () => {
    const p = pickPayload({
      scp_version: '0.3.0',
      reported_at: '2030-01-02T03:04:05.678Z',
      license_key_hash: 'ab'.repeat(32),
      deployment_id: '0b7c5a4e-1111-4222-8333-444455556666',
      agent_count: 3,
      active_agent_count: 2,
    });
    expect(canonicalJson(p)).toBe(
      '{"active_agent_count":2,"agent_count":3,"deployment_id":"0b7c5a4e-1111-4222-8333-444455556666","license_key_hash":"' +
        'ab'.repeat(32) +
        '","reported_at":"2030-01-02T03:04:05.678Z","scp_version":"0.3.0"}',
    );
  });
  it('keeps only the six fields', () => {
    const p = pickPayload({ deployment_id: 'd', license_key_hash: null, agent_count: 1, active_agent_count: 1, reported_at: 'r', scp_version: 'v', hostname: 'leak', email: 'x@y' } as any);
    expect(Object.keys(p).sort()).toEqual(['active_agent_count', 'agent_count', 'deployment_id', 'license_key_hash', 'reported_at', 'scp_version']);
  });
});

describe('signature', () => {
  it('is sha256=<hex HMAC-SHA256 of the canonical text>', () => {
    const body = '{"a":1}';
    const want = createHmac('sha256', 'k3y').update(body).digest('hex');
    expect(signatureHeaderValue(body, 'k3y')).toBe(`sha256=${want}`);
    expect(signatureHeaderValue(body, 'k3y')).toMatch(/^sha256=[0-9a-f]{64}$/);
  });
  it('license_key_hash is SHA-256 of the key, null without a key', () => {
    expect(licenseKeyHash('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(licenseKeyHash(null)).toBeNull();
  });
});

describe('schedule and retry timing', () => {
  it('attempt n waits base * 2^(n-1) seconds, capped', () => {
    expect([1, 2, 3, 4].map((n) => backoffMs(60, n))).toEqual([60_000, 120_000, 240_000, 480_000]);
    expect(backoffMs(0, 3)).toBe(0);
    expect(backoffMs(86400, 90)).toBe(MAX_BACKOFF_MS);
  });
  it('due time is daily_report_hour UTC of the day', () => {
    const d = new Date('2030-05-06T23:59:00Z');
    expect(new Date(dueOn(d, 2)).toISOString()).toBe('2030-05-06T02:00:00.000Z');
    expect(utcDay(d)).toBe('2030-05-06');
  });
  it('sleep is cancelled by the signal and leaves no timer', async () => {
    const ac = new AbortController();
    const p = sleep(60_000, ac.signal);
    ac.abort();
    await expect(p).rejects.toBeInstanceOf(AbortedError);
  });
});

describe('endpoint display', () => {
  it('masks a password in the URL and leaves other URLs untouched', () => {
    expect(displayEndpoint('https://user:hunter2@example.com/b')).toBe('https://user:***@example.com/b');
    expect(displayEndpoint('https://example.com')).toBe('https://example.com');
    expect(displayEndpoint(null)).toBeNull();
  });
});
