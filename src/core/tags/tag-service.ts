/**
 * Tags `<name>:<label>`: mutable pointers to immutable bundle versions. Creating or moving
 * a tag resolves the target's imports now (unpinned: highest active version), caches the
 * resolved list and the flattened context YAML on the tag, records the move in
 * tag_history, and, after commit, announces the change (content version, then the
 * tag-update message on `svc:tag-updates`, in that order, so a subscriber's re-read of the
 * tag can never hit a cache that has not heard of the move).
 */
import YAML from 'yaml';
import { and, count, eq, sql } from 'drizzle-orm';
import type { AppContext } from '../../shared/app-context.js';
import { TAG_UPDATES_CHANNEL } from '../../shared/broker.js';
import type { Db } from '../db/index.js';
import { bundleScds, bundles, tagHistory, tags } from '../db/schema/index.js';
import { AppError } from '../../shared/errors.js';
import type { components } from '../../../gen/openapi/control-plane.js';
import { announceContentChange, bumpVersions } from '../graph/content-version.js';
import { pinned } from '../graph/refs.js';
import { recordEvent, type Who } from '../audit/events.js';
import { headsAt, resolveInMemory, type Resolution } from '../graph/resolve.js';

type Tag = components['schemas']['Tag'];
type TagList = components['schemas']['TagList'];
export type TagCreate = components['schemas']['TagCreate'];
/** The body of `PUT /api/tags/{tag}` (the contract's TagUpdate: the new target). */
export type TagMove = components['schemas']['TagUpdate'];

type TagColumns = typeof tags.$inferSelect;

const toSummary = (r: Pick<TagColumns, 'tag_name' | 'bundle_id' | 'bundle_version' | 'description' | 'created_at' | 'updated_at'>): components['schemas']['TagSummary'] => ({
  tag: r.tag_name,
  bundle_id: r.bundle_id,
  bundle_version: r.bundle_version,
  description: r.description,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
});

const toTag = (r: TagColumns): Tag => ({
  ...toSummary(r),
  resolved_bundle_ids: r.resolved_bundle_ids,
  context_yaml: r.context_yaml ?? '',
});

/** The target must be a stored, active version (404 unknown, 409 deactivated). */
async function checkTarget(t: Db, bundleId: string, version: string): Promise<void> {
  const [b] = await t.orm
    .select({ is_active: bundles.is_active })
    .from(bundles)
    .where(and(eq(bundles.bundle_id, bundleId), eq(bundles.version, version)));
  const ref = pinned(bundleId, version);
  if (!b) throw new AppError('not_found', `Bundle version ${ref} does not exist`, { details: { reference: ref } });
  if (!b.is_active) throw new AppError('conflict', `Bundle version ${ref} is deactivated and cannot be tagged`, { details: { reference: ref } });
}

/** The flattened graph as YAML: the tag, the resolved bundles and every SCD document, in resolution order. */
async function buildContextYaml(t: Db, tag: string, res: Resolution, root: string): Promise<string> {
  const order = res.order;
  const ids = order.map((r) => r.slice(0, r.lastIndexOf(':')));
  const versions = order.map((r) => r.slice(r.lastIndexOf(':') + 1));
  // Raw SQL: both read rows in the order of a list of (bundle, version) pairs (unnest WITH
  // ORDINALITY), which the query builder has no form for. Sequential: both run on the
  // transaction's one connection.
  const titleRows = await t.query<Pick<typeof bundles.$inferSelect, 'bundle_id' | 'version' | 'title'>>(
      `SELECT b.bundle_id, b.version, b.title FROM unnest($1::text[], $2::text[]) AS r(bundle_id, version)
         JOIN bundles b ON b.bundle_id = r.bundle_id AND b.version = r.version`,
      [ids, versions],
    );
  const scds = await t.query<Pick<typeof bundleScds.$inferSelect, 'bundle_id' | 'bundle_version' | 'scd_id' | 'document'> & { ord: number }>(
      `SELECT r.ord, s.bundle_id, s.bundle_version, s.scd_id, s.document
         FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS r(bundle_id, version, ord)
         JOIN bundle_scds s ON s.bundle_id = r.bundle_id AND s.bundle_version = r.version
        ORDER BY r.ord, s.position`,
      [ids, versions],
    );
  const titles = new Map(titleRows.map((b) => [pinned(b.bundle_id, b.version), b.title]));
  const scdsByBundle = new Map<string, string[]>();
  const docs: Record<string, unknown>[] = [];
  const seen = new Set<string>();
  for (const s of scds) {
    const ref = pinned(s.bundle_id, s.bundle_version);
    scdsByBundle.set(ref, [...(scdsByBundle.get(ref) ?? []), s.scd_id]);
    if (seen.has(s.scd_id)) continue;
    seen.add(s.scd_id);
    docs.push(s.document);
  }
  const root_ = res.bundles.get(root)!;
  const doc = {
    tag,
    bundle_id: root_.id,
    bundle_version: root_.version,
    resolved_bundle_ids: order,
    bundles: order.map((ref) => {
      const b = res.bundles.get(ref)!;
      return { id: b.id, version: b.version, type: b.type, title: titles.get(ref) ?? null, imports: b.resolvedImports, scds: scdsByBundle.get(ref) ?? [] };
    }),
    scds: docs,
  };
  return YAML.stringify(doc, { lineWidth: 0 });
}

