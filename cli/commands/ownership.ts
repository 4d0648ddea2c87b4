/**
 * `svc ownership ...` and `svc owners deactivate`: who answers for an agent, and the handing
 * over of that answerability (spec 3.6; the API's "Ownership" routes). Acceptance tokens are
 * shown once, when a transfer is requested (or started by a deactivation), and are read back
 * from `--token` or `$SVC_ACCEPTANCE_TOKEN`.
 */
import type { CAC } from 'cac';
import type { ControlPlane } from '@svc/client';
import { call, connection, controlPlane, str, withApiOptions } from '../lib/api.js';
import { EXIT, usageError } from '../lib/errors.js';
import { err, out } from '../lib/io.js';
import { emit, outputFormat, table, withOutputOption } from '../lib/output.js';

export const OWNERSHIP_SUBCOMMANDS = ['transfer', 'accept', 'reject', 'cancel', 'force-assign', 'history'];
export const OWNERS_SUBCOMMANDS = ['deactivate'];

type Transfer = ControlPlane.components['schemas']['OwnershipTransfer'];
type Opts = { endpoint?: unknown; key?: unknown; output?: unknown };

const TOKEN_ENV = 'SVC_ACCEPTANCE_TOKEN';

const transferColumns: Array<[string, (t: Transfer) => unknown]> = [
  ['transfer_id', (t) => t.transfer_id], ['agent_id', (t) => t.agent_id], ['from', (t) => t.from_owner_id],
  ['to', (t) => t.to_owner_id], ['status', (t) => t.status], ['expires_at', (t) => t.expires_at],
];

const tokenNotice = () => err('the acceptance token is shown once: hand it to the incoming owner now (svc ownership accept ... --token TOKEN)');

function tokenOf(opts: { token?: unknown }): string {
  const token = str(opts.token) ?? process.env[TOKEN_ENV];
  if (!token) throw usageError(`the acceptance token is needed: --token TOKEN or $${TOKEN_ENV}`);
  return token;
}

