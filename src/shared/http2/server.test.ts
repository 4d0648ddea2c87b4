import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { createH2Server, encodeHeaders, H2Error, StreamResetError, type H2Server, type H2ServerOptions, type H2Stream } from './server.js';
import {
  F,
  PREFACE,
  RawClient,
  S,
  T,
  dataFrame,
  fieldOf,
  frame,
  goawayFrame,
  headersFrame,
  paddedDataFrame,
  pingFrame,
  requestBlock,
  requestFrame,
  rstFrame,
  settingsFrame,
  u32,
  windowUpdateFrame,
  type Frame,
} from './test-client.js';

// ---------------------------------------------------------------------------
// Fixtures.

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Srv {
  h2: H2Server;
  port: number;
  errors: unknown[];
  close(): Promise<void>;
}

async function start(onStream: (s: H2Stream) => void, opts: Partial<H2ServerOptions> = {}): Promise<Srv> {
  const errors: unknown[] = [];
  const h2 = createH2Server({ onStream, onError: (e) => errors.push(e), ...opts });
  await new Promise<void>((resolve) => h2.server.listen(0, '127.0.0.1', resolve));
  const port = (h2.server.address() as AddressInfo).port;
  const close = (): Promise<void> =>
    new Promise<void>((resolve) => {
      if (!h2.server.listening) return resolve();
      h2.server.close(() => resolve());
    });
  cleanups.push(async () => {
    h2.destroySessions();
    await close();
  });
  return { h2, port, errors, close };
}

async function raw(port: number, opts?: { autoWindow?: boolean }): Promise<RawClient> {
  const c = await RawClient.connect(port, opts);
  cleanups.push(() => c.close());
  return c;
}

/** A server whose handler keeps every stream open, and a client whose stream 1 has reached it. */
async function heldStream(): Promise<{ srv: Srv; c: RawClient; held: H2Stream[] }> {
  const held: H2Stream[] = [];
  const srv = await start((s) => void held.push(s));
  const c = await raw(srv.port);
  await c.handshake();
  c.send(requestFrame(1, '/hold'));
  await c.until(() => held.length === 1, 'the handler');
  return { srv, c, held };
}

/**
 * Sends `count` copies of the DATA frame `f` on stream `id` within the stream's
 * flow-control window, as a client must: the window starts at the INITIAL_WINDOW_SIZE of
 * the server's `settings` and grows with its WINDOW_UPDATEs. Returns that initial window.
 */
async function sendWithinWindow(c: RawClient, settings: Frame, id: number, f: Buffer, count: number): Promise<number> {
  let window = 65_535;
  for (let i = 0; i < settings.payload.length; i += 6) if (settings.payload.readUInt16BE(i) === S.INITIAL_WINDOW_SIZE) window = settings.payload.readUInt32BE(i + 2);
  const initial = window;
  c.onFrame = (fr) => {
    if (fr.type === T.WINDOW_UPDATE && fr.id === id) window += fr.payload.readUInt32BE(0);
  };
  const cost = f.length - 9;
  for (let sent = 0; sent < count; ) {
    if (window < cost) {
      await c.until(() => window >= cost, `a stream WINDOW_UPDATE after ${sent} frames (${sent * cost} bytes of window)`, 5000);
      continue;
    }
    const n = Math.min(count - sent, Math.floor(window / cost), 500);
    c.send(...Array.from({ length: n }, () => f));
    window -= n * cost;
    sent += n;
    await new Promise((r) => setImmediate(r));
  }
  return initial;
}

function nodeClient(port: number, options: http2.ClientSessionOptions = {}): http2.ClientHttp2Session {
  const client = http2.connect(`http://127.0.0.1:${port}`, options);
  client.on('error', () => {});
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        if (client.destroyed) return resolve();
        client.once('close', () => resolve());
        client.destroy();
      }),
  );
  return client;
}

interface NodeResponse {
  headers: http2.IncomingHttpHeaders;
  body: Buffer;
  trailers: http2.IncomingHttpHeaders | null;
}

function nodeRequest(client: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: Buffer | Buffer[]): Promise<NodeResponse> {
  return new Promise((resolve, reject) => {
    const req = client.request(headers, { endStream: body === undefined });
    let resHeaders: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders | null = null;
    const chunks: Buffer[] = [];
    req.on('response', (h) => (resHeaders = h));
    req.on('trailers', (t) => (trailers = t));
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => resolve({ headers: resHeaders, body: Buffer.concat(chunks), trailers }));
    req.on('error', reject);
    if (body !== undefined) {
      const parts = Array.isArray(body) ? body : [body];
      void (async () => {
        for (const p of parts) if (!req.write(p)) await new Promise((r) => req.once('drain', r));
        req.end();
      })();
    }
  });
}

/** Deterministic bytes. */
function pattern(n: number, seed = 0): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 101 + (i >>> 8) * 7) & 0xff;
  return b;
}

const OK = encodeHeaders([':status', '200', 'content-type', 'application/octet-stream']);

async function writeAll(s: H2Stream, body: Buffer, chunk = 16384): Promise<void> {
  for (let o = 0; o < body.length; o += chunk) {
    if (s.isClosed) return;
    if (!s.write(body.subarray(o, o + chunk))) await s.drain();
  }
}

function answer(s: H2Stream, body: Buffer | string = 'ok'): void {
  s.respond(OK);
  s.write(Buffer.from(body));
  s.end();
}

/** Resolves when `p` settles, or rejects after a generous guard. */
function guard<R>(p: Promise<R>, what: string, ms = 5000): Promise<R> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<R>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms);
    }),
  ]);
}

function deferred<R = void>(): { promise: Promise<R>; resolve: (v: R) => void } {
  let resolve!: (v: R) => void;
  const promise = new Promise<R>((r) => (resolve = r));
  return { promise, resolve };
}

/** Raw client, handshake done, then `bad` frames: expects GOAWAY with `code` and the socket closed. */
async function expectConnectionError(port: number, bad: Buffer[], code: number, settings: [number, number][] = []): Promise<void> {
  const c = await raw(port);
  await c.handshake(settings);
  c.send(...bad);
  const g = await c.goaway();
  expect(g.code).toBe(code);
  await guard(c.closedP, 'socket close after GOAWAY');
}

/** A simple handler: /hello answers "hello"; /echo answers the request body. */
function basicHandler(s: H2Stream): void {
  if (s.path === '/echo') {
    s.readAll(1 << 24).then(
      ({ body }) => answer(s, body),
      () => {},
    );
    return;
  }
  answer(s, 'hello');
}

// ---------------------------------------------------------------------------
// 1. Interop with node:http2.

