/**
 * `svc bundle version <bundle-path> --version <semver>`: lock a bundle.
 *
 * Writes `bundle-<name>-<version>.yaml` beside the source: the version set, unpinned
 * imports pinned to the highest published version present in the project, provenance
 * completed (created_* kept or filled, updated_* set, rationale). The locked bundle is
 * validated strictly against the project (its SCDs must exist and be valid, its imports
 * must resolve); errors refuse the lock. Imports of bundles that are not in the project at
 * all are warnings: the API resolves them when the bundle is published.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { CAC } from 'cac';
import { classifyDocument, parseImport, validateDocuments, type Finding } from '../../src/core/scs/index.js';
import { rawOption } from '../lib/argv.js';
import { display, loadFile, toYaml } from '../lib/documents.js';
import { CliError, EXIT, usageError } from '../lib/errors.js';
import { err, json, out } from '../lib/io.js';
import { loadProjectSet, projectRootFor } from '../lib/project-set.js';
import { compareSemver, isReleaseVersion, MAX_VERSION_PART_DIGITS } from '../../src/shared/semver.js';
import { authorOf } from './new.js';
import { formatFinding } from './validate.js';

export function registerBundleVersion(cli: CAC): void {
  cli
    .command('bundle version <bundle-path>', 'Lock a bundle: validate it and write bundle-<name>-<version>.yaml')
    .option('--version <semver>', 'Version to lock, MAJOR.MINOR.PATCH (required)')
    .option('--rationale <text>', 'provenance.rationale of this version')
    .option('--author <who>', 'provenance.updated_by (default: config author)')
    .option('--project <dir>', 'Project root for resolving imports and SCDs (default: nearest .svc/, else the bundle\'s directory)')
    .option('-o, --output <format>', 'Output format: text or json', { default: 'text' })
    .example('svc bundle version concerns/security.yaml --version 1.0.0 --rationale "Reviewed by security"')
    .action((path: string, opts: { version?: unknown; rationale?: string; author?: string; project?: string; output: string }) => {
      const version = rawOption('version') ?? (opts.version === undefined ? undefined : String(opts.version));
      if (!version) throw usageError('--version <semver> is required (for example --version 1.0.0)');
      if (!isReleaseVersion(version)) throw usageError(`--version '${version}' is not a semantic version MAJOR.MINOR.PATCH (for example 1.0.0; no 'v', no pre-release, at most ${MAX_VERSION_PART_DIGITS} digits a part)`);
      if (opts.output !== 'text' && opts.output !== 'json') throw usageError(`--output must be text or json, not '${opts.output}'`);

      const source = loadFile(String(path));
      if (source.syntax) throw new CliError(source.syntax.map(formatFinding).join('\n'));
      if (classifyDocument(source.doc) !== 'bundle') throw new CliError(`${source.file}: not a bundle (a bundle has an id bundle:<name>, a type, imports and scds)`);
      const doc = source.doc as Record<string, unknown>;
      const id = String(doc.id);
      const name = id.slice('bundle:'.length);
      const target = join(dirname(source.abs), `bundle-${name}-${version}.yaml`);
      if (existsSync(target)) throw new CliError(`${display(target)} already exists; a locked version is never overwritten`);

      const project = loadProjectSet(projectRootFor(source.abs, opts.project));
      // The source stays in the set: locking the version it already carries is a duplicate.
      const others = [...project.files.filter((f) => f.abs !== source.abs), source];
      const locked = lock(doc, version, others, authorOf(opts.author), opts.rationale, new Date());
      const lockedFile = display(target);

      // Validate the locked bundle within its project; report what concerns it and its SCDs.
      const set = [...others.map((f) => ({ file: f.file, doc: f.doc })), { file: lockedFile, doc: locked.doc }];
      const scdFiles = new Set((Array.isArray(locked.doc.scds) ? locked.doc.scds : []).map((s) => project.scds.get(String(s))?.file).filter(Boolean));
      const findings = validateDocuments(set, { strict: true }).findings
        .filter((f) => f.file === lockedFile || scdFiles.has(f.file))
        .map((f) => (f.rule === 'import_unresolved' && f.file === lockedFile && isAbsent(f, locked.doc, others) ? { ...f, severity: 'warning' as const, message: `${f.message}; not in this project, the API resolves it at publish` } : f));
      const errors = findings.filter((f) => f.severity === 'error');
      if (opts.output === 'json') json({ locked: errors.length === 0, file: errors.length ? null : lockedFile, id, version, pinned: locked.pinned, findings });
      if (errors.length > 0) {
        if (opts.output === 'text') {
          for (const f of findings) err(formatFinding(f));
          err(`svc: ${source.file}: not locked, ${errors.length} error(s); fix them and run again`);
        }
        return EXIT.failed;
      }
      writeFileSync(target, `# Locked by svc bundle version: ${id} ${version}. Do not edit; lock a new version instead.\n` + toYaml(locked.doc), { flag: 'wx' });
      if (opts.output === 'text') {
        for (const f of findings) out(formatFinding(f));
        for (const p of locked.pinned) out(`pinned ${p.from} -> ${p.to}`);
        out(`Locked ${id} ${version}: ${lockedFile}`);
      }
      return EXIT.ok;
    });
}

function isAbsent(f: Finding, doc: Record<string, unknown>, others: Array<{ doc: unknown }>): boolean {
  const m = /^\/imports\/(\d+)$/.exec(f.path);
  const ref = m && Array.isArray(doc.imports) ? parseImport(String(doc.imports[Number(m[1])])) : null;
  return !!ref && !others.some((o) => (o.doc as { id?: unknown }).id === ref.id);
}

/** The locked document: version, pinned imports, completed provenance, keys in SCS order. */
export function lock(doc: Record<string, unknown>, version: string, others: Array<{ doc: unknown }>, author: string, rationale: string | undefined, now: Date) {
  const at = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const pinned: Array<{ from: string; to: string }> = [];
  const imports = (Array.isArray(doc.imports) ? doc.imports : []).map((ref) => {
    const p = typeof ref === 'string' ? parseImport(ref) : null;
    if (!p || p.version) return ref;
    const versions = others
      .map((o) => o.doc as Record<string, unknown>)
      .filter((d) => d && d.id === p.id && typeof d.version === 'string' && isReleaseVersion(d.version))
      .map((d) => String(d.version))
      .sort(compareSemver);
    if (versions.length === 0) return ref;
    const to = `${p.id}:${versions.at(-1)}`;
    pinned.push({ from: ref as string, to });
    return to;
  });
  const prev = (doc.provenance && typeof doc.provenance === 'object' ? doc.provenance : {}) as Record<string, unknown>;
  const provenance = {
    ...prev,
    created_by: prev.created_by ?? author,
    created_at: prev.created_at ?? at,
    updated_by: author,
    updated_at: at,
    rationale: rationale ?? `Locked as version ${version}${typeof doc.version === 'string' ? ` from ${doc.version}` : ''} with svc bundle version`,
  };
  const { id, type, title, description, scds, ...rest } = doc;
  delete rest.version; delete rest.imports; delete rest.provenance;
  return { doc: { id, type, version, title, description, imports, scds, ...rest, provenance }, pinned };
}
