/**
 * Release manifests: SHA-256 lists shipped beside versioned bundles, checked by `svc publish`
 * and `svc validate` before anything is trusted. A project without one is not an error.
 *
 * Files recognised (anywhere under the project, skipping node_modules, .git, .svc, .svc-data):
 * - `SHA256SUMS`, `SHA256SUMS.txt`, `MANIFEST.sha256`, `*.sha256`, `*.sha256sum`: the
 *   `sha256sum` format, one `HEX  path` line per file (64 hex digits, then two spaces, or a
 *   space and `*` for binary mode), or the BSD form `SHA256 (path) = HEX` (`sha256sum
 *   --tag`). Paths are relative to the manifest's directory. Blank lines and `#` comments
 *   are ignored. A `NAME.sha256` (or `.sha256sum`) file holding a bare digest covers the
 *   sibling file `NAME`.
 * - `VERSION-<semver>-MANIFEST.yaml`, the version manifest the SCS reference tooling
 *   (`scs bundle version`) writes beside a versioned bundle: `bundle.file` and
 *   `bundle.sha256` are checked.
 *
 * Every listed file must exist (inside the project) and hash to the listed digest.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { parse } from 'yaml';
import type { Finding } from '../../src/core/scs/index.js';
import { display, walkFiles } from './documents.js';

const SUM_NAMES = new Set(['SHA256SUMS', 'SHA256SUMS.txt', 'MANIFEST.sha256']);
const SUM_EXT = /\.(sha256|sha256sum)$/;
const SCS_MANIFEST = /^VERSION-.+-MANIFEST\.ya?ml$/;
const HEX = /^[0-9a-fA-F]{64}$/;

interface ManifestEntry {
  /** The manifest file and the line (1-based) that lists the file. */
  manifest: string;
  line: number;
  /** Absolute path of the listed file. */
  abs: string;
  sha256: string;
}

export type ManifestProblem =
  | { kind: 'malformed'; manifest: string; line: number; text: string; why: string }
  | { kind: 'missing'; manifest: string; line: number; file: string }
  | { kind: 'mismatch'; manifest: string; line: number; file: string; expected: string; actual: string };

export interface ManifestReport {
  /** The manifests found (as shown to the user). */
  manifests: string[];
  /** Files whose digest was checked and matched. */
  verified: number;
  problems: ManifestProblem[];
}

const isManifestName = (name: string): boolean => SUM_NAMES.has(name) || SUM_EXT.test(name) || SCS_MANIFEST.test(name);

/** Every manifest file under `root`, sorted. */
function findManifests(root: string): string[] {
  if (existsSync(root) && statSync(root).isDirectory()) return walkFiles(root, isManifestName);
  return existsSync(root) && isManifestName(basename(root)) ? [root] : [];
}

/** Unescapes a `sha256sum` line that starts with `\` (a name holding `\` or a newline). */
const unescapeName = (s: string) => s.replace(/\\(\\|n)/g, (_, c: string) => (c === 'n' ? '\n' : '\\'));

/** The entries of one manifest file; malformed lines are problems, not exceptions. */
function parseManifest(abs: string): { entries: ManifestEntry[]; problems: ManifestProblem[] } {
  const manifest = display(abs);
  const dir = dirname(abs);
  const entries: ManifestEntry[] = [];
  const problems: ManifestProblem[] = [];
  let text: string;
  try { text = readFileSync(abs, 'utf8'); } catch (e) {
    return { entries, problems: [{ kind: 'malformed', manifest, line: 0, text: '', why: `cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` }] };
  }
  const add = (line: number, name: string, sha: string) => entries.push({ manifest, line, abs: resolve(dir, name), sha256: sha.toLowerCase() });
  if (SCS_MANIFEST.test(basename(abs))) {
    let doc: unknown;
    try { doc = parse(text); } catch (e) {
      return { entries, problems: [{ kind: 'malformed', manifest, line: 0, text: '', why: `not YAML: ${(e as Error).message.split('\n')[0]}` }] };
    }
    const b = (doc && typeof doc === 'object' ? (doc as Record<string, unknown>).bundle : undefined) as Record<string, unknown> | undefined;
    const lineOf = (key: string) => text.split('\n').findIndex((l) => new RegExp(`^\\s+${key}:`).test(l)) + 1;
    if (!b || typeof b.file !== 'string' || typeof b.sha256 !== 'string' || !HEX.test(b.sha256)) {
      problems.push({ kind: 'malformed', manifest, line: lineOf('sha256'), text: '', why: 'an SCS version manifest needs bundle.file and bundle.sha256 (64 hex digits)' });
    } else add(lineOf('sha256'), b.file, b.sha256);
    return { entries, problems };
  }
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = i + 1;
    if (!raw.trim() || raw.trimStart().startsWith('#')) return;
    const escaped = raw.startsWith('\\');
    const l = escaped ? raw.slice(1) : raw;
    let m = /^([0-9a-fA-F]{64}) [ *](.+)$/.exec(l);
    if (m) return void add(line, escaped ? unescapeName(m[2]) : m[2], m[1]);
    m = /^SHA256 \((.+)\) = ([0-9a-fA-F]{64})$/.exec(l);
    if (m) return void add(line, escaped ? unescapeName(m[1]) : m[1], m[2]);
    const bare = l.trim();
    if (HEX.test(bare) && SUM_EXT.test(basename(abs)) && lines.filter((x) => x.trim()).length === 1) {
      return void add(line, basename(abs).replace(SUM_EXT, ''), bare);
    }
    problems.push({ kind: 'malformed', manifest, line, text: raw.length > 120 ? `${raw.slice(0, 117)}...` : raw, why: 'expected `<64 hex digits>  <path>` (sha256sum format) or `SHA256 (<path>) = <64 hex digits>`' });
  });
  return { entries, problems };
}

