import { existsSync, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { sandbox } from './helpers.js';

// Every test spawns the real bin (tsx start-up, ~1 s each on an idle machine): allow for a loaded one.
vi.setConfig({ testTimeout: 240_000 });

const TYPES = ['healthcare', 'fintech', 'saas', 'government', 'minimal', 'standard'] as const;

/** Standards each type must carry (by standard_name text). */
const STANDARDS: Record<(typeof TYPES)[number], RegExp[]> = {
  healthcare: [/HIPAA Privacy Rule/, /HIPAA Security Rule/, /CHAI/, /SOC 2/],
  fintech: [/PCI DSS/, /Sarbanes-Oxley/],
  saas: [/GDPR/, /SOC 2/],
  government: [/NIST Special Publication 800-53/, /FedRAMP/],
  minimal: [],
  standard: [/OWASP ASVS/, /ISO\/IEC 27001/],
};

const docsUnder = (dir: string): Array<Record<string, any>> =>
  readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) return n === '.svc' ? [] : docsUnder(p);
    return n.endsWith('.yaml') ? [parse(readFileSync(p, 'utf8'))] : [];
  });

describe('svc new', () => {
  const s = sandbox();
  beforeAll(() => mkdirSync(s.work, { recursive: true }));
  afterAll(() => s.cleanup());

  it.each(TYPES)('scaffolds a %s project in the SCS 0.3 layout that validates strictly', async (type) => {
    const name = `acme-${type}`;
    const r = await s.run(['new', name, '--type', type, '--author', 'author@example.com']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`Created ${name}/ (${type})`);
    const root = join(s.work, name);
    for (const f of ['README.md', 'project-bundle.yaml', 'meta-bundle.yaml', '.svc/config.yaml', '.svc/.gitignore', 'context/meta/roles.yaml']) {
      expect(existsSync(join(root, f)), f).toBe(true);
    }
    expect(existsSync(join(root, 'standards-bundle.yaml'))).toBe(type !== 'minimal');
    expect(readdirSync(join(root, 'concerns')).length).toBeGreaterThan(0);
    expect(readdirSync(join(root, 'domains'))).toHaveLength(1);
    expect(readdirSync(join(root, 'context', 'project')).length).toBeGreaterThan(0);

    const docs = docsUnder(root);
    const bundles = docs.filter((d) => String(d.id).startsWith('bundle:'));
    expect(new Set(bundles.map((b) => b.type))).toEqual(new Set(type === 'minimal' ? ['meta', 'domain', 'concern', 'project'] : ['meta', 'standards', 'domain', 'concern', 'project']));
    const standards = docs.filter((d) => d.type === 'standards' && String(d.id).startsWith('scd:')).map((d) => d.content.standard_name as string);
    for (const re of STANDARDS[type]) expect(standards.some((n) => re.test(n)), `${type}: ${re}`).toBe(true);
    expect(docs.every((d) => d.provenance.created_by === 'author@example.com')).toBe(true);
    const project = parse(readFileSync(join(root, 'project-bundle.yaml'), 'utf8'));
    expect(project).toMatchObject({ id: `bundle:${name}`, type: 'project', version: '0.1.0', scds: [] });
    expect(project.imports[0]).toBe(`bundle:${name}.meta:0.1.0`);
    expect(readFileSync(join(root, 'README.md'), 'utf8')).toContain(`svc new ${name} --type ${type}`);

    const v = await s.run(['validate', '.', '--strict'], { cwd: root });
    expect(v.code, v.stdout).toBe(0);
    // Since issue 23 the summary names the rule set, here from the scs_version svc new writes.
    expect(v.stdout).toMatch(/^VALID: \d+ file\(s\) checked .* 0 error\(s\), 0 warning\(s\) \[strict; SCS 0\.3\.0 rules, declared 0\.3 in \.svc\/config\.yaml\]$/m);
  });

  it('never overwrites an existing directory', async () => {
    mkdirSync(join(s.work, 'taken'));
    const r = await s.run(['new', 'taken', '--type', 'minimal']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('taken already exists; not overwriting it');
    expect(readdirSync(join(s.work, 'taken'))).toEqual([]);
  });

  it('rejects a missing or unknown type and a bad name (exit 3), writing nothing', async () => {
    const [noType, badType, badName] = await Promise.all([
      s.run(['new', 'p1']), s.run(['new', 'p2', '--type', 'retail']), s.run(['new', 'bad name!', '--type', 'minimal']),
    ]);
    expect(noType.code).toBe(3);
    expect(noType.stderr).toContain('--type is required: one of healthcare, fintech, saas, government, minimal, standard');
    expect(badType.code).toBe(3);
    expect(badType.stderr).toContain("not 'retail'");
    expect(badName.code).toBe(3);
    expect(existsSync(join(s.work, 'p1')) || existsSync(join(s.work, 'p2'))).toBe(false);
  });
});