async function publishTagUpdate(ctx: AppContext, contentVersion: number, tag: Tag): Promise<void> {
  await announceContentChange(ctx, contentVersion);
  const body = JSON.stringify({ tag: tag.tag, bundle_id: tag.bundle_id, bundle_version: tag.bundle_version, updated_at: tag.updated_at });
  const ok = await ctx.broker.publish(TAG_UPDATES_CHANNEL, body);
  if (!ok) ctx.logger.warn('tag update not published (broker unavailable); subscribers resynchronize on reconnect', { tag: tag.tag });
}

export async function createTag(ctx: AppContext, input: TagCreate, who: Who): Promise<Tag> {
  const root = pinned(input.bundle_id, input.bundle_version);
  const { v, tag } = await ctx.db.tx(async (t) => {
    const { version: v, bundlesVersion } = await bumpVersions(t, false);
    const [existing] = await t.orm.select({ tag_name: tags.tag_name }).from(tags).where(eq(tags.tag_name, input.tag));
    if (existing) throw new AppError('conflict', `Tag ${input.tag} already exists; move it with PUT /api/tags/{tag}`, { details: { tag: input.tag } });
    await checkTarget(t, input.bundle_id, input.bundle_version);
    const res = resolveInMemory(await headsAt(ctx, t, bundlesVersion), [root], { mode: 'strict' });
    const yaml = await buildContextYaml(t, input.tag, res, root);
    const now = ctx.clock.now();
    const [row] = await t.orm
      .insert(tags)
      .values({
        tag_name: input.tag,
        bundle_id: input.bundle_id,
        bundle_version: input.bundle_version,
        resolved_bundle_ids: res.order,
        context_yaml: yaml,
        description: input.description ?? null,
        created_at: now,
        updated_at: now,
      })
      .returning();
    await t.orm.insert(tagHistory).values({ tag_name: input.tag, bundle_id: input.bundle_id, bundle_version: input.bundle_version, moved_at: now });
    await recordEvent(t, who, {
      event_type: 'tag.created', resource_type: 'tag', resource_id: input.tag,
      after: { bundle_id: input.bundle_id, bundle_version: input.bundle_version, description: input.description ?? null, content_version: v },
    }, now);
    return { v, tag: toTag(row!) };
  });
  await publishTagUpdate(ctx, v, tag);
  ctx.logger.info('tag created', { tag: tag.tag, bundle: root });
  return { ...tag, content_revision: v };
}

export async function moveTag(ctx: AppContext, name: string, input: TagMove, who: Who): Promise<Tag> {
  const root = pinned(input.bundle_id, input.bundle_version);
  const { v, tag } = await ctx.db.tx(async (t) => {
    const { version: v, bundlesVersion } = await bumpVersions(t, false);
    const [existing] = await t.orm.select().from(tags).where(eq(tags.tag_name, name)).for('update');
    if (!existing) throw new AppError('not_found', `Tag ${name} does not exist (create it with POST /api/tags)`);
    await checkTarget(t, input.bundle_id, input.bundle_version);
    const res = resolveInMemory(await headsAt(ctx, t, bundlesVersion), [root], { mode: 'strict' });
    const yaml = await buildContextYaml(t, name, res, root);
    const description = 'description' in input ? (input.description ?? null) : existing.description;
    // updated_at strictly increases, so (bundle, version, updated_at) tells every move apart.
    const now = new Date(Math.max(ctx.clock.now().getTime(), existing.updated_at.getTime() + 1));
    const [row] = await t.orm
      .update(tags)
      .set({ bundle_id: input.bundle_id, bundle_version: input.bundle_version, resolved_bundle_ids: res.order, context_yaml: yaml, description, updated_at: now })
      .where(eq(tags.tag_name, name))
      .returning();
    await t.orm.insert(tagHistory).values({ tag_name: name, bundle_id: input.bundle_id, bundle_version: input.bundle_version, moved_at: now });
    await recordEvent(t, who, {
      event_type: 'tag.moved', resource_type: 'tag', resource_id: name,
      before: { bundle_id: existing.bundle_id, bundle_version: existing.bundle_version, description: existing.description },
      after: { bundle_id: input.bundle_id, bundle_version: input.bundle_version, description, content_version: v },
    }, now);
    return { v, tag: toTag(row!) };
  });
  await publishTagUpdate(ctx, v, tag);
  ctx.logger.info('tag moved', { tag: name, bundle: root });
  return { ...tag, content_revision: v };
}

export async function getTag(ctx: AppContext, name: string): Promise<Tag> {
  const [row] = await ctx.db.orm.select().from(tags).where(eq(tags.tag_name, name));
  if (!row) throw new AppError('not_found', `Tag ${name} does not exist`);
  return toTag(row);
}

export async function listTags(ctx: AppContext, q: { limit: number; offset: number }): Promise<TagList> {
  const rows = await ctx.db.orm
    .select({
      tag_name: tags.tag_name,
      bundle_id: tags.bundle_id,
      bundle_version: tags.bundle_version,
      description: tags.description,
      created_at: tags.created_at,
      updated_at: tags.updated_at,
      total: sql<number>`count(*) OVER ()`.mapWith(Number),
    })
    .from(tags)
    .orderBy(tags.tag_name)
    .limit(q.limit)
    .offset(q.offset);
  let total = rows[0]?.total;
  // A page past the end carries no window count.
  if (total === undefined) total = (await ctx.db.orm.select({ n: count() }).from(tags))[0]!.n;
  return {
    tags: rows.map(toSummary),
    total: Number(total),
    limit: q.limit,
    offset: q.offset,
  };
}
