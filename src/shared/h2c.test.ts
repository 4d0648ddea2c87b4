/**
 * The gRPC port's HTTP/2 server and its idle timeout: a session with no frame in or out is
 * destroyed; a session whose stream keeps writing (as Subscribe's heartbeats do) is not.
 */
import http2 from 'node:http2';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createH2cServer, type H2cServer } from './h2c.js';

const IDLE_MS = 400;
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const EMPTY_SETTINGS = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);

let h2: H2cServer | undefined;
afterEach(async () => {
  h2?.destroySessions();
  await new Promise<void>((r) => (h2 ? h2.server.close(() => r()) : r()));
  h2 = undefined;
});

async function start(onStream: Parameters<typeof createH2cServer>[0]): Promise<number> {
  h2 = createH2cServer(onStream, () => {}, IDLE_MS);
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
