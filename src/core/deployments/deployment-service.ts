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
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import type { components } from '../../../gen/openapi/control-plane.js';
import { announceContentChange, bumpVersions } from '../graph/content-version.js';
import { pinned } from '../graph/refs.js';
import { headsAt, resolveInMemory } from '../graph/resolve.js';

type Deployment = components['schemas']['Deployment'];
type DeploymentList = components['schemas']['DeploymentList'];
type DeployRequest = components['schemas']['DeployRequest'];

type DeploymentRow = {
  deployment_id: string;
  project_bundles: string[];
  resolved_bundles: string[];
  status: Deployment['status'];
  superseded_by: string | null;
  created_at: Date;
};

const toDeployment = (r: DeploymentRow): Deployment => ({
  deployment_id: r.deployment_id,
  project_bundles: r.project_bundles,
  resolved_bundles: r.resolved_bundles,
  status: r.status,
  superseded_by: r.superseded_by,
  created_at: r.created_at.toISOString(),
});

export async function createDeployment(ctx: AppContext, input: DeployRequest): Promise<Deployment> {
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
    const [existing] = await t.query('SELECT 1 FROM deployments WHERE deployment_id = $1', [id]);
    if (existing) throw new AppError('conflict', `Deployment ${id} already exists`, { details: { deployment_id: id } });
    const found = await t.query<{ bundle_id: string; version: string; is_active: boolean }>(
      `SELECT b.bundle_id, b.version, b.is_active FROM unnest($1::text[], $2::text[]) AS r(bundle_id, version)
         JOIN bundles b ON b.bundle_id = r.bundle_id AND b.version = r.version`,
      [input.project_bundles.map((p) => p.id), input.project_bundles.map((p) => p.version)],
    );
    const byRef = new Map(found.map((b) => [pinned(b.bundle_id, b.version), b]));
    for (const ref of roots) {
      const b = byRef.get(ref);
      if (!b) throw new AppError('not_found', `Bundle version ${ref} does not exist`, { details: { reference: ref } });
      if (!b.is_active) throw new AppError('conflict', `Bundle version ${ref} is deactivated and cannot be deployed`, { details: { reference: ref } });
    }
    const res = resolveInMemory(await headsAt(ctx, t, bundlesVersion), roots, { mode: 'strict' });
    const now = ctx.clock.now();
    const [row] = await t.query<DeploymentRow>(
      `INSERT INTO deployments (deployment_id, project_bundles, resolved_bundles, status, created_at)
       VALUES ($1, $2::text[], $3::text[], 'active', $4) RETURNING *`,
      [id, roots, res.order, now],
    );
    const superseded = await t.query<{ deployment_id: string }>(
      `UPDATE deployments SET status = 'superseded', superseded_by = $1, superseded_at = $3
        WHERE status = 'active' AND deployment_id <> $1
          AND EXISTS (SELECT 1 FROM unnest(project_bundles) AS p(ref) WHERE regexp_replace(p.ref, ':[^:]+$', '') = ANY($2::text[]))
        RETURNING deployment_id`,
      [id, [...new Set(input.project_bundles.map((p) => p.id))], now],
    );
    if (superseded.length) ctx.logger.info('deployments superseded', { by: id, superseded: superseded.map((s) => s.deployment_id) });
    return { v, row: row! };
  });
  await announceContentChange(ctx, v);
  ctx.logger.info('deployment created', { deployment_id: id, project_bundles: roots, resolved: row.resolved_bundles.length });
  return toDeployment(row);
}

export async function getDeployment(ctx: AppContext, id: string): Promise<Deployment> {
  const [row] = await ctx.db.query<DeploymentRow>('SELECT * FROM deployments WHERE deployment_id = $1', [id]);
  if (!row) throw new AppError('not_found', `Deployment ${id} does not exist`);
  return toDeployment(row);
}

export async function listDeployments(ctx: AppContext, q: { status?: string; limit: number; offset: number }): Promise<DeploymentList> {
  const params: unknown[] = [q.limit, q.offset];
  if (q.status) params.push(q.status);
  const where = q.status ? 'WHERE status = $3' : '';
  const rows = await ctx.db.query<DeploymentRow & { total: number }>(
    `SELECT *, count(*) OVER () AS total FROM deployments ${where} ORDER BY created_at DESC, deployment_id LIMIT $1 OFFSET $2`,
    params,
  );
  let total = rows[0]?.total;
  if (total === undefined) {
    total = Number((await ctx.db.query<{ n: number }>(`SELECT count(*) AS n FROM deployments ${q.status ? 'WHERE status = $1' : ''}`, q.status ? [q.status] : []))[0]!.n);
  }
  return { deployments: rows.map(toDeployment), total: Number(total), limit: q.limit, offset: q.offset };
}
