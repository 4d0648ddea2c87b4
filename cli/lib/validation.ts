/**
 * What `svc validate` checks, and against what:
 * - collect: every YAML/JSON file under the named paths, each either checked (bundle, SCD,
 *   domain manifest; malformed files are findings) or listed as skipped with the reason
 *   (configuration under `.svc/` or `.scs/`, never read; documents that are no SCS kind).
 * - the project around one named file: the nearest directory with the SCS layout
 *   (`.svc/`, `.scs/`, `bundles/` with `context/`, or a `project-bundle.yaml`); its other
 *   files are loaded as context so imports and SCDs resolve, only the named file's
 *   findings are reported.
 * - the SCS version the project declares (src/core/scs/versions.ts), hence the rule set.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { parse } from 'yaml';
import {
  DEFAULT_SCS_VERSION, RULE_SETS, classifyDocument, isKnownScsVersion, normalizeScsVersion, validateDocuments,
  checkDocument, type DocumentKind, type Finding, type RuleSet,
} from '../../src/core/scs/index.js';
import { display, DOC_EXT, loadFile, SKIP_DIRS, walkFiles, type LoadedFile } from './documents.js';
import { CliError, EXIT } from './errors.js';

/** Directories never walked (dependencies, VCS data, the local server's data). */
/** `.svc/` is entered: its files are listed as configuration (never read). */
const COLLECT_SKIP_DIRS = new Set([...SKIP_DIRS].filter((d) => d !== '.svc'));
/** Configuration directories: their YAML files are listed as configuration, never read (credentials live there). */
const CONFIG_DIRS: Record<string, string> = { '.svc': 'svc configuration in .svc/, not an SCS document', '.scs': 'SCS tooling configuration in .scs/, not an SCS document' };

type FileKind = DocumentKind | 'malformed';
interface Skipped { file: string; kind: 'config' | 'domain' | 'other'; reason: string }
export interface Collected { files: LoadedFile[]; skipped: Skipped[]; dirs: number }

function configReason(abs: string): string | null {
  const parts = abs.split(sep);
  for (const [dir, reason] of Object.entries(CONFIG_DIRS)) if (parts.slice(0, -1).includes(dir)) return reason;
  return null;
}

/** Every document file under the named paths; configuration files are listed, not read. */
export function collect(paths: string[]): Collected {
  const files: LoadedFile[] = [];
  const skipped: Skipped[] = [];
  let dirs = 0;
  const take = (abs: string) => {
    const reason = configReason(abs);
    if (reason) skipped.push({ file: display(abs), kind: 'config', reason });
    else files.push(loadFile(abs));
  };
  for (const p of paths) {
    const abs = resolve(p);
    let st;
    try {
      st = statSync(abs);
    } catch (e) {
      throw new CliError(`${p}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : `cannot read (${(e as NodeJS.ErrnoException).code})`}`, EXIT.unreadable);
    }
    if (st.isDirectory()) { dirs++; for (const f of walkFiles(abs, (n) => DOC_EXT.test(n), COLLECT_SKIP_DIRS)) take(f); } else take(abs);
  }
  return { files, skipped, dirs };
}

interface ProjectRoot { root: string; marker: string }

const isDir = (p: string) => existsSync(p) && statSync(p).isDirectory();

/**
 * The project around `start`: the nearest directory (from `start` upwards, the home
 * directory excluded) holding `.svc/`, `.scs/`, or `bundles/` beside `context/` (the SCS
 * layout, spec 0.3 bundle-format.md section 8); failing those, the nearest holding a
 * `project-bundle.yaml` (the corpus examples' layout). In the SCS layout the project
 * bundle sits in `bundles/`, so the layout markers win over a nearer project bundle.
 */
function findScsRoot(start: string): ProjectRoot | null {
  let first = resolve(start);
  if (existsSync(first) && !statSync(first).isDirectory()) first = dirname(first);
  const home = homedir();
  const up = (test: (d: string) => string | null): ProjectRoot | null => {
    for (let d = first; ; d = dirname(d)) {
      const marker = d === home ? null : test(d);
      if (marker) return { root: d, marker };
      if (dirname(d) === d) return null;
    }
  };
  return up((d) => (isDir(join(d, '.svc')) ? '.svc/' : isDir(join(d, '.scs')) ? '.scs/' : isDir(join(d, 'bundles')) && isDir(join(d, 'context')) ? 'bundles/ and context/' : null))
    ?? up((d) => (existsSync(join(d, 'project-bundle.yaml')) ? 'project-bundle.yaml' : null));
}

