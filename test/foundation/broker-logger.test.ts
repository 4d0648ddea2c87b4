import { describe, expect, it } from 'vitest';
import { createMemoryBroker, createRedisBroker, type Broker } from '../../src/shared/broker.js';
import { memoryLogger } from '../../src/shared/logger.js';
import { REAL_REDIS } from '../harness.js';

async function roundTrip(b: Broker) {
  const channel = `svc:test:${Math.random()}`;
  const got: string[] = [];
  const unsub = await b.subscribe(channel, (m) => got.push(m));
  expect(await b.publish(channel, 'hello')).toBe(true);
  for (let i = 0; i < 50 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
  expect(got).toEqual(['hello']);
  await unsub();
  await b.publish(channel, 'after');
  await new Promise((r) => setTimeout(r, 50));
  expect(got).toEqual(['hello']);
}

describe('broker', () => {
  it('in-process: delivers to subscribers until they unsubscribe', async () => {
    const b = createMemoryBroker();
    await roundTrip(b);
    await expect(b.ping()).resolves.toBeUndefined();
    await b.close();
  });
  it.runIf(REAL_REDIS)('Redis: delivers across connections', async () => {
    const b = await createRedisBroker(process.env.REDIS_URL!, memoryLogger());
    await roundTrip(b);
    await expect(b.ping()).resolves.toBeUndefined();
    await b.close();
    // Closed: PING fails at once (no offline queue), as it does while Redis is down.
    await expect(b.ping()).rejects.toThrow();
  });
});

describe('logger', () => {
  it('masks secrets by key and by shape', () => {
    const key = 'sk_' + 'A1b2C3d4E5'.repeat(5);
    const l = memoryLogger();
    l.info(`called with ${key}`, { api_key: 'x', password: 'p', nested: { authorization: 'Bearer y', note: `used ${key}` }, admin: 'admin_abcdefghijklmnopqrstuvwxyz', ok: 'visible', error: new Error(`refused ${key}`) });
    const out = l.lines.join('\n');
    expect(out).not.toContain(key);
    expect(out).not.toContain('admin_abcdefghijklmnopqrstuvwxyz');
    expect(out).not.toContain('Bearer y');
    expect(out).toContain('visible');
  });
  it('writes JSON lines with the level', () => {
    const l = memoryLogger('info');
    l.debug('hidden');
    l.warn('shown', { token: 'secret-value' });
    expect(l.lines).toHaveLength(1);
    const rec = JSON.parse(l.lines[0]);
    expect(rec).toMatchObject({ level: 'warn', msg: 'shown', token: '[redacted]' });
  });
});
