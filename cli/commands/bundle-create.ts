/**
 * `svc bundle create`: write a new bundle manifest (DRAFT by default).
 * Interactive in a terminal (type, id, title, description, SCDs, imports, version, file);
 * `--non-interactive` takes every field from flags and/or `--template <path>` (flags win)
 * and names everything that is missing.
 */
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { CAC } from 'cac';
import { BUNDLE_ID_RE, BUNDLE_TYPES, checkBundle, classifyDocument, type BundleType } from '../../src/core/scs/index.js';
import { rawOption } from '../lib/argv.js';
import { display, findProjectRoot, loadFile, toYaml } from '../lib/documents.js';
import { CliError, EXIT, usageError } from '../lib/errors.js';
import { err, out } from '../lib/io.js';
import { loadProjectSet } from '../lib/project-set.js';
import { authorOf } from './new.js';
import { formatFinding } from './validate.js';
import type { BundleFields } from './bundle-fields.js';

interface Opts {
  nonInteractive?: boolean; template?: string; type?: string; id?: string; title?: unknown; description?: unknown;
  scds?: unknown; imports?: unknown; version?: unknown; rationale?: unknown; out?: string; author?: string; force?: boolean; project?: string;
}

/** `--scds a,b --scds c` and YAML lists alike become one clean list. */
const list = (v: unknown): string[] | undefined =>
  v === undefined || v === null ? undefined : (Array.isArray(v) ? v : [v]).flatMap((x) => String(x).split(',')).map((s) => s.trim()).filter(Boolean);

/** A repeated option (`--title a --title b`) keeps its last value. */
const text = (v: unknown) => (v === undefined || v === null ? undefined : String(Array.isArray(v) ? v.at(-1) : v));
const needsScds = (t: BundleType) => t === 'meta' || t === 'concern';
const needsImports = (t: BundleType) => t === 'project' || t === 'domain';

function fromTemplate(path: string | undefined): BundleFields {
  if (!path) return {};
  const f = loadFile(path);
  if (f.syntax) throw new CliError(f.syntax.map(formatFinding).join('\n'));
  if (!f.doc || typeof f.doc !== 'object' || Array.isArray(f.doc)) throw new CliError(`${f.file}: a template is a YAML mapping of bundle fields`);
  const d = f.doc as Record<string, unknown>;
  const prov = (d.provenance ?? {}) as Record<string, unknown>;
  return {
    type: d.type as BundleType, id: text(d.id), title: text(d.title), description: text(d.description),
    scds: list(d.scds), imports: list(d.imports), version: text(d.version), rationale: text(prov.rationale ?? d.rationale),
  };
}

/** Where a new bundle goes by default: concerns/ or domains/ when the project has them. */
function defaultPath(root: string, type: BundleType, id: string): string {
  const name = id.replace(/^bundle:/, '');
  const sub = type === 'concern' ? 'concerns' : type === 'domain' ? 'domains' : '';
  const dir = sub && existsSync(join(root, sub)) && statSync(join(root, sub)).isDirectory() ? join(root, sub) : root;
  return join(dir, `${name}.yaml`);
}

function buildDoc(f: Required<Pick<BundleFields, 'type' | 'id' | 'title' | 'description' | 'version'>> & BundleFields, author: string, now: Date) {
  return {
    id: f.id, type: f.type, version: f.version, title: f.title, description: f.description,
    imports: f.imports ?? [], scds: f.scds ?? [],
    provenance: { created_by: author, created_at: now.toISOString().replace(/\.\d{3}Z$/, 'Z'), ...(f.rationale ? { rationale: f.rationale } : {}) },
  };
}

