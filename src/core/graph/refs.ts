/**
 * Bundle references and versions: `bundle:<name>` (unpinned), `bundle:<name>:<semver>`
 * (pinned), and semantic-version ordering. The SCS rules themselves (patterns, the import
 * hierarchy, tiers) live in one place, src/core/scs.
 */
export type { BundleType } from '../scs/index.js';
/** Parses `bundle:<name>` or `bundle:<name>:<x.y.z>` into `{id, version}` (null version: unpinned); null otherwise. */
export { parseImport as parseRef } from '../scs/index.js';

/** SCD ids as the contract accepts them (`scd:<tier>:<name>`, any tier word). */
export const SCD_ID_RE = /^scd:[A-Za-z0-9_-]+:[A-Za-z0-9._-]+$/;

/** `bundle:<name>:<version>`: how a resolved bundle version is named everywhere. */
export const pinned = (id: string, version: string): string => `${id}:${version}`;

/** Semantic-version precedence (the `semver` package), so that 1.10.0 sorts after 1.2.0. */
export { compareSemver } from '../../shared/semver.js';

/** `scd:<tier>:<name>` → tier. */
export const scdTier = (scdId: string): string => scdId.split(':')[1] ?? '';
