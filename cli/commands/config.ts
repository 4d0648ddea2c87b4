/** `svc config show|get|set|unset`: project `.svc/` and user-level configuration. */
import type { CAC } from 'cac';
import { KEYS, mask, resolveAll, resolveKey, scopeDir, setKey, userConfigDir, type Scope } from '../lib/config.js';
import { display } from '../lib/documents.js';
import { CliError, usageError } from '../lib/errors.js';
import { json, out } from '../lib/io.js';

function scopeOf(opts: { user?: boolean; project?: boolean }): Scope {
  if (opts.user && opts.project) throw usageError('choose one of --user and --project');
  if (opts.user) return 'user';
  if (opts.project) return 'project';
  return scopeDir('project') ? 'project' : 'user';
}

export function registerConfig(cli: CAC): void {
  cli
    .command('config show', 'Show the effective configuration and where each value comes from (secrets masked)')
    .option('-o, --output <format>', 'Output format: text or json', { default: 'text' })
    .action((opts: { output: string }) => {
      const all = resolveAll().map((r) => ({ ...r, value: r.value !== undefined && r.secret ? mask(r.value) : r.value }));
      const files = { user: userConfigDir(), project: scopeDir('project') };
      if (opts.output === 'json') return void json({ files, keys: all });
      if (opts.output !== 'text') throw usageError(`--output must be text or json, not '${opts.output}'`);
      out(`user config:    ${files.user}`);
      out(`project config: ${files.project ? display(files.project) : '(not inside an svc project)'}`);
      for (const r of all) out(`${r.key} = ${r.value ?? '(unset)'}    [${r.source}]`);
    });

  cli
    .command('config get <key>', 'Print the effective value of one key')
    .action((key: string) => {
      const r = resolveKey(key);
      if (r.value === undefined) throw new CliError(`${key} is not set (svc config set ${key} <value>)`);
      out(r.value);
    });

  cli
    .command('config set <key> <value>', `Set a key (${Object.keys(KEYS).join(', ')})`)
    .option('--user', 'Write the user-level file (default outside a project)')
    .option('--project', 'Write the project .svc/ (default inside a project)')
    .example('svc config set api.endpoint https://svc.example.com')
    .example('svc config set api.key "$SVC_ADMIN_KEY" --user')
    .action((key: string, value: string, opts: { user?: boolean; project?: boolean }) => {
      const file = setKey(scopeOf(opts), key, String(value));
      out(`${key} set in ${display(file)}${KEYS[key].secret ? ' (mode 0600)' : ''}`);
    });

  cli
    .command('config unset <key>', 'Remove a key from a scope')
    .option('--user', 'The user-level file')
    .option('--project', 'The project .svc/')
    .action((key: string, opts: { user?: boolean; project?: boolean }) => {
      const file = setKey(scopeOf(opts), key, undefined);
      out(`${key} removed from ${display(file)}`);
    });
}

export const CONFIG_SUBCOMMANDS = ['show', 'get', 'set', 'unset'];
