/**
 * `svc mcp create|list|get|update|delete`: MCP servers (tool connectors) and their
 * accountable owners (/api/mcp-servers). Delete is the API's hard delete; to retire a
 * server and keep its record, `svc mcp update ID --status deprecated`.
 */
import type { CAC } from 'cac';
import type { ControlPlane } from '@svc/client';
import { call, withApiOptions } from '../lib/api.js';
import { EXIT, usageError } from '../lib/errors.js';
import { out } from '../lib/io.js';
import { emit, fields, outputFormat, table, withOutputOption } from '../lib/output.js';
import { admin, arg, clearable, pages, paging, text, withPaging } from '../lib/resources.js';

type Server = ControlPlane.components['schemas']['McpServer'];
type Status = ControlPlane.components['schemas']['McpServerStatus'];
type Opts = Record<string, unknown>;

export const MCP_SUBCOMMANDS = ['create', 'list', 'get', 'update', 'delete'];
const STATUSES = ['active', 'inactive', 'deprecated'];

const serverId = (v: unknown) => arg(v, 'SERVER_ID');
function status(opts: Opts): Status | undefined {
  const s = text(opts, 'status', 'status');
  if (s !== undefined && !STATUSES.includes(s)) throw usageError(`--status must be ${STATUSES.join(', ')}, not '${s}'`);
  return s as Status | undefined;
}

const COLUMNS: Array<[string, (s: Server) => unknown]> = [
  ['SERVER_ID', (s) => s.server_id], ['NAME', (s) => s.name], ['STATUS', (s) => s.status], ['OWNER', (s) => s.owner_name],
  ['CREATED', (s) => s.created_at], ['DESCRIPTION', (s) => s.description],
];

function show(s: Server): void {
  fields([
    ['server', s.server_id], ['name', s.name], ['status', s.status], ['description', s.description],
    ['owner', s.owner_name ? `${s.owner_name}${s.owner_verified ? '' : ' (not verified)'}` : null],
    ['created', `${s.created_at} by ${s.created_by}`], ['updated', s.updated_at],
  ]);
}

export function registerMcp(cli: CAC): void {
  withOutputOption(withApiOptions(cli.command('mcp create', 'Register an MCP server (its id, mcp_..., is generated)')))
    .option('--name <name>', 'Name (required; names need not be unique)')
    .option('--description <text>', 'Description')
    .option('--owner <name>', 'Accountable human owner')
    .option('--created-by <who>', 'Recorded as created_by (default admin)')
    .example('svc mcp create --name github-tools --owner "Alice Example" --description "GitHub connector"')
    .action(async (opts: Opts) => {
      const format = outputFormat(opts.output);
      const name = text(opts, 'name', 'name');
      if (!name) throw usageError('--name is required');
      const body: ControlPlane.components['schemas']['McpServerCreate'] = { name };
      const description = text(opts, 'description', 'description');
      if (description !== undefined) body.description = description;
      const ownerName = text(opts, 'owner', 'owner');
      if (ownerName) body.owner_name = ownerName;
      const createdBy = text(opts, 'createdBy', 'created-by');
      if (createdBy) body.created_by = createdBy;
      const { conn, api } = admin(opts);
      const s = await call(api.POST('/api/mcp-servers', { body }), conn);
      emit(format, s, () => out(`mcp server ${s.server_id} created (${s.name}, ${s.status})`));
      return EXIT.ok;
    });

  withPaging(withOutputOption(withApiOptions(cli.command('mcp list', 'List MCP servers'))), 100)
    .option('--status <status>', 'active, inactive or deprecated')
    .action(async (opts: Opts) => {
      const format = outputFormat(opts.output);
      const st = status(opts);
      const { limit, offset } = paging(opts, 100);
      const { conn, api } = admin(opts);
      const servers = await pages(async (l, o) => {
        const r = await call(api.GET('/api/mcp-servers', { params: { query: { status: st, limit: l, offset: o } } }), conn);
        return { items: r.servers, total: r.total };
      }, 100, limit, offset);
      emit(format, servers, () => table(servers, COLUMNS, '(no MCP servers)'));
      return EXIT.ok;
    });

  withOutputOption(withApiOptions(cli.command('mcp get <server-id>', 'Show one MCP server')))
    .action(async (id: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const { conn, api } = admin(opts);
      const s = await call(api.GET('/api/mcp-servers/{server_id}', { params: { path: { server_id: serverId(id) } } }), conn);
      emit(format, s, () => show(s));
      return EXIT.ok;
    });

  withOutputOption(withApiOptions(cli.command('mcp update <server-id>', 'Change an MCP server: name, description, status, owner')))
    .option('--name <name>', 'New name')
    .option('--description <text>', 'New description (an empty string clears it)')
    .option('--status <status>', 'active, inactive or deprecated (any status from any status)')
    .option('--owner <name>', 'New accountable owner')
    .example('svc mcp update mcp_0123... --status deprecated')
    .action(async (id: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const body: ControlPlane.components['schemas']['McpServerUpdate'] = {};
      const name = text(opts, 'name', 'name');
      if (name !== undefined) body.name = name;
      const description = clearable(opts, 'description', 'description');
      if (description !== undefined) body.description = description;
      const st = status(opts);
      if (st) body.status = st;
      const ownerName = text(opts, 'owner', 'owner');
      if (ownerName) body.owner_name = ownerName;
      if (!Object.keys(body).length) throw usageError('nothing to change: give --name, --description, --status or --owner');
      const { conn, api } = admin(opts);
      const s = await call(api.PUT('/api/mcp-servers/{server_id}', { params: { path: { server_id: serverId(id) } }, body }), conn);
      emit(format, s, () => out(`mcp server ${s.server_id} updated (${Object.keys(body).join(', ')})`));
      return EXIT.ok;
    });

  withOutputOption(withApiOptions(cli.command('mcp delete <server-id>', 'Delete an MCP server (its record is gone; to keep it, update --status deprecated)')))
    .action(async (id: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const { conn, api } = admin(opts);
      const s = await call(api.DELETE('/api/mcp-servers/{server_id}', { params: { path: { server_id: serverId(id) } } }), conn);
      emit(format, s, () => out(`mcp server ${s.server_id} deleted (${s.name})`));
      return EXIT.ok;
    });
}
