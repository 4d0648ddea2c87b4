/**
 * A browser page calls RequestContext on 8002 over HTTP/1.1 with @connectrpc/connect-web:
 * Connect and gRPC-Web transports, each with the binary and the JSON format, from Chromium
 * (Debian's `chromium`, driven by playwright-core). The page is served by a test server on
 * another loopback port, so every call is cross-origin: from an origin listed in
 * CORS_ORIGINS each answers; from an unlisted one each fails in the browser (its preflight
 * is refused) and no context request reaches the service. The page's script is bundled
 * here with esbuild (browser-page.ts, which imports connect-web and gen/proto/context_pb.ts). Skipped,
 * saying why, only when no Chromium is found (`make browser` installs it).
 */
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import type { PageResults as Results } from './browser-page.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => !!p && existsSync(p));
if (!CHROMIUM) console.warn('test/context/browser.test.ts skipped: no Chromium at $CHROMIUM_PATH, /usr/bin/chromium or /usr/bin/chromium-browser (make browser installs Debian\'s chromium)');

/** The page's script (bundled for the browser in beforeAll). */
const ENTRY = path.join(ROOT, 'test/context/browser-page.ts');


/** A page server: `/` loads `/app.js` (the bundle). */
async function pageServer(script: string): Promise<{ origin: string; server: http.Server }> {
  const server = http.createServer((req, res) => {
    if (req.url === '/app.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
      res.end(script);
    } else {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><html><head><meta charset="utf-8"><title>svc browser test</title><script src="/app.js"></script></head><body></body></html>');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe.skipIf(!CHROMIUM)('connect-web in Chromium against 8002 over HTTP/1.1', () => {
  let t: TestStack;
  let browser: Browser;
  let listed: { origin: string; server: http.Server };
  let unlisted: { origin: string; server: http.Server };
  let apiKey: string;
  let agentId: string;

  beforeAll(async () => {
    const bundle = await build({
      entryPoints: [ENTRY],
      bundle: true,
      write: false,
      format: 'iife',
      platform: 'browser',
      target: 'chrome120',
      logLevel: 'silent',
    });
    const script = bundle.outputFiles[0]!.text;
    listed = await pageServer(script);
    unlisted = await pageServer(script);
    t = await startTestStack({ services: ['api', 'context-grpc'], env: { CORS_ORIGINS: listed.origin } });
    const agent = await makeAgent(t, { role_id: 'role:security', allowed_intents: ['code_review'] });
    agentId = agent.agent_id;
    apiKey = (await issueKey(t, agent.agent_id)).api_key;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
  }, 120_000);
  // The browser first: its keep-alive connections to 8002 would fail the stack's leak check.
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    for (const p of [listed, unlisted]) if (p) await new Promise((r) => p.server.close(r));
  });

  async function callsFrom(origin: string): Promise<Results> {
    const page = await browser.newPage();
    try {
      await page.goto(`${origin}/`);
      return await page.evaluate(([url, key]) => (globalThis as unknown as { runCalls(u: string, k: string): Promise<Results> }).runCalls(url!, key!), [t.url('context-grpc'), apiKey]);
    } finally {
      await page.close();
    }
  }

  const count = async () => Number((await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM agent_context_requests'))[0]!.n);

  it('from an origin in CORS_ORIGINS: Connect and gRPC-Web, binary and JSON, each answer', async () => {
    const before = await count();
    const results = await callsFrom(listed.origin);
    const ok = { success: true, agentId };
    expect(results).toEqual({ 'connect binary': ok, 'connect json': ok, 'grpc-web binary': ok, 'grpc-web json': ok });
    expect(await count()).toBe(before + 4);
  });

  it('from an origin not listed: every call fails in the browser, and none reaches the service', async () => {
    const before = await count();
    const results = await callsFrom(unlisted.origin);
    expect(Object.keys(results).sort()).toEqual(['connect binary', 'connect json', 'grpc-web binary', 'grpc-web json']);
    for (const [name, r] of Object.entries(results)) {
      expect({ name, success: r.success, error: typeof r.error }).toEqual({ name, success: undefined, error: 'string' });
    }
    expect(await count()).toBe(before);
  });
});