describe('interop with the node:http2 client', () => {
  it('answers GET and POST with bodies', async () => {
    const srv = await start((s) => {
      if (s.method === 'POST') {
        s.readAll(1 << 20).then(
          ({ body, size }) => {
            s.respond(encodeHeaders([':status', '201', 'x-size', String(size), 'x-path', s.path]));
            s.write(Buffer.concat([Buffer.from('got:'), body]));
            s.end();
          },
          () => {},
        );
      } else {
        s.respond(encodeHeaders([':status', '200', 'x-method', s.method, 'x-agent', s.header('user-agent') ?? '']));
        s.end();
        void 0;
      }
    });
    const client = nodeClient(srv.port);
    const get = await nodeRequest(client, { ':path': '/a', 'user-agent': 'vitest' });
    expect(get.headers[':status']).toBe(200);
    expect(get.headers['x-method']).toBe('GET');
    expect(get.headers['x-agent']).toBe('vitest');
    expect(get.body.length).toBe(0);
    const body = pattern(5000, 1);
    const post = await nodeRequest(client, { ':path': '/b?q=1', ':method': 'POST' }, body);
    expect(post.headers[':status']).toBe(201);
    expect(post.headers['x-size']).toBe('5000');
    expect(post.headers['x-path']).toBe('/b?q=1');
    expect(post.body.equals(Buffer.concat([Buffer.from('got:'), body]))).toBe(true);
  });

  it('answers 200 concurrent requests with 200 KB bodies each, intact, through the client windows', async () => {
    const size = 200 * 1024;
    const srv = await start((s) => {
      const n = Number(s.path.slice('/big/'.length));
      s.respond(OK);
      void writeAll(s, pattern(size, n), 10_000).then(() => s.end());
    });
    const client = nodeClient(srv.port);
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => nodeRequest(client, { ':path': `/big/${i}` })));
    results.forEach((r, i) => {
      expect(r.headers[':status']).toBe(200);
      expect(r.body.length).toBe(size);
      expect(r.body.equals(pattern(size, i))).toBe(true);
    });
    expect(srv.errors).toEqual([]);
  }, 120_000);

  it('sends trailers when the handler ends with them', async () => {
    const srv = await start((s) => {
      s.respond(encodeHeaders([':status', '200', 'content-type', 'application/grpc']));
      s.write(Buffer.from('payload'));
      s.end(encodeHeaders(['grpc-status', '0', 'grpc-message', 'fine']));
    });
    const client = nodeClient(srv.port);
    const r = await nodeRequest(client, { ':path': '/svc/Method', ':method': 'POST', 'content-type': 'application/grpc' }, Buffer.from('x'));
    expect(r.body.toString()).toBe('payload');
    expect(r.trailers?.['grpc-status']).toBe('0');
    expect(r.trailers?.['grpc-message']).toBe('fine');
  });

  it('streams a request body over 1 MiB in many chunks through body() (window replenished)', async () => {
    const srv = await start((s) => {
      void (async () => {
        const parts: Buffer[] = [];
        for await (const c of s.body()) parts.push(Buffer.from(c));
        const all = Buffer.concat(parts);
        s.respond(encodeHeaders([':status', '200', 'x-size', String(all.length)]));
        s.write(all.subarray(0, 64));
        s.write(all.subarray(all.length - 64));
        s.end();
      })();
    });
    const client = nodeClient(srv.port);
    const chunks = Array.from({ length: 300 }, (_, i) => pattern(10_000, i)); // 3 MB, 3x the stream window
    const all = Buffer.concat(chunks);
    const r = await nodeRequest(client, { ':path': '/up', ':method': 'POST' }, chunks);
    expect(r.headers['x-size']).toBe(String(all.length));
    expect(r.body.equals(Buffer.concat([all.subarray(0, 64), all.subarray(all.length - 64)]))).toBe(true);
  }, 60_000);

  it('readAll with maxBytes smaller than the body reports the full size and keeps a prefix that fits', async () => {
    const maxBytes = 100_000;
    let seen: { body: Buffer; size: number } | null = null;
    const srv = await start((s) => {
      s.readAll(maxBytes).then(
        (r) => {
          seen = r;
          s.respond(encodeHeaders([':status', '200', 'x-size', String(r.size), 'x-kept', String(r.body.length)]));
          s.end();
        },
        () => {},
      );
    });
    const client = nodeClient(srv.port);
    const chunks = Array.from({ length: 150 }, (_, i) => pattern(10_000, i + 7)); // 1.5 MB
    const all = Buffer.concat(chunks);
    const r = await nodeRequest(client, { ':path': '/up', ':method': 'POST' }, chunks);
    expect(r.headers['x-size']).toBe(String(all.length));
    const got = seen as { body: Buffer; size: number } | null;
    expect(got).not.toBeNull();
    expect(got!.size).toBe(all.length);
    expect(got!.body.length).toBeLessThanOrEqual(maxBytes);
    // Whole DATA payloads are kept while they fit (at most one 16 KiB frame short).
    expect(got!.body.length).toBeGreaterThan(maxBytes - 16384);
    expect(got!.body.equals(all.subarray(0, got!.body.length))).toBe(true);
  }, 60_000);
});

// ---------------------------------------------------------------------------
// 2. Connection preface.

