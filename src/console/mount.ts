/**
 * Serves the console (/console and below) on an HTTP service's port beside its API: requests
 * under /console go to the console's app, every other request to the service's own app. The
 * console's modules are loaded on its first request, so a process nobody opens the console
 * on carries none of it (the API's memory is measured against verify's bound).
 */
import { Hono } from 'hono';
import type { AppContext } from '../shared/app-context.js';
import type { HttpServiceDef } from '../shared/service.js';

type FetchApp = { fetch(req: Request, env?: unknown): Response | Promise<Response> };

export function withConsole(def: HttpServiceDef): HttpServiceDef {
  return {
    ...def,
    async createApp(ctx: AppContext) {
      const api = await def.createApp(ctx);
      let console: Promise<FetchApp> | undefined;
      const load = () =>
        (console ??= (async () => {
          const [{ createConsole }, { CONSOLE_PAGES }] = await Promise.all([import('./app.js'), import('./pages/index.js')]);
          return createConsole(ctx, CONSOLE_PAGES);
        })());
      const root = new Hono();
      const toConsole = async (c: { req: { raw: Request }; env: unknown }) => (await load()).fetch(c.req.raw, c.env);
      root.all('/console', toConsole);
      root.all('/console/*', toConsole);
      root.all('*', (c) => api.fetch(c.req.raw, c.env));
      return root;
    },
  };
}