interface RuleSetChoice {
  version: string;
  /** What declared it: a file (`.scs/config`, `.svc/config.yaml`, a bundle), or `default`. */
  source: string;
  declared: string | null;
  rules: RuleSet;
}

/**
 * `scs_version` from the project's `.scs/config` (or `.scs/config.yaml`) and `.svc/config.yaml`,
 * in that order. A configuration that cannot be parsed is a warning, not a silent default.
 */
function configVersions(root: string | null): { found: Array<{ source: string; value: unknown; config: true }>; findings: Finding[] } {
  const found: Array<{ source: string; value: unknown; config: true }> = [];
  const findings: Finding[] = [];
  if (!root) return { found, findings };
  for (const rel of ['.scs/config', '.scs/config.yaml', '.svc/config.yaml']) {
    const p = join(root, rel);
    if (!existsSync(p) || isDir(p)) continue;
    let doc: unknown;
    try {
      doc = parse(readFileSync(p, 'utf8'));
    } catch (e) {
      findings.push({ severity: 'warning', path: '', rule: 'scs_config_unreadable', file: display(p), message: `cannot read its scs_version (${(e as Error).message.split('\n')[0]})` });
      continue;
    }
    if (doc && typeof doc === 'object' && 'scs_version' in doc) found.push({ source: display(p), value: (doc as Record<string, unknown>).scs_version, config: true });
  }
  return { found, findings };
}

/**
 * The rule set: the project's declared `scs_version`, else the bundles' own `schema_version`
 * (all the same), else 0.3.0. An unknown version is a warning (0.3.0 rules apply); a bundle
 * declaring another version than the project's is an error (SCS: a project does not mix
 * versions, docs/MIGRATION-0.3.md).
 */
function chooseRuleSet(root: string | null, docs: Array<{ file: string; doc: unknown }>): { choice: RuleSetChoice; findings: Finding[] } {
  const configs = configVersions(root);
  const findings: Finding[] = [...configs.findings];
  const fromBundles = docs
    .filter((d) => classifyDocument(d.doc) === 'bundle' && (d.doc as Record<string, unknown>).schema_version !== undefined)
    .map((d) => ({ source: d.file, value: (d.doc as Record<string, unknown>).schema_version, config: false }));
  const declarations = [...configs.found, ...fromBundles];
  const primary = declarations[0] ?? null;
  if (!primary) return { choice: { version: DEFAULT_SCS_VERSION, source: 'default', declared: null, rules: RULE_SETS[DEFAULT_SCS_VERSION] }, findings };
  const declared = normalizeScsVersion(primary.value);
  const shown = typeof primary.value === 'string' || typeof primary.value === 'number' ? String(primary.value) : JSON.stringify(primary.value);
  let rules = RULE_SETS[DEFAULT_SCS_VERSION];
  if (isKnownScsVersion(declared)) rules = RULE_SETS[declared];
  else {
    findings.push({
      severity: 'warning', path: primary.config ? '/scs_version' : '/schema_version', rule: 'scs_version_unknown', file: primary.source,
      message: `SCS version ${shown} has no rule set in svc (known: ${Object.keys(RULE_SETS).join(', ')}); validating with the ${DEFAULT_SCS_VERSION} rules`,
    });
  }
  for (const b of declarations) {
    if (b === primary || normalizeScsVersion(b.value) === declared) continue;
    const field = b.config ? 'scs_version' : 'schema_version';
    findings.push({ severity: 'error', path: `/${field}`, rule: 'scs_version_mixed', file: b.source, message: `${field} ${String(b.value)} differs from the project's SCS version ${shown} (${primary.source}); a project follows one SCS version` });
  }
  return { choice: { version: rules.version, source: primary.source, declared: shown, rules }, findings };
}

export interface ValidationReport {
  valid: boolean;
  strict: boolean;
  rule_set: { version: string; source: string; declared: string | null };
  /** The project the named file was checked in (one named file only), else null. */
  project: { root: string; marker: string; context_files: number } | null;
  files: Array<{ file: string; kind: FileKind }>;
  skipped: Skipped[];
  counts: Record<'bundle' | 'scd' | 'domain' | 'malformed' | 'config' | 'other', number>;
  errors: number;
  warnings: number;
  findings: Finding[];
  /** Release manifests checked (cli/lib/manifest.ts), when any were looked for. */
  manifests?: { files: string[]; verified: number };
}

const DOMAIN_01 = 'a domain manifest: SCS 0.1.0 has none, they are new in 0.3; not checked under the 0.1.0 rules';
const OTHER = 'not an SCS document: no bundle:/scd: id, no domain: mapping';

