/**
 * `svc bundle publish <bundle-path>`: POST the bundle and the SCD documents it lists
 * (found in its project) to `/api/bundles` through the typed client (endpoint and admin key:
 * `--endpoint`/`--key`, else SVC_API_ENDPOINT/SVC_API_KEY, else api.endpoint/api.key), and
 * report the server's answer as it is: the stored version and its findings, or the error
 * with every validation issue. The server is the judge; nothing is validated locally
 * beyond "this is a bundle".
 */
import { statSync } from 'node:fs';
import type { CAC } from 'cac';
import type { ControlPlane } from '@svc/client';
import { classifyDocument } from '../../src/core/scs/index.js';
import { connection, controlPlane, withApiOptions } from '../lib/api.js';
import { mask } from '../lib/config.js';
import { display, loadFile } from '../lib/documents.js';
import { CliError, EXIT, usageError } from '../lib/errors.js';
import { err, json, out } from '../lib/io.js';
import { loadProjectSet, projectRootFor } from '../lib/project-set.js';
import { formatFinding } from './validate.js';

/** A ValidationIssue as the server sent it: read field by field, none assumed present. */
type Issue = Partial<ControlPlane.components['schemas']['ValidationIssue']>;

export function registerBundlePublish(cli: CAC): void {
  withApiOptions(cli.command('bundle publish <bundle-path>', 'Send a bundle and its SCD documents to the control-plane API'))
    .option('--project <dir>', 'Where to find the bundle\'s SCD files (default: nearest .svc/, else the bundle\'s directory)')
    .option('--dry-run', 'Print the request body instead of sending it')
    .option('-o, --output <format>', 'Output format: text or json (the API\'s JSON answer; errors on stderr)', { default: 'text' })
    .example('svc bundle publish concerns/security.yaml')
    .action(async (path: string, opts: { endpoint?: unknown; key?: unknown; project?: string; dryRun?: boolean; output: string }) => {
      if (opts.output !== 'text' && opts.output !== 'json') throw usageError(`--output must be text or json, not '${opts.output}'`);
      if (isDirectory(String(path))) throw usageError(`${String(path)} is a directory: use \`svc publish ${String(path)} --tag TAG\` to publish a project (svc bundle publish sends one bundle file)`);
      const conn = connection({ endpoint: opts.endpoint, key: opts.key });
      const { endpoint, adminKey: key } = conn;
      if (!key && !opts.dryRun) throw usageError('api.key is not set: --key, SVC_API_KEY or svc config set api.key <admin key>');

      const f = loadFile(String(path));
      if (f.syntax) throw new CliError(f.syntax.map(formatFinding).join('\n'));
      if (classifyDocument(f.doc) !== 'bundle') throw new CliError(`${f.file}: not a bundle (a bundle has an id bundle:<name>, a type, imports and scds)`);
      const bundle = f.doc as Record<string, unknown>;
      const project = loadProjectSet(projectRootFor(f.abs, opts.project));
      const ids = Array.isArray(bundle.scds) ? bundle.scds.map(String) : [];
      const documents = ids.filter((id) => project.scds.has(id)).map((id) => project.scds.get(id)!.doc);
      const notLocal = ids.filter((id) => !project.scds.has(id));
      const body = { ...bundle, documents };

      if (opts.dryRun) return void json(body);
      // The typed client; an unreachable server is exit 5 (UnreachableError from cliFetch).
      const r = await controlPlane(conn).POST('/api/bundles', { body: body as unknown as ControlPlane.components['schemas']['BundleCreate'] });
      const status = r.response.status;
      const answer: unknown = r.response.ok ? r.data : r.error;
      const ok = r.response.ok;
      if (opts.output === 'json' && ok) {
        json(answer);
        return EXIT.ok;
      }
      const a = (answer && typeof answer === 'object' ? answer : {}) as Record<string, unknown>;
      if (ok) {
        out(`Published ${String(a.bundle_id ?? bundle.id)} ${String(a.version ?? bundle.version)} to ${endpoint} (HTTP ${status}): status ${String(a.status ?? '?')}, validation_status ${String(a.validation_status ?? '?')}`);
        out(`  sent ${documents.length} SCD document(s)${notLocal.length ? `; ${notLocal.length} listed SCD(s) not found locally, expected on the server: ${notLocal.join(', ')}` : ''}`);
        for (const i of (Array.isArray(a.validation_errors) ? a.validation_errors : []) as Issue[]) out(`  ${issueLine(i, 'finding')}`);
        return EXIT.ok;
      }
      err(`svc: ${endpoint} refused ${String(bundle.id)} ${String(bundle.version)}: HTTP ${status}${a.error ? ` ${String(a.error)}` : ''}${a.message ? `: ${String(a.message)}` : typeof answer === 'string' && answer ? `: ${answer.slice(0, 500)}` : ''}`);
      const details = (a.details && typeof a.details === 'object' ? a.details : {}) as Record<string, unknown>;
      for (const i of (Array.isArray(details.errors) ? details.errors : []) as Issue[]) err(`  ${issueLine(i, 'error')}`);
      if (status === 401) err(`  (the key sent was ${mask(key!)}: check --key, SVC_API_KEY or api.key)`);
      if (notLocal.length) err(`  ${notLocal.length} listed SCD(s) were not found under ${display(project.root)}: ${notLocal.join(', ')}`);
      return EXIT.failed;
    });
}

function isDirectory(p: string): boolean {
  try { return statSync(p).isDirectory(); } catch { return false; }
}

function issueLine(i: Issue, fallback: string): string {
  return `${i.severity ?? fallback} ${i.path || '/'} [${i.rule ?? '?'}] ${i.message ?? ''}${i.reference ? ` (${i.reference})` : ''}`;
}