export function registerOwnership(cli: CAC): void {
  withOutputOption(withApiOptions(cli.command('ownership transfer <agent-id>', 'Request a transfer of an agent to another owner (prints the acceptance token once)')))
    .option('--to <owner-id>', 'The incoming owner (required)')
    .option('--reason <text>', 'Why (required; recorded in the management event)')
    .option('--effective-at <date-time>', 'Earliest acceptance time (ISO 8601; default now)')
    .example('svc ownership transfer agent:claims-bot --to jane.doe@example.org --reason "team change"')
    .action(async (agentId: unknown, opts: Opts & { to?: unknown; reason?: unknown; effectiveAt?: unknown }) => {
      const format = outputFormat(opts.output);
      const to = str(opts.to);
      const reason = str(opts.reason);
      if (!to || !reason) throw usageError('--to <owner-id> and --reason <text> are required');
      const conn = connection(opts);
      const effective = str(opts.effectiveAt);
      const t = await call(controlPlane(conn).POST('/api/agents/{agent_id}/ownership/transfer', {
        params: { path: { agent_id: String(agentId) } },
        body: { to_owner_id: to, reason, ...(effective ? { effective_at: effective } : {}) },
      }), conn);
      emit(format, t, () => {
        out(`transfer ${t.transfer_id} of ${t.agent_id}: ${t.from_owner_id} -> ${t.to_owner_id}, ${t.status} until ${t.expires_at}`);
        out(`acceptance token: ${t.acceptance_token}`);
      });
      tokenNotice();
      return EXIT.ok;
    });

  for (const verb of ['accept', 'reject'] as const) {
    withOutputOption(withApiOptions(cli.command(`ownership ${verb} <agent-id> <transfer-id>`,
      `${verb === 'accept' ? 'Accept' : 'Reject'} a transfer as the incoming owner, with its acceptance token`)))
      .option('--token <token>', `The acceptance token (default $${TOKEN_ENV}; the environment keeps it out of the process list)`)
      .action(async (agentId: unknown, transferId: unknown, opts: Opts & { token?: unknown }) => {
        const format = outputFormat(opts.output);
        const token = tokenOf(opts);
        const conn = connection(opts);
        const t = await call(controlPlane(conn).POST(`/api/agents/{agent_id}/ownership/transfer/{transfer_id}/${verb}`, {
          params: { path: { agent_id: String(agentId), transfer_id: String(transferId) }, header: { 'X-Acceptance-Token': token } },
        }), conn);
        emit(format, t, () => out(`transfer ${t.transfer_id} ${t.status}: ${t.agent_id} is owned by ${verb === 'accept' ? t.to_owner_id : t.from_owner_id}`));
        return EXIT.ok;
      });
  }

  withOutputOption(withApiOptions(cli.command('ownership cancel <agent-id> <transfer-id>', 'Cancel a pending transfer (admin)')))
    .action(async (agentId: unknown, transferId: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const conn = connection(opts);
      const t = await call(controlPlane(conn).POST('/api/agents/{agent_id}/ownership/transfer/{transfer_id}/cancel', {
        params: { path: { agent_id: String(agentId), transfer_id: String(transferId) } },
      }), conn);
      emit(format, t, () => out(`transfer ${t.transfer_id} ${t.status}: ${t.agent_id} stays with ${t.from_owner_id}`));
      return EXIT.ok;
    });

  withOutputOption(withApiOptions(cli.command('ownership force-assign <agent-id> <transfer-id>', 'Complete a pending or expired transfer without the incoming owner (admin)')))
    .option('--reason <text>', 'Why the assignment is forced (recorded in the event)')
    .action(async (agentId: unknown, transferId: unknown, opts: Opts & { reason?: unknown }) => {
      const format = outputFormat(opts.output);
      const conn = connection(opts);
      const reason = str(opts.reason);
      const t = await call(controlPlane(conn).POST('/api/agents/{agent_id}/ownership/transfer/{transfer_id}/force-assign', {
        params: { path: { agent_id: String(agentId), transfer_id: String(transferId) } },
        body: reason ? { reason } : {},
      }), conn);
      emit(format, t, () => out(`transfer ${t.transfer_id} ${t.status}: ${t.agent_id} is owned by ${t.to_owner_id}`));
      return EXIT.ok;
    });

  withOutputOption(withApiOptions(cli.command('ownership history <agent-id>', "An agent's chain of custody: its owners, and every transfer with its steps")))
    .action(async (agentId: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const conn = connection(opts);
      const h = await call(controlPlane(conn).GET('/api/agents/{agent_id}/ownership/history', { params: { path: { agent_id: String(agentId) } } }), conn);
      emit(format, h, () => {
        out(`${h.agent_id} is owned by ${h.owner_id}`);
        out();
        table(h.holders, [['owner', (x) => x.owner_id], ['from', (x) => x.from], ['until', (x) => x.until], ['via', (x) => x.acquired_via],
          ['by', (x) => x.accepted_by], ['reason', (x) => x.reason], ['leaf', (x) => x.leaf_index]]);
        out();
        table(h.transfers, [...transferColumns.filter(([n]) => n !== 'agent_id'), ['steps', (t) => t.steps.map((s) => s.event_type.replace(/^ownership\./, '')).join(' > ')]], 'no transfers');
      });
      return EXIT.ok;
    });

  withOutputOption(withApiOptions(cli.command('owners deactivate <owner-id>', "Deactivate an owner: its agents go (pending) to the org admin, transfers to it are cancelled")))
    .action(async (ownerId: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const conn = connection(opts);
      const d = await call(controlPlane(conn).POST('/api/owners/{owner_id}/deactivate', { params: { path: { owner_id: String(ownerId) } } }), conn);
      emit(format, d, () => {
        out(`owner ${d.owner.owner_id} ${d.owner.status}: ${d.started.length} transfer(s) to the org admin started, ${d.cancelled.length} transfer(s) to it cancelled`);
        if (d.started.length) {
          out();
          table(d.started, [...transferColumns, ['acceptance_token', (t) => t.acceptance_token]]);
        }
        if (d.cancelled.length) {
          out();
          table(d.cancelled, transferColumns);
        }
      });
      if (d.started.length) tokenNotice();
      return EXIT.ok;
    });
}
