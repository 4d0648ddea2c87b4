/** Reading and deactivating bundle versions. */
import { and, arrayContains, asc, count, eq, sql } from 'drizzle-orm';
import type { AppContext } from '../../shared/app-context.js';
import { bundleScds, bundles, deployments, tags } from '../db/schema/index.js';
import { AppError } from '../../shared/errors.js';
import type { components } from '../../../gen/openapi/control-plane.js';
import { announceContentChange, bumpVersions } from '../graph/content-version.js';
import { pinned } from '../graph/refs.js';
import { recordEvent, type Who } from '../audit/events.js';

type BundleList = components['schemas']['BundleList'];
type BundleVersionDetail = components['schemas']['BundleVersionDetail'];

type BundleType = (typeof bundles.bundle_type.enumValues)[number];

export async function listBundles(ctx: AppContext, q: { type?: string; limit: number; offset: number }): Promise<BundleList> {
  const where = q.type ? eq(bundles.bundle_type, q.type as BundleType) : undefined;
  const rows = await ctx.db.orm
    .select({
      bundle_id: bundles.bundle_id,
      version: bundles.version,
      bundle_type: bundles.bundle_type,
      title: bundles.title,
      created_at: bundles.created_at,
      is_active: bundles.is_active,
      validation_status: bundles.validation_status,
      total: sql<number>`count(*) OVER ()`.mapWith(Number),
    })
    .from(bundles)
    .where(where)
    .orderBy(bundles.bundle_id, bundles.created_at, bundles.version)
    .limit(q.limit)
    .offset(q.offset);
  let total = rows[0]?.total;
  if (total === undefined) {
    // A page past the end carries no window count.
    const [c] = await ctx.db.orm.select({ n: count() }).from(bundles).where(where);
    total = c!.n;
  }
  return {
    bundles: rows.map((r) => ({
      id: r.bundle_id,
      version: r.version,
      type: r.bundle_type,
      title: r.title ?? '',
      created_at: r.created_at.toISOString(),
      is_active: r.is_active,
      validation_status: r.validation_status,
    })),
    total: Number(total),
    limit: q.limit,
    offset: q.offset,
  };
}

export async function getBundleVersion(ctx: AppContext, id: string, version: string): Promise<BundleVersionDetail> {
  const [r] = await ctx.db.orm.select().from(bundles).where(and(eq(bundles.bundle_id, id), eq(bundles.version, version)));
  if (!r) throw new AppError('not_found', `Bundle ${id} version ${version} does not exist`);
  // The manifest was checked against the contract when it was published.
  const m = r.manifest as Record<string, unknown>;
  const docs = await ctx.db.orm
    .select({ document: bundleScds.document })
    .from(bundleScds)
    .where(and(eq(bundleScds.bundle_id, id), eq(bundleScds.bundle_version, version)))
    .orderBy(asc(bundleScds.position));
  return {
    id: r.bundle_id,
    type: r.bundle_type,
    version: r.version,
    title: r.title ?? '',
    description: r.description,
    scds: Array.isArray(m.scds) ? (m.scds as BundleVersionDetail['scds']) : [],
    imports: Array.isArray(m.imports) ? (m.imports as BundleVersionDetail['imports']) : [],
    manifest: m,
    applies_to: (m.applies_to as BundleVersionDetail['applies_to'] | undefined) ?? null,
    provenance: (m.provenance as BundleVersionDetail['provenance'] | undefined) ?? {},
    schema_version: r.schema_version,
    validation_status: r.validation_status,
    validation_errors: (r.validation_errors as BundleVersionDetail['validation_errors']) ?? null,
    is_active: r.is_active,
    created_at: r.created_at.toISOString(),
    published_at: r.published_at ? r.published_at.toISOString() : null,
    created_by: r.created_by,
    documents: docs.map((d) => d.document as BundleVersionDetail['documents'][number]),
  };
}

/**
 * Deactivates a version (is_active false). Refused (409) while a tag points to it or an
 * active deployment holds it, directly or through imports; idempotent otherwise.
 */
export async function deactivateBundleVersion(ctx: AppContext, id: string, version: string, who: Who): Promise<void> {
  const ref = pinned(id, version);
  const changed = await ctx.db.tx(async (t) => {
    const contentVersion = (await bumpVersions(t, true)).version;
    const thisVersion = and(eq(bundles.bundle_id, id), eq(bundles.version, version));
    const [r] = await t.orm.select({ is_active: bundles.is_active }).from(bundles).where(thisVersion).for('update');
    if (!r) throw new AppError('not_found', `Bundle ${id} version ${version} does not exist`);
    if (!r.is_active) return null;
    const tagRows = await t.orm
      .select({ tag_name: tags.tag_name })
      .from(tags)
      .where(and(eq(tags.bundle_id, id), eq(tags.bundle_version, version)))
      .orderBy(tags.tag_name);
    const deps = await t.orm
      .select({ deployment_id: deployments.deployment_id })
      .from(deployments)
      .where(and(eq(deployments.status, 'active'), arrayContains(deployments.resolved_bundles, [ref])))
      .orderBy(deployments.created_at, deployments.deployment_id);
    if (tagRows.length || deps.length) {
      const what = [tagRows.length ? `tag${tagRows.length > 1 ? 's' : ''} ${tagRows.map((x) => x.tag_name).join(', ')}` : '', deps.length ? `${deps.length} active deployment${deps.length > 1 ? 's' : ''}` : '']
        .filter(Boolean)
        .join(' and ');
      throw new AppError('conflict', `Bundle ${ref} is in use by ${what}; move the tags or redeploy first`, {
        details: { reference: ref, tags: tagRows.map((x) => x.tag_name), deployments: deps.map((d) => d.deployment_id) },
      });
    }
    await t.orm.update(bundles).set({ is_active: false }).where(thisVersion);
    await recordEvent(t, who, { event_type: 'bundle.deactivated', resource_type: 'bundle', resource_id: ref, before: { is_active: true }, after: { is_active: false, content_version: contentVersion } }, ctx.clock.now());
    return contentVersion;
  });
  if (changed !== null) {
    await announceContentChange(ctx, changed);
    ctx.logger.info('bundle deactivated', { bundle: ref });
  }
}
