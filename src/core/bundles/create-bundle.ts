/**
 * Publishing a bundle version: validate (validate-bundle.ts), then in one transaction take
 * the content lock, refuse an existing semver version (409: versions are immutable), store
 * the version with a snapshot of every SCD's content, write its graph, and check that the
 * new version closes no import cycle (an unpinned import elsewhere may now resolve to it).
 */
import { and, eq, sql } from 'drizzle-orm';
import type { AppContext } from '../../shared/app-context.js';
import { bundleScds, bundles } from '../db/schema/index.js';
import { AppError } from '../../shared/errors.js';
import type { components } from '../../../gen/openapi/control-plane.js';
import { announceContentChange, bumpVersions } from '../graph/content-version.js';
import { pinned } from '../graph/refs.js';
import { resolveClosure } from '../graph/resolve.js';
import { removeGraph, writeGraph } from '../graph/write-graph.js';
import { bundleValidationError, checkBundleInput, manifestOf, type Issue } from './validate-bundle.js';
import { recordEvent, type Who } from '../audit/events.js';

export type BundleCreate = components['schemas']['BundleCreate'];
export type BundleCreated = components['schemas']['BundleCreated'];

export async function createBundle(ctx: AppContext, input: BundleCreate, who: Who): Promise<BundleCreated> {
  const ref = pinned(input.id, input.version);
  const isDraft = input.version === 'DRAFT';
  const { version: contentVersion, result } = await ctx.db.tx(async (t) => {
    const contentVersion = (await bumpVersions(t, true)).version;
    const thisVersion = and(eq(bundles.bundle_id, input.id), eq(bundles.version, input.version));
    const [existing] = await t.orm.select({ version: bundles.version }).from(bundles).where(thisVersion);
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
      await t.orm.delete(bundleScds).where(and(eq(bundleScds.bundle_id, input.id), eq(bundleScds.bundle_version, input.version)));
      await removeGraph(t, ref);
      await t.orm.delete(bundles).where(thisVersion);
    }
    await t.orm.insert(bundles).values({
      bundle_id: input.id,
      version: input.version,
      bundle_type: input.type,
      schema_version: input.schema_version ?? null,
      title: input.title,
      created_by: input.provenance.created_by,
      description: input.description,
      manifest: manifestOf(input as unknown as Record<string, unknown>),
      validation_status: status,
      validation_errors: findings.length ? findings : null,
      created_at: now,
      published_at: isDraft ? null : now,
      is_active: true,
    });
    const scds = input.scds.map((id) => ({ id, ...check.scds.get(id)! }));
    if (scds.length) {
      await t.orm
        .insert(bundleScds)
        .values(scds.map((s, position) => ({ bundle_id: input.id, bundle_version: input.version, scd_id: s.id, position, document: s.document, content_yaml: s.yaml })));
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
        : await t.orm
            .select({ one: sql`1` })
            .from(bundles)
            .where(sql`${bundles.manifest}->'imports' @> ${JSON.stringify([input.id])}::jsonb`)
            .limit(1);
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
    await recordEvent(t, who, {
      event_type: isDraft ? 'bundle.draft_saved' : 'bundle.published',
      resource_type: 'bundle',
      resource_id: ref,
      after: {
        bundle_id: input.id, version: input.version, type: input.type, title: input.title, created_by: input.provenance.created_by,
        imports: input.imports ?? [], scds: input.scds, validation_status: status, content_version: contentVersion, replaced_draft: !!existing,
      },
    }, now);
    return { version: contentVersion, result };
  });
  await announceContentChange(ctx, contentVersion);
  ctx.logger.info('bundle published', { bundle: ref, validation_status: result.validation_status, findings: result.validation_errors?.length ?? 0 });
  return { ...result, content_revision: contentVersion };
}
