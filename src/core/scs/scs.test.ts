import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  RULE_SETS, SVC_LIMITS, checkBundle, checkDocument, checkProject, checkScd, classifyDocument, normalizeScsVersion, ruleSetFor,
  validateDocuments, type Finding,
} from './index.js';
import { FIXTURE_SCS, WHOLE_SCS, wholeCorpusSkipNote } from '../../../test/fixtures/scs-corpus.js';

// The whole public corpus only when SVC_SCS_CORPUS names it; the subset in test/fixtures/scs always.
const CORPUS = WHOLE_SCS!;

function load(root: string): Array<{ file: string; doc: unknown }> {
  const out: Array<{ file: string; doc: unknown }> = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d).sort()) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.ya?ml$/.test(n)) out.push({ file: relative(root, p), doc: parse(readFileSync(p, 'utf8')) });
    }
  };
  walk(root);
  return out;
}
const brief = (fs: Finding[]) => fs.map((f) => `${f.severity} ${f.file ?? ''} ${f.path} ${f.rule}`);
const rules = (fs: Finding[]) => fs.map((f) => f.rule).sort();

const now = '2026-01-01T00:00:00Z';
const bundle = (o: Record<string, unknown> = {}) => ({
  id: 'bundle:x', type: 'concern', version: '1.0.0', title: 'X', description: 'x bundle', imports: [],
  scds: ['scd:project:a'], provenance: { created_by: 'me', created_at: now }, ...o,
});
const scd = (o: Record<string, unknown> = {}) => ({
  id: 'scd:project:a', type: 'project', title: 'A', version: '1.0.0', description: 'a', content: { summary: 'a' },
  provenance: { created_by: 'me', created_at: now }, ...o,
});

/** The corpus's known defects (and the validator's deliberately invalid fixture), as `brief` writes them: the subset and the whole corpus both have them. */
const KNOWN_DEFECTS = [
  'error med-adherence/domains/software-development.yaml /imports/10 import_version_mismatch',
  'error med-adherence/project-bundle.yaml /imports/0 import_version_mismatch',
  'error med-adherence/standards-bundle.yaml /imports/0 import_pattern',
  'error med-adherence/standards-bundle.yaml /scds xor_constraint',
  'error med-adherence/standards-bundle.yaml /scds/0 scd_unresolved',
  'error med-adherence/standards-bundle.yaml /scds/1 scd_unresolved',
  'error med-adherence/standards-bundle.yaml /scds/2 scd_unresolved',
  'error validator-fixtures/invalid/test-invalid.yaml /provenance/created_at scd_schema',
  'error validator-fixtures/invalid/test-invalid.yaml /type type_tier_mismatch',
  'error validator-fixtures/invalid/test-invalid.yaml /version version_pattern',
];

describe('the corpus subset in test/fixtures/scs', () => {
  it('reports the known defects, and the imports of the eight concerns the subset leaves out, strictly', () => {
    const { findings, kinds } = validateDocuments(load(FIXTURE_SCS), { strict: true });
    const absent = [0, 2, 3, 5, 6, 7, 8, 9].map((i) => `error med-adherence/domains/software-development.yaml /imports/${i} import_unresolved`);
    expect(brief(findings)).toEqual([
      ...absent,
      ...KNOWN_DEFECTS,
    ]);
    expect([...kinds].filter(([, k]) => k === 'bundle')).toHaveLength(7);
    expect([...kinds].filter(([, k]) => k === 'scd')).toHaveLength(14 + 4 + 2);
  });

  it('classifies the upstream validator fixtures', () => {
    const dir = join(FIXTURE_SCS, 'validator-fixtures');
    const valid = parse(readFileSync(join(dir, 'valid/test-meta-roles.yaml'), 'utf8'));
    const invalid = parse(readFileSync(join(dir, 'invalid/test-invalid.yaml'), 'utf8'));
    expect(checkScd(valid, { strict: true })).toEqual([]);
    expect(checkScd(valid, { strict: false })).toEqual([]);
    expect(rules(checkScd(invalid, { strict: true }))).toEqual(['scd_schema', 'type_tier_mismatch', 'version_pattern']);
    expect(rules(checkScd(invalid, { strict: false }))).toEqual(['type_tier_mismatch']);
  });

  it('passes every valid SCD and bundle file on its own', () => {
    const docs = load(FIXTURE_SCS);
    expect(docs.length).toBeGreaterThan(20);
    for (const { file, doc } of docs) {
      const kind = classifyDocument(doc);
      if (kind === 'scd' && !file.includes('invalid')) expect(checkScd(doc, { strict: true }), file).toEqual([]);
      if (kind === 'bundle' && !file.includes('standards-bundle')) expect(checkBundle(doc, { strict: true }), file).toEqual([]);
    }
  });
});

