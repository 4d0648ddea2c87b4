/**
 * Test helpers for the context streams: an independent gRPC client (@grpc/grpc-js loading
 * spec/context.proto with @grpc/proto-loader, nothing of ours), small content (bundles and
 * tags made through the API), agents with keys and Subscribe tokens.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { Http2SessionManager } from '@connectrpc/connect-node';
import type http2 from 'node:http2';
import { onTestFinished } from 'vitest';
import type { TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';

const PROTO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../spec/context.proto');

const definition = protoLoader.loadSync(PROTO, { keepCase: true, longs: Number, enums: String, defaults: true, arrays: true, objects: true });
const pkg = grpc.loadPackageDefinition(definition) as any;
const ContextServiceClient = pkg.svc.context.v1.ContextService as grpc.ServiceClientConstructor;

export interface WireMessage {
  type: 'CONTEXT_MESSAGE_TYPE_SNAPSHOT' | 'CONTEXT_MESSAGE_TYPE_UPDATE' | 'CONTEXT_MESSAGE_TYPE_HEARTBEAT';
  tag: string;
  bundle_id: string;
  bundle_version: string;
  resolved_bundle_ids: string[];
  context_yaml: string;
  scd_ids: string[];
  scd_content: Record<string, string>;
  sequence: number;
  timestamp: number;
}

export const SNAPSHOT = 'CONTEXT_MESSAGE_TYPE_SNAPSHOT';
export const UPDATE = 'CONTEXT_MESSAGE_TYPE_UPDATE';
export const HEARTBEAT = 'CONTEXT_MESSAGE_TYPE_HEARTBEAT';

/** A grpc-js client of the stack's context service (plaintext HTTP/2). */
export function grpcClient(t: { url(name: 'context-grpc'): string }): grpc.Client & Record<string, any> {
  const target = new URL(t.url('context-grpc')).host;
  // A subchannel pool of its own: close() then ends the connection at once (the global pool
  // keeps it for a while, which the teardown check reports as a leak).
  return new ContextServiceClient(target, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }) as any;
}

/** One Subscribe call, collecting what it receives. */
export class Stream {
  readonly messages: WireMessage[] = [];
  status: grpc.StatusObject | null = null;
  error: (Error & { code?: number; details?: string }) | null = null;
  readonly call: grpc.ClientReadableStream<WireMessage>;
  private waiters: Array<() => void> = [];

  constructor(client: any, req: { tag: string; agent_id: string; auth_token: string }) {
    this.call = client.Subscribe(req);
    this.call.on('data', (m: WireMessage) => {
      this.messages.push(m);
      this.kick();
    });
    this.call.on('error', (e: any) => {
      this.error = e;
      this.kick();
    });
    this.call.on('status', (s: grpc.StatusObject) => {
      this.status = s;
      this.kick();
    });
  }

  /** Context messages (heartbeats left out). */
  get contexts(): WireMessage[] {
    return this.messages.filter((m) => m.type !== HEARTBEAT);
  }

  /** Resolves when `pred` holds (checked on every event), rejects after `ms`. */
  async until(pred: (s: Stream) => boolean, ms = 5000, what = 'condition'): Promise<void> {
    const deadline = Date.now() + ms;
    while (!pred(this)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.messages.map((m) => [m.type, m.sequence, m.bundle_version]))} status=${this.status?.code} ${this.status?.details ?? ''}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  contextCount(n: number, ms?: number): Promise<void> {
    return this.until((s) => s.contexts.length >= n, ms, `${n} context messages`);
  }

  ended(ms?: number): Promise<grpc.StatusObject> {
    return this.until((s) => s.status !== null, ms, 'stream end').then(() => this.status!);
  }

  cancel(): void {
    this.call.cancel();
  }

