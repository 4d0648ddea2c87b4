/**
 * `svc validate <path...> [--strict] [-o json]`: bundles, SCDs and domain manifests, one
 * file or whole trees (cli/lib/validation.ts says what is checked against what). One named
 * file inside a project is checked in that project (its imports and SCDs resolve against
 * the project's other files; only its own findings are reported); a directory or several
 * paths are checked as a set. The rule set follows the project's declared SCS version.
 * Exit: 0 valid, 1 errors, 2 warnings under --strict, 3 usage, 4 unreadable.
 */
import type { CAC } from 'cac';
import type { Finding } from '../../src/core/scs/index.js';
import { resolveKey } from '../lib/config.js';
import { EXIT, usageError } from '../lib/errors.js';
import { json, out } from '../lib/io.js';
import { checkReleaseManifests } from '../lib/manifest.js';
import { collect, validateCollected, type ValidationReport } from '../lib/validation.js';

export const exitCodeOf = (r: ValidationReport) => (r.errors > 0 ? EXIT.failed : r.strict && r.warnings > 0 ? EXIT.warnings : EXIT.ok);

/** `file[:line:column]: severity /pointer [rule] message`. */
export function formatFinding(f: Finding): string {
  const where = `${f.file ?? '(document)'}${f.line ? `:${f.line}${f.column ? `:${f.column}` : ''}` : ''}`;
  return `${where}: ${f.severity} ${f.path || '/'} [${f.rule}] ${f.message}`;
}

function printReport(r: ValidationReport): void {
  for (const f of r.findings) out(formatFinding(f));
  for (const s of r.skipped) out(`${s.file}: skipped (${s.reason})`);
  if (r.project) out(`project: ${r.project.root} (nearest directory with ${r.project.marker}); its ${r.project.context_files} other file(s) were loaded as context, their findings are not shown`);
  const c = r.counts;
  const checked = `${r.files.length} file(s) checked (${c.bundle} bundle(s), ${c.scd} SCD(s), ${c.domain} domain manifest(s)${c.malformed ? `, ${c.malformed} malformed` : ''})`;
  const skipped = r.skipped.length ? `; ${r.skipped.length} skipped (${c.config} config, ${c.other} other)` : '';
  const rules = `SCS ${r.rule_set.version} rules, ${r.rule_set.source === 'default' ? 'no version declared' : `declared ${r.rule_set.declared} in ${r.rule_set.source}`}`;
  const verdict = r.errors > 0 ? 'INVALID' : r.strict && r.warnings > 0 ? 'VALID WITH WARNINGS (strict)' : 'VALID';
  out(`${verdict}: ${checked}${skipped}; ${r.errors} error(s), ${r.warnings} warning(s) [${r.strict ? 'strict' : 'loose'}; ${rules}]`);
}

export function registerValidate(cli: CAC): void {
  cli
    .command('validate [...paths]', 'Validate bundles, SCDs and domain manifests (a file, a directory, or several)')
    .option('--strict', 'Enforce everything: SCS JSON Schemas, relationship rules, import graph, versions')
    .option('--loose', 'Loose even when the configuration (validate.strict) says strict')
    .option('--project <dir>', 'Resolve against this project (default: the nearest directory with .svc/, .scs/, bundles/ and context/, else project-bundle.yaml)')
    .option('--alone', 'Check only what is named, without the project around it')
    .option('-o, --output <format>', 'Output format: text or json', { default: 'text' })
    .example('svc validate . --strict')
    .example('svc validate concerns/security.yaml -o json')
    .action((paths: string[], opts: { strict?: boolean; loose?: boolean; project?: string; alone?: boolean; output: string }) => {
      if (paths.length === 0) throw usageError('validate needs a file or directory (svc validate <path> [--strict])');
      if (opts.output !== 'text' && opts.output !== 'json') throw usageError(`--output must be text or json, not '${opts.output}'`);
      if (opts.strict && opts.loose) throw usageError('choose one of --strict and --loose');
      if (opts.project !== undefined && opts.alone) throw usageError('choose one of --project and --alone');
      if (opts.project !== undefined && typeof opts.project !== 'string') throw usageError('--project needs a directory');
      const strict = opts.loose ? false : opts.strict ?? resolveKey('validate.strict').value === 'true';
      const named = paths.map(String);
      const report = validateCollected(collect(named), { strict, alone: !!opts.alone, project: opts.project, paths: named });
      checkReleaseManifests(report, named); // release manifests (cli/lib/manifest.ts): findings and report.manifests
      if (opts.output === 'json') json(report);
      else printReport(report);
      if (opts.output !== 'json' && report.manifests?.files.length) out(`release manifests: ${report.manifests.files.join(', ')}: ${report.manifests.verified} file digest(s) verified`);
      return exitCodeOf(report);
    });
}