export function registerBundleCreate(cli: CAC): void {
  cli
    .command('bundle create', 'Create a bundle (interactive; --non-interactive takes flags or --template)')
    .option('--non-interactive', 'Take every field from flags and --template; fail on anything missing')
    .option('--template <path>', 'YAML file with bundle fields to start from (flags override it)')
    .option('--type <type>', `Bundle type: ${BUNDLE_TYPES.join(', ')}`)
    .option('--id <id>', 'Bundle id, bundle:<name>')
    .option('--title <title>', 'Title')
    .option('--description <text>', 'Description')
    .option('--scds <ids>', 'SCD ids, comma-separated (repeatable)')
    .option('--imports <refs>', 'Imports, bundle:<name> or bundle:<name>:<X.Y.Z>, comma-separated (repeatable)')
    .option('--version <version>', 'Version (default DRAFT)')
    .option('--rationale <text>', 'provenance.rationale')
    .option('--author <who>', 'provenance.created_by (default: config author)')
    .option('--out <path>', 'File to write (default: <name>.yaml in the project, under concerns/ or domains/ when present)')
    .option('--project <dir>', 'Project whose SCDs and bundles are offered (default: nearest .svc/, else here)')
    .option('--force', 'Overwrite an existing file')
    .example('svc bundle create')
    .example('svc bundle create --non-interactive --type concern --id bundle:billing --title Billing --description "Billing rules" --scds scd:project:invoicing')
    .action(async (opts: Opts) => {
      const tpl = fromTemplate(opts.template);
      if (opts.type !== undefined && !(BUNDLE_TYPES as readonly string[]).includes(String(opts.type))) {
        throw usageError(`--type must be one of ${BUNDLE_TYPES.join(', ')}, not '${opts.type}'`);
      }
      const given: BundleFields = {
        type: (opts.type as BundleType | undefined) ?? tpl.type,
        id: text(opts.id) ?? tpl.id,
        title: text(opts.title) ?? tpl.title,
        description: text(opts.description) ?? tpl.description,
        scds: list(opts.scds) ?? tpl.scds,
        imports: list(opts.imports) ?? tpl.imports,
        version: rawOption('version') ?? text(opts.version) ?? tpl.version,
        rationale: text(opts.rationale) ?? tpl.rationale,
        out: opts.out,
      };
      const root = opts.project ? resolve(opts.project) : findProjectRoot(process.cwd()) ?? process.cwd();
      let fields: BundleFields;
      if (opts.nonInteractive) {
        fields = { ...given, version: given.version ?? 'DRAFT' };
        const missing: string[] = [];
        if (!fields.type) missing.push('--type');
        if (!fields.id) missing.push('--id');
        if (!fields.title) missing.push('--title');
        if (!fields.description) missing.push('--description');
        if (fields.type && needsScds(fields.type) && !fields.scds?.length) missing.push(`--scds (a ${fields.type} bundle contains at least one SCD)`);
        if (fields.type && needsImports(fields.type) && !fields.imports?.length) missing.push(`--imports (a ${fields.type} bundle imports at least one bundle)`);
        if (missing.length) throw usageError(`bundle create --non-interactive: missing ${missing.join(', ')}${opts.template ? ` (neither given as flags nor in ${opts.template})` : ' (give them as flags or in --template <path>)'}`);
        if (fields.id && !fields.id.startsWith('bundle:') && BUNDLE_ID_RE.test(`bundle:${fields.id}`)) fields.id = `bundle:${fields.id}`;
      } else {
        if (!process.stdin.isTTY) throw usageError('bundle create asks its questions in a terminal; stdin is not one. Use --non-interactive with flags or --template <path>');
        const project = existsSync(root) ? loadProjectSet(root) : null;
        // Loaded only when asked: the prompt library is not needed by any other command.
        const { askBundle } = await import('./bundle-prompts.js');
        fields = await askBundle(given, project, (t, id) => display(defaultPath(root, t, id)), !!opts.force);
      }
      const doc = buildDoc(fields as Parameters<typeof buildDoc>[0], authorOf(opts.author), new Date());
      const problems = checkBundle(doc, { strict: true });
      for (const p of problems) err(formatFinding({ ...p, file: p.file ?? '(new bundle)' }));
      if (problems.some((p) => p.severity === 'error')) throw new CliError(`bundle not written: ${problems.filter((p) => p.severity === 'error').length} error(s)`);

      const path = resolve(fields.out ?? defaultPath(root, doc.type as BundleType, doc.id));
      if (existsSync(path) && !opts.force) throw new CliError(`${display(path)} already exists; not overwriting it (use --force or --out <path>)`);
      if (existsSync(path) && opts.force && classifyDocument(loadFile(path).doc) !== 'bundle') {
        throw new CliError(`${display(path)} exists and is not a bundle; not overwriting it even with --force`);
      }
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, toYaml(doc));
      out(`Wrote ${doc.id} ${doc.version} (${doc.type}) to ${display(path)}`);
      return EXIT.ok;
    });
}
