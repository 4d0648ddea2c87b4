/**
 * The transparency log through the real interfaces (issue 21): context answers and output
 * receipts carry their leaf index; the checkpoint, key, tiles, entry bundles and proofs over
 * REST on 8000 and gRPC/Connect on 8002; witnesses' cosignatures; verify's tree check.
 * Proofs are checked with the independent RFC 9162 verifier of test/tlog/rfc9162.ts against
 * leaf hashes computed here from the records as the read endpoint returns them.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import canonicalize from 'canonicalize';
import { createClient, ConnectError, Code } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { fromBinary } from '@bufbuild/protobuf';
import http2 from 'node:http2';
import { startTestStack, TLOG_KEY, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { grpcFrame, rawGrpcCall, session } from '../context/fixtures.js';
import { ConsistencyProofSchema, TransparencyLogService } from '../../gen/proto/context_pb.js';
import { transparencyLog } from '../../src/core/tlog/log.js';
import { leafCount } from '../../src/core/tlog/leaves.js';
import { cosign, generateWitnessKey } from '../../src/core/tlog/cosignature.js';
import { signNote, generateNoteKey } from '../../src/core/tlog/note.js';
import { rfcVerifyConsistency as verifyConsistency, rfcVerifyInclusion as verifyInclusion } from './rfc9162.js';

const witness = generateWitnessKey('witness.test/w1');
const stranger = generateWitnessKey('witness.test/stranger');

let t: TestStack;
let key: string;
const requestIds: string[] = [];
const leafOf = new Map<string, number>();

const ask = (task_type: string) => t.call('api', 'POST', '/api/context', { apiKey: key, body: { task_type } });
const leafHash = (data: Buffer) => createHash('sha256').update(Buffer.concat([Buffer.from([0]), data])).digest();
const canonical = (v: unknown) => Buffer.from((canonicalize as unknown as (x: unknown) => string)(v), 'utf8');

/** The served checkpoint, parsed by hand: body lines, then signature lines. */
async function checkpoint(): Promise<{ note: string; body: string; size: number; root: Buffer; sigs: string[] }> {
  const r = await t.call('api', 'GET', '/api/audit/tlog/checkpoint');
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
  const note = r.body as string;
  const [body, sigs] = note.split('\n\n');
  const [, size, root] = body!.split('\n');
  return { note, body: `${body}\n`, size: Number(size), root: Buffer.from(root!, 'base64'), sigs: sigs!.trimEnd().split('\n') };
}

beforeAll(async () => {
  t = await startTestStack({ services: ['api', 'context-grpc'], env: { TLOG_WITNESS_KEYS: witness.verifierKey } });
  const agent = await makeAgent(t, { allowed_intents: ['triage'] });
  key = (await issueKey(t, agent.agent_id)).api_key;
  for (let i = 0; i < 40; i++) {
    const r = await ask(i % 7 === 3 ? 'not_allowed' : 'triage');
    requestIds.push(r.body.request_id);
    leafOf.set(r.body.request_id, r.body.audit_leaf_index);
  }
  await transparencyLog(t.ctx).integrate();
});
afterAll(async () => {
  await t?.close();
});

describe('leaf indexes in answers', () => {
  it('context answers (served and refused) and output receipts carry consecutive leaf indexes', async () => {
    const leaves = requestIds.map((id) => leafOf.get(id));
    expect(leaves).toEqual(leaves.map((_, i) => leaves[0]! + i));
    const out = await t.call('api', 'POST', '/api/audit/output', { apiKey: key, body: { request_id: requestIds[0], output: { text: 'done' } } });
    expect(out.status).toBe(201);
    expect(out.body.leaf_index).toBe(leaves[leaves.length - 1]! + 1);
    const got = await t.call('api', 'GET', `/api/audit/output/${out.body.output_id}`, { apiKey: key });
    expect(got.body.leaf_index).toBe(out.body.leaf_index);
    const next = await ask('triage');
    expect(next.body.audit_leaf_index).toBe(out.body.leaf_index + 1);
    requestIds.push(next.body.request_id);
    leafOf.set(next.body.request_id, next.body.audit_leaf_index);
    await transparencyLog(t.ctx).integrate();
  });
});

