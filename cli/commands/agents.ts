/**
 * `svc agents create|list|get|update|suspend|activate|delete`: agents of the running system
 * through the control-plane API (/api/agents). Suspend and activate set `status` with PUT;
 * delete is the API's revocation (DELETE: status `revoked`, every active key revoked, the
 * record kept for the audit trail).
 */
import type { CAC } from 'cac';
import type { ControlPlane } from '@svc/client';
import { ApiError, call, withApiOptions } from '../lib/api.js';
import { EXIT, usageError } from '../lib/errors.js';
import { err, out } from '../lib/io.js';
import { emit, fields, outputFormat, table, withOutputOption } from '../lib/output.js';
import { admin, agentId, clearable, pages, paging, text, texts, withPaging, withPrefix } from '../lib/resources.js';

type Agent = ControlPlane.components['schemas']['Agent'];
type ApiKey = ControlPlane.components['schemas']['ApiKey'];
type Opts = Record<string, unknown>;

export const AGENTS_SUBCOMMANDS = ['create', 'list', 'get', 'update', 'suspend', 'activate', 'delete'];

/** The lists `agents update` edits by adding and removing items. */
const LIST_EDITS = [
  { field: 'allowed_intents', flag: 'intent', addKey: 'addIntent', removeKey: 'removeIntent' },
  { field: 'overrides', flag: 'override', addKey: 'addOverride', removeKey: 'removeOverride' },
  { field: 'restrictions', flag: 'restriction', addKey: 'addRestriction', removeKey: 'removeRestriction' },
] as const;

/** How many times `agents update` reads and writes again when the agent changed in between (412). */
const UPDATE_ATTEMPTS = 5;

const owner = (a: Agent) => (a.owner_name ? `${a.owner_id} (${a.owner_name})` : a.owner_id);

const AGENT_COLUMNS: Array<[string, (a: Agent) => unknown]> = [
  ['ID', (a) => a.agent_id], ['NAME', (a) => a.name], ['ROLE', (a) => a.role_id], ['STATUS', (a) => a.status],
  ['INTENTS', (a) => a.allowed_intents], ['OWNER', (a) => a.owner_id],
];

export const KEY_COLUMNS: Array<[string, (k: ApiKey) => unknown]> = [
  ['KEY_ID', (k) => k.key_id], ['PREFIX', (k) => k.key_prefix], ['STATUS', (k) => k.status], ['EXPIRES', (k) => k.expires_at],
  ['LAST_USED', (k) => k.last_used_at], ['SCOPES', (k) => (k.scopes ? k.scopes : 'all')], ['NAME', (k) => k.name],
  ['ROTATION', (k) => (k.rotated_to ? `-> ${k.rotated_to}` : k.rotated_from ? `<- ${k.rotated_from}` : '')],
];

function showAgent(a: Agent): void {
  fields([
    ['agent', a.agent_id], ['name', a.name], ['role', a.role_id], ['status', a.status], ['intents', a.allowed_intents],
    ['description', a.description], ['owner', `${owner(a)}${a.owner_verified ? '' : ' (not verified)'}`],
    ['overrides', a.overrides], ['restrictions', a.restrictions], ['created', `${a.created_at} by ${a.created_by}`], ['updated', a.updated_at],
  ]);
}

