/**
 * Publishing a bundle version: validate (validate-bundle.ts), then in one transaction take
 * the content lock, refuse an existing semver version (409: versions are immutable), store
 * the version with a snapshot of every SCD's content, write its graph, and check that the
 * new version closes no import cycle (an unpinned import elsewhere may now resolve to it).
 */
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import type { components } from '../../../gen/openapi/control-plane.js';
import { announceContentChange, bumpVersions } from '../graph/content-version.js';
import { pinned } from '../graph/refs.js';
import { resolveClosure } from '../graph/resolve.js';
import { removeGraph, writeGraph } from '../graph/write-graph.js';
import { bundleValidationError, checkBundleInput, manifestOf, type Issue } from './validate-bundle.js';

export type BundleCreate = components['schemas']['BundleCreate'];
export type BundleCreated = components['schemas']['BundleCreated'];

export async function createBundle(ctx: AppContext, input: BundleCreate): Promise<BundleCreated> {
  const ref = pinned(input.id, input.version);
  const isDraft = input.version === 'DRAFT';
  const { version: contentVersion, result } = await ctx.db.tx(async (t) => {
    const contentVersion = (await bumpVersions(t, true)).version;
    const [existing] = await t.query<{ version: string }>('SELECT version FROM bundles WHERE bundle_id = $1 AND version = $2', [input.id, input.version]);
    if (existing && !isDraft) {
      throw new AppError('conflict', `Bundle ${input.id} version ${input.version} already exists; published versions are immutable (publish a new version)`, {
        details: { bundle_id: input.id, version: input.version },
      });
    }
    const check = await checkBundleInput(t, input);
    if (check.errors.length) throw bundleValidationError(input, check.errors);

    const findings: Issue[] = check.findings;
    const status = findings.some((f) => f.severity !== 'warning') ? 'invalid' : 'valid';
    const now = ctx.clock.now();
    if (existing) {
      // Replacing the draft: its content and edges go; the row is rewritten below.
      await t.query('DELETE FROM bundle_scds WHERE bundle_id = $1 AND bundle_version = $2', [input.id, input.version]);
      await removeGraph(t, ref);
      await t.query('DELETE FROM bundles WHERE bundle_id = $1 AND version = $2', [input.id, input.version]);
    }
    await t.query(
      `INSERT INTO bundles (bundle_id, version, bundle_type, schema_version, title, created_by, description, manifest,
                            validation_status, validation_errors, created_at, published_at, is_active)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10::jsonb, $11, $12, true)`,
      [
        input.id,
        input.version,
        input.type,
        input.schema_version ?? null,
        input.title,
        input.provenance.created_by,
        input.description,
        JSON.stringify(manifestOf(input as unknown as Record<string, unknown>)),
        status,
        findings.length ? JSON.stringify(findings) : null,
        now,
        isDraft ? null : now,
      ],
    );
    const scds = input.scds.map((id) => ({ id, ...check.scds.get(id)! }));
    if (scds.length) {
      await t.query(
        `INSERT INTO bundle_scds (bundle_id, bundle_version, scd_id, position, document, content_yaml)
         SELECT $1, $2, s.scd_id, s.position, s.document, s.content_yaml
           FROM unnest($3::text[], $4::int[], $5::text[]::jsonb[], $6::text[]) AS s(scd_id, position, document, content_yaml)`,
        [input.id, input.version, scds.map((s) => s.id), scds.map((_, i) => i), scds.map((s) => JSON.stringify(s.document)), scds.map((s) => s.yaml)],
      );
    }
    await writeGraph(t, {
      ref,
      bundleId: input.id,
      version: input.version,
      type: input.type,
      roles: input.applies_to?.roles ?? null,
      scds: scds.map((s) => ({ id: s.id, document: s.document })),
      imports: check.imports.map((i) => ({ ref: i.ref, target: pinned(i.head.id, i.head.version), pinned: i.ref.split(':').length === 3 })),
    });
    // The new version may close a cycle through an unpinned import (B imports `bundle:A`, A imports
    // `bundle:B`). Only a bundle that imports this name unpinned can lead back here: without one
    // (pinned imports of a version that did not exist yet are impossible) there is nothing to walk.
    try {
      const [importer] = isDraft
        ? []
        : await t.query(`SELECT 1 FROM bundles WHERE manifest->'imports' @> $1::jsonb LIMIT 1`, [JSON.stringify([input.id])]);
      if (importer) await resolveClosure(t, [ref], { mode: 'lenient' });
    } catch (e) {
      if (e instanceof AppError && e.code === 'validation_error' && Array.isArray(e.details?.cycle)) {
        const cycle = e.details.cycle as string[];
        throw bundleValidationError(input, [
          { path: '/body/imports', rule: 'import_cycle', reference: cycle[1] ?? ref, message: `${e.message} (publishing ${ref} would close it)` },
        ]);
      }
      throw e;
    }
    const result: BundleCreated = {
      bundle_id: input.id,
      version: input.version,
      status: isDraft ? 'draft' : 'published',
      validation_status: status,
      validation_errors: findings.length ? (findings as BundleCreated['validation_errors']) : null,
    };
    return { version: contentVersion, result };
  });
  await announceContentChange(ctx, contentVersion);
  ctx.logger.info('bundle published', { bundle: ref, validation_status: result.validation_status, findings: result.validation_errors?.length ?? 0 });
  return result;
}