describe('connection preface', () => {
  it('answers an HTTP/1.1 request with 505 and closes the socket', async () => {
    const srv = await start(basicHandler);
    const sock = net.connect(srv.port, '127.0.0.1');
    cleanups.push(() => void sock.destroy());
    const chunks: Buffer[] = [];
    sock.on('data', (d: Buffer) => chunks.push(d));
    sock.on('error', () => {});
    const closed = new Promise<void>((r) => sock.once('close', () => r()));
    sock.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await guard(closed, 'socket close');
    const text = Buffer.concat(chunks).toString('latin1');
    expect(text).toContain('505');
    // An HTTP/1.1 client must be able to parse it: the status line comes first.
    expect(text.startsWith('HTTP/1.1 505 ')).toBe(true);
  });

  it('node:http client gets the 505 status', async () => {
    const srv = await start(basicHandler);
    const status = await guard(
      new Promise<number | string>((resolve) => {
        const req = http.get({ host: '127.0.0.1', port: srv.port, path: '/', agent: false }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', (e) => resolve(`error: ${e.message}`));
      }),
      'HTTP/1.1 response',
    );
    expect(status).toBe(505);
  });

  it('closes the socket on random garbage', async () => {
    let called = 0;
    const srv = await start(() => called++);
    const c = await raw(srv.port);
    c.send(Buffer.from('\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 definitely not a preface at all', 'latin1'));
    await guard(c.closedP, 'socket close');
    // Nothing but the server preface (SETTINGS, WINDOW_UPDATE) was sent.
    expect(c.frames.every((f) => f.type === T.SETTINGS || f.type === T.WINDOW_UPDATE)).toBe(true);
    expect(called).toBe(0);
  });

  it('accepts a slow preface split across several writes', async () => {
    const srv = await start(basicHandler);
    const c = await raw(srv.port);
    const bytes = Buffer.concat([PREFACE, settingsFrame([]), requestFrame(1, '/hello')]);
    const cuts = [1, 3, 10, 24, 25, 30, bytes.length - 5, bytes.length];
    let prev = 0;
    for (const cut of cuts) {
      c.send(bytes.subarray(prev, cut));
      prev = cut;
      // Let each piece reach the server on its own.
      await new Promise((r) => setTimeout(r, 5));
    }
    const r = await c.response(1);
    expect(fieldOf(r.headers, ':status')).toBe('200');
    expect(Buffer.concat(r.data).toString()).toBe('hello');
  });
});

// ---------------------------------------------------------------------------
// 3/4. SETTINGS, PING, flow control, frame size.

describe('SETTINGS, PING and flow control', () => {
  it("sends its SETTINGS first and ACKs the client's", async () => {
    const srv = await start(basicHandler, { maxConcurrentStreams: 77 });
    const c = await raw(srv.port);
    c.send(PREFACE, settingsFrame([[S.INITIAL_WINDOW_SIZE, 100_000]]));
    await c.waitFrame((f) => f.type === T.SETTINGS && (f.flags & F.ACK) !== 0, 'SETTINGS ACK');
    const first = c.frames[0]!;
    expect(first.type).toBe(T.SETTINGS);
    expect(first.flags).toBe(0);
    expect(first.id).toBe(0);
    const values = new Map<number, number>();
    for (let i = 0; i < first.payload.length; i += 6) values.set(first.payload.readUInt16BE(i), first.payload.readUInt32BE(i + 2));
    expect(values.get(S.MAX_CONCURRENT_STREAMS)).toBe(77);
    expect(values.get(S.INITIAL_WINDOW_SIZE)).toBe(1 << 20);
    expect(values.get(S.MAX_HEADER_LIST_SIZE)).toBe(65536);
    expect(c.frames.filter((f) => f.type === T.SETTINGS && f.flags & F.ACK).length).toBe(1);
  });

  it('answers PING with an ACK carrying the same payload, and ignores PING ACKs', async () => {
    const srv = await start(basicHandler);
    const c = await raw(srv.port);
    await c.handshake();
    const payload = Buffer.from('8 bytes!');
    c.send(pingFrame(Buffer.from('ignored!'), true), pingFrame(payload));
    const ack = await c.waitFrame((f) => f.type === T.PING, 'PING ACK');
    expect(ack.flags).toBe(F.ACK);
    expect(ack.payload.equals(payload)).toBe(true);
    await c.ping();
    expect(c.frames.filter((f) => f.type === T.PING).length).toBe(2);
  });

  /** Checks every DATA frame against the windows the client granted. */
  function windowChecker(c: RawClient, streamInitial: number, connInitial: number) {
    const st = {
      conn: connInitial,
      initial: streamInitial,
      streams: new Map<number, number>(),
      pendingDeltas: [] as number[],
      violations: [] as string[],
      got: new Map<number, number>(),
      total: 0,
      maxFrame: 0,
    };
    c.onFrame = (f: Frame) => {
      if (f.type === T.SETTINGS && f.flags & F.ACK) {
        const d = st.pendingDeltas.shift();
        if (d !== undefined) {
          st.initial += d;
          for (const [id, w] of st.streams) st.streams.set(id, w + d);
        }
      }
      if (f.type === T.DATA) {
        const n = f.payload.length;
        const w = st.streams.get(f.id) ?? st.initial;
        if (n > w) st.violations.push(`stream ${f.id}: ${n} bytes with window ${w}`);
        if (n > st.conn) st.violations.push(`connection: ${n} bytes with window ${st.conn}`);
        st.streams.set(f.id, w - n);
        st.conn -= n;
        st.got.set(f.id, (st.got.get(f.id) ?? 0) + n);
        st.total += n;
        st.maxFrame = Math.max(st.maxFrame, n);
      }
    };
    return {
      st,
      open(id: number) {
        st.streams.set(id, st.initial);
      },
      setInitial(v: number) {
        st.pendingDeltas.push(v - (st.initial + st.pendingDeltas.reduce((a, b) => a + b, 0)));
        c.send(settingsFrame([[S.INITIAL_WINDOW_SIZE, v]]));
      },
      grant(id: number, inc: number) {
        if (id === 0) st.conn += inc;
        else st.streams.set(id, (st.streams.get(id) ?? st.initial) + inc);
        c.send(windowUpdateFrame(id, inc));
      },
    };
  }

  it('honors SETTINGS_INITIAL_WINDOW_SIZE lowered then raised mid-response, and resumes after WINDOW_UPDATE', async () => {
    const total = 100_000;
    const body = pattern(total, 3);
    const srv = await start((s) => {
      s.respond(OK);
      void writeAll(s, body, 7000).then(() => s.end());
    });
    const c = await raw(srv.port, { autoWindow: false });
    await c.handshake([[S.INITIAL_WINDOW_SIZE, 10_000]]);
    const w = windowChecker(c, 10_000, 65_535);
    w.grant(0, 1_000_000);
    w.open(1);
    c.send(requestFrame(1, '/big'));
    await c.until(() => w.st.total === 10_000, '10000 bytes');
    await c.ping();
    expect(w.st.total).toBe(10_000);
    // Lower: the stream window goes to -6000; a WINDOW_UPDATE of 3000 leaves it negative.
    w.setInitial(4000);
    await c.until(() => w.st.pendingDeltas.length === 0, 'SETTINGS ACK');
    w.grant(1, 3000);
    await c.ping();
    expect(w.st.total).toBe(10_000);
    // Raise: the window becomes -3000 + 16000 = 13000.
    w.setInitial(20_000);
    await c.until(() => w.st.total === 23_000, '23000 bytes');
    await c.ping();
    expect(w.st.total).toBe(23_000);
    w.grant(1, total);
    const r = await c.response(1);
    expect(r.ended).toBe(true);
    expect(Buffer.concat(r.data).equals(body)).toBe(true);
    expect(w.st.violations).toEqual([]);
  });

  it('never exceeds the connection window across streams, and resumes after a connection WINDOW_UPDATE', async () => {
    const size = 50_000;
    const srv = await start((s) => {
      const n = Number(s.path.slice(1));
      s.respond(OK);
      void writeAll(s, pattern(size, n), 5000).then(() => s.end());
    });
    const c = await raw(srv.port, { autoWindow: false });
    await c.handshake([[S.INITIAL_WINDOW_SIZE, 1 << 20]]);
    const w = windowChecker(c, 1 << 20, 65_535);
    for (const id of [1, 3, 5]) {
      w.open(id);
      c.send(requestFrame(id, `/${id}`));
    }
    await c.until(() => w.st.total === 65_535, 'the connection window');
    await c.ping();
    expect(w.st.total).toBe(65_535);
    w.grant(0, 1000);
    await c.until(() => w.st.total === 66_535, '1000 more bytes');
    await c.ping();
    expect(w.st.total).toBe(66_535);
    w.grant(0, 3 * size);
    for (const id of [1, 3, 5]) {
      const r = await c.response(id);
      expect(Buffer.concat(r.data).equals(pattern(size, id))).toBe(true);
    }
    expect(w.st.violations).toEqual([]);
  });

  it('sends DATA frames of at most 16384 bytes by default', async () => {
    const body = pattern(200_000, 9);
    const srv = await start((s) => {
      s.respond(OK);
      s.write(body);
      s.end();
    });
    const c = await raw(srv.port, { autoWindow: false });
    await c.handshake([[S.INITIAL_WINDOW_SIZE, 1 << 20]]);
    c.send(windowUpdateFrame(0, 1 << 20));
    c.send(requestFrame(1, '/'));
    const r = await c.response(1);
    expect(Buffer.concat(r.data).equals(body)).toBe(true);
    const sizes = c.frames.filter((f) => f.type === T.DATA).map((f) => f.payload.length);
    expect(Math.max(...sizes)).toBe(16384);
  });

  it('sends larger DATA frames once the client raises SETTINGS_MAX_FRAME_SIZE to 65536, never beyond', async () => {
    const body = pattern(300_000, 10);
    const srv = await start((s) => {
      s.respond(OK);
      s.write(body);
      s.end();
    });
    const c = await raw(srv.port, { autoWindow: false });
    await c.handshake([
      [S.INITIAL_WINDOW_SIZE, 1 << 20],
      [S.MAX_FRAME_SIZE, 65536],
    ]);
    c.send(windowUpdateFrame(0, 1 << 20));
    c.send(requestFrame(1, '/'));
    const r = await c.response(1);
    expect(Buffer.concat(r.data).equals(body)).toBe(true);
    const sizes = c.frames.filter((f) => f.type === T.DATA).map((f) => f.payload.length);
    expect(Math.max(...sizes)).toBe(65536);
    expect(sizes.filter((n) => n > 16384).length).toBeGreaterThan(0);
  });
});

// ---------------------------------------------------------------------------
// 5. Connection errors.

describe('a peer that does not read', () => {
  /**
   * Floods `unit` over a connection whose reading side is paused, until the server closes it
   * or `maxBytes` are sent; resolves with the server's largest write backlog seen.
   */
  async function flood(srv: Srv, unit: Buffer, maxBytes: number): Promise<{ closed: boolean; sent: number; peakBacklog: number }> {
    const serverSock = new Promise<net.Socket>((r) => srv.h2.server.once('connection', r));
    const sock = net.connect(srv.port, '127.0.0.1');
    cleanups.push(() => void sock.destroy());
    sock.on('error', () => {});
    await new Promise<void>((r) => sock.once('connect', () => r()));
    sock.pause(); // never read: the server's answers stay in the socket buffers
    const ss = await serverSock;
    let closed = false;
    let peakBacklog = 0;
    const serverClosed = new Promise<void>((r) => ss.once('close', () => ((closed = true), r())));
    sock.write(Buffer.concat([PREFACE, settingsFrame()]));
    const chunk = Buffer.concat(Array.from({ length: Math.floor(65536 / unit.length) }, () => unit));
    let sent = 0;
    while (!closed && !sock.destroyed && sent < maxBytes) {
      const more = sock.write(chunk);
      sent += chunk.length;
      peakBacklog = Math.max(peakBacklog, ss.writableLength);
      // As fast as the server reads (it shares this event loop); a server that stopped
      // reading without closing fails the test here.
      if (!more) await guard(Promise.race([new Promise((r) => sock.once('drain', r)), serverClosed]), 'the server to read on or close');
    }
    await guard(serverClosed, 'the server to close the connection').catch(() => undefined);
    return { closed, sent, peakBacklog };
  }

  it('a PING flood whose ACKs are never read ends the connection (bounded memory)', async () => {
    const srv = await start(basicHandler);
    const r = await flood(srv, pingFrame(Buffer.alloc(8)), 256 << 20);
    expect(r.closed, JSON.stringify(r)).toBe(true);
    expect(r.peakBacklog).toBeLessThan(9 << 20);
  });

  it('a SETTINGS flood whose ACKs are never read ends the connection', async () => {
    const srv = await start(basicHandler);
    const r = await flood(srv, settingsFrame(), 256 << 20);
    expect(r.closed, JSON.stringify(r)).toBe(true);
    expect(r.peakBacklog).toBeLessThan(9 << 20);
  });

  it('request bodies held past maxBufferedBytes reset the stream that passes it; letting go frees the room', async () => {
    const held: H2Stream[] = [];
    const srv = await start(
      (s) => {
        if (s.path === '/hold') {
          held.push(s);
          s.readAll(1 << 20).catch(() => {}); // keeps what arrives, never answers
        } else if (s.path === '/iterate') {
          void (async () => {
            let size = 0;
            for await (const chunk of s.body()) size += chunk.length;
            answer(s, String(size));
          })().catch(() => {});
        } else s.readAll(1 << 20).then(({ size }) => answer(s, String(size)), () => {});
      },
      { maxBufferedBytes: 4 << 20 },
    );
    const c = await raw(srv.port);
    await c.handshake();
    const body = (id: number, n: number, end: boolean) => {
      const frames: Buffer[] = [];
      for (let o = 0; o < n; o += 16384) frames.push(dataFrame(id, Buffer.alloc(Math.min(16384, n - o), 7), end && o + 16384 >= n ? F.END_STREAM : 0));
      return frames;
    };
    const ids = [1, 3, 5, 7, 9, 11, 13];
    for (const id of ids) c.send(requestFrame(id, '/hold', 'POST', false), ...body(id, 900_000, false));
    await c.ping();
    // 4 x 900 KB fit in 4 MiB; the fifth stream passes it and is reset, and so are the rest.
    await c.rstCode(13);
    const firstRst = (id: number) => c.frames.find((f) => f.type === T.RST_STREAM && f.id === id)?.payload.readUInt32BE(0);
    expect([9, 11, 13].map(firstRst)).toEqual([H2Error.ENHANCE_YOUR_CALM, H2Error.ENHANCE_YOUR_CALM, H2Error.ENHANCE_YOUR_CALM]);
    expect(ids.slice(0, 4).map((id) => c.streams.get(id)?.rst ?? null)).toEqual([null, null, null, null]);
    expect(c.frames.some((f) => f.type === T.GOAWAY)).toBe(false);
    // The client gives up the held streams: their bytes are let go.
    c.send(...ids.slice(0, 4).map((id) => rstFrame(id, H2Error.CANCEL)));
    await c.until(() => held.every((h) => h.isClosed), 'the held streams to close');
    // Answered requests let go of their bodies too (readAll and body()): 40 x 900 KB pass through 4 MiB of room.
    for (let id = 15; id < 95; id += 2) {
      c.send(requestFrame(id, id % 4 === 1 ? '/iterate' : '/size', 'POST', false), ...body(id, 900_000, true));
      const r = await c.response(id);
      expect(r.rst).toBeNull();
      expect(Buffer.concat(r.data).toString()).toBe('900000');
    }
  });

  it('a long upload read as it arrives (body()) is not counted against maxBufferedBytes', async () => {
    const srv = await start(
      (s) =>
        void (async () => {
          let size = 0;
          for await (const chunk of s.body()) size += chunk.length;
          answer(s, String(size));
        })().catch(() => {}),
      { maxBufferedBytes: 2 << 20 },
    );
    const c = await raw(srv.port);
    const settings = await c.handshake();
    c.send(requestFrame(1, '/iterate', 'POST', false));
    const total = 8 << 20; // four times the room, on one stream
    await sendWithinWindow(c, settings, 1, dataFrame(1, Buffer.alloc(16384, 1)), total / 16384);
    c.send(dataFrame(1, Buffer.alloc(0), F.END_STREAM));
    const r = await c.response(1);
    expect(r.rst).toBeNull();
    expect(Buffer.concat(r.data).toString()).toBe(String(total));
  });

  it('a client that reads keeps its connection through as many PINGs', async () => {
    const srv = await start(basicHandler);
    const c = await raw(srv.port);
    await c.handshake();
    const pings = Buffer.concat(Array.from({ length: 4000 }, () => pingFrame(Buffer.alloc(8))));
    for (let i = 0; i < 50; i++) {
      c.send(pings);
      await c.ping();
    }
    expect(c.frames.some((f) => f.type === T.GOAWAY)).toBe(false);
    c.send(requestFrame(1, '/hello'));
    const r = await c.response(1);
    expect(r.rst).toBeNull();
  });
});

describe('connection errors end the connection with GOAWAY', () => {
  it('frame larger than 16384: FRAME_SIZE_ERROR', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(srv.port, [frame(T.PING, 0, 0, Buffer.alloc(16385))], H2Error.FRAME_SIZE_ERROR);
  });

  it('DATA on stream 0: PROTOCOL_ERROR', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(srv.port, [dataFrame(0, Buffer.from('x'))], H2Error.PROTOCOL_ERROR);
  });

  it('DATA on an idle stream: PROTOCOL_ERROR', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(srv.port, [dataFrame(5, Buffer.from('x'))], H2Error.PROTOCOL_ERROR);
  });

  it('DATA on an even (never opened, idle) stream below the last stream id: PROTOCOL_ERROR', async () => {
    const srv = await start((s) => void s);
    const c = await raw(srv.port);
    await c.handshake();
    c.send(requestFrame(3, '/hold'), dataFrame(2, Buffer.from('x')));
    // GOAWAY and the close come before the PING ACK if the server treats it as the RFC says (5.1, idle).
    await c.ping().catch(() => undefined);
    const g = c.frames.find((f) => f.type === T.GOAWAY);
    expect(g?.payload.readUInt32BE(4), `server sent ${c.frames.filter((f) => f.id === 2).map((f) => `type ${f.type} ${f.payload.toString('hex')}`)}`).toBe(
      H2Error.PROTOCOL_ERROR,
    );
  });

  it('malformed HPACK block: COMPRESSION_ERROR', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(srv.port, [headersFrame(1, Buffer.from([0x80]), F.END_HEADERS | F.END_STREAM)], H2Error.COMPRESSION_ERROR);
  });

  it('HPACK string running past the block: COMPRESSION_ERROR', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(srv.port, [headersFrame(1, Buffer.from([0x00, 0x7f, 0x10, 0x61]), F.END_HEADERS | F.END_STREAM)], H2Error.COMPRESSION_ERROR);
  });

  it('HEADERS on an even stream id: PROTOCOL_ERROR', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(srv.port, [requestFrame(2, '/hello')], H2Error.PROTOCOL_ERROR);
  });

  it('CONTINUATION without HEADERS: PROTOCOL_ERROR', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(srv.port, [frame(T.CONTINUATION, F.END_HEADERS, 1, requestBlock())], H2Error.PROTOCOL_ERROR);
  });

  it('a frame other than CONTINUATION in the middle of a header block: PROTOCOL_ERROR', async () => {
    const srv = await start(basicHandler);
    const block = requestBlock('/hello');
    await expectConnectionError(
      srv.port,
      [headersFrame(1, block.subarray(0, 5), F.END_STREAM), pingFrame(Buffer.alloc(8)), frame(T.CONTINUATION, F.END_HEADERS, 1, block.subarray(5))],
      H2Error.PROTOCOL_ERROR,
    );
  });

  it('CONTINUATION on another stream in the middle of a header block: PROTOCOL_ERROR', async () => {
    const srv = await start(basicHandler);
    const block = requestBlock('/hello');
    await expectConnectionError(srv.port, [headersFrame(1, block.subarray(0, 5), F.END_STREAM), frame(T.CONTINUATION, F.END_HEADERS, 3, block.subarray(5))], H2Error.PROTOCOL_ERROR);
  });

  it('PUSH_PROMISE from the client: PROTOCOL_ERROR', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(srv.port, [frame(T.PUSH_PROMISE, F.END_HEADERS, 1, Buffer.concat([u32(2), requestBlock()]))], H2Error.PROTOCOL_ERROR);
  });

  it('WINDOW_UPDATE of 0 on stream 0: PROTOCOL_ERROR', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(srv.port, [windowUpdateFrame(0, 0)], H2Error.PROTOCOL_ERROR);
  });

  it('WINDOW_UPDATE overflowing the connection window: FLOW_CONTROL_ERROR', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(srv.port, [windowUpdateFrame(0, 2 ** 31 - 1)], H2Error.FLOW_CONTROL_ERROR);
  });

  it('SETTINGS_ENABLE_PUSH = 2: PROTOCOL_ERROR', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(srv.port, [settingsFrame([[S.ENABLE_PUSH, 2]])], H2Error.PROTOCOL_ERROR);
  });

  it('SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1: FLOW_CONTROL_ERROR', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(srv.port, [settingsFrame([[S.INITIAL_WINDOW_SIZE, 2 ** 31]])], H2Error.FLOW_CONTROL_ERROR);
  });

  it('SETTINGS_MAX_FRAME_SIZE below 16384: PROTOCOL_ERROR', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(srv.port, [settingsFrame([[S.MAX_FRAME_SIZE, 16383]])], H2Error.PROTOCOL_ERROR);
  });

  it('SETTINGS of a length not a multiple of 6: FRAME_SIZE_ERROR', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(srv.port, [frame(T.SETTINGS, 0, 0, Buffer.alloc(5))], H2Error.FRAME_SIZE_ERROR);
  });

  it('SETTINGS ACK with a payload: FRAME_SIZE_ERROR', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(srv.port, [frame(T.SETTINGS, F.ACK, 0, Buffer.alloc(6))], H2Error.FRAME_SIZE_ERROR);
  });

  it('PING of the wrong size: FRAME_SIZE_ERROR', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(srv.port, [pingFrame(Buffer.alloc(7))], H2Error.FRAME_SIZE_ERROR);
  });

  it('a header block over 64 KiB via CONTINUATION: ENHANCE_YOUR_CALM', async () => {
    const srv = await start(basicHandler);
    const chunk = Buffer.alloc(16384);
    await expectConnectionError(
      srv.port,
      [headersFrame(1, chunk, F.END_STREAM), ...Array.from({ length: 4 }, () => frame(T.CONTINUATION, 0, 1, chunk))],
      H2Error.ENHANCE_YOUR_CALM,
    );
  });

  it('a header block spread over endless empty CONTINUATION frames: ENHANCE_YOUR_CALM', async () => {
    const srv = await start(basicHandler);
    await expectConnectionError(
      srv.port,
      [headersFrame(1, requestBlock().subarray(0, 3), F.END_STREAM), ...Array.from({ length: 1000 }, () => frame(T.CONTINUATION, 0, 1, Buffer.alloc(0)))],
      H2Error.ENHANCE_YOUR_CALM,
    );
  });

  it('more than 2000 stream resets in a second: ENHANCE_YOUR_CALM', async () => {
    let opened = 0;
    const srv = await start(() => opened++);
    const frames: Buffer[] = [];
    for (let i = 0; i < 2100; i++) frames.push(requestFrame(2 * i + 1, '/hold'), rstFrame(2 * i + 1, H2Error.CANCEL));
    await expectConnectionError(srv.port, [Buffer.concat(frames)], H2Error.ENHANCE_YOUR_CALM);
    expect(opened).toBeGreaterThan(2000);
  });

  it('GOAWAY carries the last stream id the server processed', async () => {
    const srv = await start(basicHandler);
    const c = await raw(srv.port);
    await c.handshake();
    c.send(requestFrame(1, '/hello'), requestFrame(7, '/hello'));
    await c.response(7);
    c.send(dataFrame(0, Buffer.from('x')));
    expect(await c.goaway()).toEqual({ last: 7, code: H2Error.PROTOCOL_ERROR });
  });
});

