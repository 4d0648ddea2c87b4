/**
 * The harness's teardown check (test/leak-check.ts) fires: a test that leaves a keep-alive
 * connection, an open HTTP/2 stream, a timer of the product or (PostgreSQL) a database
 * client open sees `close()` reject, naming what leaked, after everything was released;
 * a test that cleans up closes without complaint.
 */
import http from 'node:http';
import http2 from 'node:http2';
import { describe, expect, it, vi } from 'vitest';
import { REAL, startTestStack, type TestStack } from '../harness.js';
import { startExpiryJob } from '../../src/core/keys/expiry-job.js';
import { openDb } from '../../src/core/db/index.js';

// Each test boots and closes its own stack (migrations included): allow for a loaded machine.
vi.setConfig({ testTimeout: 180_000 });

async function connections(t: TestStack, name: 'api' | 'context-grpc'): Promise<number> {
  return new Promise((resolve, reject) => t.stack.services[name]!.server.getConnections((e, n) => (e ? reject(e) : resolve(n))));
}

async function until(pred: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function get(url: string, agent: http.Agent): Promise<string> {
  return new Promise((resolve, reject) => {
    http.get(url, { agent }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });
}

describe('the teardown leak check', () => {
  it('passes a test that closed what it opened (the harness calls and a keep-alive agent destroyed before close)', async () => {
    const t = await startTestStack({ services: ['api'] });
    expect((await t.call('api', 'GET', '/health')).status).toBe(200);
    const agent = new http.Agent({ keepAlive: true });
    expect(await get(`${t.url('api')}/health`, agent)).toContain('"status"');
    agent.destroy();
    await expect(t.close()).resolves.toBeUndefined();
  });

  it('fails a test that leaves a keep-alive connection open', async () => {
    const t = await startTestStack({ services: ['api'] });
    const agent = new http.Agent({ keepAlive: true });
    try {
      expect(await get(`${t.url('api')}/health`, agent)).toContain('"status"');
      expect(await connections(t, 'api')).toBe(1);
      const started = Date.now();
      await expect(t.close()).rejects.toThrow(/api: a connection from 127\.0\.0\.1:\d+ is still open/);
      // The leaked socket is cut, so teardown does not wait for the 5 s drain.
      expect(Date.now() - started).toBeLessThan(4500);
      expect(t.stack.services.api!.server.listening).toBe(false);
    } finally {
      agent.destroy();
    }
  });

  it('fails a test that leaves an HTTP/2 stream open', async () => {
    const t = await startTestStack({ services: ['context-grpc'] });
    const session = http2.connect(t.url('context-grpc'));
    session.on('error', () => {});
    try {
      const stream = session.request({ ':method': 'POST', ':path': '/svc.context.v1.ContextService/RequestContext', 'content-type': 'application/grpc' });
      stream.on('error', () => {});
      stream.write(Buffer.from([0, 0, 0, 0, 10])); // a message header, and never its body
      await until(async () => (await connections(t, 'context-grpc')) === 1, 'the server to accept the connection');
      await expect(t.close()).rejects.toThrow(/context-grpc: a connection from 127\.0\.0\.1:\d+ is still open/);
    } finally {
      session.destroy();
    }
  });

  it('fails a test that leaves a timer of the product running', async () => {
    const t = await startTestStack({ services: ['api'] });
    const stop = startExpiryJob(t.ctx);
    // Its first run starts at once: let it finish, so that only the interval is left.
    await until(async () => t.logs.some((l) => l.includes('key expiry job: expired agent keys')), 'the first expiry run');
    try {
      await expect(t.close()).rejects.toThrow(/a setInterval of 3600000 ms created at .*src\/core\/keys\/expiry-job\.ts.* is still pending after close/);
    } finally {
      await stop().catch(() => {});
    }
  });

  it.skipIf(!REAL)('fails a test that leaves a client connected to the test database (PostgreSQL runs only)', async () => {
    const t = await startTestStack({ services: ['api'] });
    const extra = await openDb({ url: t.testDb.ownerUrl!, max: 1 });
    await extra.query('SELECT 1');
    try {
      await expect(t.close()).rejects.toThrow(/a client \(postgres.*\) is still connected to the test database/);
    } finally {
      await extra.close().catch(() => {});
    }
  });
});
