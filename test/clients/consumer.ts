/**
 * A consumer of @svc/client as a user outside this repository writes one: it imports only
 * the package (resolved through node_modules to clients/ts/dist), and is type-checked by
 * `make typecheck` (tsconfig includes test/), so a client whose types drift from the spec
 * fails CI here. ts-client.test.ts runs it in a process of its own against a running stack.
 *
 * Input (environment): SVC_API_URL, SVC_CONTEXT_URL, SVC_ADMIN_KEY, SVC_ROLE_ID (a role the
 * deployed content applies to), SVC_TAG (a tag to subscribe to). Output: one JSON object on
 * stdout. Any step that does not answer as the spec says throws (exit code 1).
 */
import { randomBytes } from 'node:crypto';
import { ContextMessageType, createContextClient, createControlPlaneClient, type ContextProtocol } from '@svc/client';

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

function check(ok: boolean, what: string, got: unknown): void {
  if (!ok) throw new Error(`${what}: got ${JSON.stringify(got)}`);
}

const apiUrl = need('SVC_API_URL');
const contextUrl = need('SVC_CONTEXT_URL');
const roleId = need('SVC_ROLE_ID');
const tag = need('SVC_TAG');
const api = createControlPlaneClient({ baseUrl: apiUrl, adminKey: need('SVC_ADMIN_KEY') });

// An agent with only the spec's required fields (status, overrides, ... take their defaults).
const agentId = `agent:consumer-${randomBytes(6).toString('hex')}`;
const created = await api.POST('/api/agents', { body: { agent_id: agentId, name: 'Consumer', role_id: roleId, allowed_intents: ['code_review'] } });
check(created.response.status === 201 && created.data?.agent_id === agentId && created.data.status === 'active', 'create agent', created.error ?? created.data);

// Type-level facts (never run): a body without a required field, and a field the Error body does not have, are refused.
void (() =>
  // @ts-expect-error role_id is required by the spec's AgentCreate
  api.POST('/api/agents', { body: { agent_id: agentId, name: 'Consumer', allowed_intents: [] } }));

// A missing agent: 404, with the spec's Error body typed in `error`.
const missing = await api.GET('/api/agents/{agent_id}', { params: { path: { agent_id: `${agentId}-missing` } } });
const notFound: 'not_found' | undefined = missing.error?.error === 'not_found' ? missing.error.error : undefined;
check(missing.response.status === 404 && notFound === 'not_found' && typeof missing.error?.message === 'string' && missing.data === undefined, 'read a missing agent', missing.error);
// @ts-expect-error the Error body has `error`, `message` and `details`; there is no `code`
void missing.error?.code;

// A key for the agent (its plaintext is returned once).
const issued = await api.POST('/api/agents/{agent_id}/api-keys', { params: { path: { agent_id: agentId } }, body: { name: 'consumer' } });
check(issued.response.status === 201 && !!issued.data?.api_key.startsWith('sk_'), 'issue a key', issued.error);
const apiKey = issued.data!.api_key;

// The REST context API with the same key (sent as X-API-Key).
const rest = await createControlPlaneClient({ baseUrl: apiUrl, apiKey }).POST('/api/context', { body: { task_type: 'code_review', params: { consumer: 'rest' } } });
check(rest.response.status === 200 && rest.data?.success === true && rest.data.agent_id === agentId, 'POST /api/context', rest.error ?? rest.data);

// Context over each protocol; the client sends the key, the caller never repeats it.
const context: Record<string, { success: boolean; requestId: string; agentId: string; scdIds: string[] }> = {};
for (const protocol of ['connect', 'grpc', 'grpc-web'] satisfies ContextProtocol[]) {
  const client = createContextClient({ baseUrl: contextUrl, apiKey, protocol });
  try {
    const res = await client.requestContext({ taskType: 'code_review', params: { consumer: protocol } });
    check(res.success, `requestContext over ${protocol}`, res);
    context[protocol] = { success: res.success, requestId: res.requestId, agentId: res.agentId, scdIds: res.scdIds };
    // @ts-expect-error the key is the client's: it is not an input of requestContext
    void (() => client.requestContext({ taskType: 'code_review', apiKey }));
  } finally {
    client.close();
  }
}

// Subscribe with the same key: the first message is the tag's snapshot.
const subscriber = createContextClient({ baseUrl: contextUrl, apiKey });
let snapshot: { tag: string; bundleId: string; scdIds: string[] } | null = null;
try {
  for await (const m of subscriber.subscribe({ tag, agentId })) {
    if (m.type === ContextMessageType.HEARTBEAT) continue;
    check(m.type === ContextMessageType.SNAPSHOT, 'first Subscribe message', m.type);
    snapshot = { tag: m.tag, bundleId: m.bundleId, scdIds: m.scdIds };
    break; // leaving the loop cancels the stream
  }
} finally {
  subscriber.close();
}

process.stdout.write(`${JSON.stringify({ agentId, keyId: issued.data!.key_id, notFound: missing.error, rest: { requestId: rest.data!.request_id, scdIds: rest.data!.scd_ids }, context, snapshot })}\n`);
