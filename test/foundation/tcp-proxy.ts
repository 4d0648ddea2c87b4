/**
 * A TCP proxy on loopback that a test can cut and restore: `stop()` closes the listener and
 * destroys every piped connection (new connections are refused), `start()` listens again
 * on the same port. Used to take the database away from a running service.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

async function tcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  let port = 0;
  const listen = async () => {
    const s = net.createServer((client) => {
      const upstream = net.connect(targetPort, targetHost);
      sockets.add(client);
      sockets.add(upstream);
      const end = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      for (const sock of [client, upstream]) {
        sock.on('error', end);
        sock.on('close', end);
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        s.off('error', reject);
        resolve();
      });
    });
    port = (s.address() as AddressInfo).port;
    server = s;
  };
  await listen();
  return {
    get port() {
      return port;
    },
    async stop() {
      const s = server;
      server = null;
      if (!s) return;
      const closed = new Promise<void>((resolve) => s.close(() => resolve()));
      for (const sock of sockets) sock.destroy();
      sockets.clear();
      await closed;
    },
    async start() {
      if (!server) await listen();
    },
  };
}

/**
 * A proxy in front of the server a connection URL names (its port, or `defaultPort`), and the
 * same URL pointed at the proxy: a client given `url` loses its server when the proxy stops.
 */
export async function proxyFor(serverUrl: string, defaultPort: number): Promise<{ proxy: TcpProxy; target: URL; url: string }> {
  const target = new URL(serverUrl);
  const proxy = await tcpProxy(target.hostname, Number(target.port || defaultPort));
  const via = new URL(serverUrl);
  via.hostname = '127.0.0.1';
  via.port = String(proxy.port);
  return { proxy, target, url: via.toString() };
}
