/**
 * A console client over HTTP for tests, as a browser without scripts would be: a cookie jar,
 * sign-in through the form, GET pages, POST forms with (or without) the page's CSRF token.
 */
import type { TestStack } from '../harness.js';

export interface ConsoleResponse {
  status: number;
  text: string;
  headers: Headers;
  location: string | null;
}

export class ConsoleClient {
  readonly cookies = new Map<string, string>();
  constructor(readonly base: string) {}

  static for(t: TestStack): ConsoleClient {
    return new ConsoleClient(t.url('api'));
  }

  /** A client signed in with `key` (admin or auditor); throws when the sign-in is refused. */
  static async signedIn(t: TestStack, key: string): Promise<ConsoleClient> {
    const c = ConsoleClient.for(t);
    const r = await c.signIn(key);
    if (r.status !== 303) throw new Error(`console sign-in refused: ${r.status}`);
    return c;
  }

  private keep(res: Response): void {
    for (const c of res.headers.getSetCookie()) {
      const [pair, ...attrs] = c.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some((a) => /max-age=0/i.test(a.trim()) || /expires=Thu, 01 Jan 1970/i.test(a.trim()));
      if (!value || expired) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  private cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async get(path: string): Promise<ConsoleResponse> {
    const res = await fetch(this.base + path, { redirect: 'manual', headers: { cookie: this.cookieHeader(), connection: 'close' } });
    this.keep(res);
    return { status: res.status, text: await res.text(), headers: res.headers, location: res.headers.get('location') };
  }

  async post(path: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<ConsoleResponse> {
    const res = await fetch(this.base + path, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: this.cookieHeader(), connection: 'close', ...headers },
      body: new URLSearchParams(form).toString(),
    });
    this.keep(res);
    return { status: res.status, text: await res.text(), headers: res.headers, location: res.headers.get('location') };
  }

  /** The CSRF token of a page (its first `_csrf` field). */
  static csrfOf(html: string): string {
    const m = /name="_csrf" value="([^"]+)"/.exec(html);
    if (!m) throw new Error('no _csrf field on the page');
    return m[1];
  }

  /** Signs in through the form; returns the sign-in POST's response. */
  async signIn(key: string): Promise<ConsoleResponse> {
    const form = await this.get('/console/login');
    return this.post('/console/login', { _csrf: ConsoleClient.csrfOf(form.text), key, next: '/console' });
  }

  /** The CSRF token of the session (read from a page). */
  async csrf(path = '/console'): Promise<string> {
    return ConsoleClient.csrfOf((await this.get(path)).text);
  }
}
