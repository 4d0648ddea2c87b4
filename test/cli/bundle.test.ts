import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { pty, sandbox, BIN } from './helpers.js';

// Every test spawns the real bin (tsx start-up, ~1 s each on an idle machine): allow for a loaded one.
vi.setConfig({ testTimeout: 240_000 });

const P = 'shop';
const scd = (slug: string) => `scd:project:${P}.${slug}`;

describe('svc bundle create and svc bundle version', () => {
  const s = sandbox();
  const root = () => join(s.work, P);
  const read = (f: string) => parse(readFileSync(join(root(), f), 'utf8'));
  beforeAll(async () => {
    mkdirSync(s.work, { recursive: true });
    const r = await s.run(['new', P, '--type', 'minimal']);
    expect(r.code, r.stderr).toBe(0);
    writeFileSync(join(root(), 'context', 'project', 'pricing.yaml'), [
      `id: ${scd('pricing')}`, 'type: project', 'title: Pricing', 'version: "0.1.0"', 'description: How prices are set',
      'content:', '  summary: Prices come from the catalog', 'provenance:', '  created_by: me', '  created_at: "2026-01-01T00:00:00Z"', '',
    ].join('\n'));
  });
  afterAll(() => s.cleanup());

  it('--non-interactive writes a valid DRAFT bundle from flags into concerns/', async () => {
    const r = await s.run(['bundle', 'create', '--non-interactive', '--type', 'concern', '--id', `bundle:${P}.commerce`, '--title', 'Commerce',
      '--description', 'Selling things', '--scds', `${scd('pricing')},${scd('problem-definition')}`, '--author', 'dev@example.com', '--rationale', 'new area'], { cwd: root() });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`Wrote bundle:${P}.commerce DRAFT (concern) to concerns/${P}.commerce.yaml`);
    const doc = read(`concerns/${P}.commerce.yaml`);
    expect(doc).toMatchObject({ id: `bundle:${P}.commerce`, type: 'concern', version: 'DRAFT', title: 'Commerce', imports: [], scds: [scd('pricing'), scd('problem-definition')] });
    expect(doc.provenance).toMatchObject({ created_by: 'dev@example.com', rationale: 'new area' });
    expect(Date.parse(doc.provenance.created_at)).toBeGreaterThan(0);
    const v = await s.run(['validate', '.', '--strict'], { cwd: root() });
    expect(v.code, v.stdout).toBe(0);
  });

  it('--template supplies fields, flags override them; anything missing is named (exit 3)', async () => {
    writeFileSync(join(s.work, 'tpl.yaml'), `type: domain\ntitle: From template\ndescription: Template description\nimports: [bundle:${P}.commerce]\n`);
    const ok = await s.run(['bundle', 'create', '--non-interactive', '--template', '../tpl.yaml', '--id', `${P}.sales`, '--title', 'Sales'], { cwd: root() });
    expect(ok.code, ok.stderr).toBe(0);
    expect(read(`domains/${P}.sales.yaml`)).toMatchObject({ id: `bundle:${P}.sales`, type: 'domain', title: 'Sales', description: 'Template description', imports: [`bundle:${P}.commerce`], scds: [] });

    const [missing, missingTpl, noScds, badTpl] = await Promise.all([
      s.run(['bundle', 'create', '--non-interactive', '--type', 'concern'], { cwd: root() }),
      s.run(['bundle', 'create', '--non-interactive', '--template', '../tpl.yaml'], { cwd: root() }),
      s.run(['bundle', 'create', '--non-interactive', '--type', 'concern', '--id', 'bundle:x', '--title', 'X', '--description', 'x'], { cwd: root() }),
      s.run(['bundle', 'create', '--non-interactive', '--template', 'nope.yaml'], { cwd: root() }),
    ]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('missing --id, --title, --description, --scds (a concern bundle contains at least one SCD) (give them as flags or in --template <path>)');
    expect(missingTpl.code).toBe(3);
    expect(missingTpl.stderr).toContain('missing --id (neither given as flags nor in ../tpl.yaml)');
    expect(noScds.code).toBe(3);
    expect(badTpl.code).toBe(4);
  });

  it('refuses invalid values (exit 1), an existing file without --force, and a non-terminal without --non-interactive', async () => {
    const bad = await s.run(['bundle', 'create', '--non-interactive', '--type', 'concern', '--id', 'bundle:bad id', '--title', 'X', '--description', 'x', '--scds', 'scd:standards:y'], { cwd: root() });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('(new bundle): error /id [id_pattern]');
    expect(bad.stderr).toContain("(new bundle): error /scds/0 [scd_tier] SCD 'scd:standards:y' in concern bundle");
    const args = ['bundle', 'create', '--non-interactive', '--type', 'concern', '--id', `bundle:${P}.commerce`, '--title', 'Again', '--description', 'x', '--scds', scd('pricing')];
    const exists = await s.run(args, { cwd: root() });
    expect(exists.code).toBe(1);
    expect(exists.stderr).toContain(`concerns/${P}.commerce.yaml already exists; not overwriting it`);
    expect(read(`concerns/${P}.commerce.yaml`).title).toBe('Commerce');
    const forcedArgs = ['bundle', 'create', '--non-interactive', '--type', 'concern', '--id', `bundle:${P}.forced`, '--description', 'x', '--scds', scd('pricing'), '--out', 'concerns/forced.yaml'];
    expect((await s.run([...forcedArgs, '--title', 'First'], { cwd: root() })).code).toBe(0);
    const again = await s.run([...forcedArgs, '--title', 'Ignored', '--title', 'Forced', '--force'], { cwd: root() }); // the last value wins
    expect(again.code, again.stderr).toBe(0);
    expect(read('concerns/forced.yaml').title).toBe('Forced');
    const tty = await s.run(['bundle', 'create'], { cwd: root() });
    expect(tty.code).toBe(3);
    expect(tty.stderr).toContain('stdin is not one. Use --non-interactive');
  });

  it('bundle version locks a bundle: version, completed provenance, pinned imports; the project stays valid', async () => {
    const concern = await s.run(['bundle', 'version', `concerns/${P}.commerce.yaml`, '--version', '1.0.0', '--rationale', 'first release', '--author', 'lead@example.com'], { cwd: root() });
    expect(concern.code, concern.stderr).toBe(0);
    expect(concern.stdout).toContain(`Locked bundle:${P}.commerce 1.0.0: concerns/bundle-${P}.commerce-1.0.0.yaml`);
    const locked = read(`concerns/bundle-${P}.commerce-1.0.0.yaml`);
    expect(locked).toMatchObject({ id: `bundle:${P}.commerce`, version: '1.0.0', scds: [scd('pricing'), scd('problem-definition')] });
    expect(locked.provenance).toMatchObject({ created_by: 'dev@example.com', updated_by: 'lead@example.com', rationale: 'first release' });
    expect(Date.parse(locked.provenance.updated_at)).toBeGreaterThan(0);
    expect(read(`concerns/${P}.commerce.yaml`).version).toBe('DRAFT'); // the source is untouched

    const domain = await s.run(['bundle', 'version', `domains/${P}.sales.yaml`, '--version', '0.2.0'], { cwd: root() });
    expect(domain.code, domain.stderr).toBe(0);
    expect(domain.stdout).toContain(`pinned bundle:${P}.commerce -> bundle:${P}.commerce:1.0.0`);
    const d = read(`domains/bundle-${P}.sales-0.2.0.yaml`);
    expect(d.imports).toEqual([`bundle:${P}.commerce:1.0.0`]);
    expect(d.provenance.rationale).toBe('Locked as version 0.2.0 from DRAFT with svc bundle version');
    expect((await s.run(['validate', '.', '--strict'], { cwd: root() })).code).toBe(0);
  });

  it('bundle version refuses a bad semver (3), an existing version (1), an invalid bundle (1), a non-bundle (1), an unreadable file (4)', async () => {
    writeFileSync(join(root(), 'concerns', 'broken.yaml'), `id: bundle:${P}.broken\ntype: concern\nversion: DRAFT\ntitle: B\ndescription: b\nimports: []\nscds: [${scd('missing')}]\nprovenance: {created_by: me, created_at: "2026-01-01T00:00:00Z"}\n`);
    const [semver, huge, vprefix, none, again, sameAsSource, invalid, notBundle, unreadable] = await Promise.all([
      s.run(['bundle', 'version', `concerns/${P}.commerce.yaml`, '--version', '1.0'], { cwd: root() }),
      s.run(['bundle', 'version', `concerns/${P}.commerce.yaml`, '--version', '99999999999999999999.0.0'], { cwd: root() }),
      s.run(['bundle', 'version', `concerns/${P}.commerce.yaml`, '--version', 'v1.0.0'], { cwd: root() }),
      s.run(['bundle', 'version', `concerns/${P}.commerce.yaml`], { cwd: root() }),
      s.run(['bundle', 'version', `concerns/${P}.commerce.yaml`, '--version', '1.0.0'], { cwd: root() }),
      s.run(['bundle', 'version', 'meta-bundle.yaml', '--version', '0.1.0'], { cwd: root() }),
      s.run(['bundle', 'version', 'concerns/broken.yaml', '--version', '1.0.0'], { cwd: root() }),
      s.run(['bundle', 'version', 'context/project/pricing.yaml', '--version', '1.0.0'], { cwd: root() }),
      s.run(['bundle', 'version', 'concerns/none.yaml', '--version', '1.0.0'], { cwd: root() }),
    ]);
    expect(semver.code).toBe(3);
    expect(semver.stderr).toContain("--version '1.0' is not a semantic version MAJOR.MINOR.PATCH");
    expect(huge.code).toBe(3);
    expect(huge.stderr).toContain('at most 15 digits a part');
    expect(vprefix.code).toBe(3);
    expect(none.code).toBe(3);
    expect(none.stderr).toContain('--version <semver> is required');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`concerns/bundle-${P}.commerce-1.0.0.yaml already exists; a locked version is never overwritten`);
    expect(sameAsSource.code).toBe(1);
    expect(sameAsSource.stderr).toContain('[duplicate_bundle]');
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain(`concerns/bundle-${P}.broken-1.0.0.yaml: error /scds/0 [scd_unresolved] bundle:${P}.broken lists SCD ${scd('missing')}, but no document defines it`);
    expect(invalid.stderr).toContain('not locked, 1 error(s)');
    expect(existsSync(join(root(), 'concerns', `bundle-${P}.broken-1.0.0.yaml`))).toBe(false);
    expect(notBundle.code).toBe(1);
    expect(notBundle.stderr).toContain('not a bundle');
    expect(unreadable.code).toBe(4);
  });
});

