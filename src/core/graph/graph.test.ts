/** Pure units of the content graph: references, semver order, edge derivation, NUL detection. */
import { describe, expect, it } from 'vitest';
import { compareSemver, parseRef } from './refs.js';
import { graphEdges } from './write-graph.js';
import { findNul } from './input-text.js';
import { jsonMember } from './build-snapshot.js';
import { scdContentJsonBytes, type SelectedContext } from './select.js';
import { edgeFor } from '../rules/rule-service.js';
import { snapshotCache } from './materialization.js';
import { MAX_CACHE_ENTRIES, type Snapshot, type Universe } from './snapshot.js';

describe('references', () => {
  it('parses pinned and unpinned references, refuses the rest', () => {
    expect(parseRef('bundle:meta:0.2.0')).toEqual({ id: 'bundle:meta', version: '0.2.0' });
    expect(parseRef('bundle:meta')).toEqual({ id: 'bundle:meta', version: null });
    expect(parseRef('bundle:standards:soc2-type2:2023.1')).toBeNull();
    expect(parseRef('bundle:meta:v1.0.0')).toBeNull();
  });
  it('orders versions numerically', () => {
    expect(['1.10.0', '1.2.0', '0.9.9', '1.2.10'].sort(compareSemver)).toEqual(['0.9.9', '1.2.0', '1.2.10', '1.10.0']);
  });
});

describe('edges of a bundle version', () => {
  it('maps relationships to GOVERNED_BY / REFERENCES and applies_to to APPLIES_TO', () => {
    const edges = graphEdges({
      ref: 'bundle:c:1.0.0',
      bundleId: 'bundle:c',
      version: '1.0.0',
      type: 'concern',
      roles: ['role:a'],
      imports: [],
      scds: [
        { id: 'scd:project:x', document: { relationships: [{ type: 'satisfies', target: 'scd:standards:s' }, { type: 'constrains', target: 'scd:project:y' }, { type: 'extends', target: 'scd:project:y' }, { type: 'depends-on', target: 'https://not-an-scd' }, { type: 'refines', target: 'scd:project:x' }] } },
        { id: 'scd:project:y', document: { applies_to: { roles: ['role:b'] } } },
      ],
    });
    expect(edges.map((e) => `${e.type} ${e.from} ${e.to}`)).toEqual([
      'CONTAINS bundle:c:1.0.0 scd:project:x',
      'CONTAINS bundle:c:1.0.0 scd:project:y',
      'APPLIES_TO scd:project:x role:a',
      'GOVERNED_BY scd:project:x scd:standards:s',
      'GOVERNED_BY scd:project:y scd:project:x',
      'REFERENCES scd:project:x scd:project:y',
      'APPLIES_TO scd:project:y role:b',
    ]);
  });
});

describe('rule edges', () => {
  const m = { type: 'IN_NETWORK' as const, from_field: 'provider', to_field: 'plan', to_label: 'insurance-plan' };
  it('joins two scalar fields, labels defaulting to the field name', () => {
    expect(edgeFor(m, { provider: 'dr-a', plan: 42 })).toEqual({ type: 'IN_NETWORK', from: 'provider:dr-a', to: 'insurance-plan:42' });
  });
  it('produces nothing for a missing, empty or non-scalar field', () => {
    expect(edgeFor(m, { provider: 'dr-a' })).toBeNull();
    expect(edgeFor(m, { provider: '', plan: 'x' })).toBeNull();
    expect(edgeFor(m, { provider: 'dr-a', plan: ['x'] })).toBeNull();
    expect(edgeFor(m, { provider: 'dr-a', plan: Number.NaN })).toBeNull();
  });
});

describe('NUL detection', () => {
  it('finds U+0000 in values and keys, with a JSON pointer', () => {
    expect(findNul({ a: [{ b: 'ok' }, { 'c/d': 'x\u0000' }] })).toBe('/a/1/c~1d');
    expect(findNul({ ['k\u0000']: 1 })).toBe('/k\u0000');
    expect(findNul({ a: 'fine', n: 1, z: null })).toBeNull();
  });
});

describe('scd_content as JSON bytes', () => {
  const sel = (content: Record<string, string>): SelectedContext => ({
    bundleIds: [],
    scdIds: Object.keys(content),
    scdContent: content,
    scdMembers: Object.entries(content).map(([id, yaml]) => jsonMember(id, yaml)),
    revision: 1,
  });
  it('joins the members into the bytes of JSON.stringify(scdContent), between the given parts', () => {
    for (const content of [{}, { 'scd:a': 'x: 1\n' }, { 'scd:a': 'titel: ünïcode — "quoted"\n\ttab', 'scd:b': '', 'scd:c': 'y'.repeat(70_000) }] as Record<string, string>[]) {
      const s = sel(content);
      expect(scdContentJsonBytes(s).toString('utf8')).toBe(JSON.stringify(content));
      const framed = scdContentJsonBytes(s, Buffer.from('{"scd_content":'), Buffer.from(',"n":1}'));
      expect(JSON.parse(framed.toString('utf8'))).toEqual({ scd_content: content, n: 1 });
    }
  });
});

describe('snapshot caches', () => {
  const snap = (): Snapshot => ({ version: 1, universe: {} as Universe, caches: new Map() });

  it('are per snapshot and name, and past MAX_CACHE_ENTRIES drop the least recently used entry (not the whole cache)', () => {
    const s = snap();
    const c = snapshotCache<{ n: number }>(s, 'select');
    expect(snapshotCache(s, 'select')).toBe(c);
    expect(snapshotCache(s, 'extra')).not.toBe(c);
    expect(snapshotCache(snap(), 'select')).not.toBe(c);
    for (let i = 0; i < MAX_CACHE_ENTRIES; i++) c.set(`k${i}`, { n: i });
    expect(c.get('k0')).toEqual({ n: 0 }); // used: now the most recent
    c.set('new', { n: -1 });
    expect(c.size).toBe(MAX_CACHE_ENTRIES);
    expect(c.get('k0')).toEqual({ n: 0 });
    expect(c.has('k1')).toBe(false);
    expect(c.get(`k${MAX_CACHE_ENTRIES - 1}`)).toEqual({ n: MAX_CACHE_ENTRIES - 1 });
    expect(c.get('new')).toEqual({ n: -1 });
  });
});
