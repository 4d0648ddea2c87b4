/**
 * Version-aware rule sets. The upstream validator ships its rules per SCS version
 * (tools/scd-validator/rules/v<X.Y.Z>/ in github.com/tim-mccrimmon/structured-context-spec;
 * the corpus carries validator-rules/v0.3.0). svc knows two:
 *
 * - 0.3.0: the rules in ./rules.ts (validator-rules/v0.3.0/bundle-rules.yaml; its
 *   scd-rules.yaml and relationship-rules.yaml are still headed "v0.1.0": SCDs and
 *   relationships did not change, docs/MIGRATION-0.3.md "Non-Breaking Changes: SCDs").
 * - 0.1.0: the 0.3.0 set minus what 0.3 added. Each difference and its source:
 *   1. No `concern` bundle type: 0.1 has four types (project, meta, domain, standards;
 *      rules/v0.1.0/bundle-rules.yaml `bundle_types`); docs/MIGRATION-0.3.md "Five Bundle
 *      Types (Previously Four)", "Bundle type rename: what was `type: domain` is now
 *      `type: concern`".
 *   2. A 0.1 domain bundle is a container, not an aggregator: it imports nothing and
 *      lists at least one project-tier SCD (rules/v0.1.0/bundle-rules.yaml
 *      `bundle_types.domain`, "Domain bundles MUST NOT import other bundles"). The 0.3
 *      rules "domain bundles MUST import at least one concern bundle" and "MUST have an
 *      empty scds array" are 0.3-only (MIGRATION-0.3.md "Breaking Changes: 1. Bundle Type
 *      Validation"), as is the import hierarchy through concerns (Project -> Domains ->
 *      Concerns -> SCDs, MIGRATION-0.3.md "Key Changes" 3).
 *   3. The bundle JSON Schema without the `concern` enum value and without the
 *      concern/domain conditionals (MIGRATION-0.3.md "Schema Changes": the schema was
 *      "updated to include concern and domain types" with "new conditional validation
 *      rules for concern and domain bundles").
 *   4. No domain manifests: domain-manifest-schema.json is new in 0.3 (MIGRATION-0.3.md
 *      "Schema Changes", "Domain manifests: New specification for defining industry
 *      domains"). A 0.1 project's domain manifests are listed as skipped, not checked.
 *   Everything else is the same in both rule files: the XOR constraint, id, version,
 *   import and SCD-reference patterns, the project/meta/standards type rules, required
 *   fields, meta version pinning and alignment, SCD uniqueness and relationship rules.
 *
 * Where a version is declared: `scs_version` in `.scs/config` (what the upstream `scs init`
 * writes) or `.svc/config.yaml` (what `svc init`/`svc new` write), or a bundle's own
 * `schema_version` (svc's bundle extension, stored by the API: the SCS bundle schema itself
 * has no such field, its `additionalProperties` is false). Undeclared: 0.3.0. A version
 * svc has no rules for: a warning, and the 0.3.0 rules.
 */
import { ALLOWED_IMPORTS, BUNDLE_TYPE_RULES, BUNDLE_TYPES, type BundleType } from './rules.js';

export type ScsVersion = '0.1.0' | '0.3.0';
const SCS_VERSIONS: readonly ScsVersion[] = ['0.1.0', '0.3.0'];
export const DEFAULT_SCS_VERSION: ScsVersion = '0.3.0';

export interface RuleSet {
  version: ScsVersion;
  bundleTypes: readonly BundleType[];
  typeRules: typeof BUNDLE_TYPE_RULES;
  allowedImports: Record<BundleType, readonly BundleType[]>;
  /** 0.3: a domain bundle must import at least one concern bundle (hierarchy rule). */
  domainImportsConcern: boolean;
  /** The bundle JSON Schema to use (see schemas.ts). */
  bundleSchema: 'bundle' | 'bundle-0.1';
  /** Domain manifests exist (0.3+). */
  domainManifests: boolean;
}

const V03: RuleSet = {
  version: '0.3.0',
  bundleTypes: BUNDLE_TYPES,
  typeRules: BUNDLE_TYPE_RULES,
  allowedImports: ALLOWED_IMPORTS,
  domainImportsConcern: true,
  bundleSchema: 'bundle',
  domainManifests: true,
};

const V01: RuleSet = {
  version: '0.1.0',
  // 1. four types (rules/v0.1.0/bundle-rules.yaml bundle_types)
  bundleTypes: BUNDLE_TYPES.filter((t) => t !== 'concern'),
  typeRules: {
    ...BUNDLE_TYPE_RULES,
    // 2. the 0.1 domain bundle: a container of project-tier SCDs (rules/v0.1.0 bundle_types.domain)
    domain: {
      imports: { min: 0, max: 0, message: 'Domain bundles MUST NOT import other bundles (SCS 0.1.0)' },
      scds: { min: 1, max: null, message: 'Domain bundles MUST contain at least one project-tier SCD (SCS 0.1.0)' },
      scdTier: 'project',
    },
  },
  allowedImports: {
    meta: [],
    standards: ['meta', 'standards'],
    domain: [],
    concern: [],
    project: ['meta', 'standards', 'domain'],
  },
  domainImportsConcern: false,
  bundleSchema: 'bundle-0.1',
  domainManifests: false,
};

export const RULE_SETS: Record<ScsVersion, RuleSet> = { '0.1.0': V01, '0.3.0': V03 };

/** `0.3`, `0.3.0`, `v0.3` name the same version; null when the text is no version at all. */
export function normalizeScsVersion(v: unknown): string | null {
  if (typeof v === 'number') v = String(v);
  if (typeof v !== 'string') return null;
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?$/.exec(v.trim());
  return m ? `${m[1]}.${m[2]}.${m[3] ?? '0'}` : null;
}

export const isKnownScsVersion = (v: string | null): v is ScsVersion => v !== null && (SCS_VERSIONS as readonly string[]).includes(v);

/** The rule set for a declared version; unknown or undeclared: 0.3.0. */
export function ruleSetFor(declared: unknown): RuleSet {
  const v = normalizeScsVersion(declared);
  return isKnownScsVersion(v) ? RULE_SETS[v] : RULE_SETS[DEFAULT_SCS_VERSION];
}
