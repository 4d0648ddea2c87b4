/**
 * One version order for the product: semantic-version precedence as the `semver` package
 * computes it, over the one shape the contracts accept for bundle and rule set versions,
 * `MAJOR.MINOR.PATCH` (no pre-release, no build metadata, no leading zeros), each part at
 * most 15 digits.
 *
 * Why 15 digits: the `semver` package refuses a part past Number.MAX_SAFE_INTEGER (16
 * digits), and a bound every part meets keeps the order exact in JavaScript and in SQL
 * alike. The contracts (spec/openapi-control-plane.yaml `Semver`, `BundleVersionString`;
 * spec/openapi-rules.yaml `SemVer`) carry the same pattern, so a longer part is a 400
 * `validation_error` at the edge and never reaches a verb; semver.test.ts holds them equal.
 */
import semver from 'semver';

/** Most digits in one part of a version. */
export const MAX_VERSION_PART_DIGITS = 15;

const PART = `(0|[1-9][0-9]{0,${MAX_VERSION_PART_DIGITS - 1}})`;

/** The release-version pattern, as the contracts spell it (also valid as a PostgreSQL regex). */
export const RELEASE_VERSION_PATTERN = `^${PART}\\.${PART}\\.${PART}$`;
const RELEASE_VERSION_RE = new RegExp(RELEASE_VERSION_PATTERN);

/** True for a version the contracts accept (so one `compareSemver` can order exactly). */
export const isReleaseVersion = (v: string): boolean => RELEASE_VERSION_RE.test(v);

/** Semantic-version precedence (-1, 0, 1): 1.10.0 after 1.2.0. Throws a TypeError on a string that is not a version. */
export const compareSemver = (a: string, b: string): -1 | 0 | 1 => semver.compare(a, b);

/**
 * The SQL sort key of a text column holding release versions: the parts as `numeric`, which
 * is exact at any length. (`int` overflowed at 2^31: one stored rule set version past it
 * turned every ordered read of the table into a 500.)
 */
export const semverSortKey = (column: string): string => `string_to_array(${column}, '.')::numeric[]`;
