/**
 * `svc context request TASK_TYPE`: asks for an agent's context the way the agent would, over
 * REST (`POST /api/context` on the API, port 8000) or the context service (port 8002,
 * spec/context.proto) in the Connect or gRPC protocol, with the agent's key.
 *
 * Every protocol ends the same way: the answer printed (or its JSON under `-o json`: the
 * REST body, or the response message through @bufbuild/protobuf's `toJson`), or a refusal
 * (AUTH_FAILED, INTENT_NOT_ALLOWED, VALIDATION_ERROR, ...) on stderr naming its code, exit 1.
 */
import type { CAC } from 'cac';
import { toJson } from '@bufbuild/protobuf';
import { Code, ConnectError, createContextClient, RequestContextResponseSchema, type RequestContextResponse } from '@svc/client';
import { parse as parseYaml } from 'yaml';
import { ApiError, call, checkEndpoint, connection, controlPlane, describeNetworkError, str, UnreachableError, withApiOptions, type Connection } from '../lib/api.js';
import { resolveKey } from '../lib/config.js';
import { CliError, EXIT, usageError } from '../lib/errors.js';
import { json, out } from '../lib/io.js';
import { fields, outputFormat, paint, table, withOutputOption } from '../lib/output.js';
import { rawOption } from '../lib/argv.js';

export const CONTEXT_SUBCOMMANDS = ['request'];

const PROTOCOLS = ['rest', 'connect', 'grpc'] as const;
type Protocol = (typeof PROTOCOLS)[number];

interface Opts {
  endpoint?: unknown; key?: unknown; output?: unknown; apiKey?: unknown; explain?: boolean; protocol?: unknown;
  atLeastRevision?: unknown; param?: unknown; chainId?: unknown; parentRequestId?: unknown; contextEndpoint?: unknown; content?: boolean;
}

/** The answer in one shape, whichever protocol brought it. */
interface Answer {
  requestId: string; agentId: string; roleId: string; taskType: string; scdIds: string[]; scdContent: Record<string, string>;
  bundleIds: string[]; contentRevision: number; auditLeafIndex: number | null; processingTimeMs: number;
  explanation?: {
    selected: Record<string, { reason: string; role_id?: string; governs?: string[]; bundle_id?: string; bundle_version?: string; import_path?: string[]; override?: boolean }>;
    excluded: Record<string, { reason: string; roles?: string[]; referenced_by?: string[]; override?: boolean; bundle_id?: string; bundle_version?: string; import_path?: string[] }>;
  };
}

const list = (v: unknown): string[] => (v === undefined || v === null || v === false ? [] : (Array.isArray(v) ? v : [v]).map(String));

/** The context endpoint: flag, SVC_CONTEXT_ENDPOINT, config api.context_endpoint, else the API's host on port 8002. */
function contextEndpoint(flag: unknown, conn: Connection): string {
  const given = str(flag) ?? resolveKey('api.context_endpoint').value;
  if (given) return checkEndpoint(given);
  const u = new URL(conn.endpoint);
  u.port = '8002';
  u.pathname = '';
  return checkEndpoint(u.toString());
}

/** The refusal of a context request: exit 1 naming the code, the same text on every protocol. */
function refused(code: string, message: string, requestId?: string, status?: number): CliError {
  const where = [status ? `HTTP ${status}` : null, requestId ? `request_id ${requestId}` : null].filter(Boolean).join(', ');
  return new CliError(`${code}: ${message}${where ? ` (${where})` : ''}`, EXIT.failed);
}

function fromProto(m: RequestContextResponse): Answer {
  const e = m.explanation;
  return {
    requestId: m.requestId, agentId: m.agentId, roleId: m.roleId, taskType: m.taskType, scdIds: [...m.scdIds], scdContent: { ...m.scdContent },
    bundleIds: [...m.contextBundleIds], contentRevision: Number(m.contentRevision), auditLeafIndex: m.auditLeafIndex === undefined ? null : Number(m.auditLeafIndex),
    processingTimeMs: m.processingTimeMs,
    explanation: e && {
      selected: Object.fromEntries(Object.entries(e.selected).map(([id, s]) => [id, { reason: s.reason, role_id: s.roleId || undefined, governs: s.governs, bundle_id: s.bundleId, bundle_version: s.bundleVersion, import_path: s.importPath, override: s.override }])),
      excluded: Object.fromEntries(Object.entries(e.excluded).map(([id, x]) => [id, { reason: x.reason, roles: x.roles, referenced_by: x.referencedBy, override: x.override, bundle_id: x.bundleId, bundle_version: x.bundleVersion, import_path: x.importPath }])),
    },
  };
}

