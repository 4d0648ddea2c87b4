import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sandbox } from './helpers.js';
import { FIXTURE_SCS, WHOLE_SCS, wholeCorpusSkipNote } from '../fixtures/scs-corpus.js';

/** test/fixtures/validate: domain manifests and a 0.1.0 and a 0.3.0 project (README there). */
const FIXTURES = join(FIXTURE_SCS, '..', 'validate');

// Every test spawns the real bin (tsx start-up, ~1 s each on an idle machine): allow for a loaded one.
vi.setConfig({ testTimeout: 240_000 });

const KNOWN_DEFECTS = [
  'med-adherence/domains/software-development.yaml /imports/10 import_version_mismatch',
  'med-adherence/project-bundle.yaml /imports/0 import_version_mismatch',
  'med-adherence/standards-bundle.yaml /imports/0 import_pattern',
  'med-adherence/standards-bundle.yaml /scds xor_constraint',
  'med-adherence/standards-bundle.yaml /scds/0 scd_unresolved',
  'med-adherence/standards-bundle.yaml /scds/1 scd_unresolved',
  'med-adherence/standards-bundle.yaml /scds/2 scd_unresolved',
];

interface Want {
  /** Findings before the known defects: the domain's imports of concerns the data leaves out. */
  absent: string[];
  bundles: number;
  scds: number;
  /** Bundles and SCDs of med-adherence with the meta SCDs. */
  medBundles: number;
  medScds: number;
  /** The whole corpus carries the validator's rule files, which validate skips. */
  rulesSkipped: boolean;
  /** Findings of the domain manifest examples (whole corpus only; checked since issue 23, before they were skipped). */
  domains: string[];
}

const WHOLE: Want = {
  absent: [], bundles: 15, scds: 45, medBundles: 15, medScds: 43, rulesSkipped: true,
  domains: ['healthcare-domain', 'software-development-domain'].map((d) => `schema/domain/examples/${d}.yaml /domain/concerns domain_schema`),
};
const SUBSET: Want = {
  absent: [0, 2, 3, 5, 6, 7, 8, 9].map((i) => `med-adherence/domains/software-development.yaml /imports/${i} import_unresolved`),
  bundles: 7, scds: 20, medBundles: 7, medScds: 18, rulesSkipped: false, domains: [],
};

interface Report {
  valid: boolean; errors: number; warnings: number;
  findings: Array<{ severity: string; file: string; path: string; rule: string; message: string; line?: number; column?: number }>;
  skipped: Array<{ file: string; kind: string; reason: string }>;
  files: Array<{ file: string; kind: string }>;
  counts: Record<string, number>;
  rule_set: { version: string; source: string; declared: string | null };
  project: { root: string; marker: string; context_files: number } | null;
}
const parse = (stdout: string) => JSON.parse(stdout) as Report;
const brief = (r: ReturnType<typeof parse>) => r.findings.map((f) => `${f.file.replace(/^scs\//, '')} ${f.path} ${f.rule}`);

