/**
 * A tag's state as streamed to subscribers, read from the database (the source of truth:
 * broker messages and webhook bodies only say "look again").
 *
 * Read with `loadTagContext` (straight from the database), not the materialization's cached
 * `getTagContext`: the cache may lag a move made by another process by up to its check
 * period, and a stale read here would be taken for "nothing changed" and the UPDATE lost.
 * The registry already reads once per move per process, whatever the number of streams.
 */
import type { AppContext } from '../../shared/app-context.js';
import { loadTagContext } from '../../api/tags/tag-context.js';

export interface TagState {
  /** Identity of the state: `bundle_id`, `bundle_version`, `updated_at`. Equal keys are not sent twice. */
  key: string;
  tag: string;
  updatedAt: Date;
  /** The ContextMessage fields shared by every stream (read-only: shared between messages). */
  fields: {
    bundleId: string;
    bundleVersion: string;
    resolvedBundleIds: string[];
    contextYaml: string;
    scdIds: string[];
    scdContent: Record<string, string>;
  };
}

export const stateKey = (bundleId: string, bundleVersion: string, updatedAt: Date) => `${bundleId}\u0000${bundleVersion}\u0000${updatedAt.toISOString()}`;

/** Reads the tag's full state; null when the tag does not exist. */
export async function readTagState(ctx: AppContext, tag: string): Promise<TagState | null> {
  const c = await loadTagContext(ctx.db, tag);
  if (!c) return null;
  const updatedAt = c.updatedAt instanceof Date ? c.updatedAt : new Date(c.updatedAt);
  return {
    key: stateKey(c.bundleId, c.bundleVersion, updatedAt),
    tag: c.tag,
    updatedAt,
    fields: {
      bundleId: c.bundleId,
      bundleVersion: c.bundleVersion,
      resolvedBundleIds: c.resolvedBundleIds ?? [],
      contextYaml: c.contextYaml ?? '',
      scdIds: c.scdIds ?? [],
      scdContent: c.scdContent ?? {},
    },
  };
}

/** The state keys of several tags in one query (the safety poll: cheap, no content). */
export async function readTagKeys(ctx: AppContext, tags: string[]): Promise<Map<string, string>> {
  const rows = await ctx.db.query<{ tag_name: string; bundle_id: string; bundle_version: string; updated_at: Date }>(
    'SELECT tag_name, bundle_id, bundle_version, updated_at FROM tags WHERE tag_name = ANY($1::text[])',
    [tags],
  );
  return new Map(rows.map((r) => [r.tag_name, stateKey(r.bundle_id, r.bundle_version, r.updated_at)]));
}