// ---------------------------------------------------------------------------
// 6. Stream errors.

describe('stream errors reset the stream and the connection keeps serving', () => {
  async function expectStreamError(block: Buffer, code: number, flags = F.END_HEADERS | F.END_STREAM): Promise<void> {
    const srv = await start(basicHandler);
    const c = await raw(srv.port);
    await c.handshake();
    c.send(headersFrame(1, block, flags));
    expect(await c.rstCode(1)).toBe(code);
    c.send(requestFrame(3, '/hello'));
    const r = await c.response(3);
    expect(fieldOf(r.headers, ':status')).toBe('200');
    expect(Buffer.concat(r.data).toString()).toBe('hello');
    expect(c.frames.some((f) => f.type === T.GOAWAY)).toBe(false);
  }

  it('missing :path: PROTOCOL_ERROR', async () => {
    await expectStreamError(encodeHeaders([':method', 'GET', ':scheme', 'http']), H2Error.PROTOCOL_ERROR);
  });

  it('missing :method: PROTOCOL_ERROR', async () => {
    await expectStreamError(encodeHeaders([':path', '/', ':scheme', 'http']), H2Error.PROTOCOL_ERROR);
  });

  it('pseudo-header after a regular header: PROTOCOL_ERROR', async () => {
    await expectStreamError(encodeHeaders([':method', 'GET', 'x-a', '1', ':path', '/']), H2Error.PROTOCOL_ERROR);
  });

  it('unknown pseudo-header: PROTOCOL_ERROR', async () => {
    await expectStreamError(encodeHeaders([':method', 'GET', ':path', '/', ':bogus', '1']), H2Error.PROTOCOL_ERROR);
  });

  it('DATA after END_STREAM: STREAM_CLOSED, and the stream is closed on the server', async () => {
    const held: H2Stream[] = [];
    const srv = await start((s) => (s.path === '/hold' ? void held.push(s) : answer(s, 'hello')));
    const c = await raw(srv.port);
    await c.handshake();
    c.send(requestFrame(1, '/hold'));
    await c.until(() => held.length === 1, 'the handler');
    c.send(dataFrame(1, Buffer.from('late')));
    expect(await c.rstCode(1)).toBe(H2Error.STREAM_CLOSED);
    expect(held[0]!.isClosed).toBe(true);
    c.send(requestFrame(3, '/hello'));
    expect(Buffer.concat((await c.response(3)).data).toString()).toBe('hello');
  });

  it('streams beyond maxConcurrentStreams: REFUSED_STREAM, and served again once one ends', async () => {
    const held: H2Stream[] = [];
    const srv = await start((s) => void held.push(s), { maxConcurrentStreams: 3 });
    const c = await raw(srv.port);
    const settings = await c.handshake();
    expect(settings.payload.readUInt16BE(0)).toBe(S.MAX_CONCURRENT_STREAMS);
    expect(settings.payload.readUInt32BE(2)).toBe(3);
    c.send(requestFrame(1, '/a'), requestFrame(3, '/b'), requestFrame(5, '/c'), requestFrame(7, '/d'));
    expect(await c.rstCode(7)).toBe(H2Error.REFUSED_STREAM);
    expect(held.map((s) => s.id)).toEqual([1, 3, 5]);
    answer(held[0]!, 'one');
    expect(Buffer.concat((await c.response(1)).data).toString()).toBe('one');
    c.send(requestFrame(9, '/e'));
    await c.until(() => held.length === 4, 'stream 9 handled');
    answer(held[3]!, 'nine');
    expect(Buffer.concat((await c.response(9)).data).toString()).toBe('nine');
    expect(c.streams.get(9)!.rst).toBeNull();
  });

  it('request trailers without END_STREAM: PROTOCOL_ERROR closes the server stream (no leaked slot)', async () => {
    const held: H2Stream[] = [];
    const reads: Promise<unknown>[] = [];
    const srv = await start(
      (s) => {
        if (s.path === '/upload') {
          held.push(s);
          reads.push(s.readAll(1 << 20).then(() => 'resolved', (e: unknown) => e));
        } else answer(s, 'hello');
      },
      { maxConcurrentStreams: 1 },
    );
    const c = await raw(srv.port);
    await c.handshake();
    c.send(requestFrame(1, '/upload', 'POST', false), dataFrame(1, Buffer.from('abc')));
    await c.until(() => held.length === 1, 'the handler');
    c.send(headersFrame(1, encodeHeaders(['x-trailer', '1']), F.END_HEADERS));
    expect(await c.rstCode(1)).toBe(H2Error.PROTOCOL_ERROR);
    await c.ping();
    expect(held[0]!.isClosed).toBe(true);
    expect(await guard(reads[0]!, 'readAll to settle')).toBeInstanceOf(StreamResetError);
    c.send(requestFrame(3, '/hello'));
    const r = await c.response(3);
    expect(r.rst).toBeNull();
    expect(Buffer.concat(r.data).toString()).toBe('hello');
  });

  it('HEADERS again after END_STREAM: STREAM_CLOSED closes the server stream, which then sends nothing', async () => {
    const { srv, c, held } = await heldStream();
    c.send(headersFrame(1, encodeHeaders(['x-trailer', '1']), F.END_HEADERS | F.END_STREAM));
    expect(await c.rstCode(1)).toBe(H2Error.STREAM_CLOSED);
    await c.ping();
    expect(held[0]!.isClosed).toBe(true);
    answer(held[0]!, 'too late');
    await c.ping();
    expect(c.frames.filter((f) => f.id === 1 && (f.type === T.HEADERS || f.type === T.DATA)).length).toBe(0);
  });

  it('a handler that throws resets only its stream (INTERNAL_ERROR)', async () => {
    const srv = await start((s) => {
      if (s.path === '/boom') throw new Error('boom');
      answer(s, 'hello');
    });
    const c = await raw(srv.port);
    await c.handshake();
    c.send(requestFrame(1, '/boom'), requestFrame(3, '/hello'));
    expect(await c.rstCode(1)).toBe(H2Error.INTERNAL_ERROR);
    expect(Buffer.concat((await c.response(3)).data).toString()).toBe('hello');
    c.send(requestFrame(5, '/hello'));
    expect(Buffer.concat((await c.response(5)).data).toString()).toBe('hello');
    expect(srv.errors.map((e) => (e as Error).message)).toEqual(['boom']);
  });
});