describe('svc bundle create in a terminal', () => {
  const s = sandbox();
  const root = () => join(s.work, P);
  const read = (f: string) => parse(readFileSync(join(root(), f), 'utf8'));
  beforeAll(async () => {
    mkdirSync(s.work, { recursive: true });
    expect((await s.run(['new', P, '--type', 'minimal'])).code).toBe(0);
    writeFileSync(join(root(), 'context', 'project', 'pricing.yaml'), `id: ${scd('pricing')}\ntype: project\ntitle: Pricing\nversion: "0.1.0"\n`);
  });
  afterAll(() => s.cleanup());

  it('asks type, id, title, description, SCDs and imports in a terminal and writes a valid bundle', async () => {
    const down = '\x1b[B';
    const r = await pty(['node', BIN, 'bundle', 'create'], root(), { SVC_CONFIG_HOME: s.home, NO_COLOR: '1' }, [
      { expect: 'Bundle type', send: down + down + down }, // meta, standards, domain, concern
      { expect: 'concern: a functional area', send: '\r' },
      { expect: 'Bundle id', send: 'bad id\r' },
      { expect: 'use bundle:<name>', send: '\x15' + `${P}.checkout\r` }, // ctrl-U clears the line
      { expect: 'Title', send: 'Checkout\r' },
      { expect: 'Description', send: 'Paying for an order\r' },
      { expect: 'SCDs to include', send: ' ' + down + ' \r' }, // the first two project SCDs
      { expect: 'Other SCD ids', send: 'scd:meta:nope\r' },
      { expect: 'project-tier SCDs, scd:project:<name>', send: '\x15\r' },
      { expect: 'Version', send: '\r' },
      { expect: 'Write to file', send: '\r' },
      { expect: 'Rationale', send: 'checkout flow\r' },
      { expect: 'Y/n', send: 'y\r' },
    ]);
    expect(r.error).toBeNull();
    expect(r.code, r.output).toBe(0);
    expect(r.output).toContain(`Wrote bundle:${P}.checkout DRAFT (concern) to concerns/${P}.checkout.yaml`);
    const doc = read(`concerns/${P}.checkout.yaml`);
    expect(doc).toMatchObject({ id: `bundle:${P}.checkout`, type: 'concern', version: 'DRAFT', title: 'Checkout', description: 'Paying for an order', imports: [] });
    expect(doc.scds).toEqual([scd('pricing'), scd('problem-definition')]);
    expect(doc.provenance.rationale).toBe('checkout flow');

    // A domain: the imports question offers the project's concern bundles.
    const d = await pty(['node', BIN, 'bundle', 'create'], root(), { SVC_CONFIG_HOME: s.home, NO_COLOR: '1' }, [
      { expect: 'Bundle type', send: down + down },
      { expect: 'domain: an organizational area', send: '\r' },
      { expect: 'Bundle id', send: `bundle:${P}.retail\r` },
      { expect: 'Title', send: 'Retail\r' },
      { expect: 'Description', send: 'Retail domain\r' },
      { expect: `Bundles to import[\\s\\S]*bundle:${P}.meta:0.1.0`, send: ' \r' }, // the first offer: business-context
      { expect: 'Other imports', send: '\r' },
      { expect: 'Version', send: '\x150.1.0\r' },
      { expect: 'Write to file', send: '\r' },
      { expect: 'Rationale', send: '\r' },
      { expect: 'Y/n', send: '\r' },
    ]);
    expect(d.code, d.output).toBe(0);
    expect(read(`domains/${P}.retail.yaml`)).toMatchObject({ type: 'domain', version: '0.1.0', imports: [`bundle:${P}.business-context:0.1.0`], scds: [] });
  });
});
