/**
 * `svc publish <dir> --tag NAME:LABEL [--deploy]`: a project in one command, idempotent.
 *
 * 1. The project under DIR is validated as `svc validate DIR --strict` does (errors exit 1,
 *    warnings exit 2; nothing is sent) and its release manifests are checked
 *    (cli/lib/manifest.ts; a mismatch, a missing file or a malformed line exits 1). Imports
 *    of bundles the project does not hold are resolved against the server's published
 *    versions (read first), so a project may build on bundles published before.
 * 2. Every semver bundle (DRAFT files are skipped) is read back from the API first:
 *    absent: to publish; stored with the same manifest and the same SCD documents:
 *    unchanged; stored with other content: refused (exit 1) naming the bundle, the version
 *    and the first field that differs. A refusal happens before anything is sent.
 * 3. The bundles to publish are POSTed bottom-up, in dependency order (imports first; among
 *    independent ones meta, standards, concern, domain, project), each with its SCD
 *    documents, as `svc bundle publish` sends them.
 * 4. The tag is created, or moved to the project bundle's version (a no-op when it already
 *    points there); with --deploy the project bundle version is deployed unless an active
 *    deployment already deploys exactly that version.
 *
 * Text: a table of bundles and actions, the tag and the deployment (or "nothing changed:
 * ..."); progress lines on stderr when it is a terminal. `-o json`: the command's own
 * summary document (not an API answer): {bundles, tag, deployment}.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { CAC } from 'cac';
import type { ControlPlane } from '@svc/client';
import { classifyDocument, parseImport } from '../../src/core/scs/index.js';
import { DEFAULT_SCS_VERSION } from '../../src/core/scs/versions.js';
import { compareSemver, isReleaseVersion } from '../../src/shared/semver.js';
import { ApiError, call, connection, controlPlane, str, withApiOptions, type Connection } from '../lib/api.js';
import { display, type LoadedFile } from '../lib/documents.js';
import { CliError, EXIT, usageError } from '../lib/errors.js';
import { err, json, out } from '../lib/io.js';
import { describeProblem, verifyManifests } from '../lib/manifest.js';
import { outputFormat, paint, table } from '../lib/output.js';
import { rawOption } from '../lib/argv.js';
import { collect, validateCollected } from '../lib/validation.js';
import { exitCodeOf, formatFinding } from './validate.js';

type BundleVersionDetail = ControlPlane.components['schemas']['BundleVersionDetail'];
type Deployment = ControlPlane.components['schemas']['Deployment'];
type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Bottom-up order among bundles that do not depend on each other. */
const TYPE_RANK: Record<string, number> = { meta: 0, standards: 1, concern: 2, domain: 3, project: 4 };
const TAG_RE = /^[A-Za-z0-9._-]+:[A-Za-z0-9._-]+$/;

export interface LocalBundle {
  id: string;
  version: string;
  type: string;
  file: string;
  /** The manifest as JSON would carry it. */
  manifest: Record<string, Json>;
  /** The SCD documents found in the project for the ids it lists, in `scds` order. */
  documents: Array<Record<string, Json>>;
  /** Listed SCDs with no file in the project (the server must already hold them). */
  notLocal: string[];
}

type BundleAction = 'published' | 'unchanged';
interface Summary {
  bundles: Array<{ id: string; version: string; type: string; action: BundleAction; validation_status?: string }>;
  skipped: Array<{ file: string; id: string; reason: string }>;
  tag: { tag: string; bundle_id: string; bundle_version: string; action: 'created' | 'moved' | 'unchanged'; previous?: string };
  deployment: { deployment_id: string; project_bundles: string[]; status: string; action: 'deployed' | 'unchanged' } | null;
}

const asJson = (v: unknown): Json => JSON.parse(JSON.stringify(v ?? null)) as Json;
const ref = (b: { id: string; version: string }) => `${b.id}:${b.version}`;

/** The first path where `a` (local) and `b` (stored) differ, or null. Object key order is ignored. */
function firstDifference(a: Json | undefined, b: Json | undefined, path = ''): string | null {
  if (a === b) return null;
  if (a === undefined || b === undefined || a === null || b === null || typeof a !== 'object' || typeof b !== 'object' || Array.isArray(a) !== Array.isArray(b)) {
    return JSON.stringify(a) === JSON.stringify(b) ? null : path || '/';
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const d = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (d) return d;
    }
    return null;
  }
  const ao = a as Record<string, Json>;
  const bo = b as Record<string, Json>;
  for (const k of [...Object.keys(ao), ...Object.keys(bo).filter((k) => !(k in ao))]) {
    const d = firstDifference(ao[k], bo[k], path ? `${path}.${k}` : k);
    if (d) return d;
  }
  return null;
}