// ---------------------------------------------------------------------------
// 7. Client reset mid-response; reading after the response ended.

describe('stream lifecycle', () => {
  it('RST_STREAM from the client mid-response closes the stream; other streams are unaffected', async () => {
    interface Probe {
      s: H2Stream;
      closed: boolean;
      readResult?: Promise<unknown>;
      bodyResult?: Promise<unknown>;
    }
    const probes = new Map<string, Probe>();
    const big = pattern(2_000_000, 5);
    const srv = await start((s) => {
      const p: Probe = { s, closed: false };
      probes.set(s.path, p);
      s.onClose(() => (p.closed = true));
      if (s.path === '/stream') {
        void s.signal;
        p.readResult = s.readAll(1 << 20).then(() => 'resolved', (e: unknown) => e);
        s.respond(OK);
        void writeAll(s, big).then(() => s.end());
      } else if (s.path === '/body') {
        p.bodyResult = (async () => {
          try {
            for await (const c of s.body()) void c;
            return 'ended';
          } catch (e) {
            return e;
          }
        })();
        s.respond(OK);
      } else {
        s.respond(OK);
        void writeAll(s, pattern(30_000, 6), 4000).then(() => s.end());
      }
    });
    const c = await raw(srv.port, { autoWindow: false });
    await c.handshake();
    c.send(windowUpdateFrame(0, 10_000_000));
    c.send(requestFrame(1, '/stream', 'POST', false), requestFrame(3, '/body', 'POST', false), dataFrame(3, Buffer.from('some')));
    await c.until(() => c.streams.get(1)?.bytes === 65_535 && probes.has('/body'), 'the stream window filled');
    c.send(rstFrame(1, H2Error.CANCEL), rstFrame(3, H2Error.CANCEL), requestFrame(5, '/normal'));
    const r5 = await c.response(5);
    expect(Buffer.concat(r5.data).equals(pattern(30_000, 6))).toBe(true);

    const p1 = probes.get('/stream')!;
    expect(p1.closed).toBe(true);
    expect(p1.s.isClosed).toBe(true);
    expect(p1.s.resetCode).toBe(H2Error.CANCEL);
    expect(p1.s.signal.aborted).toBe(true);
    const err = await guard(p1.readResult!, 'readAll');
    expect(err).toBeInstanceOf(StreamResetError);
    expect((err as StreamResetError).code).toBe(H2Error.CANCEL);
    const p3 = probes.get('/body')!;
    expect(p3.closed).toBe(true);
    const bodyErr = await guard(p3.bodyResult!, 'body()');
    expect(bodyErr).toBeInstanceOf(StreamResetError);
    expect((bodyErr as StreamResetError).code).toBe(H2Error.CANCEL);

    // Later writes are no-ops, even with window granted.
    expect(p1.s.write(Buffer.from('more'))).toBe(false);
    p1.s.respond(OK);
    p1.s.end(encodeHeaders(['grpc-status', '0']));
    c.send(windowUpdateFrame(1, 1_000_000));
    await c.ping();
    expect(c.streams.get(1)!.bytes).toBe(65_535);
    expect(c.frames.filter((f) => f.id === 1 && f.type === T.HEADERS).length).toBe(1);
    expect(c.frames.some((f) => f.id === 1 && f.flags & F.END_STREAM)).toBe(false);
    expect(c.frames.some((f) => f.type === T.GOAWAY)).toBe(false);
  });

  it('readAll settles when the handler ends the response before the request body ends', async () => {
    let read: Promise<unknown> | null = null;
    const srv = await start((s) => {
      read = s.readAll(1 << 20).then(
        (r) => r,
        (e: unknown) => e,
      );
      s.respond(encodeHeaders([':status', '400']), true);
    });
    const c = await raw(srv.port);
    await c.handshake();
    c.send(requestFrame(1, '/early', 'POST', false), dataFrame(1, Buffer.from('partial')));
    const r = await c.response(1);
    expect(fieldOf(r.headers, ':status')).toBe('400');
    expect(c.frames.find((f) => f.type === T.RST_STREAM && f.id === 1)?.payload.readUInt32BE(0)).toBe(H2Error.NO_ERROR);
    await guard(read!, 'readAll to settle once the stream is over');
  });

  it('padded HEADERS (with PRIORITY) and padded DATA are decoded', async () => {
    const srv = await start(basicHandler);
    const c = await raw(srv.port);
    await c.handshake();
    const block = requestBlock('/echo', 'POST', ['x-a', 'b']);
    const pad = 7;
    const payload = Buffer.concat([Buffer.from([pad]), u32(0), Buffer.from([15]), block, Buffer.alloc(pad)]);
    c.send(frame(T.HEADERS, F.END_HEADERS | F.PADDED | F.PRIORITY, 1, payload));
    c.send(paddedDataFrame(1, Buffer.from('hello '), 10), paddedDataFrame(1, Buffer.alloc(0), 3), paddedDataFrame(1, Buffer.from('world'), 0, F.END_STREAM));
    const r = await c.response(1);
    expect(Buffer.concat(r.data).toString()).toBe('hello world');
    // HEADERS with PRIORITY only, and a PRIORITY frame, are fine too.
    c.send(frame(T.PRIORITY, 0, 3, Buffer.concat([u32(1), Buffer.from([200])])));
    c.send(frame(T.HEADERS, F.END_HEADERS | F.END_STREAM | F.PRIORITY, 3, Buffer.concat([u32(0x80000001), Buffer.from([3]), requestBlock('/hello')])));
    expect(Buffer.concat((await c.response(3)).data).toString()).toBe('hello');
  });

  it('DATA padding length >= payload length: PROTOCOL_ERROR', async () => {
    const srv = await start((s) => void s);
    await expectConnectionError(srv.port, [requestFrame(1, '/x', 'POST', false), frame(T.DATA, F.PADDED, 1, Buffer.from([4, 0, 0, 0]))], H2Error.PROTOCOL_ERROR);
  });

  it('HEADERS padding longer than the frame: PROTOCOL_ERROR', async () => {
    const srv = await start(basicHandler);
    const block = requestBlock('/hello');
    await expectConnectionError(srv.port, [frame(T.HEADERS, F.END_HEADERS | F.END_STREAM | F.PADDED, 1, Buffer.concat([Buffer.from([block.length + 1]), block]))], H2Error.PROTOCOL_ERROR);
  });

  it('padding of DATA frames is given back to the stream window (no stall)', async () => {
    let got: { size: number } | null = null;
    const srv = await start((s) => {
      s.readAll(1 << 20).then(
        (r) => {
          got = r;
          answer(s, String(r.size));
        },
        () => {},
      );
    });
    const c = await raw(srv.port);
    const settings = await c.handshake();
    c.send(requestFrame(1, '/padded', 'POST', false));
    // 6000 frames carrying one byte and 254 bytes of padding each: 256 bytes of window per byte of body.
    const frames = 6000;
    expect(await sendWithinWindow(c, settings, 1, paddedDataFrame(1, Buffer.from('x'), 254), frames)).toBe(1 << 20);
    c.send(dataFrame(1, Buffer.alloc(0), F.END_STREAM));
    const r = await c.response(1);
    expect(Buffer.concat(r.data).toString()).toBe(String(frames));
    expect((got as { size: number } | null)?.size).toBe(frames);
  });
});