const sha256File = (abs: string): string => createHash('sha256').update(readFileSync(abs)).digest('hex');

/**
 * Checks every manifest under `root` (a project directory). With `only`, entries for other
 * files are ignored (a single file being validated). Files must stay inside `root`.
 */
export function verifyManifests(root: string, only?: Set<string>): ManifestReport {
  const top = resolve(root);
  const base = existsSync(top) && statSync(top).isDirectory() ? top : dirname(top);
  const report: ManifestReport = { manifests: [], verified: 0, problems: [] };
  for (const m of findManifests(top)) {
    const { entries, problems } = parseManifest(m);
    report.manifests.push(display(m));
    report.problems.push(...problems);
    for (const e of entries) {
      if (only && !only.has(e.abs)) continue;
      const rel = relative(base, e.abs);
      const file = display(e.abs);
      if (rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) {
        report.problems.push({ kind: 'malformed', manifest: e.manifest, line: e.line, text: file, why: `${file} is outside ${display(base)}` });
        continue;
      }
      let st;
      try { st = statSync(e.abs); } catch { st = null; }
      if (!st || !st.isFile()) {
        report.problems.push({ kind: 'missing', manifest: e.manifest, line: e.line, file });
        continue;
      }
      const actual = sha256File(e.abs);
      if (actual !== e.sha256) report.problems.push({ kind: 'mismatch', manifest: e.manifest, line: e.line, file, expected: e.sha256, actual });
      else report.verified++;
    }
  }
  return report;
}

/** What is wrong, without the manifest's name. */
function problemText(p: ManifestProblem): string {
  switch (p.kind) {
    case 'malformed': return `malformed manifest line${p.text ? ` '${p.text}'` : ''}: ${p.why}`;
    case 'missing': return `${p.file} is listed but missing`;
    case 'mismatch': return `${p.file} does not match its digest: manifest sha256 ${p.expected}, file sha256 ${p.actual}`;
  }
}

/** One line per problem, naming the manifest and line, the file and both digests. */
export const describeProblem = (p: ManifestProblem): string => `${p.manifest}${p.line ? `:${p.line}` : ''}: ${problemText(p)}`;

/** The problems as validation findings (rules `release_manifest_<kind>`), for `svc validate`'s report. */
function manifestFindings(r: ManifestReport): Finding[] {
  return r.problems.map((p) => ({ severity: 'error' as const, path: p.line ? `line ${p.line}` : '', rule: `release_manifest_${p.kind}`, file: p.manifest, message: problemText(p) }));
}

/**
 * `svc validate`'s call: the manifests under each directory named (for a file, the
 * manifests of its directory, their entries for that file only) are checked; problems
 * become error findings of the report, and `report.manifests` says what was checked.
 */
export function checkReleaseManifests(report: { findings: Finding[]; errors: number; valid: boolean; manifests?: { files: string[]; verified: number } }, paths: string[]): void {
  const files: string[] = [];
  let verified = 0;
  for (const p of paths) {
    const abs = resolve(p);
    const isDir = existsSync(abs) && statSync(abs).isDirectory();
    const r = isDir ? verifyManifests(abs) : verifyManifestsFor(abs);
    files.push(...r.manifests.filter((m) => !files.includes(m)));
    verified += r.verified;
    const found = manifestFindings(r);
    report.findings.push(...found);
    report.errors += found.length;
    if (found.length) report.valid = false;
  }
  report.manifests = { files, verified };
}

/** The manifests in a file's directory, their entries for that file only. */
function verifyManifestsFor(abs: string): ManifestReport {
  const dir = dirname(abs);
  const r: ManifestReport = { manifests: [], verified: 0, problems: [] };
  for (const name of (() => { try { return readdirSync(dir).sort(); } catch { return []; } })()) {
    if (!isManifestName(name)) continue;
    const m = join(dir, name);
    const { entries } = parseManifest(m);
    if (!entries.some((e) => e.abs === abs)) continue;
    const one = verifyManifests(m, new Set([abs]));
    r.manifests.push(display(m));
    r.verified += one.verified;
    r.problems.push(...one.problems.filter((p) => p.kind !== 'malformed' || p.line === 0 || entries.some((e) => e.line === p.line)));
  }
  return r;
}