const valueAt = (v: Json | undefined, path: string): Json | undefined => {
  let cur: Json | undefined = v;
  for (const seg of path.split(/\.|(?=\[)/).filter(Boolean)) {
    if (cur === null || cur === undefined || typeof cur !== 'object') return undefined;
    const m = /^\[(\d+)\]$/.exec(seg);
    cur = m ? (cur as Json[])[Number(m[1])] : (cur as Record<string, Json>)[seg];
  }
  return cur;
};

const shown = (v: Json | undefined) => {
  const s = v === undefined ? '(absent)' : JSON.stringify(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
};

/** What differs between a local bundle and the version the server stores, or null when identical. */
export function compareStored(local: LocalBundle, stored: BundleVersionDetail): string | null {
  const m = firstDifference(local.manifest, asJson(stored.manifest));
  if (m) return `${m} (published ${shown(valueAt(asJson(stored.manifest), m))}, local ${shown(valueAt(local.manifest, m))})`;
  const storedDocs = new Map((stored.documents ?? []).map((d) => [String(d.id), asJson(d)]));
  for (const doc of local.documents) {
    const id = String(doc.id);
    const s = storedDocs.get(id);
    const d = firstDifference(doc, s);
    if (d) return `the SCD ${id}: ${d === '/' ? 'content' : d} (published ${shown(d === '/' ? s : valueAt(s, d))}, local ${shown(d === '/' ? doc : valueAt(doc, d))})`;
  }
  return null;
}

/** The project's bundles (semver ones; DRAFT files are skipped) with their local SCD documents. */
function localBundles(files: LoadedFile[], scsVersion: string): { bundles: LocalBundle[]; skipped: Summary['skipped'] } {
  const scds = new Map<string, Record<string, Json>>();
  const bundleFiles: LoadedFile[] = [];
  for (const f of files) {
    if (f.syntax) continue;
    const kind = classifyDocument(f.doc);
    if (kind === 'scd') scds.set(String((f.doc as { id: unknown }).id), asJson(f.doc) as Record<string, Json>);
    else if (kind === 'bundle') bundleFiles.push(f);
  }
  const bundles = new Map<string, LocalBundle>();
  const skipped: Summary['skipped'] = [];
  for (const f of bundleFiles) {
    const doc = asJson(f.doc) as Record<string, Json>;
    // The API judges a bundle by the rules of its schema_version (default 0.3.0): a project
    // that declares another SCS version says so on each bundle that does not, so that the
    // API's verdict is validate's.
    if (doc.schema_version === undefined && scsVersion !== DEFAULT_SCS_VERSION) doc.schema_version = scsVersion;
    const id = String(doc.id);
    const version = String(doc.version);
    if (!isReleaseVersion(version)) {
      skipped.push({ file: f.file, id, reason: version === 'DRAFT' ? 'DRAFT (lock it with svc bundle version)' : `version '${version}' is not semver` });
      continue;
    }
    const ids = Array.isArray(doc.scds) ? doc.scds.map(String) : [];
    const b: LocalBundle = {
      id, version, type: String(doc.type), file: f.file, manifest: doc,
      documents: ids.filter((s) => scds.has(s)).map((s) => scds.get(s)!),
      notLocal: ids.filter((s) => !scds.has(s)),
    };
    const twin = bundles.get(ref(b));
    if (twin) {
      const d = firstDifference(twin.manifest, b.manifest);
      if (d) throw new CliError(`${ref(b)} is in two files with different content (${twin.file}, ${f.file}: ${d} differs)`);
      continue;
    }
    bundles.set(ref(b), b);
  }
  return { bundles: [...bundles.values()], skipped };
}

/**
 * Dependency order (imports first), bottom-up by type among independent bundles. An
 * import names a local bundle when pinned to a local version, or unpinned and the name is
 * local (its highest local version); other imports are the server's to resolve. A cycle is
 * a CliError naming it.
 */
export function publishOrder(bundles: LocalBundle[]): LocalBundle[] {
  const byRef = new Map(bundles.map((b) => [ref(b), b]));
  const highest = new Map<string, LocalBundle>();
  for (const b of bundles) {
    const h = highest.get(b.id);
    if (!h || compareSemver(b.version, h.version) > 0) highest.set(b.id, b);
  }
  const deps = new Map<string, LocalBundle[]>();
  for (const b of bundles) {
    const imports = Array.isArray(b.manifest.imports) ? b.manifest.imports.map(String) : [];
    deps.set(ref(b), imports.map((i) => {
      const p = parseImport(i);
      if (!p) return undefined;
      return p.version ? byRef.get(`${p.id}:${p.version}`) : highest.get(p.id);
    }).filter((x): x is LocalBundle => !!x));
  }
  const rank = (b: LocalBundle) => [TYPE_RANK[b.type] ?? 5, b.id, b.version] as const;
  const before = (a: LocalBundle, b: LocalBundle) => {
    const [ra, ia, va] = rank(a);
    const [rb, ib, vb] = rank(b);
    return ra !== rb ? ra - rb : ia !== ib ? (ia < ib ? -1 : 1) : compareSemver(va, vb);
  };
  const order: LocalBundle[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (b: LocalBundle, stack: LocalBundle[]) => {
    const s = state.get(ref(b));
    if (s === 'done') return;
    if (s === 'visiting') {
      const cycle = [...stack.slice(stack.indexOf(b)), b].map(ref).join(' -> ');
      throw new CliError(`import cycle: ${cycle}`);
    }
    state.set(ref(b), 'visiting');
    for (const d of [...deps.get(ref(b))!].sort(before)) visit(d, [...stack, b]);
    state.set(ref(b), 'done');
    order.push(b);
  };
  for (const b of [...bundles].sort(before)) visit(b, []);
  return order;
}

/** The project bundle the tag names: the one project bundle id's highest version. */
function projectBundle(bundles: LocalBundle[], dir: string): LocalBundle {
  const projects = bundles.filter((b) => b.type === 'project');
  const ids = [...new Set(projects.map((b) => b.id))];
  if (ids.length === 0) throw new CliError(`${dir} holds no project bundle (type: project) with a semver version to tag`);
  if (ids.length > 1) throw new CliError(`${dir} holds several project bundles (${ids.join(', ')}): publish one project per directory`);
  return projects.reduce((a, b) => (compareSemver(b.version, a.version) > 0 ? b : a));
}

async function storedVersion(conn: Connection, b: { id: string; version: string }): Promise<BundleVersionDetail | null> {
  try {
    return await call(controlPlane(conn).GET('/api/bundles/{bundle_id}/versions/{version}', { params: { path: { bundle_id: b.id, version: b.version } } }), conn) as BundleVersionDetail;
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  }
}

/**
 * The bundles the project imports but does not hold (no bundle of that id, or not at the
 * pinned version) that the server has published, with their SCD documents, as validation
 * context: a project may build on bundles published before, by itself or by someone else.
 * An unpinned import resolves to the server's highest active release version, as the API
 * resolves it. Imports the server does not hold either are left to validation to report.
 */
async function publishedImports(conn: Connection, files: LoadedFile[]): Promise<LoadedFile[]> {
  const local = new Map<string, Set<string>>();
  const importing: unknown[] = [];
  for (const f of files) {
    if (f.syntax || classifyDocument(f.doc) !== 'bundle') continue;
    const doc = f.doc as { id?: unknown; version?: unknown; imports?: unknown };
    const id = String(doc.id);
    if (!local.has(id)) local.set(id, new Set());
    local.get(id)!.add(String(doc.version));
    if (Array.isArray(doc.imports)) importing.push(...doc.imports);
  }
  const wanted = new Map<string, { id: string; version: string | null }>();
  for (const i of importing) {
    const p = typeof i === 'string' ? parseImport(i) : null;
    if (!p || (local.has(p.id) && (!p.version || local.get(p.id)!.has(p.version)))) continue;
    wanted.set(`${p.id}:${p.version ?? ''}`, { id: p.id, version: p.version });
  }
  if (!wanted.size) return [];
  let releases: Map<string, string> | null = null;
  const highestRelease = async (id: string): Promise<string | undefined> => {
    if (!releases) {
      releases = new Map();
      for (let offset = 0; ; offset += 100) {
        const page = await call(controlPlane(conn).GET('/api/bundles', { params: { query: { limit: 100, offset } } }), conn);
        for (const b of page.bundles) {
          const h = releases.get(b.id);
          if (b.is_active && isReleaseVersion(b.version) && (!h || compareSemver(b.version, h) > 0)) releases.set(b.id, b.version);
        }
        if (page.bundles.length < 100 || offset + 100 >= page.total) break;
      }
    }
    return releases.get(id);
  };
  const out: LoadedFile[] = [];
  for (const w of wanted.values()) {
    const version = w.version ?? (await highestRelease(w.id));
    if (!version) continue;
    const stored = await storedVersion(conn, { id: w.id, version });
    if (!stored) continue;
    const where = `${ref({ id: w.id, version })} (published)`;
    out.push({ file: where, abs: where, doc: asJson(stored.manifest) });
    for (const d of stored.documents ?? []) out.push({ file: `${String(d.id)} in ${where}`, abs: `${String(d.id)} in ${where}`, doc: asJson(d) });
  }
  return out;
}

/** Every active deployment, newest first. */
async function activeDeployments(conn: Connection): Promise<Deployment[]> {
  const all: Deployment[] = [];
  for (let offset = 0; ; offset += 100) {
    const page = await call(controlPlane(conn).GET('/api/deployments', { params: { query: { status: 'active', limit: 100, offset } } }), conn);
    all.push(...page.deployments);
    if (page.deployments.length < 100 || all.length >= page.total) return all;
  }
}

export function registerPublish(cli: CAC): void {
  withApiOptions(cli.command('publish <dir>', 'Publish a project: validate it strictly, publish its bundles bottom-up, move a tag, optionally deploy'))
    .option('-o, --output <format>', 'Output format: text, or json: this command\'s own summary {bundles, tag, deployment} (not an API answer)', { default: 'text' })
    .option('--tag <name:label>', 'The tag to point at the project bundle\'s version, e.g. med-adherence:prod (required)')
    .option('--deploy', 'Deploy the project bundle\'s version too (unless an active deployment already deploys it)')
    .option('--environment <env>', 'Not supported: the API has no environments (use one tag per environment)')
    .example('svc publish . --tag med-adherence:prod --deploy')
    .example('svc publish ./med-adherence --tag med-adherence:staging -o json')
    .action(async (dirArg: unknown, opts: { tag?: unknown; deploy?: boolean; environment?: unknown; endpoint?: unknown; key?: unknown; output?: unknown }) => {
      const format = outputFormat(opts.output);
      if (opts.environment !== undefined) {
        throw usageError('--environment is not supported: the control plane has no environments (POST /api/deploy takes project bundle versions); use a tag per environment, e.g. --tag NAME:staging and --tag NAME:prod');
      }
      const tag = rawOption('tag') ?? str(opts.tag);
      if (!tag) throw usageError('--tag <name:label> is required (for example --tag med-adherence:prod)');
      if (!TAG_RE.test(tag) || tag.length > 256) throw usageError(`--tag '${tag}' is not a tag name: <name>:<label>, letters, digits, '.', '_' and '-' (for example med-adherence:prod)`);
      const dir = String(dirArg);
      let st;
      try { st = statSync(resolve(dir)); } catch { throw new CliError(`${dir}: no such directory`, EXIT.unreadable); }
      if (!st.isDirectory()) throw usageError(`${dir} is not a directory: svc publish takes a project directory (svc bundle publish FILE sends one bundle)`);
      const conn = connection({ endpoint: opts.endpoint, key: opts.key });
      const progress = (line: string) => { if (process.stderr.isTTY) err(paint(line, 'dim', process.stderr)); };

      // 1. Strict validation and release manifests: nothing is sent unless both pass.
      // Imports of bundles published before (not in the project) are read from the server.
      const { files } = collect([dir]);
      const published = await publishedImports(conn, files);
      const report = validateCollected({ files, skipped: [], dirs: 1 }, { strict: true, alone: false, paths: [dir], published });
      if (!report.valid) {
        for (const f of report.findings) err(formatFinding(f));
        const code = exitCodeOf(report);
        throw new CliError(`${dir} does not validate strictly (${report.errors} error(s), ${report.warnings} warning(s)): nothing was published (svc validate ${dir} --strict)`, code === EXIT.ok ? EXIT.failed : code);
      }
      const manifests = verifyManifests(dir);
      if (manifests.problems.length) {
        for (const p of manifests.problems) err(`svc: ${describeProblem(p)}`);
        throw new CliError(`release manifest check failed (${manifests.problems.length} problem(s)): nothing was published`);
      }
      if (manifests.manifests.length) progress(`release manifests ${manifests.manifests.join(', ')}: ${manifests.verified} digest(s) verified`);

      // 2. What the server holds, before anything is sent.
      const { bundles, skipped } = localBundles(files, report.rule_set.version);
      const order = publishOrder(bundles);
      const project = projectBundle(bundles, dir);
      const plan: Array<{ b: LocalBundle; stored: BundleVersionDetail | null }> = [];
      for (const b of order) plan.push({ b, stored: await storedVersion(conn, b) });
      const conflicts = plan.flatMap(({ b, stored }) => {
        const d = stored && compareStored(b, stored);
        return d ? [`${b.id} ${b.version} (${b.file}) is already published with other content: ${d}`] : [];
      });
      if (conflicts.length) {
        for (const c of conflicts.slice(1)) err(`svc: ${c}`);
        throw new CliError(`${conflicts[0]}; published versions are immutable: bump the version (svc bundle version ${plan.find((p) => conflicts[0].startsWith(`${p.b.id} ${p.b.version} `))?.b.file ?? 'FILE'} --version X.Y.Z). Nothing was published`);
      }

      // 3. Publish bottom-up.
      const summary: Summary = { bundles: [], skipped, tag: { tag, bundle_id: project.id, bundle_version: project.version, action: 'unchanged' }, deployment: null };
      for (const { b, stored } of plan) {
        if (stored) {
          progress(`publishing ${b.id} ${b.version} ... unchanged`);
          summary.bundles.push({ id: b.id, version: b.version, type: b.type, action: 'unchanged', validation_status: stored.validation_status });
          continue;
        }
        const body = { ...b.manifest, documents: b.documents } as unknown as ControlPlane.components['schemas']['BundleCreate'];
        let created: ControlPlane.components['schemas']['BundleCreated'];
        try {
          created = await call(controlPlane(conn).POST('/api/bundles', { body }), conn);
        } catch (e) {
          const done = summary.bundles.filter((x) => x.action === 'published').map((x) => `${x.id} ${x.version}`);
          err(`svc: publishing ${b.id} ${b.version} (${b.file}) failed${done.length ? ` after publishing ${done.join(', ')}` : ''}; no tag was moved`);
          throw e;
        }
        progress(`publishing ${b.id} ${b.version} ... published (${created.validation_status})`);
        summary.bundles.push({ id: b.id, version: b.version, type: b.type, action: 'published', validation_status: created.validation_status });
      }

      // 4. The tag, then the deployment.
      const api = controlPlane(conn);
      let current: ControlPlane.components['schemas']['Tag'] | null = null;
      try {
        current = await call(api.GET('/api/tags/{tag}', { params: { path: { tag } } }), conn);
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 404)) throw e;
      }
      if (!current) {
        await call(api.POST('/api/tags', { body: { tag, bundle_id: project.id, bundle_version: project.version } }), conn);
        summary.tag.action = 'created';
      } else if (current.bundle_id !== project.id || current.bundle_version !== project.version) {
        await call(api.PUT('/api/tags/{tag}', { params: { path: { tag } }, body: { bundle_id: project.id, bundle_version: project.version } }), conn);
        summary.tag.action = 'moved';
        summary.tag.previous = `${current.bundle_id}:${current.bundle_version}`;
      }
      progress(`tag ${tag} -> ${ref(project)} ... ${summary.tag.action}`);
      if (opts.deploy) {
        const pinned = ref(project);
        const existing = (await activeDeployments(conn)).find((d) => d.project_bundles.includes(pinned));
        if (existing) {
          summary.deployment = { deployment_id: existing.deployment_id, project_bundles: existing.project_bundles, status: existing.status, action: 'unchanged' };
        } else {
          const d = await call(api.POST('/api/deploy', { body: { project_bundles: [{ id: project.id, version: project.version }] } }), conn);
          summary.deployment = { deployment_id: d.deployment_id, project_bundles: d.project_bundles, status: d.status, action: 'deployed' };
        }
        progress(`deploy ${pinned} ... ${summary.deployment.action}`);
      }

      if (format === 'json') return void json(summary);
      const changed = summary.bundles.some((b) => b.action !== 'unchanged') || summary.tag.action !== 'unchanged' || summary.deployment?.action === 'deployed';
      if (!changed) {
        const dep = summary.deployment ? `, deployment ${summary.deployment.deployment_id} already active` : '';
        out(`nothing changed: ${summary.bundles.length} bundles unchanged, tag ${tag} already at ${ref(project)}${dep}`);
      } else {
        table(summary.bundles, [['bundle', (b) => b.id], ['version', (b) => b.version], ['type', (b) => b.type], ['action', (b) => b.action], ['validation', (b) => b.validation_status]]);
        out(`tag ${tag} -> ${ref(project)} (${summary.tag.action}${summary.tag.previous ? `, was ${summary.tag.previous}` : ''})`);
        if (summary.deployment) out(`deployment ${summary.deployment.deployment_id} ${summary.deployment.status} (${summary.deployment.action}): ${summary.deployment.project_bundles.join(', ')}`);
      }
      for (const s of skipped) err(`svc: skipped ${display(resolve(s.file))} (${s.id}): ${s.reason}`);
      return EXIT.ok;
    });
}
