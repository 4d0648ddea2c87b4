/**
 * A runnable README section: the fenced blocks between `<!-- NAME:start -->` and
 * `<!-- NAME:end -->`. Each ```sh block is a step, a ```text block right after it is that
 * step's expected output (`...` stands for anything within a line), and a block whose info
 * string names a file (```ts walk.mts) is a file the reader is told to save.
 */
export interface Step {
  script: string;
  expected: string | null;
}

export interface Section {
  steps: Step[];
  files: Map<string, string>;
}

export function readSection(readme: string, name: string): Section {
  const START = `<!-- ${name}:start -->`;
  const END = `<!-- ${name}:end -->`;
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`README.md has no ${START} ... ${END} section`);
  const steps: Step[] = [];
  const files = new Map<string, string>();
  for (const m of readme.slice(start, end).matchAll(/^```([^\n]*)\n([\s\S]*?)^```$/gm)) {
    const [lang, file, ...rest] = m[1]!.trim().split(/\s+/);
    const body = m[2]!;
    if (rest.length) throw new Error(`unexpected info string: \`\`\`${m[1]}`);
    if (lang === 'sh' && !file) steps.push({ script: body, expected: null });
    else if (lang === 'text' && !file) {
      const last = steps.at(-1);
      if (!last || last.expected !== null) throw new Error(`a text block that follows no sh step:\n${body}`);
      last.expected = body.replace(/\n$/, '');
    } else if (file) files.set(file, body);
    else throw new Error(`a block the ${name} test cannot run: \`\`\`${m[1]}`);
  }
  return { steps, files };
}

/** The expected output as a regular expression: `...` matches anything within a line. */
export function outputPattern(expected: string): RegExp {
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${expected.split('...').map(escape).join('[^\\n]*')}$`);
}

/** One bash script running every step after `set -euo pipefail`, each announced by a marker line; and the cut of its stdout per step. */
export function scriptOf(steps: Step[], replace: (i: number) => string | null = () => null): { script: string; outputs(stdout: string): string[] | null } {
  const marker = (i: number) => `<<step ${i}>>`;
  const script = ['set -euo pipefail', ...steps.map((s, i) => `echo '${marker(i)}'\n${replace(i) ?? s.script}`)].join('\n');
  return {
    script,
    outputs(stdout) {
      const cut: string[] = [];
      for (let i = 0; i < steps.length; i++) {
        const from = stdout.indexOf(`${marker(i)}\n`);
        if (from < 0) return null;
        const next = i + 1 < steps.length ? stdout.indexOf(marker(i + 1)) : stdout.length;
        cut.push(stdout.slice(from + marker(i).length + 1, next).replace(/\n$/, ''));
      }
      return cut;
    },
  };
}
