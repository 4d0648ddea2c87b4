/**
 * openapi-backend's route matching, compiled once. Its `OpenAPIRouter.matchOperation` builds
 * a RegExp for every operation of the contract on every call whose path is not an operation's
 * exact path: on the control plane's 62 operations that is 114-181 µs for a templated GET
 * (`/api/agents/{agent_id}`, a tile; two runs) and 200 µs for a method the exact path lacks,
 * measured alone on this machine, and the edge matches once or twice a request.
 *
 * `compileMatcher` keeps the library's normalization (its `normalizeRequest`,
 * `isUnderApiRoot` and `normalizePath`), its order (an operation on the exact path and
 * method first; else the template matches, longest literal part first, in contract order
 * among equals: lodash's stable `orderBy`) and its errors in strict mode (404-notFound,
 * 405-methodNotAllowed), with each operation's pattern built once.
 * `operation-router.test.ts` compares it with the library's own matcher on every operation
 * of every contract.
 */
import type { Operation, OpenAPIRouter, Request } from 'openapi-backend';

/** openapi-backend's pattern for a path template: `{name}` is one segment, the rest literal. */
function templatePattern(path: string): RegExp {
  const literal = path.split(/\{[^}]+\}/).map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${literal.join('[^/]+')}$`);
}

type Match = OpenAPIRouter['matchOperation'];

export function compileMatcher(router: OpenAPIRouter): Match {
  const operations = router.getOperations();
  const exact = new Map<string, Map<string, Operation>>();
  for (const op of operations) {
    let byMethod = exact.get(op.path);
    if (!byMethod) exact.set(op.path, (byMethod = new Map()));
    if (!byMethod.has(op.method)) byMethod.set(op.method, op);
  }
  const literalLength = (op: Operation) => op.path.replace(/\{.*?\}/g, '').length;
  const templates = operations
    .map((op, i) => ({ op, re: templatePattern(op.path), length: literalLength(op), i }))
    .sort((a, b) => b.length - a.length || a.i - b.i);
  const underRoot = (router as unknown as { isUnderApiRoot(path: string): boolean }).isUnderApiRoot.bind(router);

  function matchOperation(req: Request, strict?: boolean): Operation | undefined {
    const r = router.normalizeRequest(req);
    if (!underRoot(r.path)) {
      if (strict) throw Error('404-notFound: no route matches request');
      return undefined;
    }
    const path = router.normalizePath(r.path);
    const hit = exact.get(path)?.get(r.method);
    if (hit) return hit;
    let onPath = false;
    for (const t of templates) {
      if (!t.re.test(path)) continue;
      if (t.op.method === r.method) return t.op;
      onPath = true;
    }
    if (strict) throw Error(onPath ? '405-methodNotAllowed: this method is not registered for the route' : '404-notFound: no route matches request');
    return undefined;
  }
  return matchOperation as Match;
}
