/**
 * The API reference of every HTTP service, opened in Chromium (Debian's `chromium`, driven
 * by playwright-core) against the real stack: `/docs` renders its own contract with every
 * operation's summary on the page, and nothing is requested from any host but the service
 * (every other request is aborted and recorded, and the test fails on one). `/openapi.json`
 * and `/openapi.yaml` are the spec file. Skipped, saying why, only when no Chromium is found:
 * `make test` installs it (the `browser` target).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { parse } from 'yaml';
import { SPEC_DIR } from '../../src/shared/http/service-app.js';
import type { ServiceName } from '../../src/shared/service.js';
import { startTestStack, type TestStack } from '../harness.js';

const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => !!p && existsSync(p));
if (!CHROMIUM) console.warn('test/docs/docs.test.ts skipped: no Chromium at $CHROMIUM_PATH, /usr/bin/chromium or /usr/bin/chromium-browser (make browser installs Debian\'s chromium)');

const SERVICES: Array<[ServiceName, string]> = [
  ['api', 'openapi-control-plane.yaml'],
  ['rules', 'openapi-rules.yaml'],
  ['context-webhook', 'openapi-context-webhook.yaml'],
  ['telemetry', 'openapi-telemetry.yaml'],
  ['collector', 'openapi-collector.yaml'],
];

type Spec = { info: { title: string }; paths: Record<string, Record<string, { operationId?: string; summary?: string }>> };
const specOf = (file: string) => parse(readFileSync(path.join(SPEC_DIR, file), 'utf8')) as Spec;
const summaries = (spec: Spec) =>
  Object.values(spec.paths).flatMap((item) => Object.values(item).flatMap((op) => (op && typeof op === 'object' && op.summary ? [op.summary] : [])));

/** GET with the connection closed after it (the harness fails on connections left open). */
async function get(url: string) {
  const res = await fetch(url, { headers: { connection: 'close' } });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
});
afterAll(async () => {
  await t?.close();
});

describe.skipIf(!CHROMIUM)('API reference (/docs) in Chromium, offline', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  // Before the stack closes: the browser's keep-alive connections would fail its leak check.
  afterAll(async () => {
    await browser?.close();
  });

  it.each(SERVICES)('%s: /docs renders %s with every operation, loading nothing from another host', async (service, file) => {
    const spec = specOf(file);
    const origin = t.url(service);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const foreign: string[] = [];
    const pageErrors: string[] = [];
    const served: string[] = [];
    try {
      const page = await context.newPage();
      await page.route('**/*', (route) => {
        const url = route.request().url();
        if (new URL(url).origin !== origin) {
          foreign.push(url);
          return route.abort();
        }
        served.push(new URL(url).pathname);
        return route.continue();
      });
      page.on('pageerror', (e) => pageErrors.push(e.message));
      // A Content-Security-Policy refusal means the page tried to reach beyond what it is allowed.
      page.on('console', (m) => {
        if (m.type() === 'error') pageErrors.push(m.text());
      });
      const res = await page.goto(`${origin}/docs`);
      expect(res?.status()).toBe(200);
      // Redoc gives each operation's section the id `operation/<operationId>`.
      await page.locator('[id="operation/' + Object.values(spec.paths['/openapi.yaml'])[0]!.operationId + '"]').waitFor({ timeout: 60_000 });
      const text = await page.locator('body').innerText();
      expect(text).toContain(spec.info.title);
      const missing = summaries(spec).filter((s) => !text.includes(s));
      expect(missing, 'operation summaries absent from the rendered page').toEqual([]);
      expect(summaries(spec).length).toBeGreaterThan(5);
      expect(served).toEqual(expect.arrayContaining(['/docs', '/docs/redoc.standalone.js', '/openapi.json']));
      expect(foreign, 'requests to another host').toEqual([]);
      expect(pageErrors, 'errors on the page').toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('api: the page names the agent and context operations', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.route('**/*', (route) => (new URL(route.request().url()).origin === t.url('api') ? route.continue() : route.abort()));
      await page.goto(`${t.url('api')}/docs`);
      await page.locator('[id="operation/createAgent"]').waitFor({ timeout: 60_000 });
      const text = await page.locator('.api-content').innerText();
      for (const s of ['Register an agent', 'Issue an API key to an agent', 'Request the context (SCDs) an agent may use for a task', 'Revoke an agent']) {
        expect(text).toContain(s);
      }
    } finally {
      await context.close();
    }
  });
});

describe('what /docs and /openapi.* answer', () => {
  it.each(SERVICES)('%s: /openapi.json and /openapi.yaml are %s', async (service, file) => {
    const spec = specOf(file);
    const json = await get(`${t.url(service)}/openapi.json`);
    expect(json.status).toBe(200);
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(JSON.parse(json.text)).toEqual(spec);
    const yaml = await get(`${t.url(service)}/openapi.yaml`);
    expect(yaml.status).toBe(200);
    expect(yaml.headers.get('content-type')).toBe('application/yaml; charset=utf-8');
    expect(yaml.text).toBe(readFileSync(path.join(SPEC_DIR, file), 'utf8'));
  });

  it.each(SERVICES)('%s: /docs is HTML whose policy allows this origin only, its script is cacheable and loads nothing remote', async (service) => {
    const html = await get(`${t.url(service)}/docs`);
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = html.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("connect-src 'self';");
    expect(csp).not.toMatch(/https?:|\*/);
    const src = /<script src="([^"]+)"><\/script>/.exec(html.text)?.[1];
    expect(src).toMatch(/^docs\/redoc\.standalone\.js\?v=[0-9a-f]{16}$/);
    const js = await get(`${t.url(service)}/${src}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(js.text).not.toContain('cdn.redoc.ly');
    expect(js.text.length).toBeGreaterThan(500_000);
  });

  it('bad requests to them get the error body', async () => {
    const q = await t.call('rules', 'GET', '/docs?unexpected=1');
    expect(q.status).toBe(400);
    expect(q.body.error).toBe('validation_error');
    const m = await t.call('api', 'POST', '/openapi.json', { body: {} });
    expect(m.status).toBe(405);
    expect(m.body.error).toBe('method_not_allowed');
  });
});