describe('headers, stream flow control and backpressure', () => {
  it('decodes a request header block split over CONTINUATION frames', async () => {
    let seen: string | undefined;
    const srv = await start((s) => {
      seen = s.header('x-long');
      answer(s, 'hello');
    });
    const c = await raw(srv.port);
    await c.handshake();
    const long = 'v'.repeat(30_000);
    const block = requestBlock('/cont', 'GET', ['x-long', long]);
    c.send(
      headersFrame(1, block.subarray(0, 10), F.END_STREAM),
      frame(T.CONTINUATION, 0, 1, block.subarray(10, 16000)),
      frame(T.CONTINUATION, F.END_HEADERS, 1, block.subarray(16000)),
    );
    expect(Buffer.concat((await c.response(1)).data).toString()).toBe('hello');
    expect(seen).toBe(long);
  });

  it('splits response headers larger than a frame into HEADERS + CONTINUATION (raw and node:http2)', async () => {
    const long = 'w'.repeat(40_000);
    const srv = await start((s) => {
      s.respond(encodeHeaders([':status', '200', 'x-long', long]));
      s.write(Buffer.from('body'));
      s.end(encodeHeaders(['grpc-status', '0', 'x-trailer', long]));
    });
    const c = await raw(srv.port);
    await c.handshake();
    c.send(requestFrame(1, '/'));
    const r = await c.response(1);
    expect(fieldOf(r.headers, 'x-long')).toBe(long);
    expect(fieldOf(r.trailers, 'x-trailer')).toBe(long);
    expect(c.frames.filter((f) => f.type === T.CONTINUATION).length).toBeGreaterThanOrEqual(4);
    expect(c.errors).toEqual([]);
    const client = nodeClient(srv.port, { maxHeaderListPairs: 100, settings: { maxHeaderListSize: 1 << 20 } } as http2.ClientSessionOptions);
    const n = await nodeRequest(client, { ':path': '/' });
    expect(n.headers['x-long']).toBe(long);
    expect(n.trailers?.['x-trailer']).toBe(long);
    expect(n.body.toString()).toBe('body');
  });

  it('DATA beyond the stream window: FLOW_CONTROL_ERROR on the stream only', async () => {
    const held: H2Stream[] = [];
    const srv = await start((s) => (s.path === '/hold' ? void held.push(s) : answer(s, 'hello')));
    const c = await raw(srv.port);
    await c.handshake();
    c.send(requestFrame(1, '/hold', 'POST', false));
    const chunk = Buffer.alloc(16384);
    // The stream window is 1 MiB; nobody reads: 65 frames of 16 KiB overflow it.
    c.send(...Array.from({ length: 65 }, () => dataFrame(1, chunk)));
    expect(await c.rstCode(1)).toBe(H2Error.FLOW_CONTROL_ERROR);
    expect(held[0]!.isClosed).toBe(true);
    c.send(requestFrame(3, '/hello'));
    expect(Buffer.concat((await c.response(3)).data).toString()).toBe('hello');
  });

  it('stream WINDOW_UPDATE of 0 (PROTOCOL_ERROR) or overflowing (FLOW_CONTROL_ERROR) resets the stream only', async () => {
    const held: H2Stream[] = [];
    const srv = await start((s) => (s.path === '/hold' ? void held.push(s) : answer(s, 'hello')));
    const c = await raw(srv.port);
    await c.handshake();
    c.send(requestFrame(1, '/hold'), requestFrame(3, '/hold'));
    await c.until(() => held.length === 2, 'the handlers');
    c.send(windowUpdateFrame(1, 0), windowUpdateFrame(3, 2 ** 31 - 1));
    expect(await c.rstCode(1)).toBe(H2Error.PROTOCOL_ERROR);
    expect(await c.rstCode(3)).toBe(H2Error.FLOW_CONTROL_ERROR);
    expect(held.every((s) => s.isClosed)).toBe(true);
    c.send(requestFrame(5, '/hello'));
    expect(Buffer.concat((await c.response(5)).data).toString()).toBe('hello');
  });

  it('holds stream data back while the client does not read, and delivers it intact once it does', async () => {
    const size = 8 << 20;
    const body = pattern(size, 11);
    let written = 0;
    let waitingForDrain = false;
    const srv = await start((s) => {
      s.respond(OK);
      void (async () => {
        for (let o = 0; o < size; o += 65536) {
          written = o;
          if (!s.write(body.subarray(o, o + 65536))) {
            waitingForDrain = true;
            await s.drain();
            waitingForDrain = false;
          }
        }
        written = size;
        s.end();
      })();
    });
    const c = await raw(srv.port, { autoWindow: false });
    await c.handshake([
      [S.INITIAL_WINDOW_SIZE, 2 ** 31 - 1],
      [S.MAX_FRAME_SIZE, 1 << 20],
    ]);
    c.send(windowUpdateFrame(0, 2 ** 31 - 1 - 65_535));
    c.sock.pause();
    c.send(requestFrame(1, '/'));
    // The windows allow everything: only the socket holds the handler back.
    await c.until(() => waitingForDrain && written > 0, 'the handler to be held back', 10_000);
    expect(written).toBeLessThan(size);
    c.sock.resume();
    const r = await c.response(1, 30_000);
    expect(r.bytes).toBe(size);
    expect(Buffer.concat(r.data).equals(body)).toBe(true);
  }, 60_000);
});

