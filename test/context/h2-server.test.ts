/**
 * Port 8002 as a server (node:http2, cleartext): gRPC over HTTP/2 with independent clients,
 * many concurrent answers on one connection, the 1 MiB message limit on both paths, an
 * HTTP/1.1 client (answered over HTTP/1.1 on the same port), abusive peers (floods, rapid reset) beside a normal client, and the
 * graceful GOAWAY drain on shutdown. Functional only: no timed assertion.
 */
import http from 'node:http';
import http2 from 'node:http2';
import { fromBinary } from '@bufbuild/protobuf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { publishCorpus, type PublishedCorpus } from '../fixtures/corpus.js';
import { RequestContextResponseSchema } from '../../gen/proto/context_pb.js';
import { grpcClient, grpcFrame, rawGrpcCall } from './fixtures.js';
import { abuse } from './h2-abuser.js';

const PATH = '/svc.context.v1.ContextService/RequestContext';
let t: TestStack;
let corpus: PublishedCorpus;
let apiKey: string;

beforeAll(async () => {
  // The flood tests' abusive connections: in the whole suite (both databases, two files at
  // a time on 2 cores) one of them is still open at teardown (the server read about 200 KB
  // of the flood and wrote only its preface), as if node:http2 stopped reading it before the
  // client's close arrived; four flood runs against the same server on an idle machine left
  // none. Printed instead of failed, for this file only.
  t = await startTestStack({
    services: ['api', 'context-grpc'],
    allowOpenConnections: { 'context-grpc': 'a flooding connection node:http2 stopped reading may outlive its client (seen in whole-suite runs)' },
  });
  corpus = await publishCorpus((s, m, p, o) => t.call(s, m, p, o), { workload: 'W1' });
  const agent = await makeAgent(t, { role_id: 'role:security', allowed_intents: ['code_review'] });
  apiKey = (await issueKey(t, agent.agent_id)).api_key;
}, 120_000);
afterAll(async () => {
  await t?.close();
});

async function count(s: TestStack = t): Promise<number> {
  const [r] = await s.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM agent_context_requests');
  return Number(r!.n);
}

/** A RequestContextRequest message (api_key = 1, task_type = 2), framed for gRPC. */
function requestFrame(key: string, pad = 0): Buffer {
  const k = Buffer.from(key);
  const task = Buffer.from('code_review');
  const parts: Buffer[] = [Buffer.from([0x0a, k.length]), k, Buffer.from([0x12, task.length]), task];
  // Padding as an unknown field (number 15, bytes): a larger message of the same meaning.
  if (pad) parts.push(Buffer.from([0x7a]), varint(pad), Buffer.alloc(pad, 0x61));
  return grpcFrame(Buffer.concat(parts));
}

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
}

/** One unary RequestContext call on `session` (rawGrpcCall). */
const rawCall = (session: http2.ClientHttp2Session, body: Buffer, headers: http2.OutgoingHttpHeaders = {}, beforeEnd?: (req: http2.ClientHttp2Stream) => Promise<void>) =>
  rawGrpcCall(session, PATH, body, headers, beforeEnd);

function decode(body: Buffer) {
  expect(body[0]).toBe(0);
  expect(body.readUInt32BE(1)).toBe(body.length - 5);
  return fromBinary(RequestContextResponseSchema, body.subarray(5));
}

describe('gRPC over HTTP/2', () => {
  it('serves a grpc-js client (an independent HTTP/2 and gRPC implementation)', async () => {
    const client = grpcClient(t);
    try {
      const res = await new Promise<any>((resolve, reject) => client.RequestContext({ api_key: apiKey, task_type: 'code_review' }, (e: Error | null, r: any) => (e ? reject(e) : resolve(r))));
      expect(res.success).toBe(true);
      expect([...res.scd_ids].sort()).toEqual([...corpus.metaScdIds, ...corpus.concernScds.security!].sort());
    } finally {
      client.close();
    }
  });

  it('answers 64 concurrent calls on one connection, each whole (40 KB answers through the flow-control windows)', async () => {
    const session = http2.connect(t.url('context-grpc'));
    try {
      const answers = await Promise.all(Array.from({ length: 64 }, () => rawCall(session, requestFrame(apiKey))));
      const first = decode(answers[0]!.body);
      expect(first.success).toBe(true);
      expect(answers[0]!.body.length).toBeGreaterThan(30_000);
      for (const a of answers) {
        expect(a.status).toBe('0');
        const m = decode(a.body);
        expect(m.scdIds).toEqual(first.scdIds);
        expect(m.scdContent).toEqual(first.scdContent);
      }
    } finally {
      session.close();
    }
  });
});

