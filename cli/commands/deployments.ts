/**
 * `svc deployments list|get`: content deployments (/api/deployments), newest first. Deploying
 * is `svc publish DIR --deploy` (or POST /api/deploy).
 */
import type { CAC } from 'cac';
import type { ControlPlane } from '@svc/client';
import { call, withApiOptions } from '../lib/api.js';
import { EXIT, usageError } from '../lib/errors.js';
import { emit, fields, outputFormat, table, withOutputOption } from '../lib/output.js';
import { admin, arg, pages, paging, text, withPaging } from '../lib/resources.js';

type Deployment = ControlPlane.components['schemas']['Deployment'];
type Opts = Record<string, unknown>;

export const DEPLOYMENTS_SUBCOMMANDS = ['list', 'get'];

const COLUMNS: Array<[string, (d: Deployment) => unknown]> = [
  ['DEPLOYMENT_ID', (d) => d.deployment_id], ['STATUS', (d) => d.status], ['PROJECT_BUNDLES', (d) => d.project_bundles],
  ['BUNDLES', (d) => d.resolved_bundles.length], ['CREATED', (d) => d.created_at], ['SUPERSEDED_BY', (d) => d.superseded_by],
];

export function registerDeployments(cli: CAC): void {
  withPaging(withOutputOption(withApiOptions(cli.command('deployments list', 'List deployments, newest first'))), 1000)
    .option('--status <status>', 'active or superseded')
    .action(async (opts: Opts) => {
      const format = outputFormat(opts.output);
      const status = text(opts, 'status', 'status');
      if (status !== undefined && status !== 'active' && status !== 'superseded') throw usageError(`--status must be active or superseded, not '${status}'`);
      const { limit, offset } = paging(opts, 1000);
      const { conn, api } = admin(opts);
      const list = await pages(async (l, o) => {
        const r = await call(api.GET('/api/deployments', { params: { query: { status, limit: l, offset: o } } }), conn);
        return { items: r.deployments, total: r.total };
      }, 1000, limit, offset);
      emit(format, list, () => table(list, COLUMNS, '(no deployments)'));
      return EXIT.ok;
    });

  withOutputOption(withApiOptions(cli.command('deployments get <deployment-id>', 'Show one deployment and the bundles it resolved')))
    .action(async (id: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const { conn, api } = admin(opts);
      const d = await call(api.GET('/api/deployments/{deployment_id}', { params: { path: { deployment_id: arg(id, 'DEPLOYMENT_ID') } } }), conn);
      emit(format, d, () => fields([
        ['deployment', d.deployment_id], ['status', d.status], ['superseded by', d.superseded_by], ['created', d.created_at],
        ['project', d.project_bundles], ['resolved', d.resolved_bundles],
      ]));
      return EXIT.ok;
    });
}
