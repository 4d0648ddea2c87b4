/** `svc new <project-name> --type <t>`: scaffold a project in the public SCS 0.3 layout. */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { CAC } from 'cac';
import { validateDocuments } from '../../src/core/scs/index.js';
import { resolveKey } from '../lib/config.js';
import { display, toYaml } from '../lib/documents.js';
import { CliError, usageError } from '../lib/errors.js';
import { out } from '../lib/io.js';
import { PROJECT_TYPES, type ProjectType } from '../templates/catalog.js';
import { scaffold } from '../templates/scaffold.js';
import { writeProjectConfig } from './init.js';
import { formatFinding } from './validate.js';

/** Project names become bundle ids (`bundle:<name>`) and id prefixes: keep them to that alphabet. */
const NAME_RE = /^[a-z0-9][a-z0-9_-]{0,63}$/i;

export const authorOf = (flag?: string): string => String(flag ?? resolveKey('author').value ?? 'unknown');

export function registerNew(cli: CAC): void {
  cli
    .command('new <project-name>', 'Scaffold a project in the SCS 0.3 layout')
    .option('--type <type>', `Project type: ${PROJECT_TYPES.join(', ')}`)
    .option('--dir <parent>', 'Create the project under this directory (default: here)')
    .option('--author <who>', 'provenance.created_by of the scaffolded documents (default: config author)')
    .example('svc new acme-health --type healthcare')
    .action((name: string, opts: { type?: string; dir?: string; author?: string }) => {
      name = String(name);
      if (!NAME_RE.test(name)) throw usageError(`project name '${name}' must be letters, digits, '-' or '_' (at most 64), starting with a letter or digit`);
      if (!opts.type) throw usageError(`--type is required: one of ${PROJECT_TYPES.join(', ')}`);
      if (!(PROJECT_TYPES as readonly string[]).includes(opts.type)) throw usageError(`--type must be one of ${PROJECT_TYPES.join(', ')}, not '${opts.type}'`);
      const root = resolve(opts.dir ?? '.', name);
      if (existsSync(root)) throw new CliError(`${display(root)} already exists; not overwriting it (choose another name or remove it)`);

      const files = scaffold(name, opts.type as ProjectType, authorOf(opts.author), new Date());
      // A scaffold that does not validate strictly is a bug in the templates: check before writing.
      const docs = files.filter((f) => f.doc).map((f) => ({ file: f.path, doc: f.doc }));
      const problems = validateDocuments(docs, { strict: true }).findings;
      if (problems.length > 0) throw new Error(`template ${opts.type} does not validate:\n${problems.map(formatFinding).join('\n')}`);

      try {
        for (const f of files) {
          const path = join(root, f.path);
          mkdirSync(dirname(path), { recursive: true });
          writeFileSync(path, f.text ?? toYaml(f.doc));
        }
        writeProjectConfig(root, name);
      } catch (e) {
        rmSync(root, { recursive: true, force: true }); // never leave half a project behind
        throw new CliError(`cannot create ${display(root)}: ${(e as Error).message}`);
      }
      const bundles = docs.filter((d) => String((d.doc as { id: string }).id).startsWith('bundle:')).length;
      out(`Created ${display(root)}/ (${opts.type}): ${bundles} bundles, ${docs.length - bundles} SCDs, README.md, .svc/`);
      out(`Next: cd ${display(root)} && svc validate . --strict`);
    });
}