// ---------------------------------------------------------------------------
// 9/10. Shutdown.

describe('shutdown', () => {
  it('closeSessions: GOAWAY(NO_ERROR, last id), in-flight streams complete, new ones refused, then the socket closes', async () => {
    const held: H2Stream[] = [];
    let quick = 0;
    const srv = await start((s) => {
      if (s.path === '/hold') held.push(s);
      else {
        quick++;
        answer(s, 'quick');
      }
    });
    const c = await raw(srv.port);
    await c.handshake();
    c.send(requestFrame(1, '/hold'), requestFrame(3, '/hold'));
    await c.until(() => held.length === 2, 'the handlers');
    srv.h2.closeSessions();
    expect(await c.goaway()).toEqual({ last: 3, code: H2Error.NO_ERROR });
    c.send(requestFrame(5, '/quick'));
    expect(await c.rstCode(5)).toBe(H2Error.REFUSED_STREAM);
    expect(quick).toBe(0);
    const closedServer = srv.close();
    answer(held[0]!, 'first');
    expect(Buffer.concat((await c.response(1)).data).toString()).toBe('first');
    expect(c.closed).toBe(false);
    held[1]!.respond(OK);
    await writeAll(held[1]!, pattern(100_000, 2));
    held[1]!.end(encodeHeaders(['grpc-status', '0']));
    const r3 = await c.response(3);
    expect(Buffer.concat(r3.data).equals(pattern(100_000, 2))).toBe(true);
    expect(fieldOf(r3.trailers, 'grpc-status')).toBe('0');
    await guard(c.closedP, 'the socket to close');
    await guard(closedServer, 'server.close()');
  });

  it('closeSessions with the node:http2 client: the in-flight request completes and server.close() resolves', async () => {
    const held: H2Stream[] = [];
    const srv = await start((s) => void held.push(s));
    const client = nodeClient(srv.port);
    const goaway = new Promise<number>((r) => client.once('goaway', (code) => r(code)));
    const p = nodeRequest(client, { ':path': '/hold' });
    await new Promise<void>((resolve) => {
      const t = setInterval(() => {
        if (held.length) {
          clearInterval(t);
          resolve();
        }
      }, 2);
    });
    srv.h2.closeSessions();
    expect(await guard(goaway, 'goaway')).toBe(H2Error.NO_ERROR);
    const closed = srv.close();
    answer(held[0]!, 'done');
    const r = await p;
    expect(r.body.toString()).toBe('done');
    await guard(closed, 'server.close()');
  });

  it('closeSessions on an idle connection closes it at once', async () => {
    const srv = await start(basicHandler);
    const c = await raw(srv.port);
    await c.handshake();
    srv.h2.closeSessions();
    expect(await c.goaway()).toEqual({ last: 0, code: H2Error.NO_ERROR });
    await guard(c.closedP, 'socket close');
    await guard(srv.close(), 'server.close()');
  });

  it('destroySessions closes at once; open streams see CANCEL', async () => {
    const { srv, c, held } = await heldStream();
    const closedEvent = deferred();
    held[0]!.onClose(() => closedEvent.resolve());
    srv.h2.destroySessions();
    await guard(c.closedP, 'socket close');
    await guard(srv.close(), 'server.close()');
    // The stream learns of it on the server socket's 'close' event, which may follow server.close().
    await guard(closedEvent.promise, 'the stream onClose');
    expect(held[0]!.isClosed).toBe(true);
    expect(held[0]!.resetCode).toBe(H2Error.CANCEL);
    expect(held[0]!.signal.aborted).toBe(true);
  });

  it('client GOAWAY: the server finishes open streams, then closes the socket', async () => {
    const { srv, c, held } = await heldStream();
    c.send(goawayFrame(0, H2Error.NO_ERROR));
    await c.ping();
    expect(c.closed).toBe(false);
    answer(held[0]!, 'bye');
    expect(Buffer.concat((await c.response(1)).data).toString()).toBe('bye');
    await guard(c.closedP, 'socket close');
  });
});

