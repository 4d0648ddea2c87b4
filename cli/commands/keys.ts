/**
 * `svc keys create|list|get|revoke|rotate`: an agent's API keys (/api/agents/{id}/api-keys).
 * A new key (create, rotate) is printed once, alone on stdout (or inside the API's JSON under
 * `-o json`); the API never shows it again. Lists and reads never carry the key or its hash.
 */
import type { CAC } from 'cac';
import type { ControlPlane } from '@svc/client';
import { call, withApiOptions } from '../lib/api.js';
import { EXIT, usageError } from '../lib/errors.js';
import { err, out } from '../lib/io.js';
import { emit, fields, outputFormat, table, withOutputOption } from '../lib/output.js';
import { admin, agentId, arg, parseDuration, text, texts } from '../lib/resources.js';
import { KEY_COLUMNS } from './agents.js';

type ApiKey = ControlPlane.components['schemas']['ApiKey'];
type Opts = Record<string, unknown>;

export const KEYS_SUBCOMMANDS = ['create', 'list', 'get', 'revoke', 'rotate'];

const keyId = (v: unknown) => arg(v, 'KEY_ID');
const STORE = 'store it now: it is not shown again';

function showKey(k: ApiKey): void {
  fields([
    ['key', k.key_id], ['agent', k.agent_id], ['prefix', k.key_prefix], ['status', k.status], ['name', k.name],
    ['scopes', k.scopes ?? 'all of the agent\'s intents'], ['created', k.created_at], ['expires', k.expires_at], ['last used', k.last_used_at ?? 'never'],
    ...(k.revoked_at ? [['revoked', `${k.revoked_at} by ${k.revoked_by}`] as [string, unknown]] : []),
    ...(k.rotated_from ? [['rotated from', k.rotated_from] as [string, unknown]] : []),
    ...(k.rotated_to ? [['rotated to', k.status === 'active' ? `${k.rotated_to} (this key works until ${k.grace_until})` : k.rotated_to] as [string, unknown]] : []),
  ]);
}

export function registerKeys(cli: CAC): void {
  withOutputOption(withApiOptions(cli.command('keys create <agent-id>', 'Issue an API key to an agent: printed once, never shown again')))
    .option('--key-id <id>', 'Key id (default generated: key_ + 24 hex)')
    .option('--name <name>', 'A label for the key')
    .option('--expires-in <duration>', 'Lifetime in whole days: 30d, 2w, 720h (default the server\'s AGENT_KEY_TTL_DAYS, 90)')
    .option('--scope <task-type>', 'Limit the key to a task type of the agent (repeatable; default all its intents)')
    .example('svc keys create agent:reviewer --expires-in 30d --scope code_review')
    .example('KEY=$(svc keys create agent:reviewer)')
    .action(async (id: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const body: ControlPlane.components['schemas']['ApiKeyIssueRequest'] = {};
      const kid = text(opts, 'keyId', 'key-id');
      if (kid) body.key_id = kid;
      const name = text(opts, 'name', 'name');
      if (name) body.name = name;
      const expires = text(opts, 'expiresIn', 'expires-in');
      if (expires !== undefined) {
        const secs = parseDuration(expires, 'expires-in');
        if (secs % 86400 !== 0 || secs === 0) throw usageError(`--expires-in ${expires}: the API sets a key's lifetime in whole days (expires_in_days); give 1d..3650d`);
        if (secs / 86400 > 3650) throw usageError(`--expires-in ${expires}: at most 3650d`);
        body.expires_in_days = secs / 86400;
      }
      const scopes = texts(opts, 'scope', 'scope');
      if (scopes.length) body.scopes = [...new Set(scopes)];
      const { conn, api } = admin(opts);
      const k = await call(api.POST('/api/agents/{agent_id}/api-keys', { params: { path: { agent_id: agentId(id) } }, body }), conn);
      emit(format, k, () => out(k.api_key));
      err(`svc: key ${k.key_id} issued to ${k.agent_id} (prefix ${k.key_prefix}, expires ${k.expires_at}${k.scopes ? `, scopes ${k.scopes.join(',')}` : ''}); ${STORE}`);
      return EXIT.ok;
    });

  withOutputOption(withApiOptions(cli.command('keys list <agent-id>', "List an agent's keys, newest first: prefix, status, expiry, last use (never the key)")))
    .action(async (id: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const { conn, api } = admin(opts);
      const r = await call(api.GET('/api/agents/{agent_id}/api-keys', { params: { path: { agent_id: agentId(id) } } }), conn);
      emit(format, r.api_keys, () => table(r.api_keys, KEY_COLUMNS, `(no keys: svc keys create ${r.agent_id})`));
      return EXIT.ok;
    });

  withOutputOption(withApiOptions(cli.command('keys get <agent-id> <key-id>', 'Show one key of an agent (never the key itself)')))
    .action(async (id: unknown, kid: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const { conn, api } = admin(opts);
      const k = await call(api.GET('/api/agents/{agent_id}/api-keys/{key_id}', { params: { path: { agent_id: agentId(id), key_id: keyId(kid) } } }), conn);
      emit(format, k, () => showKey(k));
      return EXIT.ok;
    });

  withOutputOption(withApiOptions(cli.command('keys revoke <agent-id> <key-id>', 'Revoke a key: refused from the very next request')))
    .option('--revoked-by <who>', 'Recorded as revoked_by (default admin; system:... is reserved)')
    .action(async (id: unknown, kid: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const revokedBy = text(opts, 'revokedBy', 'revoked-by') ?? 'admin';
      const path = { agent_id: agentId(id), key_id: keyId(kid) };
      const { conn, api } = admin(opts);
      await call(api.DELETE('/api/agents/{agent_id}/api-keys/{key_id}', { params: { path, query: { revoked_by: revokedBy } } }), conn);
      // The DELETE answers 204 without a body: -o json prints the key as read back.
      if (format === 'json') emit(format, await call(api.GET('/api/agents/{agent_id}/api-keys/{key_id}', { params: { path } }), conn), () => undefined);
      else out(`key ${path.key_id} of ${path.agent_id} revoked`);
      return EXIT.ok;
    });

  withOutputOption(withApiOptions(cli.command('keys rotate <agent-id> <key-id>', 'Issue a successor key (printed once); the old one ends after the grace period')))
    .option('--grace <duration>', 'How long the old key keeps working: 0s..24h (e.g. 1h, 90m; default 0: revoked at once)')
    .example('NEW=$(svc keys rotate agent:reviewer key_0123 --grace 1h)')
    .action(async (id: unknown, kid: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const body: ControlPlane.components['schemas']['ApiKeyRotateRequest'] = {};
      const grace = text(opts, 'grace', 'grace');
      if (grace !== undefined) {
        body.grace_seconds = parseDuration(grace, 'grace');
        if (body.grace_seconds > 86400) throw usageError(`--grace ${grace}: at most 24h (86400s)`);
      }
      const { conn, api } = admin(opts);
      const k = await call(api.POST('/api/agents/{agent_id}/api-keys/{key_id}/rotate', { params: { path: { agent_id: agentId(id), key_id: keyId(kid) } }, body }), conn);
      emit(format, k, () => out(k.api_key));
      err(`svc: key ${k.key_id} issued to ${k.agent_id} (prefix ${k.key_prefix}, expires ${k.expires_at}) replacing ${k.rotated_from}, which works until ${k.grace_until}; ${STORE}`);
      return EXIT.ok;
    });
}
