/**
 * The gRPC port's server: its idle timeout (a session with no frame in or out is destroyed;
 * a session whose stream keeps writing, as Subscribe's heartbeats do, is not), and the
 * routing of each connection by its first bytes (HTTP/2 preface or HTTP/1.1), including a
 * client that sends nothing or only part of the preface.
 */
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createH2cServer, type H2cServer, type PortServerOptions } from './h2c.js';

const IDLE_MS = 400;
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const EMPTY_SETTINGS = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);

let h2: H2cServer | undefined;
afterEach(async () => {
  h2?.destroySessions();
  await new Promise<void>((r) => (h2 ? h2.server.close(() => r()) : r()));
  h2 = undefined;
});

const PREFACE_MS = 300;

async function start(onStream: PortServerOptions['onStream'], onHttp1Request?: PortServerOptions['onHttp1Request']): Promise<number> {
  h2 = createH2cServer({ onStream, onStreamError: () => {}, onHttp1Request, idleTimeoutMs: IDLE_MS, prefaceTimeoutMs: PREFACE_MS });
  await new Promise<void>((r) => h2!.server.listen(0, '127.0.0.1', r));
  return (h2.server.address() as AddressInfo).port;
}

/** Resolves with the ms until the server closed `sock`, or null if it is still open after `waitMs`. */
function closedWithin(sock: net.Socket, waitMs: number): Promise<number | null> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), waitMs);
    sock.once('close', () => {
      clearTimeout(timer);
      resolve(performance.now() - t0);
    });
  });
}

describe('createH2cServer idle timeout', () => {
  it('destroys a session that sends nothing after its preface', async () => {
    const port = await start(() => {});
    const sock = net.connect(port, '127.0.0.1');
    sock.on('error', () => {});
    sock.on('data', () => {});
    await new Promise((r) => sock.once('connect', r));
    sock.write(Buffer.concat([PREFACE, EMPTY_SETTINGS]));
    const ms = await closedWithin(sock, IDLE_MS * 6);
    expect(ms).not.toBeNull();
    expect(ms!).toBeGreaterThanOrEqual(IDLE_MS * 0.8);
    sock.destroy();
  });

  it('keeps a session whose stream writes more often than the timeout', async () => {
    const port = await start((stream) => {
      stream.respond({ ':status': 200 });
      let n = 0;
      const beat = setInterval(() => {
        if (++n === 6 || stream.closed) {
          clearInterval(beat);
          if (!stream.closed) stream.end('done');
          return;
        }
        stream.write('beat');
      }, IDLE_MS / 2);
    });
    const client = http2.connect(`http://127.0.0.1:${port}`);
    try {
      const req = client.request({ ':path': '/' });
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      await new Promise((r) => req.once('end', r));
      // Six beats of IDLE_MS/2: longer than the timeout in all, never idle that long.
      expect(body).toBe('beat'.repeat(5) + 'done');
      expect(client.destroyed).toBe(false);
    } finally {
      client.close();
    }
  });
});

