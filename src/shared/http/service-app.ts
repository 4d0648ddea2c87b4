/** Assembles an HTTP service from its contract and the route modules of its resource folders. */
import { readFileSync } from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import type { AppContext } from '../app-context.js';
import type { Config } from '../config.js';
import type { HttpServiceDef, RouteModule, ServiceName } from '../service.js';
import { SERVICE_VERSION } from '../version.js';
import type { components } from '../../../gen/openapi/control-plane.js';
import type { OperationsShape, ServesEvery } from './contract-types.js';
import { createOpenApiApp, WARM_UP_BINDINGS } from './openapi-app.js';

export const SPEC_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../spec');

const specs = new Map<string, { text: string; doc: Record<string, unknown> }>();
function loadSpec(specFile: string): { text: string; doc: Record<string, unknown> } {
  let spec = specs.get(specFile);
  if (!spec) {
    const text = readFileSync(path.join(SPEC_DIR, specFile), 'utf8');
    spec = { text, doc: parse(text) as Record<string, unknown> };
    specs.set(specFile, spec);
  }
  return spec;
}

/** The contract `specFile` (a file of spec/) as written, read once a process (the API docs serve it). */
export function specText(specFile: string): string {
  return loadSpec(specFile).text;
}

/**
 * The contract `specFile`, parsed once a process, as a copy of its own for each caller:
 * openapi-backend dereferences the document it is given in place. Given the path instead, it
 * parsed the file twice (once to validate it, once to dereference it), and the API docs and
 * the context fast path parsed it again: four parses of the 186 KB control-plane contract at
 * each start, about 60-190 ms and 6-27 MB of garbage each (2026-11-27).
 */
export function specDocument(specFile: string): Record<string, unknown> {
  return structuredClone(loadSpec(specFile).doc);
}

/**
 * `GET /health`, the same on every service. Its result type is spelled out so that it is
 * checked against each service's own health operation where it is registered.
 */
export function healthHandler(service: string): () => { status: 200; body: components['schemas']['Health'] } {
  return () => ({ status: 200, body: { status: 'ok', service, version: SERVICE_VERSION } });
}

/**
 * An HTTP service from its contract and its route modules: `httpService<operations>()({...})`,
 * `operations` being generated from `specFile`. The modules must handle every operation of it
 * between them (a spec that gains an operation fails typecheck until a handler serves it), and
 * each handler is typed by its operation (see contract-types.ts). Curried because TypeScript
 * cannot take `Ops` explicitly and infer the modules' own types in one call.
 */
export function httpService<Ops extends OperationsShape<Ops>>() {
  return <const M extends readonly RouteModule<Ops>[]>(opts: {
    name: ServiceName;
    specFile: string;
    port: (c: Config) => number;
    host?: (c: Config) => string;
    modules: M & ServesEvery<Ops, M>;
  }): HttpServiceDef => serviceDef<Ops>(opts);
}

function serviceDef<Ops extends OperationsShape<Ops>>(opts: {
  name: ServiceName;
  specFile: string;
  port: (c: Config) => number;
  host?: (c: Config) => string;
  modules: readonly RouteModule<Ops>[];
}): HttpServiceDef {
  const spec = path.join(SPEC_DIR, opts.specFile);
  const merged = <K extends 'handlers' | 'validationFail' | 'internalError' | 'payloadTooLarge'>(key: K) => {
    const out: Record<string, unknown> = {};
    for (const m of opts.modules) {
      for (const [k, v] of Object.entries((m[key] ?? {}) as Record<string, unknown>)) {
        if (k in out) throw new Error(`${opts.name}: ${key} ${k} is registered twice`);
        out[k] = v;
      }
    }
    // One service's modules merged: each was typed against the same Ops.
    return out as NonNullable<RouteModule<Ops>[K]>;
  };
  const starters = opts.modules.map((m) => m.start).filter((s): s is NonNullable<RouteModule<Ops>['start']> => !!s);
  const warmers = opts.modules.map((m) => m.warmUp).filter((w): w is NonNullable<RouteModule<Ops>['warmUp']> => !!w);
  const pres = opts.modules.map((m) => m.preHandle).filter((p): p is NonNullable<RouteModule<Ops>['preHandle']> => !!p);
  return {
    kind: 'http',
    name: opts.name,
    spec,
    port: opts.port,
    host: opts.host ?? ((c) => c.host),
    createApp: (ctx: AppContext) =>
      createOpenApiApp({
        definition: specDocument(opts.specFile),
        handlers: merged('handlers'),
        validationFail: merged('validationFail'),
        internalError: merged('internalError'),
        payloadTooLarge: merged('payloadTooLarge'),
        ctx,
        logger: ctx.logger.child({ service: opts.name }),
        service: opts.name,
        adminKeys: ctx.config.adminKeyring,
        auditorKeys: ctx.config.auditorKeyring,
      }),
    preHandle: pres.length
      ? (ctx: AppContext) => {
          const handlers = pres.map((p) => p(ctx));
          return (req, res) => handlers.some((h) => h(req, res));
        }
      : undefined,
    warmUp: warmers.length
      ? async (ctx, app, signal) => {
          let made = 0;
          for (const w of warmers) {
            for (const p of signal.aborted ? [] : await w(ctx)) {
              if (signal.aborted) break;
              const res = await app.fetch(new Request(`http://warm-up.invalid${p}`), WARM_UP_BINDINGS);
              await res.arrayBuffer();
              made++;
              // One at a time, callers' requests served between two.
              await nextTurn();
            }
          }
          return made;
        }
      : undefined,
    start: starters.length
      ? async (ctx) => {
          const stops: Array<() => Promise<void> | void> = [];
          for (const s of starters) {
            const stop = await s(ctx);
            if (stop) stops.push(stop);
          }
          return async () => {
            for (const stop of stops.reverse()) await stop();
          };
        }
      : undefined,
  };
}
