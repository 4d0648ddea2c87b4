/** `lock`: unpinned imports pin to the highest version in the project, in semver order. */
import { describe, expect, it } from 'vitest';
import { lock } from './bundle-version.js';

describe('lock', () => {
  it('pins an unpinned import to the highest release by semver precedence (parts past 2^31 included), skipping what the API would refuse', () => {
    const versions = ['1.2.0', '1.10.0', '2147483648.0.0', '10.0.0', 'DRAFT', '99999999999999999999.0.0', '3.0.0-rc.1'];
    const others = versions.map((version) => ({ doc: { id: 'bundle:c', version } }));
    const doc = { id: 'bundle:d', type: 'domain', version: 'DRAFT', title: 'D', description: 'd', imports: ['bundle:c', 'bundle:x:1.0.0'], scds: [] };
    const out = lock(doc, '1.0.0', others, 'me', undefined, new Date('2026-01-01T00:00:00Z'));
    expect(out.doc.imports).toEqual(['bundle:c:2147483648.0.0', 'bundle:x:1.0.0']);
    expect(out.pinned).toEqual([{ from: 'bundle:c', to: 'bundle:c:2147483648.0.0' }]);
    const small = lock(doc, '1.0.0', others.slice(0, 2), 'me', undefined, new Date('2026-01-01T00:00:00Z'));
    expect(small.doc.imports[0]).toBe('bundle:c:1.10.0');
  });
});