export function registerAgents(cli: CAC): void {
  withOutputOption(withApiOptions(cli.command('agents create <agent-id>', 'Register an agent (AGENT_ID: agent:NAME; the agent: prefix may be left out)')))
    .option('--name <name>', 'Display name (required)')
    .option('--role <role>', 'Role id, role:NAME (required; the role: prefix may be left out)')
    .option('--intent <task-type>', 'A task type the agent may request (repeat for several; required, at least one)')
    .option('--owner <owner-id>', 'Accountable owner id (default: the organisation admin owner)')
    .option('--owner-name <name>', "The owner's display name")
    .option('--description <text>', 'Description')
    .option('--suspended', 'Register it suspended (its keys do not authenticate until `svc agents activate`)')
    .option('--override <scd-id>', 'An SCD always added to its context (repeatable)')
    .option('--restriction <scd-id>', 'An SCD never included in its context (repeatable)')
    .option('--created-by <who>', 'Recorded as created_by (default admin)')
    .example('svc agents create agent:reviewer --name Reviewer --role role:security --intent code_review --intent triage --owner alice')
    .action(async (id: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const name = text(opts, 'name', 'name');
      const role = text(opts, 'role', 'role');
      const intents = texts(opts, 'intent', 'intent');
      const missing = [!name && '--name', !role && '--role', !intents.length && '--intent'].filter(Boolean);
      if (missing.length) throw usageError(`${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} required`);
      const body: ControlPlane.components['schemas']['AgentCreate'] = { agent_id: agentId(id), name: name!, role_id: withPrefix('role', role!), allowed_intents: [...new Set(intents)] };
      const ownerId = text(opts, 'owner', 'owner');
      if (ownerId) body.owner_id = ownerId;
      const ownerName = text(opts, 'ownerName', 'owner-name');
      if (ownerName) body.owner_name = ownerName;
      const description = text(opts, 'description', 'description');
      if (description !== undefined) body.description = description;
      if (opts.suspended) body.status = 'suspended';
      const overrides = texts(opts, 'override', 'override');
      if (overrides.length) body.overrides = overrides;
      const restrictions = texts(opts, 'restriction', 'restriction');
      if (restrictions.length) body.restrictions = restrictions;
      const createdBy = text(opts, 'createdBy', 'created-by');
      if (createdBy) body.created_by = createdBy;
      const { conn, api } = admin(opts);
      const a = await call(api.POST('/api/agents', { body }), conn);
      emit(format, a, () => out(`agent ${a.agent_id} created (${a.role_id}, ${a.status}, intents ${a.allowed_intents.join(',') || '-'}, owner ${owner(a)})`));
      return EXIT.ok;
    });

  withPaging(withOutputOption(withApiOptions(cli.command('agents list', 'List agents (revoked ones included: they are kept for the audit trail)'))), 1000)
    .option('--status <status>', 'active, suspended, revoked, or inactive (suspended or revoked)')
    .option('--role <role>', 'Only agents of this role (role:NAME)')
    .example('svc agents list --status active -o json')
    .action(async (opts: Opts) => {
      const format = outputFormat(opts.output);
      const status = text(opts, 'status', 'status');
      if (status !== undefined && !['active', 'suspended', 'revoked', 'inactive'].includes(status)) throw usageError(`--status must be active, suspended, revoked or inactive, not '${status}'`);
      const role = text(opts, 'role', 'role');
      const { limit, offset } = paging(opts, 1000);
      const { conn, api } = admin(opts);
      const agents = await pages(async (l, o) => {
        const r = await call(api.GET('/api/agents', { params: { query: { status: status as 'active' | undefined, role_id: role && withPrefix('role', role), limit: l, offset: o } } }), conn);
        return { items: r.agents, total: r.total };
      }, 1000, limit, offset);
      emit(format, agents, () => table(agents, AGENT_COLUMNS, '(no agents)'));
      return EXIT.ok;
    });

  withOutputOption(withApiOptions(cli.command('agents get <agent-id>', 'Show one agent and every key ever issued to it (never a key itself)')))
    .action(async (id: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const { conn, api } = admin(opts);
      const a = await call(api.GET('/api/agents/{agent_id}', { params: { path: { agent_id: agentId(id) } } }), conn);
      emit(format, a, () => {
        showAgent(a);
        out();
        out('keys:');
        table(a.api_keys, KEY_COLUMNS, '(no keys: svc keys create)');
      });
      return EXIT.ok;
    });

  withOutputOption(withApiOptions(cli.command('agents update <agent-id>', 'Change an agent: intents, SCD overrides and restrictions, name, description, owner')))
    .option('--add-intent <task-type>', 'Allow one more task type (repeatable; one already allowed is a no-op)')
    .option('--remove-intent <task-type>', 'Stop allowing a task type (repeatable; one not allowed is a no-op)')
    .option('--add-override <scd-id>', 'Always add this SCD to its context (repeatable)')
    .option('--remove-override <scd-id>', 'Drop an override (repeatable)')
    .option('--add-restriction <scd-id>', 'Never include this SCD in its context (repeatable; a restriction wins over an override)')
    .option('--remove-restriction <scd-id>', 'Drop a restriction (repeatable)')
    .option('--name <name>', 'New display name')
    .option('--description <text>', 'New description (an empty string clears it)')
    .option('--owner <owner-id>', 'Reassign to another owner at once (recorded as a forced ownership transfer)')
    .option('--owner-name <name>', "The owner's display name")
    .option('--role <role>', 'Move it to another role (role:NAME): from its next request it receives that role\'s content')
    .example('svc agents update agent:reviewer --add-intent deploy_staging --remove-intent triage')
    .action(async (id: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const edits = LIST_EDITS.map((e) => ({ ...e, add: texts(opts, e.addKey, `add-${e.flag}`), remove: texts(opts, e.removeKey, `remove-${e.flag}`) }));
      for (const e of edits) {
        const both = e.add.filter((t) => e.remove.includes(t));
        if (both.length) throw usageError(`--add-${e.flag} and --remove-${e.flag} both name ${both.join(', ')}`);
      }
      const body: ControlPlane.components['schemas']['AgentUpdate'] = {};
      const name = text(opts, 'name', 'name');
      if (name !== undefined) body.name = name;
      const role = text(opts, 'role', 'role');
      if (role !== undefined) body.role_id = withPrefix('role', role);
      const description = clearable(opts, 'description', 'description');
      if (description !== undefined) body.description = description;
      const ownerId = text(opts, 'owner', 'owner');
      if (ownerId) body.owner_id = ownerId;
      const ownerName = text(opts, 'ownerName', 'owner-name');
      if (ownerName) body.owner_name = ownerName;
      const listEdits = edits.filter((e) => e.add.length || e.remove.length);
      if (!listEdits.length && !Object.keys(body).length) throw usageError('nothing to change: give --add-/--remove-intent, --add-/--remove-override, --add-/--remove-restriction, --name, --role, --description, --owner or --owner-name');
      const agent_id = agentId(id);
      const { conn, api } = admin(opts);
      // Read, compute, write: the API replaces each list wholesale, so list edits are written
      // with If-Match (the ETag read): when the agent changed in between (412), read again and
      // recompute, rather than overwrite that change.
      for (let attempt = 1; ; attempt++) {
        const policy: ControlPlane.components['schemas']['AgentPolicyUpdate'] = {};
        const put = { ...body };
        const changed: string[] = [];
        let etag: string | undefined;
        if (listEdits.length) {
          const read = await api.GET('/api/agents/{agent_id}', { params: { path: { agent_id } } });
          const cur = await call(read, conn);
          etag = read.response.headers.get('etag') ?? undefined;
          for (const e of listEdits) {
            const list: string[] = cur[e.field];
            if (attempt === 1) {
              for (const t of e.add) if (list.includes(t)) err(`svc: note: ${agent_id} already has ${e.flag} ${t} (nothing to do for it)`);
              for (const t of e.remove) if (!list.includes(t)) err(`svc: note: ${agent_id} has no ${e.flag} ${t} (nothing to do for it)`);
            }
            const next = [...list.filter((t) => !e.remove.includes(t)), ...e.add.filter((t, i) => !list.includes(t) && e.add.indexOf(t) === i)];
            if (next.length === list.length && next.every((t, i) => t === list[i])) continue;
            if (e.field === 'allowed_intents') put.allowed_intents = next;
            else policy[e.field] = next;
            changed.push(e.field);
          }
          if (!Object.keys(put).length && !changed.length) {
            const { api_keys: _keys, ...agent } = cur;
            emit(format, agent, () => out(`agent ${agent_id} unchanged (intents ${cur.allowed_intents.join(',') || '-'})`));
            return EXIT.ok;
          }
        }
        // Two writes when both kinds change (the API keeps overrides/restrictions behind POST .../policy).
        let a: Agent | undefined;
        try {
          if (Object.keys(put).length) {
            const w = await api.PUT('/api/agents/{agent_id}', { params: { path: { agent_id }, header: etag ? { 'If-Match': etag } : undefined }, body: put });
            a = await call(w, conn);
            etag = etag && (w.response.headers.get('etag') ?? undefined);
          }
          if (Object.keys(policy).length) {
            a = await call(api.POST('/api/agents/{agent_id}/policy', { params: { path: { agent_id }, header: etag ? { 'If-Match': etag } : undefined }, body: policy }), conn);
          }
        } catch (e) {
          if (e instanceof ApiError && e.status === 412 && attempt < UPDATE_ATTEMPTS) {
            err(`svc: note: ${agent_id} changed while it was being updated; reading it again`);
            continue;
          }
          throw e;
        }
        const done = a!;
        const what = [...Object.keys(put).filter((k) => k !== 'allowed_intents'), ...changed].map((k) =>
          k === 'allowed_intents' ? `intents ${done.allowed_intents.join(',') || '-'}` : k === 'overrides' || k === 'restrictions' ? `${k} ${done[k].join(',') || '-'}` : k);
        emit(format, done, () => out(`agent ${done.agent_id} updated (${what.join(', ')})`));
        return EXIT.ok;
      }
    });

  for (const [verb, status, what] of [['suspend', 'suspended', 'Suspend an agent: its keys stop authenticating until it is activated'], ['activate', 'active', 'Activate a suspended (or revoked) agent']] as const) {
    withOutputOption(withApiOptions(cli.command(`agents ${verb} <agent-id>`, what)))
      .action(async (id: unknown, opts: Opts) => {
        const format = outputFormat(opts.output);
        const { conn, api } = admin(opts);
        const a = await call(api.PUT('/api/agents/{agent_id}', { params: { path: { agent_id: agentId(id) } }, body: { status } }), conn);
        emit(format, a, () => out(`agent ${a.agent_id} ${status === 'active' ? 'activated' : 'suspended'}`));
        return EXIT.ok;
      });
  }

  withOutputOption(withApiOptions(cli.command('agents delete <agent-id>', 'Revoke an agent and every active key of it (the record is kept; the id is never reused)')))
    .action(async (id: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const { conn, api } = admin(opts);
      const r = await call(api.DELETE('/api/agents/{agent_id}', { params: { path: { agent_id: agentId(id) } } }), conn);
      emit(format, r, () => out(`agent ${r.agent.agent_id} revoked (${r.revoked_key_count} active key${r.revoked_key_count === 1 ? '' : 's'} revoked)`));
      return EXIT.ok;
    });
}
