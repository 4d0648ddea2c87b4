/**
 * `svc validate <path...> [--strict] [-o json]`: bundles and SCDs, one file or whole trees.
 * A single file is checked on its own; a directory or several paths are also checked as a
 * set (imports, SCD references, version pins, cycles). Exit: 0 valid, 1 errors, 2 warnings
 * under --strict, 3 usage, 4 unreadable.
 */
import type { CAC } from 'cac';
import { checkDocument, classifyDocument, validateDocuments, type DocumentKind, type Finding } from '../../src/core/scs/index.js';
import { resolveKey } from '../lib/config.js';
import { loadPaths, type LoadedFile } from '../lib/documents.js';
import { EXIT, usageError } from '../lib/errors.js';
import { json, out } from '../lib/io.js';
import { checkReleaseManifests } from '../lib/manifest.js';

export interface ValidationReport {
  valid: boolean;
  strict: boolean;
  files: Array<{ file: string; kind: DocumentKind | 'malformed' }>;
  skipped: string[];
  errors: number;
  warnings: number;
  findings: Finding[];
  /** Release manifests checked (cli/lib/manifest.ts). */
  manifests?: { files: string[]; verified: number };
}

/** Validates loaded files; `asSet` adds the cross-file checks. Unknown kinds are skipped in sets. */
export function validateLoaded(files: LoadedFile[], strict: boolean, asSet: boolean): ValidationReport {
  const findings: Finding[] = files.flatMap((f) => f.syntax ?? []);
  const good = files.filter((f) => !f.syntax);
  const kinds = new Map<string, DocumentKind>();
  if (asSet) {
    // A tree is validated for its bundles and SCDs; domain manifests and other YAML are
    // listed as skipped (name a domain manifest explicitly to check it against its schema).
    const inSet = good.filter((f) => {
      const k = classifyDocument(f.doc);
      if (k === 'domain') kinds.set(f.file, 'unknown');
      return k !== 'domain';
    });
    const r = validateDocuments(inSet.map((f) => ({ file: f.file, doc: f.doc })), { strict });
    findings.push(...r.findings);
    for (const [k, v] of r.kinds) kinds.set(k, v);
  } else {
    for (const f of good) {
      const r = checkDocument(f.doc, { strict, file: f.file });
      kinds.set(f.file, r.kind);
      findings.push(...r.findings);
    }
  }
  const errors = findings.filter((f) => f.severity === 'error').length;
  const warnings = findings.length - errors;
  return {
    valid: errors === 0 && (!strict || warnings === 0),
    strict,
    files: files.map((f) => ({ file: f.file, kind: f.syntax ? 'malformed' as const : kinds.get(f.file)! })).filter((f) => !asSet || f.kind !== 'unknown'),
    skipped: asSet ? files.filter((f) => !f.syntax && kinds.get(f.file) === 'unknown').map((f) => f.file) : [],
    errors, warnings, findings,
  };
}

export const exitCodeOf = (r: ValidationReport) => (r.errors > 0 ? EXIT.failed : r.strict && r.warnings > 0 ? EXIT.warnings : EXIT.ok);

export function formatFinding(f: Finding): string {
  return `${f.file ?? '(document)'}: ${f.severity} ${f.path || '/'} [${f.rule}] ${f.message}`;
}

function printReport(r: ValidationReport): void {
  for (const f of r.findings) out(formatFinding(f));
  const count = (k: string) => r.files.filter((f) => f.kind === k).length;
  const parts = [`${count('bundle')} bundle(s)`, `${count('scd')} SCD(s)`];
  if (count('domain')) parts.push(`${count('domain')} domain manifest(s)`);
  const skipped = r.skipped.length ? `; skipped ${r.skipped.length} file(s) that are not bundles or SCDs (listed with -o json)` : '';
  const verdict = r.errors > 0 ? 'INVALID' : r.strict && r.warnings > 0 ? 'VALID WITH WARNINGS (strict)' : 'VALID';
  out(`${verdict}: ${r.files.length} file(s) checked (${parts.join(', ')})${skipped}; ${r.errors} error(s), ${r.warnings} warning(s) [${r.strict ? 'strict' : 'loose'}]`);
}

export function registerValidate(cli: CAC): void {
  cli
    .command('validate [...paths]', 'Validate bundles and SCD files (a file, a directory, or several)')
    .option('--strict', 'Enforce everything: SCS JSON Schemas, relationship rules, import graph, versions')
    .option('--loose', 'Loose even when the configuration (validate.strict) says strict')
    .option('-o, --output <format>', 'Output format: text or json', { default: 'text' })
    .example('svc validate . --strict')
    .example('svc validate concerns/security.yaml -o json')
    .action((paths: string[], opts: { strict?: boolean; loose?: boolean; output: string }) => {
      if (paths.length === 0) throw usageError('validate needs a file or directory (svc validate <path> [--strict])');
      if (opts.output !== 'text' && opts.output !== 'json') throw usageError(`--output must be text or json, not '${opts.output}'`);
      if (opts.strict && opts.loose) throw usageError('choose one of --strict and --loose');
      const strict = opts.loose ? false : opts.strict ?? resolveKey('validate.strict').value === 'true';
      const { files, dirs } = loadPaths(paths);
      const report = validateLoaded(files, strict, dirs > 0 || paths.length > 1);
      checkReleaseManifests(report, paths); // release manifests (cli/lib/manifest.ts): findings and report.manifests
      if (opts.output === 'json') json(report);
      else printReport(report);
      if (opts.output !== 'json' && report.manifests?.files.length) out(`release manifests: ${report.manifests.files.join(', ')}: ${report.manifests.verified} file digest(s) verified`);
      return exitCodeOf(report);
    });
}