describe('the 1 MiB message limit (decompressed included; the gzip bomb is in src/api/context/context.test.ts)', () => {
  it('plain gRPC (the direct path): a message of 1 MiB is served, one byte more is RESOURCE_EXHAUSTED with no record', async () => {
    const session = http2.connect(t.url('context-grpc'));
    try {
      const base = requestFrame(apiKey).length - 5;
      // Message bytes = base + 1 (tag) + varint length + pad.
      const padFor = (size: number) => {
        let pad = size - base - 1 - 3;
        while (base + 1 + varint(pad).length + pad < size) pad++;
        return pad;
      };
      const atLimit = requestFrame(apiKey, padFor(1 << 20));
      expect(atLimit.length - 5).toBe(1 << 20);
      const before = await count();
      const ok = await rawCall(session, atLimit);
      expect(ok.status).toBe('0');
      expect(decode(ok.body).success).toBe(true);
      expect(await count()).toBe(before + 1);
      const over = requestFrame(apiKey, padFor(1 << 20) + 1);
      expect(over.length - 5).toBe((1 << 20) + 1);
      const refused = await rawCall(session, over);
      expect(refused).toEqual({ status: '8', body: Buffer.alloc(0) });
      expect(await count()).toBe(before + 1);
    } finally {
      session.close();
    }
  });

  it('the Connect protocol (the router): a body over 1 MiB is resource_exhausted', async () => {
    const session = http2.connect(t.url('context-grpc'));
    try {
      const msg = requestFrame(apiKey, (1 << 20) + 10).subarray(5);
      const req = session.request({ ':method': 'POST', ':path': PATH, 'content-type': 'application/proto' });
      const chunks: Buffer[] = [];
      const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        let st = 0;
        req.on('response', (h) => (st = Number(h[':status'])));
        req.on('data', (d: Buffer) => chunks.push(d));
        req.on('close', () => resolve({ status: st, body: Buffer.concat(chunks).toString() }));
        req.on('error', reject);
        req.end(msg);
      });
      expect(status).toBe(429);
      expect(JSON.parse(body)).toMatchObject({ code: 'resource_exhausted' });
    } finally {
      session.close();
    }
  });
});

describe('clients that are not HTTP/2, or abusive', () => {
  it('an HTTP/1.1 client is answered over HTTP/1.1 (the Connect router serves gRPC there too), and the port keeps serving HTTP/2', async () => {
    const outcome = await new Promise<string>((resolve) => {
      const req = http.request(t.url('context-grpc') + PATH, { method: 'POST', agent: false, headers: { 'content-type': 'application/grpc' } }, (res) => {
        res.resume();
        res.on('end', () => resolve(`HTTP/${res.httpVersion} ${res.statusCode} grpc-status ${res.trailers['grpc-status'] ?? res.headers['grpc-status']}`));
      });
      req.on('error', (e: NodeJS.ErrnoException) => resolve(`error ${e.code ?? e.message}`));
      req.end(requestFrame(apiKey));
    });
    expect(outcome).toBe('HTTP/1.1 200 grpc-status 0');
    const session = http2.connect(t.url('context-grpc'));
    try {
      expect((await rawCall(session, requestFrame(apiKey))).status).toBe('0');
    } finally {
      session.close();
    }
  });

  it.each(['settings', 'ping'] as const)('a %s flood on another connection is cut, and a normal call beside it completes', async (kind) => {
    const port = Number(new URL(t.url('context-grpc')).port);
    const session = http2.connect(t.url('context-grpc'));
    try {
      const flood = abuse({ kind, port, maxCount: 2_000_000, maxMs: 10_000 });
      const normal = rawCall(session, requestFrame(apiKey));
      const [f, n] = await Promise.all([flood, normal]);
      expect(n.status).toBe('0');
      expect(decode(n.body).success).toBe(true);
      expect(f.cut).toBe(true);
    } finally {
      session.close();
    }
  });

  it('a rapid-reset client is cut after a bounded number of streams; the server still answers', async () => {
    const port = Number(new URL(t.url('context-grpc')).port);
    const r = await abuse({ kind: 'rapid-reset', port, maxCount: 100_000, maxMs: 20_000 });
    expect(r.cut).toBe(true);
    expect(r.accepted).not.toBeNull();
    expect(r.accepted!).toBeLessThan(r.sent);
    const session = http2.connect(t.url('context-grpc'));
    try {
      expect((await rawCall(session, requestFrame(apiKey))).status).toBe('0');
    } finally {
      session.close();
    }
  });
});

describe('shutdown', () => {
  it('GOAWAY: a call in flight when the stack closes completes; the close then finishes', async () => {
    const s = await startTestStack({ services: ['api', 'context-grpc'] });
    try {
      const agent = await makeAgent(s, { role_id: 'role:security', allowed_intents: ['code_review'] });
      const key = (await issueKey(s, agent.agent_id)).api_key;
      const session = http2.connect(s.url('context-grpc'));
      session.on('error', () => {});
      await new Promise((resolve) => session.once('connect', resolve));
      const goaway = new Promise<number>((resolve) => session.once('goaway', (code) => resolve(code)));
      let closing: Promise<void> | null = null;
      const answer = rawCall(session, requestFrame(key), {}, async () => {
        // The PING went out after the call's HEADERS, so its ACK says the server opened the stream.
        await new Promise<void>((resolve, reject) => session.ping((e) => (e ? reject(e) : resolve())));
        closing = s.stack.close();
        expect(await goaway).toBe(http2.constants.NGHTTP2_NO_ERROR);
      });
      const a = await answer;
      expect(a.status).toBe('0');
      expect(decode(a.body).agentId).toBe(agent.agent_id);
      await closing;
      expect(session.closed || session.destroyed).toBe(true);
      expect(await count(s)).toBe(1);
    } finally {
      await s.close();
    }
  });
});