/**
 * Validates what `collect` found. One named file inside a project: the project's other
 * documents are context (loaded, checked as a set, their findings not reported). Several
 * files or a directory: the set itself. Unknown documents inside a directory are skipped,
 * a named one is an error. `published`: bundles and SCDs the server already holds (svc publish
 * reads the imports the project does not hold): they resolve imports, types and SCDs like
 * context, and are neither reported nor counted.
 */
export function validateCollected(c: Collected, opts: { strict: boolean; alone: boolean; project?: string; paths: string[]; published?: LoadedFile[] }): ValidationReport {
  const single = c.dirs === 0 && c.files.length === 1 && c.skipped.length === 0;
  let project: ProjectRoot | null = null;
  if (opts.project) {
    const root = resolve(opts.project);
    if (!isDir(root)) throw new CliError(`${opts.project}: no such directory`, EXIT.unreadable);
    project = { root, marker: '--project' };
  } else if (opts.paths.length) project = findScsRoot(opts.paths[0]);

  // Context: when every named path lies inside the project, its other well-formed documents.
  let context: LoadedFile[] = [];
  const inside = (p: string) => { const r = relative(project!.root, resolve(p)); return !r.startsWith('..') && !isAbsolute(r); };
  if (project && !opts.alone && opts.paths.every(inside)) {
    const named = new Set(c.files.map((f) => f.abs));
    context = collect([project.root]).files.filter((f) => !f.syntax && !named.has(f.abs));
  }
  const usesContext = context.length > 0;
  const good = c.files.filter((f) => !f.syntax);
  const { choice, findings: versionFindings } = chooseRuleSet(project?.root ?? null, [...good, ...context]);
  const rules = choice.rules;

  const findings: Finding[] = c.files.flatMap((f) => f.syntax ?? []);
  const kinds = new Map<string, FileKind>();
  const skipped = [...c.skipped];
  const asSet = !single || usesContext;
  if (asSet) {
    const inSet: LoadedFile[] = [];
    for (const f of good) {
      const k = classifyDocument(f.doc);
      if (k === 'unknown' && !single) skipped.push({ file: f.file, kind: 'other', reason: OTHER });
      else if (k === 'domain' && !rules.domainManifests) skipped.push({ file: f.file, kind: 'domain', reason: DOMAIN_01 });
      else inSet.push(f);
    }
    const set = [...inSet, ...context.filter((f) => ['bundle', 'scd'].includes(classifyDocument(f.doc))), ...(opts.published ?? [])];
    const r = validateDocuments(set.map((f) => ({ file: f.file, doc: f.doc })), { strict: opts.strict, rules });
    const named = new Set(inSet.map((f) => f.file));
    findings.push(...r.findings.filter((f) => named.has(f.file ?? '')));
    for (const f of inSet) kinds.set(f.file, r.kinds.get(f.file)!);
    // A named document of no SCS kind is an error (validateDocuments leaves unknown kinds out).
    for (const f of inSet) if (kinds.get(f.file) === 'unknown') findings.push(...checkDocument(f.doc, { strict: opts.strict, file: f.file, rules }).findings);
  } else {
    for (const f of good) {
      const k = classifyDocument(f.doc);
      if (k === 'domain' && !rules.domainManifests) { skipped.push({ file: f.file, kind: 'domain', reason: DOMAIN_01 }); continue; }
      const r = checkDocument(f.doc, { strict: opts.strict, file: f.file, rules });
      kinds.set(f.file, r.kind);
      findings.push(...r.findings);
    }
  }
  const relevant = new Set([...kinds.keys()]);
  findings.push(...versionFindings.filter((f) => relevant.has(f.file ?? '') || !context.some((x) => x.file === f.file)));
  for (const f of c.files) if (f.syntax) kinds.set(f.file, 'malformed');

  const files = c.files.filter((f) => kinds.has(f.file)).map((f) => ({ file: f.file, kind: kinds.get(f.file)! }));
  const errors = findings.filter((f) => f.severity === 'error').length;
  const warnings = findings.length - errors;
  const count = (k: FileKind) => files.filter((f) => f.kind === k).length;
  return {
    valid: errors === 0 && (!opts.strict || warnings === 0),
    strict: opts.strict,
    rule_set: { version: choice.version, source: choice.source, declared: choice.declared },
    project: usesContext && project ? { root: display(project.root), marker: project.marker, context_files: context.length } : null,
    files,
    skipped,
    counts: {
      bundle: count('bundle'), scd: count('scd'), domain: count('domain'), malformed: count('malformed'),
      config: skipped.filter((s) => s.kind === 'config').length,
      other: skipped.filter((s) => s.kind !== 'config').length,
    },
    errors, warnings, findings,
  };
}
