/**
 * POST /webhook/tag-update (port 8003): HS256 bearer per decisions.md, checked before the
 * body; the body is a hint (the tag is re-read); local delivery and broker publish. And
 * POST /api/context/token, which mints the Subscribe tokens.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT, decodeJwt, decodeProtectedHeader } from 'jose';
import { startTestStack, JWT_SECRET, type TestStack } from '../harness.js';
import { TAG_UPDATES_CHANNEL } from '../../src/shared/broker.js';
import { signSubscribeToken, signWebhookToken } from '../../src/core/tokens/jwt.js';
import { postTagUpdate } from '../../src/context/webhook/tag-update.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { agentWithKey, grpcClient, SNAPSHOT, sleep, Stream, taggedBundle, UPDATE } from './fixtures.js';

let t: TestStack;
let client: any;
beforeAll(async () => {
  t = await startTestStack({ services: ['api', 'context-grpc', 'context-webhook'] });
  client = grpcClient(t);
}, 180_000);
afterAll(async () => {
  client?.close();
  await t?.close();
});

const enc = (s: string) => new TextEncoder().encode(s);
const now = () => Math.floor(Date.now() / 1000);
const hook = (body: unknown, authorization?: string) =>
  t.call('context-webhook', 'POST', '/webhook/tag-update', { body, headers: authorization === undefined ? {} : { authorization } });

describe('webhook authentication', () => {
  const body = { tag: 'whatever:prod', bundle_id: 'bundle:x', bundle_version: '1.0.0', updated_at: new Date().toISOString() };
  const cases: Array<[string, () => Promise<string | undefined>]> = [
    ['missing', async () => undefined],
    ['not Bearer', async () => 'Basic dXNlcjpwYXNz'],
    ['empty bearer', async () => 'Bearer '],
    ['garbage', async () => 'Bearer not.a.jwt'],
    ['wrong secret', async () => `Bearer ${await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setAudience('svc-context-webhook').setIssuedAt().setExpirationTime('60s').sign(enc('x'.repeat(40)))}`],
    ['wrong audience (a Subscribe token)', async () => `Bearer ${await signSubscribeToken(JWT_SECRET, 'agent:a', new Date(), new Date(Date.now() + 60_000))}`],
    ['no audience', async () => `Bearer ${await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('60s').sign(enc(JWT_SECRET))}`],
    ['expired', async () => `Bearer ${await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setAudience('svc-context-webhook').setIssuedAt(now() - 200).setExpirationTime(now() - 100).sign(enc(JWT_SECRET))}`],
    ['lifetime over 300 s', async () => `Bearer ${await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setAudience('svc-context-webhook').setIssuedAt().setExpirationTime('600s').sign(enc(JWT_SECRET))}`],
    ['no exp', async () => `Bearer ${await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setAudience('svc-context-webhook').setIssuedAt().sign(enc(JWT_SECRET))}`],
    ['no iat', async () => `Bearer ${await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setAudience('svc-context-webhook').setExpirationTime('60s').sign(enc(JWT_SECRET))}`],
    ['alg none', async () => `Bearer ${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify({ aud: 'svc-context-webhook', iat: now(), exp: now() + 60 })).toString('base64url')}.`],
    ['HS512', async () => `Bearer ${await new SignJWT({}).setProtectedHeader({ alg: 'HS512' }).setAudience('svc-context-webhook').setIssuedAt().setExpirationTime('60s').sign(enc(JWT_SECRET + JWT_SECRET))}`],
  ];
  it.each(cases)('%s: 401 auth_failed with a Bearer challenge', async (_name, make) => {
    const r = await hook(body, await make());
    expect(r.status).toBe(401);
    expect(r.body.error).toBe('auth_failed');
    expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });
  it('authentication comes before the body: a bad body without a token is 401, not 400', async () => {
    expect((await hook({ nope: 1 })).status).toBe(401);
    const raw = await t.call('context-webhook', 'POST', '/webhook/tag-update', { body: '{not json' });
    expect(raw.status).toBe(401);
  });
  it('with a good token, a bad body is 400 and an unknown tag 404', async () => {
    const bearer = `Bearer ${await signWebhookToken(JWT_SECRET, new Date())}`;
    const bad = await hook({ tag: 'no colon' }, bearer);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('validation_error');
    const badJson = await t.call('context-webhook', 'POST', '/webhook/tag-update', { body: '{not json', headers: { authorization: bearer } });
    expect(badJson.status).toBe(400);
    const unknown = await hook(body, bearer);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('not_found');
  });
});

describe('webhook delivery', () => {
  it('re-reads the tag, delivers to local streams and publishes on svc:tag-updates', async () => {
    const { tag, bundleId } = await taggedBundle(t);
    const a = await agentWithKey(t);
    const s = new Stream(client, { tag, agent_id: a.agentId, auth_token: a.token });
    await s.contextCount(1);
    const heard: string[] = [];
    const off = await t.broker.subscribe(TAG_UPDATES_CHANNEL, (m) => heard.push(m));
    // The tag moved in the database behind the service's back (another control plane):
    // the webhook is the only notification.
    const [row] = await t.ctx.db.query<{ updated_at: Date }>(
      "UPDATE tags SET bundle_id = $2, bundle_version = '1.1.0', resolved_bundle_ids = $3, updated_at = now() WHERE tag_name = $1 RETURNING updated_at",
      [tag, bundleId, [`${bundleId}:1.1.0`]],
    );
    // The body may be stale or even lie about the version: the stored state is what is sent.
    const update = { tag, bundle_id: bundleId, bundle_version: '9.9.9', updated_at: row!.updated_at.toISOString() };
    const r = await hook(update, `Bearer ${await signWebhookToken(JWT_SECRET, new Date())}`);
    expect(r.status).toBe(202);
    expect(r.body).toEqual({ status: 'accepted', delivered_to: 1 });
    await s.contextCount(2);
    expect(s.contexts[1]).toMatchObject({ type: UPDATE, bundle_version: '1.1.0' });
    await sleep(100);
    expect(heard.map((m) => JSON.parse(m))).toContainEqual(update);
    expect(s.contexts).toHaveLength(2); // its own broker message changes nothing
    await off();
    s.cancel();
    await s.ended();
  });
  it('delivered_to is 0 when nobody subscribes', async () => {
    const { tag, bundleId } = await taggedBundle(t);
    const status = await postTagUpdate(t.url('context-webhook'), await signWebhookToken(JWT_SECRET, new Date()), { tag, bundle_id: bundleId, bundle_version: '1.0.0', updated_at: new Date().toISOString() });
    expect(status).toBe(202);
    // postTagUpdate's fetch keeps its connection in the global pool until it has been idle
    // about 4 s; the teardown check would count it as this file's leak. Wait for it to go.
    const server = t.stack.services['context-webhook']!.server;
    const deadline = Date.now() + 15_000;
    for (;;) {
      const open = await new Promise<number>((resolve, reject) => server.getConnections((e, n) => (e ? reject(e) : resolve(n))));
      if (open === 0) break;
      expect(Date.now(), 'the webhook client released its connection').toBeLessThan(deadline);
      await sleep(50);
    }
  });
});

describe('POST /api/context/token', () => {
  it('mints an HS256 Subscribe token for the calling agent', async () => {
    const agent = await makeAgent(t);
    const key = await issueKey(t, agent.agent_id);
    const r = await t.call('api', 'POST', '/api/context/token', { apiKey: key.api_key });
    expect(r.status).toBe(200);
    expect(r.body.agent_id).toBe(agent.agent_id);
    expect(decodeProtectedHeader(r.body.token)).toMatchObject({ alg: 'HS256' });
    const claims = decodeJwt(r.body.token);
    expect(claims).toMatchObject({ sub: agent.agent_id, aud: 'svc-subscribe', iss: 'svc-control-plane' });
    expect(claims.exp! - claims.iat!).toBe(900);
    expect(typeof claims.jti).toBe('string');
    expect(new Date(r.body.expires_at).getTime()).toBe(claims.exp! * 1000);
    const s = new Stream(client, { tag: (await taggedBundle(t)).tag, agent_id: agent.agent_id, auth_token: r.body.token });
    await s.contextCount(1);
    expect(s.contexts[0]!.type).toBe(SNAPSHOT);
    s.cancel();
    await s.ended();
  });
  it('honours ttl_seconds, bounded by the contract and by the key expiry', async () => {
    const agent = await makeAgent(t);
    const key = await issueKey(t, agent.agent_id, { expires_in_days: 1 });
    const short = await t.call('api', 'POST', '/api/context/token', { apiKey: key.api_key, body: { ttl_seconds: 60 } });
    expect(short.status).toBe(200);
    const c = decodeJwt(short.body.token);
    expect(c.exp! - c.iat!).toBe(60);
    const long = await t.call('api', 'POST', '/api/context/token', { apiKey: key.api_key, body: { ttl_seconds: 86_400 } });
    expect(long.status).toBe(200);
    expect(decodeJwt(long.body.token).exp! * 1000).toBeLessThanOrEqual(new Date(key.expires_at).getTime());
    for (const ttl of [59, 86_401, 'x']) {
      const bad = await t.call('api', 'POST', '/api/context/token', { apiKey: key.api_key, body: { ttl_seconds: ttl } });
      expect(bad.status).toBe(400);
    }
  });
  it('refuses a missing, unknown or revoked key and a suspended agent (401 auth_failed)', async () => {
    expect((await t.call('api', 'POST', '/api/context/token', {})).status).toBe(401);
    const unknown = await t.call('api', 'POST', '/api/context/token', { apiKey: 'sk_' + 'Z'.repeat(40) });
    expect(unknown.status).toBe(401);
    expect(unknown.body.error).toBe('auth_failed');
    const a = await agentWithKey(t);
    expect((await t.call('api', 'DELETE', `/api/agents/${a.agentId}/api-keys/${a.keyId}?revoked_by=tests`, { admin: true })).status).toBe(204);
    expect((await t.call('api', 'POST', '/api/context/token', { apiKey: a.apiKey })).status).toBe(401);
    const b = await agentWithKey(t);
    await t.call('api', 'PUT', `/api/agents/${b.agentId}`, { admin: true, body: { status: 'suspended' } });
    const susp = await t.call('api', 'POST', '/api/context/token', { apiKey: b.apiKey });
    expect(susp.status).toBe(401);
    expect(susp.body.message).toMatch(/suspended/i);
  });
});
