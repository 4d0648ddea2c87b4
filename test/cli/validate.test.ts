import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sandbox } from './helpers.js';
import { FIXTURE_SCS, WHOLE_SCS, wholeCorpusSkipNote } from '../fixtures/scs-corpus.js';

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
}

const WHOLE: Want = { absent: [], bundles: 15, scds: 45, medBundles: 15, medScds: 43, rulesSkipped: true };
const SUBSET: Want = {
  absent: [0, 2, 3, 5, 6, 7, 8, 9].map((i) => `med-adherence/domains/software-development.yaml /imports/${i} import_unresolved`),
  bundles: 7, scds: 20, medBundles: 7, medScds: 18, rulesSkipped: false,
};

const parse = (stdout: string) => JSON.parse(stdout) as { valid: boolean; errors: number; warnings: number; findings: Array<{ severity: string; file: string; path: string; rule: string; message: string }>; skipped: string[]; files: Array<{ file: string; kind: string }> };
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
      'validator-fixtures/invalid/test-invalid.yaml /provenance/created_at scd_schema',
      'validator-fixtures/invalid/test-invalid.yaml /type type_tier_mismatch',
      'validator-fixtures/invalid/test-invalid.yaml /version version_pattern',
    ]);
    expect(report.findings.every((f) => f.severity === 'error')).toBe(true);
    expect(report.files.filter((f) => f.kind === 'bundle')).toHaveLength(want.bundles);
    expect(report.files.filter((f) => f.kind === 'scd')).toHaveLength(want.scds);
    expect(report.skipped.some((f) => f.includes('validator-rules'))).toBe(want.rulesSkipped);
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
    expect(lines.at(-1)).toBe(`INVALID: ${files} file(s) checked (${want.medBundles} bundle(s), ${want.medScds} SCD(s)); ${errors} error(s), 0 warning(s) [strict]`);
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

  it('passes every valid file of the corpus on its own, strictly', async () => {
    const files = ['scs/med-adherence/project-bundle.yaml', 'scs/med-adherence/concerns/security.yaml', 'scs/med-adherence/scds/project/hipaa-compliance.yaml', 'scs/context/meta/bundle-meta.yaml', 'scs/validator-fixtures/valid/test-meta-roles.yaml'];
    const runs = await Promise.all(files.map((f) => s.run(['validate', f, '--strict'])));
    runs.forEach((r, i) => {
      expect(r.code, `${files[i]}: ${r.stdout}`).toBe(0);
      expect(r.stdout).toMatch(/^VALID: 1 file/);
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
    expect(r.stdout).toMatch(/^broken\.yaml: error \/ \[yaml_syntax\] not well-formed YAML: /);
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
