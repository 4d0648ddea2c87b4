/**
 * `svc`: the operator's tool for the running system (agents, keys, publishing, context
 * requests, tags, deployments, the audit log, ownership, MCP servers; through the typed
 * `@svc/client`) and the authoring tool for SCS bundles and SCDs. Built on cac, which has
 * no sub-commands: `svc agents create` and `svc config set` are registered as two-word
 * commands and argv is joined to match (GROUPS).
 */
import { cac, type CAC } from 'cac';
import { AGENTS_SUBCOMMANDS, registerAgents } from './commands/agents.js';
import { AUDIT_SUBCOMMANDS, registerAudit } from './commands/audit.js';
import { registerBundleCreate } from './commands/bundle-create.js';
import { registerBundlePublish } from './commands/bundle-publish.js';
import { registerBundleVersion } from './commands/bundle-version.js';
import { registerCompletion } from './commands/completion.js';
import { CONFIG_SUBCOMMANDS, registerConfig } from './commands/config.js';
import { CONTEXT_SUBCOMMANDS, registerContext } from './commands/context.js';
import { DEPLOYMENTS_SUBCOMMANDS, registerDeployments } from './commands/deployments.js';
import { registerInfo } from './commands/info.js';
import { registerInit } from './commands/init.js';
import { KEYS_SUBCOMMANDS, registerKeys } from './commands/keys.js';
import { MCP_SUBCOMMANDS, registerMcp } from './commands/mcp.js';
import { registerNew } from './commands/new.js';
import { OWNERS_SUBCOMMANDS, OWNERSHIP_SUBCOMMANDS, registerOwnership } from './commands/ownership.js';
import { registerPublish } from './commands/publish.js';
import { registerTags, TAGS_SUBCOMMANDS } from './commands/tags.js';
import { registerValidate } from './commands/validate.js';
import { registerWitness } from './commands/witness.js';
import { ApiError, detailLines } from './lib/api.js';
import { setRawArgs } from './lib/argv.js';
import { CliError, EXIT } from './lib/errors.js';
import { err, out } from './lib/io.js';
import { VERSION } from './lib/version.js';

const GROUPS: Record<string, { description: string; subcommands: string[] }> = {
  agents: { description: 'Register, list, change, suspend and revoke agents', subcommands: AGENTS_SUBCOMMANDS },
  audit: { description: 'The audit log: verify it, list context requests and management events, follow new records; the transparency log\'s keys, checkpoints and proofs', subcommands: AUDIT_SUBCOMMANDS },
  bundle: { description: 'Create, version and publish bundles', subcommands: ['create', 'version', 'publish'] },
  config: { description: 'Show and change configuration', subcommands: CONFIG_SUBCOMMANDS },
  context: { description: 'Request an agent\'s context as the agent would (REST, Connect, gRPC)', subcommands: CONTEXT_SUBCOMMANDS },
  ownership: { description: "Who answers for an agent: transfers between owners and the chain of custody", subcommands: OWNERSHIP_SUBCOMMANDS },
  owners: { description: 'Owners: deactivate one (its agents go to the org admin)', subcommands: OWNERS_SUBCOMMANDS },
  deployments: { description: 'List and show content deployments', subcommands: DEPLOYMENTS_SUBCOMMANDS },
  keys: { description: "Issue, list, revoke and rotate agents' API keys", subcommands: KEYS_SUBCOMMANDS },
  mcp: { description: 'Register and manage MCP servers', subcommands: MCP_SUBCOMMANDS },
  tags: { description: 'List, show, create and move bundle tags', subcommands: TAGS_SUBCOMMANDS },
};

