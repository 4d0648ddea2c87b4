/**
 * The SCS 0.3 rules as data, taken from the upstream validator's rule files
 * (validator-rules/v0.3.0: bundle-rules.yaml, scd-rules.yaml, relationship-rules.yaml).
 * One place for every pattern and table, shared by the CLI and the API.
 */

/** A problem found in a document. `path` is a JSON pointer into the document ('' = whole). */
export interface Finding {
  severity: 'error' | 'warning';
  path: string;
  rule: string;
  message: string;
  file?: string;
  /** Where in the file, 1-based, when known (YAML syntax errors). */
  line?: number;
  column?: number;
}

export const BUNDLE_TYPES = ['meta', 'standards', 'domain', 'concern', 'project'] as const;
export type BundleType = (typeof BUNDLE_TYPES)[number];

export const SCD_TIERS = ['meta', 'standards', 'project'] as const;
export type ScdTier = (typeof SCD_TIERS)[number];

export const BUNDLE_ID_RE = /^bundle:[a-zA-Z0-9._-]+$/;
/** Bundle and SCD version: semver X.Y.Z or DRAFT (bundle-rules and scd-rules version_pattern). */
export const BUNDLE_VERSION_RE = /^(\d+\.\d+\.\d+|DRAFT)$/;
export const SEMVER_RE = /^\d+\.\d+\.\d+$/;
/** Import reference: `bundle:<name>` or `bundle:<name>:<X.Y.Z>` (bundle-rules import_pattern). */
const IMPORT_RE = /^bundle:([a-zA-Z0-9._-]+)(?::(\d+\.\d+\.\d+))?$/;
export const SCD_ID_RE = /^scd:(meta|standards|project):[a-zA-Z0-9._-]+$/;

export const BUNDLE_REQUIRED = ['id', 'type', 'version', 'title', 'description', 'imports', 'scds', 'provenance'] as const;
export const SCD_IDENTITY_FIELDS = ['id', 'type', 'title', 'version'] as const;

/** Parses an import reference; null when it does not match IMPORT_RE. */
export function parseImport(ref: string): { id: string; version: string | null } | null {
  const m = IMPORT_RE.exec(ref);
  return m ? { id: `bundle:${m[1]}`, version: m[2] ?? null } : null;
}

/** The tier written in an SCD id (`scd:<tier>:<name>`), or null. */
export function scdTier(id: string): ScdTier | null {
  const m = SCD_ID_RE.exec(id);
  return m ? (m[1] as ScdTier) : null;
}

/**
 * Type-specific bundle constraints (bundle-rules bundle_types). `scdTier` is the tier every
 * listed SCD must have. Standards bundles follow the XOR rule instead of fixed counts.
 */
export const BUNDLE_TYPE_RULES: Record<BundleType, {
  imports: { min: number; max: number | null; message: string };
  scds: { min: number; max: number | null; message: string };
  scdTier: ScdTier | null;
}> = {
  project: {
    imports: { min: 1, max: null, message: 'Project bundles MUST import at least one bundle' },
    scds: { min: 0, max: 0, message: 'Project bundles MUST have an empty scds array (imports only)' },
    scdTier: null,
  },
  meta: {
    imports: { min: 0, max: 0, message: 'Meta bundles MUST NOT import other bundles' },
    scds: { min: 1, max: null, message: 'Meta bundles MUST contain at least one meta-tier SCD' },
    scdTier: 'meta',
  },
  standards: {
    imports: { min: 0, max: null, message: '' },
    scds: { min: 0, max: null, message: '' },
    scdTier: 'standards',
  },
  concern: {
    imports: { min: 0, max: 0, message: 'Concern bundles MUST NOT import other bundles (imports must be empty)' },
    scds: { min: 1, max: null, message: 'Concern bundles MUST contain at least one project-tier SCD' },
    scdTier: 'project',
  },
  domain: {
    imports: { min: 1, max: null, message: 'Domain bundles MUST import at least one concern bundle' },
    scds: { min: 0, max: 0, message: 'Domain bundles MUST have an empty scds array (they import concern bundles)' },
    scdTier: null,
  },
};

/**
 * Import hierarchy (meta, standards, domain, concern, project): which bundle types a bundle
 * of each type may import. Meta and concern bundles are leaves; standards aggregate
 * standards; domains aggregate concerns; a project imports everything below it.
 */
export const ALLOWED_IMPORTS: Record<BundleType, readonly BundleType[]> = {
  meta: [],
  standards: ['meta', 'standards'],
  domain: ['meta', 'standards', 'concern'],
  concern: [],
  project: ['meta', 'standards', 'domain', 'concern'],
};

/** The 7 relationship types and the tier combinations each allows (relationship-rules). */
export const RELATIONSHIP_TIERS: Record<string, Partial<Record<ScdTier, readonly ScdTier[]>>> = {
  'depends-on': { project: ['meta', 'project'], standards: ['meta', 'standards'], meta: ['meta'] },
  satisfies: { project: ['standards'], standards: ['standards'] },
  constrains: { standards: ['project'], meta: ['standards'], project: ['project'] },
  refines: { project: ['project'], standards: ['standards'], meta: ['meta'] },
  extends: { project: ['project'], standards: ['standards'], meta: ['meta'] },
  'conflicts-with': { project: ['project'], standards: ['standards'], meta: ['meta'] },
  implements: { project: ['standards', 'project'] },
};
export const RELATIONSHIP_TYPES = Object.keys(RELATIONSHIP_TIERS);

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** JSON pointer segment escaping (RFC 6901). */
export const ptr = (...segs: Array<string | number>): string =>
  segs.map((s) => '/' + String(s).replace(/~/g, '~0').replace(/\//g, '~1')).join('');