describe('one port, two protocols', () => {
  const onStream: PortServerOptions['onStream'] = (stream, headers) => {
    stream.respond({ ':status': 200 });
    stream.end(`h2 ${headers[':path']}`);
  };
  const onHttp1: PortServerOptions['onHttp1Request'] = (req, res) => {
    let n = 0;
    req.on('data', (c: Buffer) => (n += c.length));
    req.on('end', () => res.end(`h1 ${req.method} ${req.url} ${n}`));
  };

  it('serves HTTP/2 (prior knowledge) and HTTP/1.1 on the same port, keep-alive included', async () => {
    const port = await start(onStream, onHttp1);
    const client = http2.connect(`http://127.0.0.1:${port}`);
    try {
      const req = client.request({ ':path': '/x' });
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      await new Promise((r) => req.once('end', r));
      expect(body).toBe('h2 /x');
    } finally {
      client.close();
    }
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (const [method, path] of [['GET', '/a'], ['POST', '/b'], ['PUT', '/c'], ['PATCH', '/d']] as const) {
        const text = await new Promise<string>((resolve, reject) => {
          const req = http.request({ host: '127.0.0.1', port, method, path, agent }, (res) => {
            let b = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (b += c));
            res.on('end', () => resolve(b));
          });
          req.on('error', reject);
          req.end(method === 'GET' ? undefined : 'abc');
        });
        expect(text).toBe(`h1 ${method} ${path} ${method === 'GET' ? 0 : 3}`);
      }
    } finally {
      agent.destroy();
    }
  });

  it('closes a connection that sends nothing, or part of the preface and then nothing, after the preface timeout', async () => {
    const port = await start(onStream, onHttp1);
    for (const first of [null, Buffer.from('PRI * HTTP/2.0\r\n'), Buffer.from('P')]) {
      const sock = net.connect(port, '127.0.0.1');
      sock.on('error', () => {});
      const got: Buffer[] = [];
      sock.on('data', (c: Buffer) => got.push(c));
      await new Promise((r) => sock.once('connect', r));
      if (first) sock.write(first);
      const ms = await closedWithin(sock, PREFACE_MS * 10);
      expect({ first: first?.toString(), closed: ms !== null }).toEqual({ first: first?.toString(), closed: true });
      expect(ms!).toBeGreaterThanOrEqual(PREFACE_MS * 0.8);
      expect(Buffer.concat(got).length).toBe(0);
      sock.destroy();
    }
  });

  it('a preface that arrives in pieces is still HTTP/2', async () => {
    const port = await start(onStream, onHttp1);
    // A relay that passes the client's first 24 bytes (the preface) one at a time, each in
    // its own TCP segment, then the rest as it comes.
    const relay = net.createServer({ noDelay: true }, (inbound) => {
      const out = net.connect({ port, host: '127.0.0.1', noDelay: true });
      out.on('error', () => inbound.destroy());
      inbound.on('error', () => out.destroy());
      out.pipe(inbound);
      let sent = 0;
      let chain = Promise.resolve();
      inbound.on('data', (c: Buffer) => {
        chain = chain.then(async () => {
          let i = 0;
          for (; i < c.length && sent < 24; i++, sent++) {
            out.write(c.subarray(i, i + 1));
            await new Promise((r) => setTimeout(r, 5));
          }
          if (i < c.length) out.write(c.subarray(i));
        });
      });
      inbound.on('end', () => void chain.then(() => out.end()));
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    const client = http2.connect(`http://127.0.0.1:${(relay.address() as AddressInfo).port}`);
    try {
      const req = client.request({ ':path': '/split' });
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      await new Promise((r) => req.once('end', r));
      expect(body).toBe('h2 /split');
    } finally {
      client.destroy();
      relay.close();
    }
  });

  it('a graceful close ends a connection that has not spoken yet, without waiting for the preface timeout', async () => {
    h2 = createH2cServer({ onStream, onStreamError: () => {}, onHttp1Request: onHttp1, idleTimeoutMs: 60_000, prefaceTimeoutMs: 60_000 });
    await new Promise<void>((r) => h2!.server.listen(0, '127.0.0.1', r));
    const sock = net.connect((h2.server.address() as AddressInfo).port, '127.0.0.1');
    sock.on('error', () => {});
    await new Promise((r) => sock.once('connect', r));
    sock.write('PRI * HT');
    const closed = new Promise((r) => sock.once('close', r));
    // (the accept has reached the server once it saw the bytes; give it the turn)
    await new Promise((r) => setTimeout(r, 50));
    h2.closeSessions();
    await new Promise<void>((r) => h2!.server.close(() => r()));
    await closed;
    h2 = undefined;
  });

  it('HTTP/1.1: a request whose headers do not arrive in time is answered 408 with the error body (node\'s timeout checks run on this server)', async () => {
    h2 = createH2cServer({
      onStream,
      onStreamError: () => {},
      onHttp1Request: onHttp1,
      idleTimeoutMs: 60_000,
      http1Timeouts: { headersTimeout: 300, requestTimeout: 300, connectionsCheckingInterval: 50 },
    });
    await new Promise<void>((r) => h2!.server.listen(0, '127.0.0.1', r));
    const out = await new Promise<string>((resolve, reject) => {
      const sock = net.connect((h2!.server.address() as AddressInfo).port, '127.0.0.1', () => sock.write('GET /slow HTTP/1.1\r\nHost: x\r\n'));
      const chunks: Buffer[] = [];
      sock.on('data', (c: Buffer) => chunks.push(c));
      sock.on('error', reject);
      sock.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    });
    expect(out.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
    expect(JSON.parse(out.split('\r\n\r\n')[1]!).error).toBe('validation_error');
  });
});