function titleOf(yaml: string | undefined): string | undefined {
  if (!yaml) return undefined;
  try {
    const d = parseYaml(yaml) as { title?: unknown } | null;
    return d && typeof d.title === 'string' ? d.title : undefined;
  } catch { return undefined; }
}

function printAnswer(a: Answer, showContent: boolean): void {
  fields([
    ['request_id', a.requestId],
    ['agent', `${a.agentId} (${a.roleId})`],
    ['task_type', a.taskType],
    ['content_revision', a.contentRevision],
    ['audit_leaf_index', a.auditLeafIndex],
    ['bundles', a.bundleIds.join(', ') || '-'],
    ['scds', `${a.scdIds.length} selected in ${a.processingTimeMs} ms`],
  ]);
  out('');
  const sel = a.explanation?.selected;
  if (sel) {
    table(a.scdIds, [
      ['scd', (id) => id],
      ['reason', (id) => (sel[id] ? `${sel[id].reason}${sel[id].reason === 'role' && sel[id].role_id ? ` ${sel[id].role_id}` : ''}${sel[id].reason === 'governs' ? ` ${(sel[id].governs ?? []).join(',')}` : ''}${sel[id].override && sel[id].reason !== 'override' ? ' +override' : ''}` : '-')],
      ['from', (id) => (sel[id]?.bundle_id ? `${sel[id].bundle_id}:${sel[id].bundle_version}` : '-')],
      ['via', (id) => (sel[id]?.import_path?.length ? sel[id].import_path!.join(' > ') : '-')],
    ], '(no SCD selected)');
    const ex = Object.entries(a.explanation?.excluded ?? {}).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
    out('');
    out(paint(`Left out (${ex.length}):`, 'bold'));
    table(ex, [
      ['scd', ([id]) => id],
      ['reason', ([, x]) => x.reason],
      ['detail', ([, x]) => (x.reason === 'other_role' ? `roles ${(x.roles ?? []).join(',')}` : x.reason === 'not_imported' ? `referenced by ${(x.referenced_by ?? []).join(',') || '-'}` : x.override ? 'overridden, restriction wins' : '')],
      ['held in', ([, x]) => (x.bundle_id ? `${x.bundle_id}:${x.bundle_version}` : '-')],
    ], '(none)');
  } else {
    table(a.scdIds, [['scd', (id) => id], ['title', (id) => titleOf(a.scdContent[id])]], '(no SCD selected)');
  }
  if (showContent) {
    for (const id of a.scdIds) {
      out('');
      out(paint(`--- ${id}`, 'bold'));
      out((a.scdContent[id] ?? '').trimEnd());
    }
  }
}

