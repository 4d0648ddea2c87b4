/** The one version order: the contracts' pattern, semver precedence, and the unpinned pick. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { compareSemver, isReleaseVersion, RELEASE_VERSION_PATTERN } from './semver.js';
import { highestActive, type BundleHead } from '../core/graph/resolve.js';

const schemas = (file: string) => (parse(readFileSync(new URL(`../../spec/${file}`, import.meta.url), 'utf8')) as any).components.schemas;

describe('release versions', () => {
  it('the contracts carry the same pattern as the code', () => {
    expect(schemas('openapi-control-plane.yaml').Semver.pattern).toBe(RELEASE_VERSION_PATTERN);
    expect(schemas('openapi-rules.yaml').SemVer.pattern).toBe(RELEASE_VERSION_PATTERN);
    expect(schemas('openapi-control-plane.yaml').BundleVersionString.pattern).toBe(`^(${RELEASE_VERSION_PATTERN.slice(1, -1)}|DRAFT)$`);
  });

  it.each([
    ['1.0.0', true], ['0.0.0', true], ['2147483648.0.0', true], ['999999999999999.999999999999999.999999999999999', true],
    ['1000000000000000.0.0', false], ['99999999999999999999.0.0', false], ['1.0.0-rc.1', false], ['1.0.0+b1', false],
    ['01.0.0', false], ['v1.0.0', false], ['1.0', false], ['DRAFT', false],
  ])('%s is a release version: %s', (v, ok) => {
    expect(isReleaseVersion(v)).toBe(ok);
  });

  it('orders by precedence with numeric parts, past 2^31 and 2^32 included', () => {
    const sorted = ['1.10.0', '1.2.0', '0.9.9', '1.2.10', '2147483648.0.0', '2147483647.0.0', '1.4294967296.0', '999999999999999.0.0', '10.0.0'].sort(compareSemver);
    expect(sorted).toEqual(['0.9.9', '1.2.0', '1.2.10', '1.10.0', '1.4294967296.0', '10.0.0', '2147483647.0.0', '2147483648.0.0', '999999999999999.0.0']);
    expect(compareSemver('1.0.0', '1.0.0')).toBe(0);
    expect(compareSemver('999999999999999.0.1', '999999999999999.0.0')).toBe(1);
  });
});

describe('highestActive', () => {
  const head = (version: string, isActive = true): BundleHead => ({ id: 'bundle:x', version, type: 'concern', isActive, imports: [] });

  it('picks the highest active release, never a DRAFT, an inactive one, or a stored version semver cannot read', () => {
    expect(highestActive([head('1.2.0'), head('2147483648.0.0'), head('1.10.0'), head('DRAFT')])?.version).toBe('2147483648.0.0');
    expect(highestActive([head('1.2.0'), head('3.0.0', false), head('99999999999999999999.0.0')])?.version).toBe('1.2.0');
    expect(highestActive([head('DRAFT'), head('1.0.0', false)])).toBeNull();
  });
});