describe('checkpoint, key, tiles and proofs over REST', () => {
  it('serves a checkpoint signed by the log key, covering every record', async () => {
    const k = await t.call('api', 'GET', '/api/audit/tlog/key');
    expect(k.body).toBe(`${TLOG_KEY.verifierKey}\n`);
    const c = await checkpoint();
    expect(c.body.split('\n')[0]).toBe('svc.test/audit-log');
    // 41 context requests, 1 output, and the management events (the agent's, its key's).
    expect(c.size).toBe(await leafCount(t.ctx.db));
    expect(c.size).toBeGreaterThanOrEqual(43);
    expect(c.sigs).toHaveLength(1);
    expect(c.sigs[0]).toMatch(/^\u2014 svc\.test\/audit-log [A-Za-z0-9+/=]+$/);
  });

  it('entry bundles hold the records as the read endpoints return them; every inclusion proof verifies', async () => {
    const c = await checkpoint();
    const denied = await t.call('api', 'GET', '/api/audit/tlog/tile/entries/000.p/42');
    expect(denied.status).toBe(401);
    const res = await fetch(`${t.url('api')}/api/audit/tlog/tile/entries/000.p/${c.size}`, { headers: { 'x-admin-key': (await import('../harness.js')).ADMIN_KEY, connection: 'close' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const bundle = Buffer.from(await res.arrayBuffer());
    const entries: Buffer[] = [];
    for (let off = 0; off < bundle.length; ) {
      const n = bundle.readUInt16BE(off);
      entries.push(bundle.subarray(off + 2, off + 2 + n));
      off += 2 + n;
    }
    expect(entries).toHaveLength(c.size);
    const recs = await t.call('api', 'GET', '/api/audit/requests?limit=1000', { admin: true });
    for (const rec of recs.body.records) expect(entries[rec.leaf_index]!.equals(canonical(rec))).toBe(true);
    const events = await t.call('api', 'GET', '/api/audit/events?limit=1000', { admin: true });
    expect(events.body.events.length).toBeGreaterThan(0);
    for (const e of events.body.events) expect(entries[e.leaf_index]!.equals(canonical(e))).toBe(true);
    for (let i = 0; i < c.size; i++) {
      const p = await t.call('api', 'GET', `/api/audit/proof/inclusion?leaf_index=${i}&tree_size=${c.size}`);
      expect(p.status).toBe(200);
      const hashes = p.body.hashes.map((h: string) => Buffer.from(h, 'base64'));
      expect(verifyInclusion(leafHash(entries[i]!), i, c.size, hashes, c.root)).toBe(true);
    }
    const byId = await t.call('api', 'GET', `/api/audit/proof/inclusion?request_id=${requestIds[5]}`);
    expect(byId.body.leaf_index).toBe(leafOf.get(requestIds[5]!));
    expect(byId.body.tree_size).toBe(c.size);
  });

  it('hash tiles are public; a full tile is immutable; consistency proofs verify between checkpoints', async () => {
    const before = await checkpoint();
    for (let i = 0; i < 230; i++) await ask('triage');
    await transparencyLog(t.ctx).integrate();
    const after = await checkpoint();
    expect(after.size).toBe(before.size + 230);
    const full = await fetch(`${t.url('api')}/api/audit/tlog/tile/0/000`, { headers: { connection: 'close' } });
    expect(full.status).toBe(200);
    expect(full.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await full.arrayBuffer()).byteLength).toBe(256 * 32);
    const partial = await fetch(`${t.url('api')}/api/audit/tlog/tile/0/001.p/${after.size - 256}`, { headers: { connection: 'close' } });
    expect((await partial.arrayBuffer()).byteLength).toBe((after.size - 256) * 32);
    for (const from of [0, 1, 2, 7, before.size, after.size - 1, after.size]) {
      const p = await t.call('api', 'GET', `/api/audit/proof/consistency?from=${from}&to=${after.size}`);
      expect(p.status).toBe(200);
      expect(p.body).toMatchObject({ from, to: after.size });
    }
    const p = await t.call('api', 'GET', `/api/audit/proof/consistency?from=${before.size}`);
    expect(verifyConsistency(before.size, after.size, p.body.hashes.map((h: string) => Buffer.from(h, 'base64')), before.root, after.root)).toBe(true);
  });

  it('refuses bad proof and tile requests with the spec error body', async () => {
    const c = await checkpoint();
    const cases: Array<[string, number]> = [
      [`/api/audit/proof/inclusion?leaf_index=${c.size}&tree_size=${c.size}`, 400],
      ['/api/audit/proof/inclusion?leaf_index=1&request_id=x', 400],
      ['/api/audit/proof/inclusion', 400],
      ['/api/audit/proof/inclusion?leaf_index=abc', 400],
      ['/api/audit/proof/inclusion?leaf_index=-1', 400],
      // Not decimal digits, or past 2^53 - 1: refused, never read as another leaf (0x1 was leaf 1,
      // 9007199254740993 leaf 9007199254740992).
      ['/api/audit/proof/inclusion?leaf_index=0x1&tree_size=2', 400],
      ['/api/audit/proof/inclusion?leaf_index=1e0&tree_size=2', 400],
      ['/api/audit/proof/inclusion?leaf_index=%201&tree_size=2', 400],
      ['/api/audit/proof/inclusion?leaf_index=9007199254740993', 400],
      ['/api/audit/proof/consistency?from=%2B1&to=2', 400],
      ['/api/audit/proof/consistency?from=1&to=99999999999999999999', 400],
      [`/api/audit/proof/inclusion?leaf_index=0&tree_size=${c.size + 1}`, 404],
      ['/api/audit/proof/inclusion?request_id=no-such-request', 404],
      [`/api/audit/proof/consistency?from=${c.size}&to=${c.size - 1}`, 400],
      ['/api/audit/proof/consistency?from=1.5', 400],
      ['/api/audit/proof/consistency', 400],
      [`/api/audit/proof/consistency?from=0&to=${c.size + 1}`, 404],
      ['/api/audit/tlog/tile/0/0000', 400],
      ['/api/audit/tlog/tile/0/000.p/0', 400],
      ['/api/audit/tlog/tile/0/000.p/256', 400],
      ['/api/audit/tlog/tile/9/000', 404],
      ['/api/audit/tlog/tile/0/x001/000', 404],
      ['/api/audit/tlog/tile/1/000', 404],
      [`/api/audit/tlog/tile/0/001.p/${c.size - 255}`, 404],
    ];
    for (const [p, status] of cases) {
      const r = await t.call('api', 'GET', p);
      expect([p, r.status]).toEqual([p, status]);
      expect(r.body).toMatchObject({ error: expect.any(String), message: expect.any(String) });
    }
  });
});

describe('witnesses', () => {
  it('accepts a configured witness cosignature of a checkpoint this log signed, and serves it', async () => {
    const c = await checkpoint();
    const line = cosign(c.body, witness.signerKey, Math.floor(Date.now() / 1000)).trimEnd();
    const r = await t.call('api', 'POST', '/api/audit/tlog/cosignature', { body: `${c.note}${line}\n`, headers: { 'content-type': 'text/plain' } });
    expect([r.status, r.body]).toEqual([201, { tree_size: c.size, witness: 'witness.test/w1' }]);
    const again = await t.call('api', 'POST', '/api/audit/tlog/cosignature', { body: `${c.note}${line}\n`, headers: { 'content-type': 'text/plain' } });
    expect(again.status).toBe(200);
    const served = await checkpoint();
    expect(served.sigs).toEqual([c.sigs[0], line]);
  });

  it('refuses an unknown witness, a bad signature, a note this log did not sign, and a wrong media type, changing nothing', async () => {
    const c = await checkpoint();
    const before = await t.ctx.db.query('SELECT * FROM audit_tlog_cosignatures');
    // The note as the log signed it (the served one already carries w1's cosignature).
    const logNote = `${c.body}\n${c.sigs[0]}\n`;
    const now = Math.floor(Date.now() / 1000);
    const unknown = cosign(c.body, stranger.signerKey, now).trimEnd();
    const good = cosign(c.body, witness.signerKey, now).trimEnd();
    const bad = good.slice(0, -6) + (good.endsWith('AAAA==') ? 'BBBB==' : 'AAAA==');
    const forged = signNote(c.body, generateNoteKey('svc.test/audit-log').signerKey);
    const post = (body: string, type = 'text/plain') => t.call('api', 'POST', '/api/audit/tlog/cosignature', { body, headers: { 'content-type': type } });
    expect((await post(`${logNote}${unknown}\n`)).status).toBe(403);
    expect((await post(`${logNote}${bad}\n`)).status).toBe(400);
    expect((await post(`${forged}${good}\n`)).status).toBe(400);
    expect((await post(logNote)).status).toBe(400);
    expect((await post('not a note')).status).toBe(400);
    expect((await post(`${logNote}${good}\n`, 'application/json')).status).toBe(415);
    expect(await t.ctx.db.query('SELECT * FROM audit_tlog_cosignatures')).toEqual(before);
  });
});

describe('gRPC TransparencyLogService on 8002', () => {
  // Plain binary gRPC is answered before the Connect router (transparency-log-h2.ts); the
  // others go through the router: the same answers and the same refusals on each.
  const transports = {
    'gRPC (binary, the direct path)': () => createGrpcTransport({ baseUrl: t.url('context-grpc'), sessionManager: session(t) }),
    'Connect (binary, the router)': () => createConnectTransport({ baseUrl: t.url('context-grpc'), httpVersion: '2', useBinaryFormat: true, sessionManager: session(t) }),
    'gRPC-Web (binary, the router)': () => createGrpcWebTransport({ baseUrl: t.url('context-grpc'), httpVersion: '2', useBinaryFormat: true, sessionManager: session(t) }),
  };
  it.each(Object.entries(transports))('serves the checkpoint and proofs, with INVALID_ARGUMENT and NOT_FOUND for bad requests: %s', async (_, transport) => {
    const client = createClient(TransparencyLogService, transport());
    const c = await checkpoint();
    const cp = await client.getCheckpoint({});
    expect(cp.treeSize).toBe(BigInt(c.size));
    expect(Buffer.from(cp.rootHash).equals(c.root)).toBe(true);
    expect(cp.note.startsWith(c.note)).toBe(true);
    const inc = await client.getInclusionProof({ leaf: { case: 'requestId', value: requestIds[3]! } });
    const rest = await t.call('api', 'GET', `/api/audit/proof/inclusion?request_id=${requestIds[3]}`);
    expect(inc.hashes.map((h) => Buffer.from(h).toString('base64'))).toEqual(rest.body.hashes);
    const con = await client.getConsistencyProof({ from: 3n });
    expect(con.to).toBe(BigInt(c.size));
    const code = async (p: Promise<unknown>) => {
      try {
        await p;
        return Code.Unknown - 100;
      } catch (e) {
        return ConnectError.from(e).code;
      }
    };
    expect(await code(client.getConsistencyProof({ from: 10n, to: 5n }))).toBe(Code.InvalidArgument);
    expect(await code(client.getInclusionProof({ leaf: { case: 'leafIndex', value: BigInt(c.size) } }))).toBe(Code.InvalidArgument);
    expect(await code(client.getInclusionProof({}))).toBe(Code.InvalidArgument);
    // An empty or over-long request id, as the REST route's contract refuses it (it was NOT_FOUND).
    expect(await code(client.getInclusionProof({ leaf: { case: 'requestId', value: '' } }))).toBe(Code.InvalidArgument);
    expect(await code(client.getInclusionProof({ leaf: { case: 'requestId', value: 'r'.repeat(1025) } }))).toBe(Code.InvalidArgument);
    expect(await code(client.getInclusionProof({ leaf: { case: 'requestId', value: 'no-such-request' } }))).toBe(Code.NotFound);
    expect(await code(client.getConsistencyProof({ from: 0n, to: BigInt(c.size + 5) }))).toBe(Code.NotFound);
  });

  it('answers a malformed plain gRPC call on the direct path with its status, and the next call as usual', async () => {
    const h2 = http2.connect(t.url('context-grpc'));
    try {
      const call = (method: string, body: Buffer) => rawGrpcCall(h2, `/${TransparencyLogService.typeName}/${method}`, body);
      // Field 1 (from) as a length-delimited field: not a GetConsistencyProofRequest.
      expect((await call('GetConsistencyProof', grpcFrame(Buffer.from([0x0a, 0x02, 0x01, 0x02])))).status).toBe(String(Code.InvalidArgument));
      expect((await call('GetConsistencyProof', grpcFrame(Buffer.from([0x08, 0x03]), 1))).status).toBe(String(Code.Internal));
      expect((await call('GetConsistencyProof', Buffer.from([0, 0]))).status).toBe(String(Code.InvalidArgument));
      const ok = await call('GetConsistencyProof', grpcFrame(Buffer.from([0x08, 0x03])));
      expect(ok.status).toBe('0');
      const con = fromBinary(ConsistencyProofSchema, ok.body.subarray(5));
      const rest = await t.call('api', 'GET', `/api/audit/proof/consistency?from=3&to=${con.to}`);
      expect(con.hashes.map((h) => Buffer.from(h).toString('base64'))).toEqual(rest.body.hashes);
    } finally {
      h2.close();
    }
  });
});

describe('GET /api/audit/verify', () => {
  it('checks the stored tree against the records and the latest checkpoint', async () => {
    await transparencyLog(t.ctx).integrate();
    const v = await t.call('api', 'GET', '/api/audit/verify', { admin: true });
    expect(v.body.status).toBe('ok');
    expect(v.body.transparency_log).toMatchObject({ status: 'ok', tampered_at_leaf: null, error: null });
    expect(v.body.transparency_log.tree_size).toBe(v.body.transparency_log.leaf_count);
    expect(v.body.transparency_log.checkpoint_tree_size).toBe(v.body.transparency_log.leaf_count);
  });
});
