/**
 * gRPC Subscribe through a client that is not ours (@grpc/grpc-js + proto-loader on
 * spec/context.proto): SNAPSHOT then UPDATE on a tag move, the end statuses, the records in
 * active_subscriptions and context_service_events, heartbeats, revocation, shutdown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { SignJWT } from 'jose';
import { startTestStack, JWT_SECRET, type TestStack } from '../harness.js';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcWebTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { signWebhookToken } from '../../src/core/tokens/jwt.js';
import { fanout } from '../../src/context/fanout/index.js';
import { ContextMessageType, ContextService, type ContextMessage } from '../../gen/proto/context_pb.js';
import { agentWithKey, grpcClient, session, HEARTBEAT, moveTag, SNAPSHOT, sleep, Stream, taggedBundle, UPDATE } from './fixtures.js';

let t: TestStack;
let client: any;
beforeAll(async () => {
  t = await startTestStack({ services: ['api', 'context-grpc', 'context-webhook'], env: { CONTEXT_HEARTBEAT_SECONDS: '1' } });
  client = grpcClient(t);
}, 180_000);
afterAll(async () => {
  client?.close();
  await t?.close();
});

const waitFor = async (fn: () => Promise<boolean>, ms = 5000) => {
  const deadline = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(50);
  }
};

describe('Subscribe', () => {
  it('sends a SNAPSHOT of the flattened context, then an UPDATE when the tag moves', async () => {
    const { tag, bundleId } = await taggedBundle(t);
    const a = await agentWithKey(t);
    const s = new Stream(client, { tag, agent_id: a.agentId, auth_token: a.token });
    await s.contextCount(1);
    const snap = s.contexts[0]!;
    expect(snap.type).toBe(SNAPSHOT);
    expect(snap.sequence).toBe(1);
    expect(snap).toMatchObject({ tag, bundle_id: bundleId, bundle_version: '1.0.0', resolved_bundle_ids: [`${bundleId}:1.0.0`] });
    expect(snap.scd_ids).toHaveLength(2);
    expect(Object.keys(snap.scd_content).sort()).toEqual([...snap.scd_ids].sort());
    expect(snap.context_yaml.length).toBeGreaterThan(0);
    expect(Math.abs(snap.timestamp - Date.now())).toBeLessThan(10_000);

    await moveTag(t, tag, bundleId, '1.1.0');
    await s.contextCount(2);
    const upd = s.contexts[1]!;
    expect(upd.type).toBe(UPDATE);
    expect(upd).toMatchObject({ tag, bundle_id: bundleId, bundle_version: '1.1.0', resolved_bundle_ids: [`${bundleId}:1.1.0`] });
    expect(upd.scd_ids).toHaveLength(3);
    expect(upd.scd_content[upd.scd_ids[0]!]).toContain('1.1.0');
    // Sequence numbers have no gap, heartbeats included.
    expect(s.messages.map((m) => m.sequence)).toEqual(s.messages.map((_, i) => i + 1));

    // Moving back, and repointing to the same target (a new updated_at), each send an UPDATE.
    await moveTag(t, tag, bundleId, '1.0.0');
    await s.contextCount(3);
    await moveTag(t, tag, bundleId, '1.0.0');
    await s.contextCount(4);
    expect(s.contexts.slice(2).map((m) => [m.type, m.bundle_version])).toEqual([
      [UPDATE, '1.0.0'],
      [UPDATE, '1.0.0'],
    ]);
    s.cancel();
    await s.ended();
  });

  it("accepts the agent's own API key as auth_token", async () => {
    const { tag } = await taggedBundle(t);
    const a = await agentWithKey(t);
    const s = new Stream(client, { tag, agent_id: a.agentId, auth_token: a.apiKey });
    await s.contextCount(1);
    expect(s.contexts[0]!.type).toBe(SNAPSHOT);
    s.cancel();
    await s.ended();
  });

  it('does not send an unchanged state twice (webhook after the API move)', async () => {
    const { tag, bundleId } = await taggedBundle(t);
    const a = await agentWithKey(t);
    const s = new Stream(client, { tag, agent_id: a.agentId, auth_token: a.token });
    await s.contextCount(1);
    const moved = await moveTag(t, tag, bundleId, '1.1.0');
    await s.contextCount(2);
    const bearer = await signWebhookToken(JWT_SECRET, new Date());
    const body = { tag, bundle_id: bundleId, bundle_version: '1.1.0', updated_at: moved.updated_at };
    const r = await t.call('context-webhook', 'POST', '/webhook/tag-update', { body, headers: { authorization: `Bearer ${bearer}` } });
    expect(r.status).toBe(202);
    expect(r.body).toEqual({ status: 'accepted', delivered_to: 1 });
    await sleep(300);
    expect(s.contexts).toHaveLength(2);
    s.cancel();
    await s.ended();
  });

  it('sends a HEARTBEAT on an idle stream, numbered in sequence', async () => {
    const { tag } = await taggedBundle(t);
    const a = await agentWithKey(t);
    const s = new Stream(client, { tag, agent_id: a.agentId, auth_token: a.token });
    await s.until((x) => x.messages.some((m) => m.type === HEARTBEAT), 4000, 'a heartbeat');
    const hb = s.messages.find((m) => m.type === HEARTBEAT)!;
    expect(hb).toMatchObject({ tag, bundle_id: '', bundle_version: '', scd_ids: [], context_yaml: '' });
    expect(hb.sequence).toBe(2);
    s.cancel();
    await s.ended();
  });

  it('records the subscription and ends it when the client goes away', async () => {
    const { tag, bundleId } = await taggedBundle(t);
    const a = await agentWithKey(t);
    const s = new Stream(client, { tag, agent_id: a.agentId, auth_token: a.token });
    await s.contextCount(1);
    const open = await t.ctx.db.query<any>('SELECT * FROM active_subscriptions WHERE agent_id = $1', [a.agentId]);
    expect(open).toHaveLength(1);
    expect(open[0]).toMatchObject({ tag_name: tag, agent_id: a.agentId, process_id: t.ctx.processId, auth_method: 'token', ended_at: null });
    await moveTag(t, tag, bundleId, '1.1.0');
    await s.contextCount(2);
    s.cancel();
    await s.ended();
    await waitFor(async () => (await t.ctx.db.query<any>('SELECT ended_at FROM active_subscriptions WHERE agent_id = $1', [a.agentId]))[0]?.ended_at != null);
    const [ended] = await t.ctx.db.query<any>('SELECT * FROM active_subscriptions WHERE agent_id = $1', [a.agentId]);
    expect(ended.end_reason).toBe('client_closed');
    expect(ended.messages_sent).toBeGreaterThanOrEqual(2);
    const events = await t.ctx.db.query<any>('SELECT event_type, subscription_id FROM context_service_events WHERE agent_id = $1 ORDER BY id', [a.agentId]);
    expect(events.map((e) => e.event_type)).toEqual(['subscribe', 'unsubscribe']);
    expect(events.every((e) => e.subscription_id === open[0].subscription_id)).toBe(true);
    const delivered = await t.ctx.db.query<any>("SELECT details FROM context_service_events WHERE event_type = 'update_delivered' AND tag_name = $1", [tag]);
    expect(delivered).toHaveLength(1);
    expect(delivered[0].details).toMatchObject({ bundle_id: bundleId, bundle_version: '1.1.0', delivered_to: 1 });
  });
});

describe('Subscribe refusals end the stream with the right status', () => {
  let tag: string;
  let a: Awaited<ReturnType<typeof agentWithKey>>;
  beforeAll(async () => {
    ({ tag } = await taggedBundle(t));
    a = await agentWithKey(t);
  });
  const statusOf = async (req: { tag: string; agent_id: string; auth_token: string }) => {
    const s = new Stream(client, req);
    const st = await s.ended();
    expect(s.messages).toHaveLength(0);
    return st;
  };
  const sign = (claims: Record<string, unknown>, opts: { aud?: string; iss?: string; exp?: number; iat?: number; secret?: string; alg?: string } = {}) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT(claims)
      .setProtectedHeader({ alg: opts.alg ?? 'HS256' })
      .setAudience(opts.aud ?? 'svc-subscribe')
      .setIssuer(opts.iss ?? 'svc-control-plane')
      .setIssuedAt(opts.iat ?? now)
      .setExpirationTime(opts.exp ?? now + 600)
      .sign(new TextEncoder().encode(opts.secret ?? JWT_SECRET));
  };

  it('unknown tag: NOT_FOUND', async () => {
    expect((await statusOf({ tag: 'no-such-tag:prod', agent_id: a.agentId, auth_token: a.token })).code).toBe(grpc.status.NOT_FOUND);
  });
  it('malformed or empty tag, malformed agent_id: INVALID_ARGUMENT', async () => {
    expect((await statusOf({ tag: '', agent_id: a.agentId, auth_token: a.token })).code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((await statusOf({ tag: 'no colon', agent_id: a.agentId, auth_token: a.token })).code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((await statusOf({ tag, agent_id: 'bob', auth_token: a.token })).code).toBe(grpc.status.INVALID_ARGUMENT);
  });
  it('missing, garbage, forged, expired, wrong-audience or unknown-key token: UNAUTHENTICATED', async () => {
    const now = Math.floor(Date.now() / 1000);
    const cases = [
      '',
      'garbage',
      'sk_' + 'A'.repeat(40),
      await sign({ sub: a.agentId }, { secret: 'another-secret-another-secret-another-secret' }),
      await sign({ sub: a.agentId }, { iat: now - 1200, exp: now - 600 }),
      await sign({ sub: a.agentId }, { aud: 'svc-context-webhook' }),
      await sign({ sub: a.agentId }, { iss: 'someone-else' }),
      await signWebhookToken(JWT_SECRET, new Date()),
      `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: a.agentId, aud: 'svc-subscribe', iss: 'svc-control-plane', iat: now, exp: now + 60 })).toString('base64url')}.`,
    ];
    for (const auth_token of cases) {
      const st = await statusOf({ tag, agent_id: a.agentId, auth_token });
      expect(st.code, `token ${auth_token.slice(0, 20)}`).toBe(grpc.status.UNAUTHENTICATED);
      expect(st.details).not.toContain(auth_token || 'x'.repeat(99));
    }
  });
  it("another agent's token or key: PERMISSION_DENIED", async () => {
    const b = await agentWithKey(t);
    expect((await statusOf({ tag, agent_id: a.agentId, auth_token: b.token })).code).toBe(grpc.status.PERMISSION_DENIED);
    expect((await statusOf({ tag, agent_id: a.agentId, auth_token: b.apiKey })).code).toBe(grpc.status.PERMISSION_DENIED);
  });
  it('a suspended agent: PERMISSION_DENIED (token and key)', async () => {
    const c = await agentWithKey(t);
    const r = await t.call('api', 'PUT', `/api/agents/${c.agentId}`, { admin: true, body: { status: 'suspended' } });
    expect(r.status).toBe(200);
    expect((await statusOf({ tag, agent_id: c.agentId, auth_token: c.token })).code).toBe(grpc.status.PERMISSION_DENIED);
    expect((await statusOf({ tag, agent_id: c.agentId, auth_token: c.apiKey })).code).toBe(grpc.status.PERMISSION_DENIED);
  });
  it('refusals are recorded without the credential', async () => {
    await statusOf({ tag: 'no-such-tag:prod', agent_id: a.agentId, auth_token: a.token });
    const rows = await t.ctx.db.query<any>("SELECT * FROM context_service_events WHERE event_type = 'subscribe_refused' AND agent_id = $1", [a.agentId]);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.some((r) => r.details.code === 'NotFound' && r.tag_name === 'no-such-tag:prod')).toBe(true);
    expect(JSON.stringify(rows)).not.toContain(a.token);
    expect(JSON.stringify(rows)).not.toContain(a.apiKey);
  });
});

describe('open streams follow the credential', () => {
  it('suspending the agent ends its stream with PERMISSION_DENIED', async () => {
    const { tag } = await taggedBundle(t);
    const a = await agentWithKey(t);
    const s = new Stream(client, { tag, agent_id: a.agentId, auth_token: a.token });
    await s.contextCount(1);
    const r = await t.call('api', 'PUT', `/api/agents/${a.agentId}`, { admin: true, body: { status: 'suspended' } });
    expect(r.status).toBe(200);
    expect((await s.ended()).code).toBe(grpc.status.PERMISSION_DENIED);
  });
  it('revoking the key ends the streams opened with it (UNAUTHENTICATED)', async () => {
    const { tag } = await taggedBundle(t);
    const a = await agentWithKey(t);
    const s = new Stream(client, { tag, agent_id: a.agentId, auth_token: a.apiKey });
    const viaToken = new Stream(client, { tag, agent_id: a.agentId, auth_token: a.token });
    await s.contextCount(1);
    await viaToken.contextCount(1);
    const r = await t.call('api', 'DELETE', `/api/agents/${a.agentId}/api-keys/${a.keyId}?revoked_by=tests`, { admin: true });
    expect(r.status).toBe(204);
    expect((await s.ended()).code).toBe(grpc.status.UNAUTHENTICATED);
    // The minted token stays good while the agent is active.
    await sleep(300);
    expect(viaToken.status).toBeNull();
    viaToken.cancel();
    await viaToken.ended();
  });
});

describe('every protocol and codec the router serves carries the same messages', () => {
  // grpc-js above takes the direct binary gRPC path (subscribe-h2.ts); these go through the
  // Connect router: gRPC-Web binary, Connect binary and JSON, gRPC with the JSON codec.
  const transports = {
    'grpc-web binary': () => createGrpcWebTransport({ baseUrl: t.url('context-grpc'), httpVersion: '2', useBinaryFormat: true, sessionManager: session(t) }),
    'connect binary': () => createConnectTransport({ baseUrl: t.url('context-grpc'), httpVersion: '2', useBinaryFormat: true, sessionManager: session(t) }),
    'connect json': () => createConnectTransport({ baseUrl: t.url('context-grpc'), httpVersion: '2', useBinaryFormat: false, sessionManager: session(t) }),
    'grpc json': () => createGrpcTransport({ baseUrl: t.url('context-grpc'), useBinaryFormat: false, sessionManager: session(t) }),
  };
  it.each(Object.entries(transports))('%s', async (_name, make) => {
    const { tag, bundleId } = await taggedBundle(t);
    const a = await agentWithKey(t);
    const reference = new Stream(client, { tag, agent_id: a.agentId, auth_token: a.token });
    await reference.contextCount(1);
    const ac = new AbortController();
    const got: ContextMessage[] = [];
    const reading = (async () => {
      try {
        for await (const m of createClient(ContextService, make()).subscribe({ tag, agentId: a.agentId, authToken: a.token }, { signal: ac.signal })) {
          if (m.type !== ContextMessageType.HEARTBEAT) got.push(m);
        }
      } catch (e) {
        if (!ac.signal.aborted) throw e;
      }
    })();
    await waitFor(async () => got.length >= 1);
    await moveTag(t, tag, bundleId, '1.1.0');
    await waitFor(async () => got.length >= 2);
    await reference.contextCount(2);
    ac.abort();
    await reading;
    reference.cancel();
    await reference.ended();
    // Both streams are gone from the registry once their clients went away (no leak).
    await waitFor(async () => fanout(t.ctx).count(tag) === 0);
    expect(got.map((m) => m.type)).toEqual([ContextMessageType.SNAPSHOT, ContextMessageType.UPDATE]);
    for (const [i, m] of got.entries()) {
      const r = reference.contexts[i]!;
      expect(m).toMatchObject({ tag, bundleId: r.bundle_id, bundleVersion: r.bundle_version, resolvedBundleIds: r.resolved_bundle_ids, contextYaml: r.context_yaml, scdIds: r.scd_ids, scdContent: r.scd_content });
    }
  });
  it('a refusal has the same status on the router path', async () => {
    const transport = createConnectTransport({ baseUrl: t.url('context-grpc'), httpVersion: '2', sessionManager: session(t) });
    const a = await agentWithKey(t);
    await expect(
      (async () => {
        for await (const _ of createClient(ContextService, transport).subscribe({ tag: 'no-such-tag:prod', agentId: a.agentId, authToken: a.token })) void _;
      })(),
    ).rejects.toMatchObject({ code: 5 });
  });
});

describe('the direct binary gRPC path', () => {
  it("ends the stream at the client's deadline (grpc-timeout) with DEADLINE_EXCEEDED", async () => {
    const { tag } = await taggedBundle(t);
    const a = await agentWithKey(t);
    // A raw HTTP/2 client, so that only the server enforces the deadline.
    const session = http2.connect(t.url('context-grpc'));
    try {
      const msg = Buffer.concat(
        [[1, tag], [2, a.agentId], [3, a.token]].map(([no, v]) => {
          const b = Buffer.from(v as string);
          return Buffer.concat([Buffer.from([((no as number) << 3) | 2]), encodeVarint(b.length), b]);
        }),
      );
      const head = Buffer.alloc(5);
      head.writeUInt32BE(msg.length, 1);
      const req = session.request({ ':method': 'POST', ':path': '/svc.context.v1.ContextService/Subscribe', 'content-type': 'application/grpc', te: 'trailers', 'grpc-timeout': '1500m' });
      let bytes = 0;
      req.on('data', (d: Buffer) => (bytes += d.length));
      const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) => req.on('trailers', resolve));
      req.end(Buffer.concat([head, msg]));
      const started = Date.now();
      expect((await trailers)['grpc-status']).toBe(String(grpc.status.DEADLINE_EXCEEDED));
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
      expect(bytes).toBeGreaterThan(0); // the SNAPSHOT came first
    } finally {
      session.close();
    }
  });
  it('answers a malformed request with INVALID_ARGUMENT in the trailers', async () => {
    const session = http2.connect(t.url('context-grpc'));
    try {
      for (const body of [Buffer.from([0, 0, 0, 0, 9, 1, 2]), Buffer.from([0, 0, 0, 0, 2, 0xff, 0xff]), Buffer.alloc(0)]) {
        const req = session.request({ ':method': 'POST', ':path': '/svc.context.v1.ContextService/Subscribe', 'content-type': 'application/grpc', te: 'trailers' });
        const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) => req.on('trailers', resolve));
        req.on('data', () => {});
        req.end(body);
        expect((await trailers)['grpc-status']).toBe(String(grpc.status.INVALID_ARGUMENT));
      }
    } finally {
      session.close();
    }
  });
});

function encodeVarint(n: number): Buffer {
  const out: number[] = [];
  while (n > 127) {
    out.push((n & 127) | 128);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
}
