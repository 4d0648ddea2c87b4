import { describe, expect, it } from 'vitest';
import { Code, ConnectError } from '@connectrpc/connect';
import { Subscriber } from './subscriber.js';
import type { TagState } from './tag-state.js';

const state = (v: string): TagState => ({
  key: `bundle:x\u00001.0.${v}\u0000t`,
  tag: 'x:prod',
  updatedAt: new Date(),
  fields: { bundleId: 'bundle:x', bundleVersion: `1.0.${v}`, resolvedBundleIds: [], contextYaml: '', scdIds: [], scdContent: {} },
  encoded: [],
  bytes: new Uint8Array(0),
});
const info = { subscriptionId: 's', tag: 'x:prod', agentId: 'agent:a', authMethod: 'token' as const, keyId: null };
const never = new AbortController().signal;

describe('Subscriber mailbox', () => {
  it('keeps only the newest pending state, and a pending SNAPSHOT stays a SNAPSHOT', async () => {
    const s = new Subscriber(info);
    s.offer('snapshot', state('1'));
    s.offer('update', state('2'));
    s.offer('update', state('3'));
    const n = await s.next(1000, never);
    expect(n).toMatchObject({ kind: 'message', type: 'snapshot' });
    expect(n.kind === 'message' && n.state.fields.bundleVersion).toBe('1.0.3');
    s.offer('update', state('4'));
    expect(await s.next(1000, never)).toMatchObject({ kind: 'message', type: 'update' });
    expect(s.lastKey).toBe(state('4').key);
  });
  it('heartbeats only once open, after the idle period', async () => {
    const s = new Subscriber(info);
    const first = s.next(30, never);
    setTimeout(() => s.offer('snapshot', state('1')), 80);
    expect(await first).toMatchObject({ kind: 'message', type: 'snapshot' }); // no heartbeat before the SNAPSHOT
    expect(await s.next(20, never)).toEqual({ kind: 'heartbeat' });
  });
  it('ends with the first end asked, and refuses offers after it', async () => {
    const s = new Subscriber(info);
    s.end(new ConnectError('bye', Code.Unavailable), 'server_shutdown');
    s.end(null, 'client_closed');
    expect(s.offer('snapshot', state('1'))).toBe(false);
    const n = await s.next(1000, never);
    expect(n).toMatchObject({ kind: 'end', reason: 'server_shutdown' });
  });
  it('wakes on abort', async () => {
    const s = new Subscriber(info);
    const ac = new AbortController();
    const p = s.next(10_000, ac.signal);
    ac.abort();
    expect(await p).toEqual({ kind: 'aborted' });
  });
});