describe.skipIf(wholeCorpusSkipNote('src/core/scs/scs.test.ts, the whole public SCS corpus'))('the whole public SCS corpus', () => {
  it('reports exactly the known defects of med-adherence (and the invalid fixture), strictly', () => {
    const domainExamples = (f: { file: string }) => !f.file.startsWith('schema/domain/');
    const { findings, kinds } = validateDocuments(load(CORPUS).filter(domainExamples), { strict: true });
    expect(brief(findings)).toEqual(KNOWN_DEFECTS);
    expect(findings.find((f) => f.file === 'med-adherence/project-bundle.yaml')!.message).toMatch(/bundle:meta:0\.1\.0.*0\.2\.0/);
    expect(findings.find((f) => f.rule === 'xor_constraint')!.message).toMatch(/both imports \(1\) and scds \(3\)/);
    expect([...kinds].filter(([, k]) => k === 'bundle')).toHaveLength(15);
    expect([...kinds].filter(([, k]) => k === 'scd')).toHaveLength(39 + 4 + 2);
  });

  it('passes every valid SCD and bundle file on its own', () => {
    for (const { file, doc } of load(CORPUS)) {
      const kind = classifyDocument(doc);
      if (kind === 'scd' && !file.includes('invalid')) expect(checkScd(doc, { strict: true }), file).toEqual([]);
      if (kind === 'bundle' && !file.includes('standards-bundle')) expect(checkBundle(doc, { strict: true }), file).toEqual([]);
    }
  });
});

