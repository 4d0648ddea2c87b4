/**
 * Bundle references and versions: `bundle:<name>` (unpinned), `bundle:<name>:<semver>`
 * (pinned), semantic-version ordering, and the import hierarchy of bundle types.
 */

export type BundleType = 'meta' | 'standards' | 'domain' | 'concern' | 'project';

export const BUNDLE_ID_RE = /^bundle:[A-Za-z0-9._-]+$/;
export const SEMVER_RE = /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/;
export const SCD_ID_RE = /^scd:[A-Za-z0-9_-]+:[A-Za-z0-9._-]+$/;
const REF_RE = /^(bundle:[A-Za-z0-9._-]+?)(?::([0-9]+\.[0-9]+\.[0-9]+))?$/;

export interface BundleRef {
  id: string;
  /** null for an unpinned reference. */
  version: string | null;
}

/** Parses `bundle:<name>` or `bundle:<name>:<x.y.z>`; null when it is neither. */
export function parseRef(ref: string): BundleRef | null {
  const m = REF_RE.exec(ref);
  if (!m) return null;
  return { id: m[1]!, version: m[2] ?? null };
}

/** `bundle:<name>:<version>`: how a resolved bundle version is named everywhere. */
export const pinned = (id: string, version: string): string => `${id}:${version}`;

/** Splits a pinned reference; throws on anything else (callers only pass stored values). */
export function splitPinned(ref: string): { id: string; version: string } {
  const i = ref.lastIndexOf(':');
  return { id: ref.slice(0, i), version: ref.slice(i + 1) };
}

/** Semantic-version comparison (numeric parts), so that 1.10.0 sorts after 1.2.0. */
export function compareSemver(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

/**
 * The import hierarchy (spec 1.4: meta, standards, domain, concern, project), read with the
 * SCS 0.3 bundle rules: meta and concern bundles are leaves; standards bundles aggregate
 * standards (and meta); domain bundles aggregate concerns (and may pull in standards and
 * meta); project bundles import anything but another project.
 */
export const ALLOWED_IMPORTS: Record<BundleType, readonly BundleType[]> = {
  meta: [],
  concern: [],
  standards: ['meta', 'standards'],
  domain: ['meta', 'standards', 'concern'],
  project: ['meta', 'standards', 'domain', 'concern'],
};

/** The SCD tier each bundle type holds (SCS 0.3 `tier_constraint`); reported, not rejected. */
export const EXPECTED_TIER: Partial<Record<BundleType, string>> = {
  meta: 'meta',
  standards: 'standards',
  concern: 'project',
};

/** `scd:<tier>:<name>` → tier. */
export const scdTier = (scdId: string): string => scdId.split(':')[1] ?? '';
