/**
 * The console end to end in Chromium (Debian's `chromium`, driven by playwright-core) against
 * a real server on port 0: an admin signs in through the form and sees the real data of real
 * context requests (the overview's chart, the agent, its requests); suspends the agent from its
 * page (confirming the dialog) and the agent's next context request is refused; a POST without
 * the CSRF token and an auditor's POST are 403 and change nothing; no page asks another host
 * for anything; the overview is readable at 1280 px and on a phone (no sideways scrolling).
 * Screenshots of the overview are kept in test-results/console/ (overview-1280.png,
 * overview-phone.png). Skipped, saying why, only when no Chromium is found (`make browser`
 * installs it).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startTestStack, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ARTIFACTS = path.join(ROOT, 'test-results/console');
const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => !!p && existsSync(p));
if (!CHROMIUM) console.warn('test/console/browser.test.ts skipped: no Chromium at $CHROMIUM_PATH, /usr/bin/chromium or /usr/bin/chromium-browser (make browser installs Debian\'s chromium)');

const AUDITOR_KEY = `audit_${randomBytes(24).toString('base64url')}`;

describe.skipIf(!CHROMIUM)('the console in Chromium', () => {
  let t: TestStack;
  let browser: Browser;
  let origin: string;
  let agentId: string;
  let apiKey: string;
  /** Every URL any page of the browser asked for. */
  const requested: string[] = [];

  const ask = (task = 'triage') => t.call('api', 'POST', '/api/context', { apiKey, body: { task_type: task } });
  const agentStatus = async () => (await t.call('api', 'GET', `/api/agents/${agentId}`, { admin: true })).body.status;

  async function signedIn(key: string, viewport = { width: 1280, height: 900 }): Promise<Page> {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    page.on('request', (r) => requested.push(r.url()));
    await page.goto(`${origin}/console`);
    expect(page.url()).toContain('/console/login');
    await page.fill('input[name="key"]', key);
    await Promise.all([page.waitForURL(`${origin}/console`), page.click('form.login button[type="submit"]')]);
    return page;
  }

  /** Submits a form built in the page (what a forged or replayed POST looks like); the answer's status. */
  async function postFrom(page: Page, action: string, fields: Record<string, string>): Promise<number> {
    const [res] = await Promise.all([
      page.waitForResponse((r) => r.url() === origin + action && r.request().method() === 'POST'),
      page.evaluate(
        ({ action, fields }) => {
          const f = document.createElement('form');
          f.method = 'post';
          f.action = action;
          for (const [k, v] of Object.entries(fields)) {
            const i = document.createElement('input');
            i.type = 'hidden';
            i.name = k;
            i.value = v;
            f.appendChild(i);
          }
          document.body.appendChild(f);
          f.submit();
        },
        { action, fields },
      ),
    ]);
    return res.status();
  }

  beforeAll(async () => {
    t = await startTestStack({ services: ['api'], env: { AUDITOR_API_KEYS: `compliance:${AUDITOR_KEY}` } });
    origin = t.url('api');
    const a = await makeAgent(t, { name: 'Triage <assistant>', allowed_intents: ['triage'] });
    agentId = a.agent_id;
    apiKey = (await issueKey(t, agentId)).api_key;
    for (let i = 0; i < 3; i++) expect((await ask()).status).toBe(200);
    expect((await ask('billing')).status).toBe(403);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    mkdirSync(ARTIFACTS, { recursive: true });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('an admin signs in and sees the real requests: the chart, the agent and its requests', async () => {
    const page = await signedIn(ADMIN_KEY);
    const chart = page.locator('#activity-chart');
    expect(await chart.getAttribute('data-accepted')).toBe('3');
    expect(await chart.getAttribute('data-refused')).toBe('1');
    expect(await page.locator('svg rect').count()).toBeGreaterThan(0);
    await page.screenshot({ path: path.join(ARTIFACTS, 'overview-1280.png'), fullPage: true });

    await page.click('nav >> text=Agents');
    await page.fill('input[name="q"]', 'assistant');
    await Promise.all([page.waitForURL(/q=assistant/), page.press('input[name="q"]', 'Enter')]);
    const link = page.locator(`a[href="/console/agents/${encodeURIComponent(agentId)}"]`).first();
    expect(await page.locator('main').innerText()).toContain('Triage <assistant>'); // shown as text, escaped
    await Promise.all([page.waitForURL(/\/console\/agents\/agent/), link.click()]);
    const main = await page.locator('main').innerText();
    expect(main).toContain(agentId);
    expect(main.match(/triage/g)?.length).toBeGreaterThanOrEqual(3);
    expect(main).toContain('INTENT_NOT_ALLOWED');
    expect(main).not.toContain(apiKey);
    await page.context().close();
  });

  it('an admin suspends the agent from its page (after confirming) and its next context request is refused', async () => {
    const page = await signedIn(ADMIN_KEY);
    await page.goto(`${origin}/console/agents/${encodeURIComponent(agentId)}`);
    const dialogs: string[] = [];
    page.once('dialog', (d) => {
      dialogs.push(d.message());
      void d.accept();
    });
    await Promise.all([page.waitForURL(/done=/), page.click('button:has-text("Suspend")')]);
    expect(dialogs[0]).toContain(`Suspend ${agentId}?`);
    expect(await page.locator('.notice').innerText()).toMatch(/suspended/i);
    expect(await agentStatus()).toBe('suspended');
    const refused = await ask();
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ success: false, error_code: 'AUTH_FAILED' });

    // A POST without the CSRF token: 403, nothing changes.
    expect(await postFrom(page, `/console/agents/${encodeURIComponent(agentId)}/activate`, {})).toBe(403);
    expect(await page.locator('main').innerText()).toMatch(/CSRF token/);
    expect(await agentStatus()).toBe('suspended');
    const events = (await t.call('api', 'GET', `/api/audit/events?resource_id=${encodeURIComponent(agentId)}&event_type=agent.suspended`, { admin: true })).body.events;
    expect(events.map((e: { actor: string }) => e.actor)).toEqual(['admin']);
    await page.context().close();
  });

  it('an auditor sees no admin forms, and a POST from an auditor session is 403 and changes nothing; readable on a phone', async () => {
    const page = await signedIn(AUDITOR_KEY, { width: 390, height: 844 });
    // No sideways scrolling on a phone: wide tables scroll inside their own box.
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1)).toBe(true);
    await page.screenshot({ path: path.join(ARTIFACTS, 'overview-phone.png'), fullPage: true });
    await page.goto(`${origin}/console/agents/${encodeURIComponent(agentId)}`);
    expect(await page.locator('button:has-text("Activate")').count()).toBe(0);
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1)).toBe(true);
    const csrf = await page.locator('form.signout input[name="_csrf"]').getAttribute('value');
    expect(csrf).toBeTruthy();
    expect(await postFrom(page, `/console/agents/${encodeURIComponent(agentId)}/activate`, { _csrf: csrf! })).toBe(403);
    expect(await page.locator('main').innerText()).toMatch(/auditor session is read-only/);
    expect(await agentStatus()).toBe('suspended');
    await page.context().close();
  });

  it('no page asked another host for anything', () => {
    expect(requested.length).toBeGreaterThan(10);
    expect(requested.filter((u) => new URL(u).origin !== origin)).toEqual([]);
  });
});