/** The corpus-wide checks, on a copy of `src` (an `scs/` folder) at `scs/` in a sandbox. */
function corpusChecks(src: string, want: Want): void {
  const s = sandbox();
  beforeAll(() => {
    mkdirSync(s.work, { recursive: true });
    cpSync(src, join(s.work, 'scs'), { recursive: true });
  });
  afterAll(() => s.cleanup());

  it('reports exactly the known defects of the corpus (plus the deliberately invalid fixture), exit 1', async () => {
    const r = await s.run(['validate', 'scs', '--strict', '-o', 'json']);
    expect(r.code).toBe(1);
    const report = parse(r.stdout);
    expect(brief(report)).toEqual([
      ...want.absent,
      ...KNOWN_DEFECTS,
      ...want.domains,
      'validator-fixtures/invalid/test-invalid.yaml /provenance/created_at scd_schema',
      'validator-fixtures/invalid/test-invalid.yaml /type type_tier_mismatch',
      'validator-fixtures/invalid/test-invalid.yaml /version version_pattern',
    ]);
    expect(report.findings.every((f) => f.severity === 'error')).toBe(true);
    expect(report.files.filter((f) => f.kind === 'bundle')).toHaveLength(want.bundles);
    expect(report.files.filter((f) => f.kind === 'scd')).toHaveLength(want.scds);
    expect(report.skipped.some((f) => f.file.includes('validator-rules') && f.kind === 'other')).toBe(want.rulesSkipped);
    expect(report.rule_set).toEqual({ version: '0.3.0', source: 'default', declared: null });
  });

  it('reports the med-adherence example with its meta SCDs: exactly the known defects', async () => {
    const r = await s.run(['validate', 'scs/med-adherence', 'scs/context/meta', '--strict']);
    expect(r.code).toBe(1);
    const lines = r.stdout.trim().split('\n');
    const errors = want.absent.length + KNOWN_DEFECTS.length;
    expect(lines).toHaveLength(errors + 1);
    // Messages name the file, the field (JSON pointer) and the rule.
    expect(lines[want.absent.length + 1]).toBe("scs/med-adherence/project-bundle.yaml: error /imports/0 [import_version_mismatch] bundle:medication-adherence imports bundle:meta:0.1.0, but bundle:meta is at version 0.2.0 (scs/med-adherence/meta-bundle.yaml)");
    expect(r.stdout).toContain('scs/med-adherence/standards-bundle.yaml: error /imports/0 [import_pattern] import "bundle:standards:soc2-type2:2023.1"');
    expect(r.stdout).toContain('scs/med-adherence/domains/software-development.yaml: error /imports/10 [import_version_mismatch] bundle:software-development imports bundle:business-context:0.1.0, but bundle:business-context is at version 0.2.0');
    const files = want.medBundles + want.medScds;
    // Since issue 23 the summary counts every kind and names the rule set.
    expect(lines.at(-1)).toBe(`INVALID: ${files} file(s) checked (${want.medBundles} bundle(s), ${want.medScds} SCD(s), 0 domain manifest(s)); ${errors} error(s), 0 warning(s) [strict; SCS 0.3.0 rules, no version declared]`);
  });

  it('one file of med-adherence is checked in its project: the standards bundle\'s missing HIPAA SCDs are reported', async () => {
    const r = await s.run(['validate', 'scs/med-adherence/standards-bundle.yaml', '--strict', '-o', 'json']);
    expect(r.code).toBe(1);
    const report = parse(r.stdout);
    expect(brief(report)).toEqual(KNOWN_DEFECTS.filter((d) => d.startsWith('med-adherence/standards-bundle.yaml ')));
    expect(report.project).toMatchObject({ root: 'scs/med-adherence', marker: 'project-bundle.yaml' });
  });

  it('loose validation of the corpus keeps the structural defects as errors, cross-file ones as warnings', async () => {
    const r = await s.run(['validate', 'scs/med-adherence', 'scs/context/meta', '-o', 'json']);
    expect(r.code).toBe(1);
    const report = parse(r.stdout);
    expect(report.findings.filter((f) => f.severity === 'error').map((f) => f.rule)).toEqual(['import_pattern', 'xor_constraint']);
    expect(report.warnings).toBe(5 + want.absent.length);
  });
}

describe('svc validate over the corpus subset in test/fixtures/scs', () => {
  corpusChecks(FIXTURE_SCS, SUBSET);
});

describe.skipIf(wholeCorpusSkipNote('test/cli/validate.test.ts, svc validate over the whole public SCS corpus'))('svc validate over the whole public SCS corpus', () => {
  corpusChecks(WHOLE_SCS!, WHOLE);
});