export function registerContext(cli: CAC): void {
  withOutputOption(withApiOptions(cli.command('context request <task-type>', 'Request the context an agent gets for a task (REST, Connect or gRPC), with its agent key')))
    .option('--api-key <key>', 'The agent\'s API key (sk_...); default $SVC_AGENT_KEY, which is safer: other users can see a command line')
    .option('--protocol <protocol>', 'rest (POST /api/context, port 8000), connect or grpc (the context service, port 8002)', { default: 'rest' })
    .option('--explain', 'Say why each SCD was selected or left out')
    .option('--at-least-revision <n>', 'Answer from content no older than this content_revision (waits up to 2 s, else refused)')
    .option('--param <key=value>', 'A task parameter, recorded in the audit record (repeatable)')
    .option('--chain-id <id>', 'Multi-agent chain id, recorded in the audit record')
    .option('--parent-request-id <id>', 'The request that led to this one (same chain)')
    .option('--context-endpoint <url>', 'Context service URL for connect/grpc (default $SVC_CONTEXT_ENDPOINT, else config api.context_endpoint, else the API endpoint\'s host on port 8002)')
    .option('--content', 'Also print each selected SCD\'s YAML (text output)')
    .example('SVC_AGENT_KEY=sk_... svc context request medication_review --explain')
    .example('svc context request triage --protocol grpc -o json')
    .action(async (taskTypeArg: unknown, opts: Opts) => {
      const format = outputFormat(opts.output);
      const taskType = String(taskTypeArg);
      const protocol = String(opts.protocol ?? 'rest') as Protocol;
      if (!PROTOCOLS.includes(protocol)) throw usageError(`--protocol must be one of ${PROTOCOLS.join(', ')}, not '${protocol}'`);
      const apiKey = str(rawOption('api-key') ?? opts.apiKey) ?? process.env.SVC_AGENT_KEY;
      if (!apiKey) throw usageError('an agent key is needed: set SVC_AGENT_KEY (recommended) or pass --api-key');
      let atLeast: number | undefined;
      const rawRev = rawOption('at-least-revision') ?? str(opts.atLeastRevision);
      if (rawRev !== undefined) {
        if (!/^\d{1,16}$/.test(rawRev) || !Number.isSafeInteger(Number(rawRev))) throw usageError(`--at-least-revision must be a non-negative integer, not '${rawRev}'`);
        atLeast = Number(rawRev);
      }
      const params: Record<string, string> = {};
      for (const p of list(opts.param)) {
        const i = p.indexOf('=');
        if (i < 1) throw usageError(`--param must be key=value, not '${p}'`);
        params[p.slice(0, i)] = p.slice(i + 1);
      }
      const chainId = rawOption('chain-id') ?? str(opts.chainId);
      const parentRequestId = rawOption('parent-request-id') ?? str(opts.parentRequestId);
      const conn = connection(opts);

      if (protocol === 'rest') {
        const api = controlPlane(conn, { apiKey });
        const body = {
          task_type: taskType,
          ...(Object.keys(params).length ? { params } : {}),
          ...(chainId ? { chain_id: chainId } : {}),
          ...(parentRequestId ? { parent_request_id: parentRequestId } : {}),
          ...(opts.explain ? { explain: true } : {}),
          ...(atLeast !== undefined ? { at_least_revision: atLeast } : {}),
        };
        let data;
        try {
          data = await call(api.POST('/api/context', { body }));
        } catch (e) {
          if (!(e instanceof ApiError)) throw e;
          const b = (e.body ?? {}) as Record<string, unknown>;
          const d = (b.details ?? {}) as Record<string, unknown>;
          const code = b.error === 'conflict' && 'content_revision' in d ? 'REVISION_NOT_REACHED' : e.code;
          throw refused(code, String(b.error_message ?? b.message ?? `HTTP ${e.status}`), String(b.request_id ?? d.request_id ?? '') || undefined, e.status);
        }
        if (format === 'json') { json(data); return EXIT.ok; }
        printAnswer({
          requestId: data.request_id, agentId: data.agent_id, roleId: data.role_id, taskType: data.task_type, scdIds: data.scd_ids, scdContent: data.scd_content,
          bundleIds: data.context_bundle_ids, contentRevision: data.content_revision, auditLeafIndex: data.audit_leaf_index, processingTimeMs: data.processing_time_ms,
          explanation: data.explanation as Answer['explanation'],
        }, !!opts.content);
        return EXIT.ok;
      }

      const baseUrl = contextEndpoint(opts.contextEndpoint, conn);
      const client = createContextClient({ baseUrl, apiKey, protocol });
      let m: RequestContextResponse;
      try {
        m = await client.requestContext({
          taskType, params, chainId: chainId ?? '', parentRequestId: parentRequestId ?? '', explain: !!opts.explain,
          ...(atLeast !== undefined ? { atLeastRevision: BigInt(atLeast) } : {}),
        }, { timeoutMs: conn.timeoutMs });
      } catch (e) {
        const ce = ConnectError.from(e);
        const net = describeNetworkError(ce.cause ?? e);
        if (ce.code === Code.Unavailable && /ECONN|EHOST|ENET|ENOTFOUND|EAI_|refused|reset|unreachable|DNS/i.test(`${net} ${ce.rawMessage}`)) {
          throw new UnreachableError(baseUrl, /refused|ECONNREFUSED/.test(`${net} ${ce.rawMessage}`) ? 'connection refused (ECONNREFUSED)' : net || ce.rawMessage);
        }
        if (ce.code === Code.DeadlineExceeded) throw new UnreachableError(baseUrl, 'timed out');
        if (ce.code === Code.Aborted) {
          const rid = ce.metadata.get('svc-request-id') ?? undefined;
          throw refused('REVISION_NOT_REACHED', ce.rawMessage, rid);
        }
        throw new CliError(`${Code[ce.code] ?? ce.code}: ${ce.rawMessage} (${protocol} ${baseUrl})`, EXIT.failed);
      } finally {
        client.close();
      }
      if (!m.success) throw refused(m.errorCode, m.errorMessage, m.requestId || undefined);
      if (format === 'json') { json(toJson(RequestContextResponseSchema, m)); return EXIT.ok; }
      printAnswer(fromProto(m), !!opts.content);
      return EXIT.ok;
    });
}
