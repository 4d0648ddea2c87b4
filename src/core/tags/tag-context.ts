/**
 * The flattened context a tag points to, for gRPC Subscribe SNAPSHOT/UPDATE messages and
 * `GET /api/tags/{tag}`. Cached per tag in the content materialization (so a thousand
 * subscribers of one tag cost one read), dropped whenever the content version moves: a
 * tag move bumps it in the same transaction and announces it before the tag-update message.
 */
import type { AppContext } from '../../shared/app-context.js';
import { eq } from 'drizzle-orm';
import type { Db } from '../db/index.js';
import { bundleScds, tags } from '../db/schema/index.js';
import { contentCache, snapshotCache } from '../graph/materialization.js';

export interface TagContext {
  tag: string;
  bundleId: string;
  bundleVersion: string;
  resolvedBundleIds: string[];
  contextYaml: string;
  /** Every SCD of the resolved bundles, in resolution order (first occurrence wins). */
  scdIds: string[];
  /** SCD id -> YAML text. */
  scdContent: Record<string, string>;
  updatedAt: Date;
}

/** The flattened context a tag points to (for gRPC Subscribe SNAPSHOT/UPDATE); null for an unknown tag. */
export async function getTagContext(ctx: AppContext, tag: string): Promise<TagContext | null> {
  const snap = await contentCache(ctx).current();
  const cache = snapshotCache<Promise<TagContext | null>>(snap, 'tag');
  let p = cache.get(tag);
  if (!p) {
    p = loadTagContext(ctx.db, tag);
    cache.set(tag, p);
    // A failed read must not stay cached.
    p.catch(() => cache.delete(tag));
  }
  return p;
}

export async function loadTagContext(db: Db, tag: string): Promise<TagContext | null> {
  const [row] = await db.orm
    .select({
      tag_name: tags.tag_name,
      bundle_id: tags.bundle_id,
      bundle_version: tags.bundle_version,
      resolved_bundle_ids: tags.resolved_bundle_ids,
      context_yaml: tags.context_yaml,
      updated_at: tags.updated_at,
    })
    .from(tags)
    .where(eq(tags.tag_name, tag));
  if (!row) return null;
  const { scdIds, scdContent } = await loadScdContents(db, row.resolved_bundle_ids);
  return Object.freeze({
    tag: row.tag_name,
    bundleId: row.bundle_id,
    bundleVersion: row.bundle_version,
    resolvedBundleIds: row.resolved_bundle_ids,
    contextYaml: row.context_yaml ?? '',
    scdIds,
    scdContent,
    updatedAt: row.updated_at,
  });
}

/** Every SCD of the given bundle versions, in their order (first occurrence of an id wins). */
async function loadScdContents(db: Db, bundleRefs: string[]): Promise<{ scdIds: string[]; scdContent: Record<string, string> }> {
  const scdIds: string[] = [];
  const scdContent: Record<string, string> = {};
  if (!bundleRefs.length) return { scdIds, scdContent };
  // Raw SQL: rows in the order of a list of (bundle, version) pairs (unnest WITH ORDINALITY),
  // which the query builder has no form for; part of the content materialization.
  const rows = await db.query<Pick<typeof bundleScds.$inferSelect, 'scd_id' | 'content_yaml'>>(
    `SELECT s.scd_id, s.content_yaml
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS r(bundle_id, version, ord)
       JOIN bundle_scds s ON s.bundle_id = r.bundle_id AND s.bundle_version = r.version
      ORDER BY r.ord, s.position`,
    [bundleRefs.map((r) => r.slice(0, r.lastIndexOf(':'))), bundleRefs.map((r) => r.slice(r.lastIndexOf(':') + 1))],
  );
  for (const r of rows) {
    if (r.scd_id in scdContent) continue;
    scdIds.push(r.scd_id);
    scdContent[r.scd_id] = r.content_yaml;
  }
  return { scdIds, scdContent };
}