describe('checkBundle', () => {
  it('accepts a minimal bundle of each type', () => {
    expect(checkBundle(bundle(), { strict: true })).toEqual([]);
    expect(checkBundle(bundle({ type: 'meta', scds: ['scd:meta:m'] }), { strict: true })).toEqual([]);
    expect(checkBundle(bundle({ type: 'domain', scds: [], imports: ['bundle:c:1.0.0'] }), { strict: true })).toEqual([]);
    expect(checkBundle(bundle({ type: 'project', scds: [], imports: ['bundle:meta:1.0.0', 'bundle:d'] }), { strict: true })).toEqual([]);
    expect(checkBundle(bundle({ type: 'standards', scds: ['scd:standards:s'] }), { strict: true })).toEqual([]);
    expect(checkBundle(bundle({ type: 'standards', scds: [], imports: ['bundle:other-standards'] }), { strict: true })).toEqual([]);
    expect(checkBundle(bundle({ version: 'DRAFT' }), { strict: true })).toEqual([]);
  });

  it('reports the document shape and missing fields, naming each field', () => {
    expect(rules(checkBundle('text', { strict: false }))).toEqual(['document_type']);
    const missing = checkBundle({ id: 'bundle:x', type: 'concern', scds: ['scd:project:a'], imports: [] }, { strict: false, file: 'b.yaml' });
    expect(missing.map((f) => f.path)).toEqual(['/version', '/title', '/description', '/provenance']);
    expect(missing.every((f) => f.file === 'b.yaml' && f.rule === 'required' && f.severity === 'error')).toBe(true);
  });

  it('enforces shapes and bundle-type constraints loosely', () => {
    const cases: Array<[Record<string, unknown>, string[]]> = [
      [{ id: 'project-bundle' }, ['id_pattern']],
      [{ type: 'library' }, ['bundle_type']],
      [{ version: 'v1.0' }, ['version_pattern']],
      [{ version: '1.0.0-beta.1' }, ['version_pattern']],
      [{ imports: ['bundle:c:1.0.0'] }, ['bundle_type']],
      [{ scds: [] }, ['bundle_type']],
      [{ scds: ['scd:standards:s'] }, ['scd_tier']],
      [{ scds: ['scd:foo:s'] }, ['scd_reference_pattern']],
      [{ scds: ['scd:project:a', 'scd:project:a'] }, ['duplicate_scd']],
      [{ type: 'domain', scds: ['scd:project:a'], imports: ['bundle:c'] }, ['bundle_type']],
      [{ type: 'domain', scds: [] }, ['bundle_type']],
      [{ type: 'project', scds: [] }, ['bundle_type']],
      [{ type: 'meta', scds: ['scd:meta:m'], imports: ['bundle:x2'] }, ['bundle_type']],
      [{ type: 'standards', scds: ['scd:standards:s'], imports: ['bundle:y'] }, ['xor_constraint']],
      [{ type: 'standards', scds: [], imports: [] }, ['xor_constraint']],
      [{ type: 'project', scds: [], imports: ['meta:0.3.0', 'bundle:meta:v0.3.0', 'bundle:meta:0.x'] }, ['import_pattern', 'import_pattern', 'import_pattern']],
      [{ type: 'project', scds: [], imports: ['bundle:x:1.0.0'] }, ['self_import']],
      [{ imports: 'bundle:y' }, ['field_type']],
      [{ title: '' }, ['field_type']],
    ];
    for (const [o, expected] of cases) expect(rules(checkBundle(bundle(o), { strict: false })), JSON.stringify(o)).toEqual(expected);
  });

  it('strict adds the JSON Schema, meta pinning and the meta version warning', () => {
    expect(checkBundle(bundle({ extra: 1 }), { strict: false })).toEqual([]);
    const extra = checkBundle(bundle({ extra: 1 }), { strict: true });
    expect(extra.map((f) => [f.path, f.rule])).toEqual([['/extra', 'schema']]);
    expect(rules(checkBundle(bundle({ provenance: { created_by: 'me', created_at: 'yesterday' } }), { strict: true }))).toEqual(['schema']);
    expect(rules(checkBundle(bundle({ provenance: { created_by: 'me' } }), { strict: true }))).toEqual(['schema']);
    const pin = checkBundle(bundle({ type: 'project', scds: [], imports: ['bundle:meta'] }), { strict: true });
    expect(pin.map((f) => [f.path, f.rule])).toEqual([['/imports/0', 'meta_version_pinning']]);
    const draftMeta = checkBundle(bundle({ type: 'meta', scds: ['scd:meta:m'], version: 'DRAFT' }), { strict: true });
    expect(draftMeta.map((f) => [f.severity, f.rule])).toEqual([['warning', 'meta_version_alignment']]);
  });

  it('checks the import hierarchy when the imported types are known', () => {
    const known = { 'bundle:p2': 'project', 'bundle:c': 'concern', 'bundle:m': 'meta', 'bundle:s': 'standards' } as const;
    const project = bundle({ type: 'project', scds: [], imports: ['bundle:m:1.0.0', 'bundle:p2'] });
    expect(rules(checkBundle(project, { strict: true, knownTypes: known }))).toEqual(['import_hierarchy']);
    const domain = bundle({ type: 'domain', scds: [], imports: ['bundle:s'] });
    expect(rules(checkBundle(domain, { strict: false, knownTypes: known }))).toEqual(['import_hierarchy']);
    const noMeta = bundle({ type: 'project', scds: [], imports: ['bundle:c'] });
    expect(rules(checkBundle(noMeta, { strict: true, knownTypes: known }))).toEqual(['meta_import_required']);
  });
});

