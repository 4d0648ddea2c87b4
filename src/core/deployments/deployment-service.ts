/**
 * Deployments: the bundle versions whose SCDs are selectable for agents. Creating one
 * resolves the project bundles' imports now (pinned: that version; unpinned: the highest
 * active version) and freezes the result in `resolved_bundles`: a deployment is the
 * lockfile of what agents receive until the next deployment.
 *
 * A new deployment supersedes every active deployment that deploys one of the same bundle
 * ids (deploying medication-adherence 0.2.0 retires the 0.1.0 deployment); deployments of
 * other projects stay active and their bundles are united for selection.
 */
import { randomUUID } from 'node:crypto';
import { and, count, desc, eq, getTableColumns, ne, or, sql } from 'drizzle-orm';
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import { bundles, deployments } from '../db/schema/index.js';
import type { components } from '../../../gen/openapi/control-plane.js';
import { announceContentChange, bumpVersions } from '../graph/content-version.js';
import { pinned } from '../graph/refs.js';
import { recordEvent, type Who } from '../audit/events.js';
import { headsAt, resolveInMemory } from '../graph/resolve.js';

type Deployment = components['schemas']['Deployment'];
type DeploymentList = components['schemas']['DeploymentList'];
type DeployRequest = components['schemas']['DeployRequest'];

const toDeployment = (r: typeof deployments.$inferSelect): Deployment => ({
  deployment_id: r.deployment_id,
  project_bundles: r.project_bundles,
  resolved_bundles: r.resolved_bundles,
  status: r.status,
  superseded_by: r.superseded_by,
  created_at: r.created_at.toISOString(),
});

export async function createDeployment(ctx: AppContext, input: DeployRequest, who: Who): Promise<Deployment> {
  const roots = input.project_bundles.map((p) => pinned(p.id, p.version));
  const dup = roots.find((r, i) => roots.indexOf(r) !== i);
  if (dup) {
    throw new AppError('validation_error', `project_bundles names ${dup} twice`, {
      details: { reference: dup, errors: [{ path: `/body/project_bundles/${roots.lastIndexOf(dup)}`, rule: 'uniqueItems', message: `${dup} is listed twice` }] },
    });
  }
  const id = input.deployment_id?.toLowerCase() ?? randomUUID();
  const { v, row } = await ctx.db.tx(async (t) => {
    const { version: v, bundlesVersion } = await bumpVersions(t, false);
    const [existing] = await t.orm.select({ deployment_id: deployments.deployment_id }).from(deployments).where(eq(deployments.deployment_id, id));
    if (existing) throw new AppError('conflict', `Deployment ${id} already exists`, { details: { deployment_id: id } });
    const found = await t.orm
      .select({ bundle_id: bundles.bundle_id, version: bundles.version, is_active: bundles.is_active })
      .from(bundles)
      .where(or(...input.project_bundles.map((p) => and(eq(bundles.bundle_id, p.id), eq(bundles.version, p.version)))));
    const byRef = new Map(found.map((b) => [pinned(b.bundle_id, b.version), b]));
    for (const ref of roots) {
      const b = byRef.get(ref);
      if (!b) throw new AppError('not_found', `Bundle version ${ref} does not exist`, { details: { reference: ref } });
      if (!b.is_active) throw new AppError('conflict', `Bundle version ${ref} is deactivated and cannot be deployed`, { details: { reference: ref } });
    }
    const res = resolveInMemory(await headsAt(ctx, t, bundlesVersion), roots, { mode: 'strict' });
    const now = ctx.clock.now();
    const [row] = await t.orm
      .insert(deployments)
      .values({ deployment_id: id, project_bundles: roots, resolved_bundles: res.order, status: 'active', created_at: now })
      .returning();
    // Every active deployment that deploys one of these bundle ids (any version) is retired.
    const bundleIds = [...new Set(input.project_bundles.map((p) => p.id))];
    const superseded = await t.orm
      .update(deployments)
      .set({ status: 'superseded', superseded_by: id, superseded_at: now })
      .where(
        and(
          eq(deployments.status, 'active'),
          ne(deployments.deployment_id, id),
          sql`EXISTS (SELECT 1 FROM unnest(${deployments.project_bundles}) AS p(ref) WHERE regexp_replace(p.ref, ':[^:]+$', '') IN (${sql.join(
            bundleIds.map((b) => sql`${b}`),
            sql`, `,
          )}))`,
        ),
      )
      .returning({ deployment_id: deployments.deployment_id });
    if (superseded.length) ctx.logger.info('deployments superseded', { by: id, superseded: superseded.map((s) => s.deployment_id) });
    await recordEvent(t, who, {
      event_type: 'deployment.created', resource_type: 'deployment', resource_id: id,
      after: { project_bundles: roots, resolved_bundles: res.order, superseded: superseded.map((s) => s.deployment_id), content_version: v },
    }, now);
    return { v, row: row! };
  });
  await announceContentChange(ctx, v);
  ctx.logger.info('deployment created', { deployment_id: id, project_bundles: roots, resolved: row.resolved_bundles.length });
  // The revision this deployment produced: a client passes it as `at_least_revision`.
  return { ...toDeployment(row), content_revision: v };
}

export async function getDeployment(ctx: AppContext, id: string): Promise<Deployment> {
  const [row] = await ctx.db.orm.select().from(deployments).where(eq(deployments.deployment_id, id));
  if (!row) throw new AppError('not_found', `Deployment ${id} does not exist`);
  return toDeployment(row);
}

export async function listDeployments(ctx: AppContext, q: { status?: string; limit: number; offset: number }): Promise<DeploymentList> {
  const where = q.status ? eq(deployments.status, q.status as Deployment['status']) : undefined;
  const rows = await ctx.db.orm
    .select({ ...getTableColumns(deployments), total: sql<number>`count(*) OVER ()`.mapWith(Number) })
    .from(deployments)
    .where(where)
    .orderBy(desc(deployments.created_at), deployments.deployment_id)
    .limit(q.limit)
    .offset(q.offset);
  let total = rows[0]?.total;
  // A page past the end carries no window count.
  if (total === undefined) total = (await ctx.db.orm.select({ n: count() }).from(deployments).where(where))[0]!.n;
  return { deployments: rows.map(toDeployment), total, limit: q.limit, offset: q.offset };
}
