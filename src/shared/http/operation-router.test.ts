/**
 * The compiled matcher routes as openapi-backend's own `matchOperation` does: on every
 * contract of spec/, for paths made from every operation's template (parameters filled with
 * plain, dotted, encoded, empty and slashed values; a segment more or less; a trailing slash;
 * a query), methods in either case, strict (404 or 405) and, for GET, not strict.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OpenAPIBackend, type OpenAPIRouter } from 'openapi-backend';
import YAML from 'yaml';
import { compileMatcher } from './operation-router.js';

const SPEC = path.resolve(import.meta.dirname, '../../../spec');
const contracts = fs.readdirSync(SPEC).filter((f) => /^openapi-.*\.yaml$/.test(f));
const METHODS = ['get', 'post', 'delete', 'PUT', ' Patch '];
const VALUES = ['agent:triage-bot', '012', 'entries', 'a.b', '%2e', '..', '', 'x/y', '(a|b)*'];

function pathsOf(templates: string[]): string[] {
  const out = new Set<string>(['/', '', '/api', '/api/', '//api/agents', '/nope', 'api/agents']);
  for (const t of templates) {
    for (const v of VALUES) {
      const p = t.replace(/\{[^}]+\}/g, v);
      out.add(p);
      out.add(`${p}/`);
      out.add(`${p}?a=1`);
      out.add(`${p}/extra`);
      out.add(p.slice(0, p.lastIndexOf('/')));
      out.add(p.toUpperCase());
    }
  }
  return [...out];
}

function outcome(match: OpenAPIRouter['matchOperation'], method: string, p: string, strict: boolean): string {
  try {
    const op = strict ? match({ method, path: p, headers: {} }, true) : match({ method, path: p, headers: {} });
    return op ? `${op.method} ${op.path} ${op.operationId}` : 'undefined';
  } catch (e) {
    return `throws ${(e as Error).message}`;
  }
}

describe('compileMatcher', () => {
  for (const file of contracts) {
    it(`routes as openapi-backend does on ${file}`, async () => {
      const api = new OpenAPIBackend({ definition: YAML.parse(fs.readFileSync(path.join(SPEC, file), 'utf8')), quick: true });
      await api.init();
      const router = api.router;
      const operations = router.getOperations();
      router.getOperations = () => operations; // as the edge does: the library rebuilds the list per call
      const library = router.matchOperation.bind(router);
      const compiled = compileMatcher(router);
      const paths = pathsOf(router.getOperations().map((o) => o.path));
      let routed = 0;
      for (const p of paths) {
        for (const m of METHODS) {
          for (const strict of m === 'get' ? [false, true] : [true]) {
            const want = outcome(library, m, p, strict);
            expect(outcome(compiled, m, p, strict), `${m} ${p} strict=${strict}`).toBe(want);
            if (!want.startsWith('throws') && want !== 'undefined') routed++;
          }
        }
      }
      // The paths reach operations, not only refusals.
      expect(routed).toBeGreaterThan(router.getOperations().length);
    });
  }

  it('orders overlapping templates as the library does (longest literal part first, then contract order)', async () => {
    const op = (id: string) => ({ operationId: id, responses: { 200: { description: 'ok' } } });
    const paths: Record<string, Record<string, unknown>> = {
      '/{p}/{q}/c': { get: op('pqc') },
      '/{p}/b/c': { get: op('pbc'), post: op('pbcPost') },
      '/a/{x}/c': { get: op('axc') },
      '/a/b/{y}': { get: op('aby'), delete: op('abyDelete') },
      '/a/{x}': { get: op('ax') },
      '/a/b': { put: op('abPut') },
      '/{p}/{q}/{r}': { patch: op('pqr') },
    };
    const api = new OpenAPIBackend({ definition: { openapi: '3.0.3', info: { title: 't', version: '1' }, paths }, quick: true });
    await api.init();
    const library = api.router.matchOperation.bind(api.router);
    const compiled = compileMatcher(api.router);
    const seen = new Set<string>();
    for (const p of pathsOf(Object.keys(paths)).concat(['/a/b/c', '/z/b/c', '/a/q/c', '/a/b/q', '/a/b'])) {
      for (const m of METHODS) {
        const want = outcome(library, m, p, true);
        expect(outcome(compiled, m, p, true), `${m} ${p}`).toBe(want);
        seen.add(want);
      }
    }
    // /a/q/c is on three templates: GET takes the longest literal part (/a//c), not the first.
    expect(outcome(compiled, 'get', '/a/q/c', true)).toBe('get /a/{x}/c axc');
    // /a/b/c on five: /{p}/b/c and /a/b/{y} tie on length, the first in the contract wins; POST has one.
    expect(outcome(compiled, 'get', '/a/b/c', true)).toBe('get /{p}/b/c pbc');
    expect(outcome(compiled, 'post', '/a/b/c', true)).toBe('post /{p}/b/c pbcPost');
    expect(outcome(compiled, 'put', '/a/b/c', true)).toMatch(/^throws 405/);
    expect(seen.size).toBeGreaterThan(8);
  });
});
