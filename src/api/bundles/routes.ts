/** Bundle routes (spec 4.4): publish, list, read one version, deactivate. */
import type { AppContext } from '../../shared/app-context.js';
import { errorResult, type UncheckedRequest, type ValidationIssue } from '../../shared/http/openapi-app.js';
import type { operations } from '../../../gen/openapi/control-plane.js';
import type { RouteModule } from '../../shared/service.js';
import { whoOf } from '../../shared/http/who.js';
import { createBundle } from '../../core/bundles/create-bundle.js';
import { deactivateBundleVersion, getBundleVersion, listBundles } from '../../core/bundles/bundle-queries.js';
import { bundleValidationError, checkBundleInput, type Issue } from '../../core/bundles/validate-bundle.js';
import { findNul } from '../../core/graph/input-text.js';

/** The value at `/body/...` when it is a string: the offending reference of a pattern failure. */
function valueAt(body: unknown, path: string): string | undefined {
  if (!path.startsWith('/body/')) return undefined;
  let cur: unknown = body;
  for (const seg of path.slice(6).split('/')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[seg];
  }
  return typeof cur === 'string' ? cur : undefined;
}

/**
 * A body that fails the contract still gets the whole report (contract issues plus every
 * store-dependent problem found in what is well-formed), with the bundle and each reference
 * named: a malformed corpus file is reported at once, never as a bare schema error.
 */
async function createBundleValidationFail(req: UncheckedRequest, ctx: AppContext, errors: ValidationIssue[]) {
  const issues: Issue[] = errors.map((e) => {
    const value = /^\/body\/(imports|scds)\/\d+$/.test(e.path) ? valueAt(req.body, e.path) : undefined;
    return value
      ? { ...e, reference: value, message: `${value} is not a valid ${e.path.includes('/imports/') ? 'import reference (bundle:<name> or bundle:<name>:<X.Y.Z>)' : 'SCD id'}: ${e.message}` }
      : { ...e };
  });
  if (req.body !== undefined) {
    try {
      const check = await checkBundleInput(ctx.db, req.body);
      const seen = new Set(issues.map((i) => i.path));
      for (const e of check.errors) if (!seen.has(e.path)) issues.push(e);
    } catch (e) {
      ctx.logger.warn('bundle pre-check of an invalid body failed', { error: (e as Error).message });
    }
  }
  return errorResult(bundleValidationError(req.body, issues));
}

export const routes = {
  handlers: {
    async createBundle(req, ctx) {
      const nul = findNul(req.body);
      if (nul !== null) {
        throw bundleValidationError(req.body, [{ path: `/body${nul}`, rule: 'nul_character', message: `/body${nul} contains the NUL character (U+0000), which cannot be stored` }]);
      }
      return { status: 201, body: await createBundle(ctx, req.body, whoOf(req)) };
    },
    async listBundles(req, ctx) {
      const q = req.query;
      return { status: 200, body: await listBundles(ctx, { type: q.type, limit: q.limit ?? 100, offset: q.offset ?? 0 }) };
    },
    async getBundleVersion(req, ctx) {
      return { status: 200, body: await getBundleVersion(ctx, req.params.bundle_id, req.params.version) };
    },
    async deactivateBundleVersion(req, ctx) {
      await deactivateBundleVersion(ctx, req.params.bundle_id, req.params.version, whoOf(req));
      return { status: 204 };
    },
  },
  validationFail: { createBundle: createBundleValidationFail },
} satisfies RouteModule<operations>;