describe('checkScd', () => {
  it('loose asks only for identity; strict for content and the tier schema', () => {
    const bare = { id: 'scd:project:a', type: 'project', title: 'A', version: '1.0.0' };
    expect(checkScd(bare, { strict: false })).toEqual([]);
    expect(checkScd(bare, { strict: true }).map((f) => f.path).sort()).toEqual(['/content', '/description', '/provenance']);
    expect(rules(checkScd({ type: 'project' }, { strict: false }))).toEqual(['required', 'required', 'required']);
    expect(rules(checkScd(scd({ id: 'scd:foo:a' }), { strict: false }))).toEqual(['id_pattern']);
    expect(rules(checkScd(scd({ type: 'bogus' }), { strict: false }))).toEqual(['scd_type']);
    expect(rules(checkScd(scd({ content: {} }), { strict: true }))).toEqual(['content_empty']);
    expect(rules(checkScd(scd({ id: 'scd:standards:s', type: 'standards' }), { strict: true }))).toEqual(['scd_schema']);
    expect(checkScd(scd({ id: 'scd:standards:s', type: 'standards', content: { standard_name: 'HIPAA' } }), { strict: true })).toEqual([]);
  });

  it('checks relationship types, tiers and self references', () => {
    const rel = (type: string, target: string) => scd({ relationships: [{ type, target }] });
    expect(checkScd(rel('satisfies', 'scd:standards:hipaa'), { strict: true })).toEqual([]);
    expect(checkScd(rel('depends-on', 'scd:meta:roles'), { strict: true })).toEqual([]);
    expect(rules(checkScd(rel('relates-to', 'scd:project:b'), { strict: true }))).toEqual(['relationship_type']);
    expect(rules(checkScd(rel('satisfies', 'scd:project:b'), { strict: true }))).toEqual(['relationship_tier']);
    expect(rules(checkScd(rel('depends-on', 'scd:standards:s'), { strict: true }))).toEqual(['relationship_tier']);
    expect(rules(checkScd(rel('refines', 'scd:project:a'), { strict: true }))).toEqual(['self_reference']);
    expect(rules(checkScd(rel('refines', 'not-an-id'), { strict: true }))).toEqual(['scd_schema']);
  });
});

describe('checkProject', () => {
  const files = (...docs: Array<Record<string, unknown>>) => docs.map((doc, i) => ({ file: `f${i}.yaml`, doc }));

  it('resolves imports, pins and SCDs; errors when strict, warnings when loose', () => {
    const set = files(
      bundle({ id: 'bundle:p', type: 'project', scds: [], imports: ['bundle:meta:2.0.0', 'bundle:d', 'bundle:gone'] }),
      bundle({ id: 'bundle:meta', type: 'meta', scds: ['scd:meta:m'] }),
      bundle({ id: 'bundle:d', type: 'domain', scds: [], imports: ['bundle:x:1.0.0'] }),
      bundle(),
      scd(),
    );
    const strict = checkProject(set, { strict: true });
    expect(brief(strict)).toEqual([
      'error f0.yaml /imports/0 import_version_mismatch',
      'error f0.yaml /imports/2 import_unresolved',
      'error f1.yaml /scds/0 scd_unresolved',
    ]);
    expect(checkProject(set, { strict: false }).every((f) => f.severity === 'warning')).toBe(true);
  });

  it('finds import cycles, duplicate bundles, hierarchy violations and ambiguous SCD ids', () => {
    const set = files(
      bundle({ id: 'bundle:a', type: 'standards', scds: [], imports: ['bundle:b'] }),
      bundle({ id: 'bundle:b', type: 'standards', scds: [], imports: ['bundle:a:1.0.0'] }),
      bundle({ id: 'bundle:b', type: 'standards', scds: [], imports: ['bundle:a:1.0.0'] }),
      bundle({ id: 'bundle:c', type: 'standards', scds: [], imports: ['bundle:x'] }),
      bundle(),
      scd(),
      scd({ title: 'again' }),
    );
    const out = checkProject(set, { strict: true });
    expect(rules(out)).toEqual(['duplicate_bundle', 'duplicate_scd', 'import_cycle', 'import_hierarchy']);
    expect(out.find((f) => f.rule === 'import_cycle')!.message).toBe('import cycle: bundle:a -> bundle:b -> bundle:a');
  });

  it('reports unresolved relationship targets (error in a complete project) and depends-on cycles', () => {
    const a = scd({ relationships: [{ type: 'depends-on', target: 'scd:project:b' }, { type: 'refines', target: 'scd:project:zz' }] });
    const b = scd({ id: 'scd:project:b', relationships: [{ type: 'depends-on', target: 'scd:project:a' }] });
    const alone = checkProject(files(a, b), { strict: true });
    expect(alone.map((f) => [f.severity, f.rule])).toEqual([['warning', 'relationship_unresolved'], ['warning', 'depends_on_cycle']]);
    const withProject = checkProject(files(a, b, bundle({ id: 'bundle:p', type: 'project', scds: [], imports: ['bundle:x'] }), bundle({ scds: ['scd:project:a', 'scd:project:b'] })), { strict: true });
    expect(withProject.find((f) => f.rule === 'relationship_unresolved')!.severity).toBe('error');
  });
});

