/** Reading and deactivating bundle versions. */
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import type { components } from '../../../gen/openapi/control-plane.js';
import { announceContentChange, bumpVersions } from '../graph/content-version.js';
import { pinned } from '../graph/refs.js';

type BundleList = components['schemas']['BundleList'];
type BundleVersionDetail = components['schemas']['BundleVersionDetail'];

type BundleRow = {
  bundle_id: string;
  version: string;
  bundle_type: BundleVersionDetail['type'];
  schema_version: string | null;
  title: string | null;
  created_by: string;
  description: string | null;
  manifest: Record<string, any>;
  validation_status: BundleVersionDetail['validation_status'];
  validation_errors: BundleVersionDetail['validation_errors'];
  created_at: Date;
  published_at: Date | null;
  is_active: boolean;
};

export async function listBundles(ctx: AppContext, q: { type?: string; limit: number; offset: number }): Promise<BundleList> {
  const where = q.type ? 'WHERE bundle_type = $3' : '';
  const params: unknown[] = [q.limit, q.offset];
  if (q.type) params.push(q.type);
  const rows = await ctx.db.query<BundleRow & { total: number }>(
    `SELECT bundle_id, version, bundle_type, title, created_at, is_active, validation_status, count(*) OVER () AS total
       FROM bundles ${where} ORDER BY bundle_id, created_at, version LIMIT $1 OFFSET $2`,
    params,
  );
  let total = rows[0]?.total;
  if (total === undefined) {
    const [c] = await ctx.db.query<{ n: number }>(`SELECT count(*) AS n FROM bundles ${q.type ? 'WHERE bundle_type = $1' : ''}`, q.type ? [q.type] : []);
    total = Number(c!.n);
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
  const [r] = await ctx.db.query<BundleRow>('SELECT * FROM bundles WHERE bundle_id = $1 AND version = $2', [id, version]);
  if (!r) throw new AppError('not_found', `Bundle ${id} version ${version} does not exist`);
  const m = r.manifest;
  return {
    id: r.bundle_id,
    type: r.bundle_type,
    version: r.version,
    title: r.title ?? '',
    description: r.description,
    scds: Array.isArray(m.scds) ? m.scds : [],
    imports: Array.isArray(m.imports) ? m.imports : [],
    manifest: m,
    applies_to: m.applies_to ?? null,
    provenance: m.provenance ?? {},
    schema_version: r.schema_version,
    validation_status: r.validation_status,
    validation_errors: r.validation_errors ?? null,
    is_active: r.is_active,
    created_at: r.created_at.toISOString(),
    published_at: r.published_at ? r.published_at.toISOString() : null,
    created_by: r.created_by,
  };
}

/**
 * Deactivates a version (is_active false). Refused (409) while a tag points to it or an
 * active deployment holds it, directly or through imports; idempotent otherwise.
 */
export async function deactivateBundleVersion(ctx: AppContext, id: string, version: string): Promise<void> {
  const ref = pinned(id, version);
  const changed = await ctx.db.tx(async (t) => {
    const contentVersion = (await bumpVersions(t, true)).version;
    const [r] = await t.query<{ is_active: boolean }>('SELECT is_active FROM bundles WHERE bundle_id = $1 AND version = $2 FOR UPDATE', [id, version]);
    if (!r) throw new AppError('not_found', `Bundle ${id} version ${version} does not exist`);
    if (!r.is_active) return null;
    const tags = await t.query<{ tag_name: string }>('SELECT tag_name FROM tags WHERE bundle_id = $1 AND bundle_version = $2 ORDER BY tag_name', [id, version]);
    const deps = await t.query<{ deployment_id: string }>(
      `SELECT deployment_id FROM deployments WHERE status = 'active' AND $1 = ANY(resolved_bundles) ORDER BY created_at, deployment_id`,
      [ref],
    );
    if (tags.length || deps.length) {
      const what = [tags.length ? `tag${tags.length > 1 ? 's' : ''} ${tags.map((x) => x.tag_name).join(', ')}` : '', deps.length ? `${deps.length} active deployment${deps.length > 1 ? 's' : ''}` : '']
        .filter(Boolean)
        .join(' and ');
      throw new AppError('conflict', `Bundle ${ref} is in use by ${what}; move the tags or redeploy first`, {
        details: { reference: ref, tags: tags.map((x) => x.tag_name), deployments: deps.map((d) => d.deployment_id) },
      });
    }
    await t.query('UPDATE bundles SET is_active = false WHERE bundle_id = $1 AND version = $2', [id, version]);
    return contentVersion;
  });
  if (changed !== null) {
    await announceContentChange(ctx, changed);
    ctx.logger.info('bundle deactivated', { bundle: ref });
  }
}