  private kick(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

let n = 0;
const uniq = () => `${process.pid}-${Date.now().toString(36)}-${(n++).toString(36)}`;

/** An active agent with one key; `token` is a Subscribe token minted with that key. */
export async function agentWithKey(t: TestStack, over: Record<string, unknown> = {}): Promise<{ agentId: string; apiKey: string; keyId: string; token: string }> {
  const agent = await makeAgent(t, over);
  const key = await issueKey(t, agent.agent_id);
  const r = await t.call('api', 'POST', '/api/context/token', { apiKey: key.api_key });
  if (r.status !== 200) throw new Error(`mint token: ${r.status} ${JSON.stringify(r.body)}`);
  return { agentId: agent.agent_id, apiKey: key.api_key, keyId: key.key_id, token: r.body.token };
}

/** Publishes a concern bundle version with `scds` SCDs (through the API) and returns its id. */
async function publishBundle(t: TestStack, bundleId: string, version: string, scdCount = 2, label = 'x'): Promise<void> {
  const name = bundleId.slice('bundle:'.length);
  const documents = Array.from({ length: scdCount }, (_, i) => ({
    id: `scd:project:${name}-${label}-${i}`,
    type: 'concern',
    title: `SCD ${i} of ${name} ${version}`,
    version: '1.0.0',
    description: `Test SCD ${i}`,
    content: { rule: `rule ${i} of ${name} at ${version}`, padding: 'p'.repeat(64) },
    provenance: { created_by: 'tests', created_at: new Date().toISOString() },
  }));
  const body = {
    id: bundleId,
    type: 'concern',
    version,
    title: `Bundle ${name}`,
    description: 'Test bundle for the context streams',
    scds: documents.map((d) => d.id),
    imports: [],
    provenance: { created_by: 'tests', created_at: new Date().toISOString() },
    documents,
  };
  const r = await t.call('api', 'POST', '/api/bundles', { admin: true, body });
  if (r.status !== 201) throw new Error(`publish bundle: ${r.status} ${JSON.stringify(r.body)}`);
}

/** A fresh tag on a fresh bundle with two published versions (1.0.0, tagged; 1.1.0). */
export async function taggedBundle(t: TestStack): Promise<{ tag: string; bundleId: string }> {
  const u = uniq();
  const bundleId = `bundle:stream-${u}`;
  await publishBundle(t, bundleId, '1.0.0', 2, 'a');
  await publishBundle(t, bundleId, '1.1.0', 3, 'b');
  const tag = `stream-${u}:prod`;
  const r = await t.call('api', 'POST', '/api/tags', { admin: true, body: { tag, bundle_id: bundleId, bundle_version: '1.0.0' } });
  if (r.status !== 201) throw new Error(`create tag: ${r.status} ${JSON.stringify(r.body)}`);
  return { tag, bundleId };
}

export async function moveTag(t: TestStack, tag: string, bundleId: string, version: string): Promise<any> {
  const r = await t.call('api', 'PUT', `/api/tags/${encodeURIComponent(tag)}`, { admin: true, body: { bundle_id: bundleId, bundle_version: version } });
  if (r.status !== 200) throw new Error(`move tag: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * An HTTP/2 session for a connect-node transport to port 8002, ended when the test finishes:
 * connect-node keeps an idle session open for minutes, and the harness's teardown check
 * fails on a connection left open.
 */
export function session(t: TestStack): Http2SessionManager {
  const sm = new Http2SessionManager(t.url('context-grpc'));
  onTestFinished(() => sm.abort());
  return sm;
}

/** One gRPC message: the compressed flag, the length, the bytes. */
export function grpcFrame(msg: Buffer, flag = 0): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flag;
  head.writeUInt32BE(msg.length, 1);
  return Buffer.concat([head, msg]);
}

export interface RawAnswer {
  status: string | undefined;
  body: Buffer;
}

/**
 * One unary plain gRPC call of `path` on `session` (node:http2, no gRPC library): its
 * grpc-status (from the trailers, or a Trailers-Only answer) and the raw response bytes.
 * `beforeEnd` runs after the headers and first bytes went out.
 */
export function rawGrpcCall(
  session: http2.ClientHttp2Session,
  path: string,
  body: Buffer,
  headers: http2.OutgoingHttpHeaders = {},
  beforeEnd?: (req: http2.ClientHttp2Stream) => Promise<void>,
): Promise<RawAnswer> {
  const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...headers });
  const chunks: Buffer[] = [];
  const done = new Promise<RawAnswer>((resolve, reject) => {
    let status: string | undefined;
    req.on('response', (h) => (status ??= h['grpc-status'] as string | undefined));
    req.on('trailers', (h) => (status = h['grpc-status'] as string | undefined));
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('close', () => resolve({ status, body: Buffer.concat(chunks) }));
    req.on('error', reject);
  });
  if (beforeEnd) {
    // The callback runs once the bytes went to the socket (after the HEADERS).
    req.write(body.subarray(0, 3), () => void beforeEnd(req).then(() => req.end(body.subarray(3))));
  } else req.end(body);
  return done;
}