describe('rule sets by SCS version', () => {
  const v01 = RULE_SETS['0.1.0'];
  const container = bundle({ type: 'domain', scds: ['scd:project:a'], imports: [] });

  it('0.1.0: a domain bundle is a container of project SCDs, there is no concern type; 0.3.0 is the default', () => {
    expect(checkBundle(container, { strict: true, rules: v01 })).toEqual([]);
    expect(rules(checkBundle(container, { strict: true }))).toEqual(['bundle_type', 'bundle_type']);
    expect(rules(checkBundle(bundle({ type: 'domain', scds: [], imports: ['bundle:c:1.0.0'] }), { strict: true, rules: v01 }))).toEqual(['bundle_type', 'bundle_type']);
    expect(rules(checkBundle(bundle(), { strict: true, rules: v01 }))).toEqual(['bundle_type']);
    // The 0.3-only hierarchy rules: a domain importing no concern, a project importing a 0.1 domain.
    const project = bundle({ id: 'bundle:p', type: 'project', scds: [], imports: ['bundle:meta:1.0.0', 'bundle:d'] });
    const known = { 'bundle:meta': 'meta', 'bundle:d': 'domain' } as const;
    expect(checkBundle(project, { strict: true, rules: v01, knownTypes: known })).toEqual([]);
    const set = [{ file: 'p.yaml', doc: project }, { file: 'm.yaml', doc: bundle({ id: 'bundle:meta', type: 'meta', scds: ['scd:meta:m'] }) }];
    expect(checkProject([...set, { file: 'd.yaml', doc: { ...container, id: 'bundle:d' } }, { file: 'a.yaml', doc: scd() }], { strict: true, rules: v01 }).filter((f) => f.rule !== 'scd_unresolved')).toEqual([]);
    const domainManifest = { domain: { id: 'domain:x' } };
    expect(checkDocument(domainManifest, { strict: true, rules: v01 }).findings).toEqual([]);
    expect(checkDocument(domainManifest, { strict: true }).findings.length).toBeGreaterThan(0);
  });

  it('reads versions as declared (0.3, v0.3, 0.3.0) and falls back to 0.3.0', () => {
    expect(normalizeScsVersion('0.3')).toBe('0.3.0');
    expect(normalizeScsVersion('v0.1')).toBe('0.1.0');
    expect(normalizeScsVersion(0.1)).toBe('0.1.0');
    expect(normalizeScsVersion('latest')).toBeNull();
    expect(ruleSetFor('0.1').version).toBe('0.1.0');
    expect(ruleSetFor('0.2.0').version).toBe('0.3.0');
    expect(ruleSetFor(undefined).version).toBe('0.3.0');
  });
});

