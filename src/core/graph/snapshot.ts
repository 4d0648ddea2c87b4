/** The shapes of the in-memory materialization (materialization.ts builds them, build-snapshot.ts fills them). */
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

/** The deployed SCDs; shared by consecutive snapshots while the deployed set is unchanged. */
export interface Universe {
  /** Union of the active deployments' resolved bundles, in deployment then resolution order. */
  bundleRefs: string[];
  scds: ScdEntry[];
  byId: Map<string, ScdEntry>;
  /** Indices of the SCDs that apply to every role, ascending. */
  unscoped: number[];
  /** Role -> indices of the SCDs scoped to it, ascending. */
  byRole: Map<string, number[]>;
  /** Role -> universe indices (role-applicable plus governing), ascending. */
  roleCache: Map<string, number[]>;
}

export interface Snapshot {
  version: number;
  universe: Universe;
  /** Per-snapshot caches (selection results, undeployed overrides, tag contexts), dropped with it. */
  caches: Map<string, Map<string, unknown>>;
}
