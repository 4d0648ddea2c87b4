/**
 * `svc completion bash|zsh|fish`: the scripts cover every command `svc --help` lists, each
 * group's sub-commands and each command's options (generated from the registered commands),
 * bash accepts its script and completes in a real bash; zsh and fish, when installed, parse
 * theirs (`-n`) and complete (fish: `complete -C`; zsh: `_svc` with the completion builtins
 * replaced by ones that print what they are offered). A bad shell is a usage error (3).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sandbox } from './helpers.js';

vi.setConfig({ testTimeout: 240_000 });

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

/** What bash's completion function offers for a command line whose last word is being completed. */
function bashComplete(script: string, words: string[]): string[] {
  const quoted = words.map((w) => `'${w.replace(/'/g, `'\\''`)}'`).join(' ');
  const out = execFileSync('bash', ['-c', `source "$1"; COMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; _svc; printf '%s\\n' "\${COMPREPLY[@]}"`, 'bash', script], { encoding: 'utf8' });
  return out.split('\n').filter(Boolean);
}

describe('svc completion', () => {
  const s = sandbox();
  let scripts: Record<string, string>;
  let commands: string[][];
  const file = (shell: string) => join(s.dir, `svc.${shell}`);
  /** A group's sub-commands. */
  const groupsOf = (g: string) => commands.filter((c) => c.length === 2 && c[0] === g).map((c) => c[1]!);

  beforeAll(async () => {
    mkdirSync(s.work, { recursive: true });
    const [bash, zsh, fish, help] = await Promise.all([s.run(['completion', 'bash']), s.run(['completion', 'zsh']), s.run(['completion', 'fish']), s.run(['--help'])]);
    for (const r of [bash, zsh, fish]) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
    }
    scripts = { bash: bash.stdout, zsh: zsh.stdout, fish: fish.stdout };
    for (const [sh, text] of Object.entries(scripts)) writeFileSync(file(sh), text);
    // The commands `svc --help` lists, as words (arguments left out).
    const section = help.stdout.split(/^Commands:$/m)[1]!.split(/^\S/m)[0]!;
    commands = section.split('\n').map((l) => l.trim()).filter(Boolean).map((l) => l.split(/\s{2,}/)[0]!.split(' ').filter((w) => !/^[<[]/.test(w)));
    expect(commands.length).toBeGreaterThan(10);
  });
  afterAll(() => s.cleanup());

  it('bash: the script parses, and completes every command, sub-command, option and fixed value', async () => {
    expect(spawnSync('bash', ['-n', file('bash')]).status).toBe(0);
    const top = [...new Set(commands.map((c) => c[0]!))];
    expect(bashComplete(file('bash'), ['svc', '']).sort()).toEqual([...top].sort());
    for (const name of top) expect(bashComplete(file('bash'), ['svc', name.slice(0, 2)])).toContain(name);
    if (top.includes('agents')) expect(bashComplete(file('bash'), ['svc', 'ag'])).toEqual(['agents']);
    expect(bashComplete(file('bash'), ['svc', 'au'])).toEqual(['audit']);
    const groups = new Map<string, string[]>();
    for (const c of commands.filter((c) => c.length === 2)) groups.set(c[0]!, [...(groups.get(c[0]!) ?? []), c[1]!]);
    expect([...groups.keys()]).toEqual(expect.arrayContaining(['audit', 'context', 'config', 'bundle']));
    for (const [g, subs] of groups) expect(bashComplete(file('bash'), ['svc', g, '']).sort()).toEqual([...subs].sort());
    // Every command's options, as its --help lists them.
    const helps: Awaited<ReturnType<typeof s.run>>[] = [];
    for (let i = 0; i < commands.length; i += 6) helps.push(...(await Promise.all(commands.slice(i, i + 6).map((c) => s.run([...c, '--help'])))));
    for (const [i, c] of commands.entries()) {
      const flags = [...helps[i]!.stdout.split(/^Options:$/m)[1]!.matchAll(/^ {2}(-\S+?)(?:,\s*(--\S+))?(?:\s|$)/gm)].flatMap((m) => [m[1]!, m[2]].filter(Boolean) as string[]);
      expect(flags.length, c.join(' ')).toBeGreaterThan(0);
      const offered = bashComplete(file('bash'), ['svc', ...c, '-']);
      for (const f of flags) expect(offered, `${c.join(' ')} ${f}`).toContain(f);
    }
    expect(bashComplete(file('bash'), ['svc', 'audit', 'tail', '--a'])).toEqual(['--agent', '--after']);
    expect(bashComplete(file('bash'), ['svc', 'context', 'request', 'x', '--protocol', ''])).toEqual(['rest', 'connect', 'grpc']);
    expect(bashComplete(file('bash'), ['svc', 'audit', 'requests', '-o', 'j'])).toEqual(['json']);
    expect(bashComplete(file('bash'), ['svc', 'completion', ''])).toEqual(['bash', 'zsh', 'fish']);
  });

  it('zsh and fish: emitted for every command; when installed, parsed (-n) and completing commands, options and values; a bad shell exits 3', async () => {
    expect(scripts.zsh).toMatch(/^#compdef svc\n/);
    expect(scripts.fish).toMatch(/^# fish completion for svc/);
    for (const c of commands) {
      const key = c.join(' ');
      expect(scripts.zsh, key).toContain(`'${key}') opts=(`);
      const cond = c.length === 1 ? `__fish_seen_subcommand_from ${c[0]}'` : `__fish_seen_subcommand_from ${c[0]}; and __fish_seen_subcommand_from ${c[1]}'`;
      expect(scripts.fish, key).toContain(cond);
    }
    expect(scripts.fish).toContain("-l protocol -x -a 'rest connect grpc'");
    expect(scripts.zsh).toContain("'--protocol:rest (POST /api/context, port 8000), connect or grpc (the context service, port 8002)'");
    if (has('zsh')) {
      expect(spawnSync('zsh', ['-n', file('zsh')]).status).toBe(0);
      // _svc with zsh's completion builtins replaced by ones that print what they are offered.
      const stubs = `compdef() { :; }; _describe() { print -l -- \${(P)@[-1]} | cut -d: -f1 | sed 's/\\\\$//'; }; compadd() { shift; print -l -- "$@"; }; _files() { print -- '<files>'; }; source "$1"`;
      const zsh = (w: string[]) => execFileSync('zsh', ['-f', '-c', `${stubs}; words=(${w.map((x) => `'${x}'`).join(' ')}); CURRENT=${w.length}; _svc`, 'zsh', file('zsh')], { encoding: 'utf8' }).split('\n').filter(Boolean);
      expect(zsh(['svc', 'au'])).toContain('audit');
      expect(zsh(['svc', 'audit', '']).sort()).toEqual([...groupsOf('audit')].sort());
      expect(zsh(['svc', 'context', 'request', 'x', '--protocol', ''])).toEqual(['rest', 'connect', 'grpc']);
      expect(zsh(['svc', 'audit', 'tail', '-'])).toEqual(expect.arrayContaining(['--agent', '--after', '-o', '--output', '--help']));
      expect(zsh(['svc', 'completion', ''])).toEqual(['bash', 'zsh', 'fish']);
    }
    if (has('fish')) {
      expect(spawnSync('fish', ['-n', file('fish')]).status).toBe(0);
      const fish = (line: string) => execFileSync('fish', ['-c', 'source $argv[1]; complete -C $argv[2]', file('fish'), line], { encoding: 'utf8' }).split('\n').filter(Boolean).map((l) => l.split('\t')[0]!);
      expect(fish('svc au')).toEqual(['audit']);
      expect(fish('svc audit ').sort()).toEqual([...groupsOf('audit')].sort());
      expect(fish('svc context request x --protocol ').sort()).toEqual(['connect', 'grpc', 'rest']);
      expect(fish('svc audit tail --a').sort()).toEqual(['--after', '--agent']);
      expect(fish('svc completion ').sort()).toEqual(['bash', 'fish', 'zsh']);
    }
    const [bad, none] = await Promise.all([s.run(['completion', 'tcsh']), s.run(['completion'])]);
    expect(bad.code).toBe(3);
    expect(bad.stderr).toContain("unknown shell 'tcsh': bash, zsh or fish");
    expect(bad.stdout).toBe('');
    expect(none.code).toBe(3);
  });
});
