/**
 * `GET /docs`, `/docs/redoc.standalone.js`, `/openapi.json` and `/openapi.yaml`, the same on
 * every HTTP service, each for its own contract: the API reference rendered by Redoc's
 * standalone bundle (npm `redoc` 2.5, which runs on Node 20; Redoc 3 and Scalar's
 * `@scalar/api-reference` require Node 22), served by the service itself so that the page
 * needs no other host. Everything is read once, when a service's routes are built.
 *
 * Invariant: the page loads nothing from another host. Its Content-Security-Policy allows
 * only this origin (plus the inline styles Redoc's styled-components write, `data:` images
 * and the `blob:` worker its search runs in, none of which touches the network), and the
 * one remote URL the bundle would load (the Redocly logo in the sidebar footer, fetched from
 * cdn.redoc.ly) is removed from the script when it is read.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { specDocument, specText } from './service-app.js';

/**
 * The operationIds a spec/openapi-*.yaml declares for its reference: `get<P>Docs`,
 * `get<P>DocsScript`, `get<P>OpenApiJson`, `get<P>OpenApiYaml`, `P` naming the service as in
 * its health operation (`getRulesHealth`), so that no two contracts share an operationId.
 */
type DocsHandlers<P extends string> = Record<`get${P}${'Docs' | 'DocsScript' | 'OpenApiJson' | 'OpenApiYaml'}`, () => Response>;

/** The remote image Redoc 2.5's sidebar footer loads; its `onError` hides the image when the src is empty. */
const REMOTE_LOGO = '"https://cdn.redoc.ly/redoc/logo-mini.svg"';

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  'worker-src blob:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const COMMON = { 'content-security-policy': CSP, 'x-content-type-options': 'nosniff' };

let script: { body: Uint8Array<ArrayBuffer>; hash: string } | undefined;

/** Redoc's bundle without its one remote URL, read on first use and shared by every service. */
function redocScript(): { body: Uint8Array<ArrayBuffer>; hash: string } {
  if (!script) {
    const file = fileURLToPath(import.meta.resolve('redoc/bundles/redoc.standalone.js'));
    const text = readFileSync(file, 'utf8');
    if (!text.includes(REMOTE_LOGO)) throw new Error(`${file}: the Redocly logo URL moved; check that the bundle loads nothing remote`);
    const body = new TextEncoder().encode(text.replaceAll(REMOTE_LOGO, '""'));
    script = { body, hash: createHash('sha256').update(body).digest('hex').slice(0, 16) };
  }
  return script;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The page. Its URLs are relative (`openapi.json`, `docs/redoc.standalone.js` from `/docs`),
 * so that it also works behind a proxy that serves the service under a path prefix; the
 * bundle starts itself on the `<redoc spec-url>` element, so the page has no inline script.
 */
function page(title: string, scriptHash: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} - API reference</title>
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<redoc spec-url="openapi.json" hide-hostname></redoc>
<script src="docs/redoc.standalone.js?v=${scriptHash}"></script>
</body>
</html>
`;
}

/**
 * The reference's route module for the contract `specFile` (a file of spec/), whose operationIds
 * carry `prefix`. Every service lists it beside its health handler; it answers ready Responses
 * (none of the bodies is the edge's JSON).
 */
export function docsRoutes<const P extends string>(prefix: P, specFile: string): { handlers: DocsHandlers<P> } {
  const yamlText = specText(specFile);
  const doc = specDocument(specFile) as { info?: { title?: string } };
  const json = JSON.stringify(doc);
  const { body: js, hash } = redocScript();
  const html = page(doc.info?.title ?? specFile, hash);
  const fresh = { ...COMMON, 'cache-control': 'no-cache' };
  const handlers: Record<string, () => Response> = {
    [`get${prefix}Docs`]: () => new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8', ...fresh } }),
    [`get${prefix}DocsScript`]: () =>
      new Response(js, { headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=31536000, immutable', ...COMMON } }),
    [`get${prefix}OpenApiJson`]: () => new Response(json, { headers: { 'content-type': 'application/json; charset=utf-8', ...fresh } }),
    [`get${prefix}OpenApiYaml`]: () => new Response(yamlText, { headers: { 'content-type': 'application/yaml; charset=utf-8', ...fresh } }),
  };
  // The four keys above are exactly DocsHandlers<P>'s (a computed key loses its literal type).
  return { handlers: handlers as DocsHandlers<P> };
}
