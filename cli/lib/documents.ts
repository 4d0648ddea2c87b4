/**
 * Reading SCS documents from disk: one file, or every YAML/JSON file under a directory.
 * A file that cannot be read is a CliError with exit code 4; malformed YAML is not an
 * exception but a finding (rule `yaml_syntax`), because well-formedness is what
 * validation reports.
 */
import { existsSync, readFileSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import type { Finding } from '../../src/core/scs/index.js';
import { CliError, EXIT } from './errors.js';

export interface LoadedFile {
  /** Path as shown to the user (relative to the working directory when inside it). */
  file: string;
  abs: string;
  doc: unknown;
  /** Set when the file is not well-formed YAML/JSON. */
  syntax?: Finding[];
}

export const DOC_EXT = /\.(ya?ml|json)$/i;

export const display = (abs: string): string => {
  const rel = relative(process.cwd(), abs);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : abs;
};

/** Reads and parses one file; throws CliError(exit 4) when it cannot be read. */
export function loadFile(path: string): LoadedFile {
  const abs = resolve(path);
  let text: string;
  try {
    text = readFileSync(abs, 'utf8');
  } catch (e) {
    throw new CliError(`${display(abs)}: cannot read file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, EXIT.unreadable);
  }
  return parseText(abs, text);
}

function parseText(abs: string, text: string): LoadedFile {
  const file = display(abs);
  const syntax = (message: string, pos?: { line: number; col: number }): Finding => ({
    severity: 'error', path: '', rule: 'yaml_syntax', file, message,
    ...(pos ? { line: pos.line, column: pos.col } : {}),
  });
  const docs = parseAllDocuments(text, { prettyErrors: true });
  const list = Array.isArray(docs) ? docs : [docs];
  const problems = list.flatMap((d) => d.errors);
  if (problems.length > 0) {
    return {
      file, abs, doc: undefined,
      // The yaml library's own position (linePos), not a stack: file:line:column in the finding.
      syntax: problems.map((p) => syntax(`not well-formed YAML: ${p.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')}`, p.linePos?.[0])),
    };
  }
  if (list.length > 1) {
    const second = list[1].range?.[0];
    const line = second === undefined ? undefined : text.slice(0, second).split('\n').length;
    return { file, abs, doc: undefined, syntax: [syntax(`holds ${list.length} YAML documents; an SCS file holds one`, line ? { line, col: 1 } : undefined)] };
  }
  try {
    const doc = list.length === 0 ? null : list[0].toJS({ maxAliasCount: 100 });
    return { file, abs, doc };
  } catch (e) {
    // e.g. an alias bomb (more than 100 alias expansions): a finding, never a stack.
    return { file, abs, doc: undefined, syntax: [syntax(`not well-formed YAML: ${(e as Error).message.split('\n')[0]}`)] };
  }
}

/** Directories no walk enters by default. */
export const SKIP_DIRS: ReadonlySet<string> = new Set(['node_modules', '.git', '.svc', '.svc-data']);

/**
 * The files under `dir` whose names `match`, sorted, skipping the directories in `skip`. A
 * directory reached twice (a symlink loop, or one linked from two places) is walked once; a
 * dangling symlink is passed over; a directory that cannot be read is exit 4.
 */
export function walkFiles(dir: string, match: (name: string) => boolean, skip: ReadonlySet<string> = SKIP_DIRS): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const visit = (d: string) => {
    let real: string;
    try { real = realpathSync(d); } catch { return; }
    if (seen.has(real)) return;
    seen.add(real);
    let names: string[];
    try {
      names = readdirSync(d).sort();
    } catch (e) {
      throw new CliError(`${display(d)}: cannot read directory (${(e as NodeJS.ErrnoException).code})`, EXIT.unreadable);
    }
    for (const n of names) {
      const p = join(d, n);
      let st;
      try { st = statSync(p); } catch { continue; } // dangling symlink
      if (st.isDirectory()) { if (!skip.has(n)) visit(p); } else if (match(n)) out.push(p);
    }
  };
  visit(dir);
  return out;
}

/** Every document file (YAML, JSON) under `dir`, sorted, skipping node_modules, .git and .svc. */
export const walk = (dir: string): string[] => walkFiles(dir, (n) => DOC_EXT.test(n));

/** The project root for a path: the nearest ancestor holding `.svc/`, or null. */
export function findProjectRoot(start: string): string | null {
  let d = resolve(start);
  if (existsSync(d) && !statSync(d).isDirectory()) d = dirname(d);
  for (;;) {
    if (existsSync(join(d, '.svc')) && statSync(join(d, '.svc')).isDirectory()) return d;
    const up = dirname(d);
    if (up === d) return null;
    d = up;
  }
}

/** YAML text as the CLI writes it (block style, no line folding, stable key order as given). */
export const toYaml = (doc: unknown): string => stringify(doc, { lineWidth: 0, indent: 2 });