// ---------------------------------------------------------------------------
// 11. Fuzz.

describe('fuzz', () => {
  it('random frame sequences never crash the server, and it keeps serving', async () => {
    const runs = Number(process.env.FUZZ_RUNS ?? 200);
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown): void => void uncaught.push(e);
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onUncaught);
    cleanups.push(() => {
      process.off('uncaughtException', onUncaught);
      process.off('unhandledRejection', onUncaught);
    });
    const srv = await start((s) => {
      if (s.path === '/read') {
        s.readAll(4096).then(
          ({ size }) => answer(s, String(size)),
          () => {},
        );
      } else if (s.path === '/stream') {
        s.respond(OK);
        void writeAll(s, pattern(100_000), 1000).then(() => s.end(encodeHeaders(['grpc-status', '0'])));
      } else if (s.path === '/hold') {
        // never answers; the connection's end closes it
      } else {
        answer(s, 'hello');
      }
    });

    const validBlock = fc
      .record({
        path: fc.constantFrom('/', '/read', '/stream', '/hold', '/x?y=z'),
        method: fc.constantFrom('GET', 'POST'),
        extra: fc.array(fc.tuple(fc.stringMatching(/^[a-z-]{1,10}$/), fc.string({ maxLength: 20 })), { maxLength: 3 }),
      })
      .map(({ path, method, extra }) => requestBlock(path, method, extra.flat()));
    const streamId = fc.oneof(fc.constantFrom(0, 1, 2, 3, 5, 7, 9), fc.integer({ min: 0, max: 2 ** 31 - 1 }));
    const payload = fc.oneof(
      fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
      validBlock,
      fc.uint8Array({ minLength: 4, maxLength: 4 }).map((a) => Buffer.from(a)),
      fc.uint8Array({ minLength: 8, maxLength: 8 }).map((a) => Buffer.from(a)),
      fc.array(fc.tuple(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 2 ** 32 - 1 })), { maxLength: 4 }).map((pairs) => settingsFrame(pairs).subarray(9)),
    );
    const anyFrame = fc
      .record({
        type: fc.integer({ min: 0, max: 10 }),
        flags: fc.oneof(fc.constantFrom(0, F.END_STREAM, F.END_HEADERS, F.END_HEADERS | F.END_STREAM, F.PADDED, F.PRIORITY | F.END_HEADERS), fc.integer({ min: 0, max: 255 })),
        id: streamId,
        payload,
      })
      .map(({ type, flags, id, payload: p }) => frame(type, flags, id, p));
    const request = fc.integer({ min: 0, max: 20 }).map((k) => requestFrame(2 * k + 1, '/stream'));
    const sequence = fc.array(fc.oneof({ weight: 4, arbitrary: anyFrame }, { weight: 1, arbitrary: request }), { minLength: 1, maxLength: 12 });

    await fc.assert(
      fc.asyncProperty(sequence, fc.boolean(), async (frames, oneWrite) => {
        const c = await RawClient.connect(srv.port);
        try {
          await c.handshake();
          if (oneWrite) c.send(Buffer.concat(frames));
          else for (const f of frames) c.send(f);
          // Either the connection is still answering, or it was ended with a GOAWAY.
          await c.ping().catch(() => undefined);
          if (c.closed) {
            // A close must be announced by GOAWAY (a client GOAWAY may close it without one).
            const g = c.frames.find((f) => f.type === T.GOAWAY);
            if (g) expect(g.payload.readUInt32BE(4)).not.toBe(H2Error.INTERNAL_ERROR);
          }
          expect(c.errors).toEqual([]);
        } finally {
          c.close();
        }
        const fresh = await RawClient.connect(srv.port);
        try {
          await fresh.handshake();
          fresh.send(requestFrame(1, '/'));
          const r = await fresh.response(1);
          expect(Buffer.concat(r.data).toString()).toBe('hello');
        } finally {
          fresh.close();
        }
        expect(uncaught).toEqual([]);
        expect(srv.errors).toEqual([]);
      }),
      { numRuns: runs },
    );
  }, 300_000);
});

