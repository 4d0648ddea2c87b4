/** The shapes of the in-memory materialization (materialization.ts builds them, build-snapshot.ts fills them). */
import { LRUCache } from 'lru-cache';

/**
 * Bound of each cache that lives with a snapshot or universe. Past it the least recently
 * used entry goes (every entry is cheap to recompute), so a role or tag in steady use keeps
 * its entry while one-off keys (many distinct override lists) pass through.
 */
export const MAX_CACHE_ENTRIES = 20_000;

/** A bounded cache of one snapshot or universe; dropped with it. */
export const boundedCache = <V extends object>(): LRUCache<string, V> => new LRUCache<string, V>({ max: MAX_CACHE_ENTRIES });

export interface ScdEntry {
  id: string;
  /** Position in the deployed universe (resolution order of the bundles, then manifest order). */
  index: number;
  /** `bundle:<name>:<version>` the content comes from (first occurrence in resolution order). */
  bundleRef: string;
  yaml: string;
  /** The JSON member `"<id>":"<yaml>"`, serialized and UTF-8 encoded once (see jsonMember). */
  member: Buffer;
  /** Roles it applies to; null = every role. Union over the deployed bundles that hold it. */
  roles: Set<string> | null;
  /** SCDs that govern it (GOVERNED_BY targets inside the deployed universe). */
  governedBy: number[];
}

/** One active deployment: its project bundles and its resolved (lockfile) bundles, pinned refs. */
export interface DeployedSet {
  projectBundles: string[];
  resolved: string[];
}

/** The deployed SCDs; shared by consecutive snapshots while the deployed set is unchanged. */
export interface Universe {
  /** Union of the active deployments' resolved bundles, in deployment then resolution order. */
  bundleRefs: string[];
  /** The active deployments, oldest first (explanations start their import paths here). */
  deployments: DeployedSet[];
  scds: ScdEntry[];
  byId: Map<string, ScdEntry>;
  /** Indices of the SCDs that apply to every role, ascending. */
  unscoped: number[];
  /** Role -> indices of the SCDs scoped to it, ascending. */
  byRole: Map<string, number[]>;
  /** Role -> universe indices (role-applicable plus governing), ascending. */
  roleCache: LRUCache<string, number[]>;
}

export interface Snapshot {
  version: number;
  universe: Universe;
  /** Per-snapshot caches (selection results, undeployed overrides, tag contexts), dropped with it. */
  caches: Map<string, unknown>;
}