describe('svc validate', () => {
  const s = sandbox();
  beforeAll(() => {
    mkdirSync(s.work, { recursive: true });
    cpSync(FIXTURE_SCS, join(s.work, 'scs'), { recursive: true });
  });
  afterAll(() => s.cleanup());

  it('passes every valid file of the corpus, strictly (in its project where it has one)', async () => {
    // Since issue 23 project-bundle.yaml is checked in its project, where its meta import does not resolve (see below).
    const files = ['scs/med-adherence/concerns/security.yaml', 'scs/med-adherence/scds/project/hipaa-compliance.yaml', 'scs/context/meta/bundle-meta.yaml', 'scs/validator-fixtures/valid/test-meta-roles.yaml'];
    const runs = await Promise.all(files.map((f) => s.run(['validate', f, '--strict'])));
    runs.forEach((r, i) => {
      expect(r.code, `${files[i]}: ${r.stdout}`).toBe(0);
      expect(r.stdout.trim().split('\n').at(-1)).toMatch(/^VALID: 1 file/);
    });
  });

  it('classifies the upstream validator fixtures', async () => {
    expect((await s.run(['validate', 'scs/validator-fixtures/valid', '--strict'])).code).toBe(0);
    const bad = await s.run(['validate', 'scs/validator-fixtures/invalid/test-invalid.yaml', '--strict']);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain("scs/validator-fixtures/invalid/test-invalid.yaml: error /type [type_tier_mismatch] type 'project' does not match tier 'meta' in id 'scd:meta:roles'");
    expect(bad.stdout).toContain("error /version [version_pattern] version 'not-a-semver'");
    expect(bad.stdout).toContain("error /provenance/created_at [scd_schema] required field 'created_at' is missing");
  });

  it('loose does not ask for SCD content; strict does', async () => {
    writeFileSync(join(s.work, 'bare-scd.yaml'), 'id: scd:project:bare\ntype: project\ntitle: Bare\nversion: DRAFT\n');
    expect((await s.run(['validate', 'bare-scd.yaml'])).code).toBe(0);
    const strict = await s.run(['validate', 'bare-scd.yaml', '--strict']);
    expect(strict.code).toBe(1);
    expect(strict.stdout).toContain("bare-scd.yaml: error /content [scd_schema] required field 'content' is missing");
  });

  it('exit 2 for warnings under --strict only', async () => {
    writeFileSync(join(s.work, 'draft-meta.yaml'), 'id: bundle:m\ntype: meta\nversion: DRAFT\ntitle: M\ndescription: m\nimports: []\nscds: [scd:meta:x]\nprovenance: {created_by: me, created_at: "2026-01-01T00:00:00Z"}\n');
    const strict = await s.run(['validate', 'draft-meta.yaml', '--strict']);
    expect(strict.code).toBe(2);
    expect(strict.stdout).toContain('draft-meta.yaml: warning /version [meta_version_alignment]');
    expect(strict.stdout).toContain('VALID WITH WARNINGS (strict)');
    expect((await s.run(['validate', 'draft-meta.yaml'])).code).toBe(0);
  });

  it('validate.strict in the configuration makes strict the default; --loose overrides it', async () => {
    const env = { SVC_CONFIG_HOME: join(s.dir, 'strict-home') };
    expect((await s.run(['config', 'set', 'validate.strict', 'true', '--user'], { env })).code).toBe(0);
    writeFileSync(join(s.work, 'draft-meta2.yaml'), 'id: bundle:m2\ntype: meta\nversion: DRAFT\ntitle: M\ndescription: m\nimports: []\nscds: [scd:meta:x]\nprovenance: {created_by: me, created_at: "2026-01-01T00:00:00Z"}\n');
    const [byConfig, loose, both] = await Promise.all([
      s.run(['validate', 'draft-meta2.yaml'], { env }),
      s.run(['validate', 'draft-meta2.yaml', '--loose'], { env }),
      s.run(['validate', 'draft-meta2.yaml', '--loose', '--strict'], { env }),
    ]);
    expect(byConfig.code).toBe(2);
    expect(loose.code).toBe(0);
    expect(both.code).toBe(3);
  });

  it('malformed YAML and non-SCS documents are errors (exit 1) naming the file', async () => {
    writeFileSync(join(s.work, 'broken.yaml'), 'id: bundle:x\nimports: [a\nscds: b\n');
    const r = await s.run(['validate', 'broken.yaml']);
    expect(r.code).toBe(1);
    // The file, line and column from the yaml library, never a stack.
    expect(r.stdout).toMatch(/^broken\.yaml:3:1: error \/ \[yaml_syntax\] not well-formed YAML: Flow sequence in block collection must be sufficiently indented and end with a \]\n/);
    expect(r.stderr).toBe('');
    writeFileSync(join(s.work, 'other.yaml'), 'hello: world\n');
    const o = await s.run(['validate', 'other.yaml', '-o', 'json']);
    expect(o.code).toBe(1);
    expect(parse(o.stdout).findings[0]).toMatchObject({ file: 'other.yaml', path: '', rule: 'document_kind' });
    const missing = await s.run(['validate', 'bundle-missing-fields.yaml'], { input: '' });
    expect(missing.code).toBe(4);
  });

  it('names each missing bundle field and the bundle-type rule', async () => {
    writeFileSync(join(s.work, 'partial.yaml'), 'id: bundle:p\ntype: concern\nimports: [bundle:x]\nscds: []\n');
    const r = await s.run(['validate', 'partial.yaml']);
    expect(r.code).toBe(1);
    for (const f of ['version', 'title', 'description', 'provenance']) expect(r.stdout).toContain(`partial.yaml: error /${f} [required] required bundle field '${f}' is missing`);
    expect(r.stdout).toContain('partial.yaml: error /imports [bundle_type] Concern bundles MUST NOT import other bundles');
    expect(r.stdout).toContain('partial.yaml: error /scds [bundle_type] Concern bundles MUST contain at least one project-tier SCD');
  });

  it('exit 3 for usage errors, 4 for unreadable paths', async () => {
    const none = await s.run(['validate']);
    expect(none.code).toBe(3);
    expect(none.stderr).toContain('validate needs a file or directory');
    const fmt = await s.run(['validate', 'scs', '-o', 'xml']);
    expect(fmt.code).toBe(3);
    expect((await s.run(['validate', 'scs', '--bogus'])).code).toBe(3);
    const gone = await s.run(['validate', 'no/such/file.yaml']);
    expect(gone.code).toBe(4);
    expect(gone.stderr).toContain('no/such/file.yaml: no such file or directory');
    symlinkSync(join(s.work, 'nowhere.yaml'), join(s.work, 'dangling.yaml'));
    expect((await s.run(['validate', 'dangling.yaml'])).code).toBe(4);
  });
});

