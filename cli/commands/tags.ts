/**
 * `svc tags list|get|create|move`: tags naming a bundle version (/api/tags). A tag is what
 * context subscribers follow; moving it recomputes its resolved bundles and notifies them.
 */
import type { CAC } from 'cac';
import type { ControlPlane } from '@svc/client';
import { call, withApiOptions } from '../lib/api.js';
import { EXIT, usageError } from '../lib/errors.js';
import { out } from '../lib/io.js';
import { emit, fields, outputFormat, table, withOutputOption } from '../lib/output.js';
import { admin, arg, clearable, pages, paging, text, withPaging, withPrefix } from '../lib/resources.js';

type Tag = ControlPlane.components['schemas']['Tag'];
type TagSummary = ControlPlane.components['schemas']['TagSummary'];
type Opts = Record<string, unknown>;

export const TAGS_SUBCOMMANDS = ['list', 'get', 'create', 'move'];

const tagName = (v: unknown) => arg(v, 'TAG');

const COLUMNS: Array<[string, (t: TagSummary) => unknown]> = [
  ['TAG', (t) => t.tag], ['BUNDLE', (t) => t.bundle_id], ['VERSION', (t) => t.bundle_version], ['UPDATED', (t) => t.updated_at], ['DESCRIPTION', (t) => t.description],
];

/** `--bundle B --version V [--description D]`, the version as typed (mri would turn 1.10 into 1.1). */
function target(opts: Opts): { bundle_id: string; bundle_version: string; description?: string | null } {
  const bundle = text(opts, 'bundle', 'bundle');
  const version = text(opts, 'version', 'version'); // as typed: text() reads a number's raw argv
  const missing = [!bundle && '--bundle', !version && '--version'].filter(Boolean);
  if (missing.length) throw usageError(`${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} required`);
  const t: { bundle_id: string; bundle_version: string; description?: string | null } = { bundle_id: withPrefix('bundle', bundle!), bundle_version: version! };
  const description = clearable(opts, 'description', 'description');
  if (description !== undefined) t.description = description;
  return t;
}

function show(t: Tag): void {
  fields([
    ['tag', t.tag], ['bundle', t.bundle_id], ['version', t.bundle_version], ['description', t.description],
    ['resolved', t.resolved_bundle_ids], ['created', t.created_at], ['updated', t.updated_at],
  ]);
}

const withTarget = <T extends { option(raw: string, description: string): T }>(c: T): T =>
  c.option('--bundle <bundle-id>', 'Bundle id, bundle:NAME (required; the bundle: prefix may be left out)')
    .option('--version <semver>', 'Published version, MAJOR.MINOR.PATCH (required)')
    .option('--description <text>', 'Description (an empty string clears it)');

export function registerTags(cli: CAC): void {
  withPaging(withOutputOption(withApiOptions(cli.command('tags list', 'List tags and the bundle version each names'))), 1000)
    .action(async (opts: Opts) => {
      const format = outputFormat(opts.output);
      const { limit, offset } = paging(opts, 1000);
      const { conn, api } = admin(opts);
      const tags = await pages(async (l, o) => {
        const r = await call(api.GET('/api/tags', { params: { query: { limit: l, offset: o } } }), conn);
        return { items: r.tags, total: r.total };
      }, 1000, limit, offset);
      emit(format, tags, () => table(tags, COLUMNS, '(no tags)'));
      return EXIT.ok;
    });

  withOutputOption(withApiOptions(cli.command('tags get <tag>', 'Show a tag and its resolved bundles (-o json adds the cached context YAML)')))
    .action(async (tag: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const { conn, api } = admin(opts);
      const t = await call(api.GET('/api/tags/{tag}', { params: { path: { tag: tagName(tag) } } }), conn);
      emit(format, t, () => show(t));
      return EXIT.ok;
    });

  withTarget(withOutputOption(withApiOptions(cli.command('tags create <tag>', 'Create a tag (NAME:LABEL, e.g. myproject:prod) naming a published bundle version'))))
    .example('svc tags create myproject:prod --bundle bundle:myproject --version 0.1.0')
    .action(async (tag: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const body = { tag: tagName(tag), ...target(opts) };
      const { conn, api } = admin(opts);
      const t = await call(api.POST('/api/tags', { body }), conn);
      emit(format, t, () => out(`tag ${t.tag} created: ${t.bundle_id} ${t.bundle_version} (${t.resolved_bundle_ids.length} bundle${t.resolved_bundle_ids.length === 1 ? '' : 's'} resolved)`));
      return EXIT.ok;
    });

  withTarget(withOutputOption(withApiOptions(cli.command('tags move <tag>', 'Point an existing tag at another bundle version (subscribers get an UPDATE)'))))
    .example('svc tags move myproject:prod --bundle bundle:myproject --version 0.2.0')
    .action(async (tag: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const name = tagName(tag);
      const body = target(opts);
      const { conn, api } = admin(opts);
      const before = await api.GET('/api/tags/{tag}', { params: { path: { tag: name } } });
      const t = await call(api.PUT('/api/tags/{tag}', { params: { path: { tag: name } }, body }), conn);
      const was = before.data ? ` (was ${before.data.bundle_id} ${before.data.bundle_version})` : '';
      emit(format, t, () => out(`tag ${t.tag} moved to ${t.bundle_id} ${t.bundle_version}${was}`));
      return EXIT.ok;
    });
}