describe('what the control plane refuses beyond SCS (svc-limits)', () => {
  it('accepts extra provenance fields and svc\'s own fields; refuses what the API cannot store', () => {
    expect(checkBundle(bundle({ provenance: { created_by: 'me', created_at: now, source: 'x' } }), { strict: true })).toEqual([]);
    expect(checkBundle(bundle({ schema_version: '0.3.0', applies_to: { roles: ['role:nurse'] } }), { strict: true })).toEqual([]);
    expect(rules(checkBundle(bundle({ version: '01.0.0' }), { strict: false }))).toEqual(['version_semver']);
    expect(rules(checkBundle(bundle({ type: 'project', scds: [], imports: ['bundle:meta:1.0.0', 'bundle:meta:1.0.0'] }), { strict: false }))).toEqual(['duplicate_import']);
    expect(rules(checkBundle(bundle({ title: 'x'.repeat(257) }), { strict: false }))).toEqual(['svc_limit']);
    expect(rules(checkBundle(bundle({ applies_to: { roles: ['nurse'], extra: 1 } }), { strict: false }))).toEqual(['applies_to', 'applies_to']);
    expect(rules(checkBundle(bundle({ schema_version: '' }), { strict: false }))).toEqual(['svc_limit']);
    expect(rules(checkScd(scd({ description: 'x'.repeat(4097) }), { strict: false }))).toEqual(['svc_limit']);
    expect(rules(checkScd(scd({ applies_to: { roles: [] } }), { strict: false }))).toEqual(['applies_to']);
    expect(checkScd(scd({ content: { summary: 'a\u0000b' } }), { strict: false }).map((f) => [f.path, f.rule])).toEqual([['/content/summary', 'nul_character']]);
  });

  it('keeps the limits equal to the request schema in spec/openapi-control-plane.yaml', () => {
    const spec = parse(readFileSync(new URL('../../../spec/openapi-control-plane.yaml', import.meta.url), 'utf8')) as { components: { schemas: Record<string, { properties: Record<string, { maxLength?: number; maxItems?: number }> }> } };
    const sc = spec.components.schemas;
    const max = (schema: string, prop: string) => sc[schema].properties[prop];
    expect(max('BundleCreate', 'title').maxLength).toBe(SVC_LIMITS.title);
    expect(max('BundleCreate', 'description').maxLength).toBe(SVC_LIMITS.description);
    expect(max('BundleCreate', 'imports').maxItems).toBe(SVC_LIMITS.items);
    expect(max('BundleCreate', 'scds').maxItems).toBe(SVC_LIMITS.items);
    expect(max('BundleCreate', 'schema_version').maxLength).toBe(SVC_LIMITS.schemaVersion);
    expect((sc.BundleId as unknown as { maxLength: number }).maxLength).toBe(SVC_LIMITS.id);
    expect((sc.BundleRef as unknown as { maxLength: number }).maxLength).toBe(SVC_LIMITS.importRef);
    expect(max('BundleProvenance', 'created_by').maxLength).toBe(SVC_LIMITS.person);
    expect(max('BundleProvenance', 'rationale').maxLength).toBe(SVC_LIMITS.rationale);
    expect((sc.BundleProvenance as unknown as { additionalProperties: boolean }).additionalProperties).toBe(true);
    expect(max('ScdDocument', 'description').maxLength).toBe(SVC_LIMITS.description);
    expect(max('ScdDocument', 'type').maxLength).toBe(SVC_LIMITS.scdType);
    expect(max('ScdDocument', 'version').maxLength).toBe(SVC_LIMITS.scdVersion);
    expect(max('ScdRelationship', 'type').maxLength).toBe(SVC_LIMITS.relationshipType);
    expect(max('ScdRelationship', 'target').maxLength).toBe(SVC_LIMITS.relationshipTarget);
  });
});