describe('svc validate in a project, over directories, by SCS version (issue 23)', () => {
  const s = sandbox();
  const w = (...p: string[]) => join(s.work, ...p);
  beforeAll(() => {
    mkdirSync(s.work, { recursive: true });
    cpSync(FIXTURE_SCS, w('scs'), { recursive: true });
    cpSync(FIXTURES, w('fx'), { recursive: true });
  });
  afterAll(() => s.cleanup());

  it('checks one file against the project around it, reporting only that file and naming the root', async () => {
    const [standards, project, projectJson, alone, security] = await Promise.all([
      s.run(['validate', 'scs/med-adherence/standards-bundle.yaml', '--strict']),
      s.run(['validate', 'scs/med-adherence/project-bundle.yaml', '--strict']),
      s.run(['validate', 'scs/med-adherence/project-bundle.yaml', '--strict', '-o', 'json']),
      s.run(['validate', 'scs/med-adherence/project-bundle.yaml', '--strict', '--alone']),
      s.run(['validate', 'scs/med-adherence/concerns/security.yaml', '--strict', '-o', 'json']),
    ]);
    expect(standards.code).toBe(1);
    // The missing HIPAA SCDs, found only because the project's other files were loaded.
    for (const i of [0, 1, 2]) expect(standards.stdout).toContain(`scs/med-adherence/standards-bundle.yaml: error /scds/${i} [scd_unresolved]`);
    expect(standards.stdout).toContain('project: scs/med-adherence (nearest directory with project-bundle.yaml); its 20 other file(s) were loaded as context');
    expect(standards.stdout.split('\n').filter((l) => l.includes(': error ')).every((l) => l.startsWith('scs/med-adherence/standards-bundle.yaml: '))).toBe(true);
    expect(project.code).toBe(1);
    expect(project.stdout).toContain('scs/med-adherence/project-bundle.yaml: error /imports/0 [import_version_mismatch] bundle:medication-adherence imports bundle:meta:0.1.0, but bundle:meta is at version 0.2.0');
    const r = parse(projectJson.stdout);
    expect(r.project).toEqual({ root: 'scs/med-adherence', marker: 'project-bundle.yaml', context_files: 20 });
    expect(r.files).toEqual([{ file: 'scs/med-adherence/project-bundle.yaml', kind: 'bundle' }]);
    expect(r.findings.map((f) => f.rule)).toEqual(['import_version_mismatch']);
    // --alone: the file on its own, as before.
    expect(alone.code).toBe(0);
    expect(alone.stdout).not.toContain('project:');
    expect(security.code).toBe(0);
    expect(parse(security.stdout).project?.root).toBe('scs/med-adherence');
  });

  it('--project names the project; a bad one is exit 4, --project with --alone exit 3', async () => {
    const [named, gone, both] = await Promise.all([
      s.run(['validate', 'scs/med-adherence/standards-bundle.yaml', '--project', 'scs', '-o', 'json']),
      s.run(['validate', 'scs/med-adherence/standards-bundle.yaml', '--project', 'nowhere']),
      s.run(['validate', 'scs/med-adherence/standards-bundle.yaml', '--project', 'scs', '--alone']),
    ]);
    expect(named.code).toBe(1);
    expect(parse(named.stdout).project).toMatchObject({ root: 'scs', marker: '--project' });
    expect(gone.code).toBe(4);
    expect(gone.stderr).toContain('nowhere: no such directory');
    expect(both.code).toBe(3);
  });

  it('YAML syntax errors name the file, line and column (text and -o json), never a stack', async () => {
    writeFileSync(w('dup.yaml'), 'id: scd:project:a\nid: scd:project:b\n');
    writeFileSync(w('two.yaml'), 'id: scd:project:a\n---\nid: scd:project:b\n');
    const [dup, two] = await Promise.all([s.run(['validate', 'dup.yaml', '-o', 'json']), s.run(['validate', 'two.yaml'])]);
    expect(dup.code).toBe(1);
    expect(parse(dup.stdout).findings).toEqual([{ severity: 'error', path: '', rule: 'yaml_syntax', file: 'dup.yaml', line: 2, column: 1, message: 'not well-formed YAML: Map keys must be unique' }]);
    expect(two.code).toBe(1);
    expect(two.stdout).toMatch(/^two\.yaml:2:1: error \/ \[yaml_syntax\] holds 2 YAML documents/);
    expect(dup.stderr + two.stderr).toBe('');
  });

  it('never skips a directory silently: domain manifests are checked, config and other YAML listed with the reason', async () => {
    const d = w('domains');
    cpSync(join(FIXTURES, 'domains'), d, { recursive: true });
    mkdirSync(join(d, '.svc'));
    writeFileSync(join(d, '.svc', 'config.yaml'), 'project: {name: d}\n');
    writeFileSync(join(d, '.svc', 'credentials.yaml'), 'api: {key: not-read}\n');
    writeFileSync(join(d, 'notes.yaml'), 'hello: world\n');
    const [strict, json, loose, single] = await Promise.all([
      s.run(['validate', 'domains', '--strict']),
      s.run(['validate', 'domains', '--strict', '-o', 'json']),
      s.run(['validate', 'domains']),
      s.run(['validate', 'domains/healthcare-domain.yaml', '--strict']),
    ]);
    // The directory and the file alone give the same verdict (before: files=0, exit 0).
    expect(strict.code).toBe(1);
    expect(single.code).toBe(1);
    expect(strict.stdout).toContain("domains/healthcare-domain.yaml: error /domain/concerns [domain_schema] required field 'concerns' is missing");
    expect(strict.stdout).toContain('domains/.svc/config.yaml: skipped (svc configuration in .svc/, not an SCS document)');
    expect(strict.stdout).toContain('domains/.svc/credentials.yaml: skipped (svc configuration in .svc/, not an SCS document)');
    expect(strict.stdout).toContain('domains/notes.yaml: skipped (not an SCS document: no bundle:/scd: id, no domain: mapping)');
    expect(strict.stdout.trim().split('\n').at(-1)).toBe('INVALID: 2 file(s) checked (0 bundle(s), 0 SCD(s), 2 domain manifest(s)); 3 skipped (2 config, 1 other); 1 error(s), 0 warning(s) [strict; SCS 0.3.0 rules, no version declared]');
    const r = parse(json.stdout);
    expect(r.counts).toEqual({ bundle: 0, scd: 0, domain: 2, malformed: 0, config: 2, other: 1 });
    expect(r.files.map((f) => f.kind)).toEqual(['domain', 'domain']);
    expect(r.skipped.map((x) => [x.file, x.kind])).toEqual([['domains/.svc/config.yaml', 'config'], ['domains/.svc/credentials.yaml', 'config'], ['domains/notes.yaml', 'other']]);
    expect(loose.code).toBe(0);
    expect(loose.stdout).toContain('2 domain manifest(s)');
  });

  it('judges a project by the SCS version it declares: 0.1.0 gets no 0.3-only findings, 0.3.0 does', async () => {
    cpSync(w('fx', 'scs-0.1.0'), w('as-0.3'), { recursive: true });
    writeFileSync(w('as-0.3', '.scs', 'config'), 'project_name: clinic\nscs_version: 0.3.0\n');
    cpSync(w('fx', 'scs-0.3.0'), w('unknown'), { recursive: true });
    writeFileSync(w('unknown', '.scs', 'config'), 'project_name: clinic\nscs_version: 0.2.0\n');
    const [v01, v01json, v01file, v03, as03, unknown] = await Promise.all([
      s.run(['validate', 'fx/scs-0.1.0', '--strict']),
      s.run(['validate', 'fx/scs-0.1.0', '--strict', '-o', 'json']),
      s.run(['validate', 'fx/scs-0.1.0/bundles/domains/architecture.yaml', '--strict']),
      s.run(['validate', 'fx/scs-0.3.0', '--strict', '-o', 'json']),
      s.run(['validate', 'as-0.3', '--strict', '-o', 'json']),
      s.run(['validate', 'unknown', '--strict']),
    ]);
    expect(v01.code, v01.stdout).toBe(0);
    expect(v01.stdout.trim()).toBe('VALID: 5 file(s) checked (3 bundle(s), 2 SCD(s), 0 domain manifest(s)); 0 error(s), 0 warning(s) [strict; SCS 0.1.0 rules, declared 0.1.0 in fx/scs-0.1.0/.scs/config]');
    expect(parse(v01json.stdout).rule_set).toEqual({ version: '0.1.0', source: 'fx/scs-0.1.0/.scs/config', declared: '0.1.0' });
    expect(v01file.code).toBe(0);
    expect(v01file.stdout).toContain('[strict; SCS 0.1.0 rules, declared 0.1.0 in fx/scs-0.1.0/.scs/config]');
    expect(v03.code).toBe(0);
    expect(parse(v03.stdout).rule_set.version).toBe('0.3.0');
    // The 0.1.0 project judged by 0.3.0: its container-style domain bundle breaks the 0.3-only rules.
    expect(as03.code).toBe(1);
    expect(parse(as03.stdout).findings.map((f) => `${f.file} ${f.path} ${f.rule}`)).toEqual([
      'as-0.3/bundles/domains/architecture.yaml /imports bundle_type',
      'as-0.3/bundles/domains/architecture.yaml /scds bundle_type',
    ]);
    // A version svc has no rules for: a warning (exit 2 under --strict), and the 0.3.0 rules.
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toContain('unknown/.scs/config: warning /scs_version [scs_version_unknown] SCS version 0.2.0 has no rule set in svc (known: 0.1.0, 0.3.0); validating with the 0.3.0 rules');
  });

  it('a 0.1.0 project has no concern bundles; a bundle can declare its version in schema_version; versions do not mix', async () => {
    cpSync(w('fx', 'scs-0.1.0'), w('with-concern'), { recursive: true });
    writeFileSync(w('with-concern', 'bundles', 'concern.yaml'), 'id: bundle:sec\ntype: concern\nversion: "1.0.0"\ntitle: S\ndescription: s\nimports: []\nscds: [scd:project:system-context]\nprovenance: {created_by: me, created_at: "2026-01-01T00:00:00Z"}\n');
    mkdirSync(w('own'), { recursive: true });
    writeFileSync(w('own', 'dom.yaml'), 'id: bundle:arch\ntype: domain\nschema_version: "0.1.0"\nversion: "1.0.0"\ntitle: A\ndescription: a\nimports: []\nscds: [scd:project:x]\nprovenance: {created_by: me, created_at: "2026-01-01T00:00:00Z"}\n');
    writeFileSync(w('own', 'x.yaml'), 'id: scd:project:x\ntype: project\ntitle: X\nversion: "1.0.0"\ndescription: x\ncontent: {summary: x}\nprovenance: {created_by: me, created_at: "2026-01-01T00:00:00Z"}\n');
    cpSync(w('own'), w('mixed'), { recursive: true });
    writeFileSync(w('mixed', 'b.yaml'), 'id: bundle:b\ntype: concern\nschema_version: "0.3.0"\nversion: "1.0.0"\ntitle: B\ndescription: b\nimports: []\nscds: [scd:project:x]\nprovenance: {created_by: me, created_at: "2026-01-01T00:00:00Z"}\n');
    cpSync(w('fx', 'scs-0.1.0'), w('two-configs'), { recursive: true });
    mkdirSync(w('two-configs', '.svc'));
    writeFileSync(w('two-configs', '.svc', 'config.yaml'), 'scs_version: "0.3"\n');
    cpSync(w('fx', 'scs-0.1.0'), w('bad-config'), { recursive: true });
    writeFileSync(w('bad-config', '.scs', 'config'), 'scs_version: [\n');
    const [concern, own, mixed, twoConfigs, badConfig] = await Promise.all([
      s.run(['validate', 'with-concern/bundles/concern.yaml', '--strict']),
      s.run(['validate', 'own', '--strict', '-o', 'json']),
      s.run(['validate', 'mixed', '--strict', '-o', 'json']),
      s.run(['validate', 'two-configs', '--strict']),
      s.run(['validate', 'bad-config', '--strict']),
    ]);
    expect(twoConfigs.code).toBe(1);
    expect(twoConfigs.stdout).toContain("two-configs/.svc/config.yaml: error /scs_version [scs_version_mixed] scs_version 0.3 differs from the project's SCS version 0.1.0 (two-configs/.scs/config)");
    // An unreadable .scs/config is said, not taken silently as "undeclared".
    expect(badConfig.code).toBe(1); // the 0.1.0 domain bundle under the 0.3.0 rules
    expect(badConfig.stdout).toContain('bad-config/.scs/config: warning / [scs_config_unreadable] cannot read its scs_version');
    expect(badConfig.stdout).toContain('[strict; SCS 0.3.0 rules, no version declared]');
    expect(concern.code).toBe(1);
    expect(concern.stdout).toContain('with-concern/bundles/concern.yaml: error /type [bundle_type] type "concern" must be one of meta, standards, domain, project (SCS 0.1.0)');
    expect(own.code, own.stdout).toBe(0);
    expect(parse(own.stdout).rule_set).toEqual({ version: '0.1.0', source: 'own/dom.yaml', declared: '0.1.0' });
    expect(mixed.code).toBe(1);
    // The first declaration read (files in order: b.yaml) sets the version; dom.yaml differs.
    expect(parse(mixed.stdout).findings.filter((f) => f.rule === 'scs_version_mixed').map((f) => f.file)).toEqual(['mixed/dom.yaml']);
  });
});