function build(): CAC {
  const cli = cac('svc');
  // Listed in `svc --help` in this order: running the system first, then authoring.
  registerPublish(cli);
  registerAgents(cli);
  registerKeys(cli);
  registerContext(cli);
  registerTags(cli);
  registerDeployments(cli);
  registerAudit(cli);
  registerWitness(cli);
  registerOwnership(cli);
  registerMcp(cli);
  registerNew(cli);
  registerInit(cli);
  registerValidate(cli);
  registerBundleCreate(cli);
  registerBundleVersion(cli);
  registerBundlePublish(cli);
  registerConfig(cli);
  registerInfo(cli);
  registerCompletion(cli, GROUPS);
  cli.help((sections) => {
    const isGlobal = sections.some((s) => s.title === 'Commands');
    // cac shows no command's description in its own help: say what the command does first.
    const cmd = cli.matchedCommand;
    sections[0] = { body: isGlobal || !cmd ? `svc ${VERSION}: run the svc control plane (agents, keys, content, context, audit) and author Structured Context Specification bundles` : `svc ${cmd.name}: ${cmd.description}` };
    const opts = sections.find((s) => s.title === 'Options');
    if (opts && isGlobal) opts.body = '  -h, --help     Display this message\n  -v, --version  Display version number';
    // cac hides any option named `version` from command help; these commands own one.
    const usage = sections.find((s) => s.title === 'Usage')?.body ?? '';
    const own = usage.includes('bundle version') ? ['--version <semver>', 'Version to lock, MAJOR.MINOR.PATCH (required)']
      : usage.includes('bundle create') ? ['--version <version>', 'Version (default DRAFT)']
        : /tags (create|move)/.test(usage) ? ['--version <semver>', 'Published version, MAJOR.MINOR.PATCH (required)'] : null;
    if (opts && own) {
      const rows = opts.body.split('\n').map((l) => /^ {2}(\S.*?)\s{2,}(.*)$/.exec(l)).filter((m): m is RegExpExecArray => !!m).map((m) => [m[1], m[2].trimEnd()]);
      const at = usage.includes('bundle version') ? 0 : /tags (create|move)/.test(usage) ? rows.findIndex((r) => r[0].startsWith('--bundle')) + 1 : rows.length - 1;
      rows.splice(at, 0, own);
      const width = Math.max(...rows.map((r) => r[0].length));
      opts.body = rows.map(([n, d]) => `  ${n.padEnd(width)}  ${d}`).join('\n');
    }
    const examples = sections.find((s) => s.title === 'Examples');
    if (examples) examples.body = examples.body.split('\n').map((l) => `  $ ${l}`).join('\n');
    sections.push({
      title: 'Exit codes',
      body: '  0 success, 1 errors found or command refused (the API\'s error), 2 warnings under --strict (svc witness: a split view), 3 usage,\n  4 unreadable path (unwritable, for a file to save), 5 the server could not be reached',
    });
  });
  return cli;
}

function groupHelp(name: string): string {
  const g = GROUPS[name];
  const commands = build().commands;
  const rows = g.subcommands.map((s) => {
    const c = commands.find((x) => x.name === `${name} ${s}`);
    return [`svc ${c?.rawName ?? `${name} ${s}`}`, c?.description ?? ''];
  });
  const width = Math.max(...rows.map(([u]) => u.length));
  return [`svc ${name}: ${g.description}`, '', 'Commands:', ...rows.map(([u, d]) => `  ${u.padEnd(width)}  ${d}`.trimEnd()), '',
    `For more info, run any command with the \`--help\` flag: svc ${name} ${g.subcommands[0]} --help`].join('\n');
}

/** Runs one command line (without `node svc`); resolves to the process exit code. */
export async function run(argv: string[]): Promise<number> {
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
    out(VERSION);
    return EXIT.ok;
  }
  const args = [...argv];
  const group = GROUPS[args[0]];
  if (group) {
    if (args[1] === '--help' || args[1] === '-h') { out(groupHelp(args[0])); return EXIT.ok; }
    if (!args[1] || !group.subcommands.includes(args[1])) {
      err(args[1] ? `svc ${args[0]}: unknown command '${args[1]}'` : `svc ${args[0]}: a command is needed`);
      err(groupHelp(args[0]));
      return EXIT.usage;
    }
    args.splice(0, 2, `${args[0]} ${args[1]}`);
  }
  const cli = build();
  setRawArgs(args);
  try {
    cli.parse(['node', 'svc', ...args], { run: false });
    if (cli.options.help) return EXIT.ok; // cac printed the help
    if (!cli.matchedCommand) {
      if (cli.args.length === 0) { cli.outputHelp(); return EXIT.usage; }
      err(`svc: unknown command '${cli.args[0]}' (svc --help lists the commands)`);
      return EXIT.usage;
    }
    const code = await cli.runMatchedCommand();
    return typeof code === 'number' ? code : EXIT.ok;
  } catch (e) {
    if (e instanceof CliError) {
      err(`svc: ${e.message}`);
      if (e instanceof ApiError) for (const l of detailLines(e.body)) err(`  ${l}`);
      return e.exitCode;
    }
    if (e instanceof Error && e.name === 'CACError') {
      err(`svc: ${e.message} (svc ${cli.matchedCommand?.name ?? ''} --help)`.replace('  --help', ' --help'));
      return EXIT.usage;
    }
    if (e instanceof Error && e.name === 'ExitPromptError') {
      err('svc: cancelled');
      return EXIT.failed;
    }
    err(`svc: unexpected error: ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
    return EXIT.failed;
  }
}

run(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
