import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeServers, freePort, listenLoopback } from '../../test/harness.js';
import { UnreachableError } from './api.js';
import { EXIT } from './errors.js';
import { TlogClient } from './tlog-client.js';

/** Tiles and entry bundles through node:http, against real loopback servers. */
describe('cli/lib/tlog-client: tiles and entry bundles', () => {
  const servers: Server[] = [];
  let answering = '';
  let silent = '';
  const seen: Array<{ url: string; key: string | undefined }> = [];
  let connections = 0;
  // An entry bundle of 300 KB, written in pieces: the client joins them.
  const bundle = Buffer.alloc(300_000);
  for (let i = 0; i < bundle.length; i++) bundle[i] = (i * 7) & 0xff;
  const tile = Buffer.alloc(256 * 32, 1);
  const others: Record<string, Buffer> = Object.fromEntries(
    [[1, 200_000], [2, 150_000], [3, 600_000]].map(([k, n]) => [`/api/audit/tlog/tile/entries/00${k}`, Buffer.alloc(n!, k!)]),
  );

  beforeAll(async () => {
    const a = createServer((req, res) => {
      const key = req.headers['x-admin-key'] as string | undefined;
      seen.push({ url: req.url ?? '', key });
      if (req.url === '/api/audit/tlog/tile/0/000') return res.writeHead(200).end(tile);
      if (req.url === '/api/audit/tlog/tile/0/001') return res.writeHead(200).end(tile.subarray(0, 100));
      if (req.url === '/api/audit/tlog/tile/entries/000') {
        if (key !== 'the-admin-key') return res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"auth_failed","message":"Invalid admin API key"}');
        res.writeHead(200, { 'content-length': bundle.length });
        for (let at = 0; at < bundle.length; at += 65_536) res.write(bundle.subarray(at, at + 65_536));
        return res.end();
      }
      const other = others[req.url ?? ''];
      if (other) {
        // Entries 001 (200 KB) and 003 (600 KB, more than a pooled buffer) with their length, 002 chunked.
        res.writeHead(200, req.url === '/api/audit/tlog/tile/entries/002' ? {} : { 'content-length': other.length });
        for (let at = 0; at < other.length; at += 50_000) res.write(other.subarray(at, at + 50_000));
        return res.end();
      }
      res.writeHead(404).end('no such tile');
    });
    a.on('connection', () => connections++);
    const s = createServer(() => { /* never answers */ });
    servers.push(a, s);
    answering = await listenLoopback(a);
    silent = await listenLoopback(s);
  });
  afterAll(() => closeServers(servers));

  it('returns the bytes, sends the admin key only for entry bundles, and reuses the connection', async () => {
    const c = new TlogClient({ endpoint: answering, adminKey: 'the-admin-key' });
    seen.length = 0;
    connections = 0;
    expect((await c.hashTile(0, 0)).equals(tile)).toBe(true);
    expect((await c.entryBundle(0)).equals(bundle)).toBe(true);
    expect(seen).toEqual([
      { url: '/api/audit/tlog/tile/0/000', key: undefined },
      { url: '/api/audit/tlog/tile/entries/000', key: 'the-admin-key' },
    ]);
    expect(connections).toBe(1);
  });

  it('reads entry bundles into buffers given back with release(), whatever their size or framing', async () => {
    const c = new TlogClient({ endpoint: answering, adminKey: 'the-admin-key' });
    const a = await c.entryBundle(0);
    expect(a.equals(bundle)).toBe(true);
    c.release(a);
    const b = await c.entryBundle(1);
    expect(b.buffer).toBe(a.buffer); // the released buffer, holding the new bundle only
    expect(b.equals(others['/api/audit/tlog/tile/entries/001']!)).toBe(true);
    const held = await c.entryBundle(0); // b not released: a buffer of its own
    expect(held.buffer).not.toBe(b.buffer);
    expect(held.equals(bundle)).toBe(true);
    expect(b.equals(others['/api/audit/tlog/tile/entries/001']!)).toBe(true);
    c.release(b);
    c.release(held);
    expect((await c.entryBundle(2)).equals(others['/api/audit/tlog/tile/entries/002']!)).toBe(true); // chunked, no length
    expect((await c.entryBundle(3)).equals(others['/api/audit/tlog/tile/entries/003']!)).toBe(true); // past a pooled buffer
  });

  it('a refusal names the URL, the status, the body and what to do about the key; a short tile is refused', async () => {
    const none = new TlogClient({ endpoint: answering });
    await expect(none.entryBundle(0)).rejects.toMatchObject({
      exitCode: EXIT.failed,
      message: `GET ${answering}/api/audit/tlog/tile/entries/000: HTTP 401 {"error":"auth_failed","message":"Invalid admin API key"} (an admin key is needed: --key or SVC_API_KEY)`,
    });
    const wrong = new TlogClient({ endpoint: answering, adminKey: 'not-it' });
    await expect(wrong.entryBundle(0)).rejects.toThrow(/HTTP 401 .* \(the admin key was refused\)$/);
    await expect(none.hashTile(1, 5)).rejects.toThrow(`GET ${answering}/api/audit/tlog/tile/1/005: HTTP 404 no such tile`);
    await expect(none.hashTile(0, 1)).rejects.toThrow('tile tile/0/001: 100 bytes, want 8192');
  });

  it('nothing answering is exit 5: refused, or timed out', async () => {
    const closed = await freePort();
    const refused = await new TlogClient({ endpoint: `http://127.0.0.1:${closed}` }).hashTile(0, 0).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(UnreachableError);
    expect(refused).toMatchObject({ exitCode: EXIT.unreachable, message: `cannot reach http://127.0.0.1:${closed}/api/audit/tlog/tile/0/000: connection refused (ECONNREFUSED)` });
    const slow = await new TlogClient({ endpoint: silent, timeoutMs: 200 }).entryBundle(3).catch((e: unknown) => e);
    expect(slow).toMatchObject({ exitCode: EXIT.unreachable, message: `cannot reach ${silent}/api/audit/tlog/tile/entries/003: timed out` });
  });
});
