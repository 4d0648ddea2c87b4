/** `svc init [dir] [--force]`: create `.svc/` (configuration) in an existing project. */
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { CAC } from 'cac';
import { display, toYaml } from '../lib/documents.js';
import { CliError, EXIT } from '../lib/errors.js';
import { out } from '../lib/io.js';
import { SCS_VERSION } from '../lib/version.js';

const GITIGNORE = '# Secrets (api.key) live here, mode 0600: never commit them.\ncredentials.yaml\n';

/** Writes `.svc/config.yaml` and `.svc/.gitignore` under `root` (which must exist). */
export function writeProjectConfig(root: string, name: string): string {
  const dir = join(root, '.svc');
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const config = toYaml({ project: { name }, scs_version: SCS_VERSION });
  writeFileSync(join(dir, 'config.yaml'), '# svc project configuration. Change it with `svc config set <key> <value>`.\n' + config);
  writeFileSync(join(dir, '.gitignore'), GITIGNORE);
  return dir;
}

export function registerInit(cli: CAC): void {
  cli
    .command('init [dir]', 'Create a .svc/ configuration directory in an existing project (default: here)')
    .option('--force', 'Replace an existing .svc/config.yaml (credentials are kept)')
    .option('--name <name>', 'Project name recorded in .svc/config.yaml (default: the directory name)')
    .action((dir: string | undefined, opts: { force?: boolean; name?: string }) => {
      const root = resolve(dir ?? '.');
      if (!existsSync(root) || !statSync(root).isDirectory()) {
        throw new CliError(`${dir ?? root}: no such directory (svc init works in an existing project; svc new creates one)`, EXIT.unreadable);
      }
      const svcDir = join(root, '.svc');
      if (existsSync(svcDir) && !opts.force) {
        throw new CliError(`${display(svcDir)} already exists; not overwriting it (use --force to replace its config.yaml)`);
      }
      writeProjectConfig(root, String(opts.name ?? basename(root)));
      out(`Initialized ${display(svcDir)}/ (config.yaml, .gitignore)`);
    });
}
