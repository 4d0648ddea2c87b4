/**
 * Agent output logging (spec 4.5, migration 0003): an agent links an output to one of its own
 * context requests. Outputs are append-only (the store refuses UPDATE and DELETE);
 * `output_hash` is the hex SHA-256 of the output's canonical JSON, so an auditor can check
 * the stored output. Another agent's request or output is 404, told apart from nothing.
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import type { components } from '../../../gen/openapi/control-plane.js';
import { canonicalJson, sha256Hex } from './hash.js';

export type AgentOutput = components['schemas']['AgentOutput'];
export type AgentOutputCreate = components['schemas']['AgentOutputCreate'];
export type AgentOutputReceipt = components['schemas']['AgentOutputReceipt'];

// eslint-disable-next-line no-control-regex
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** JSON pointer of the first string (key or value) PostgreSQL would refuse or alter, or null. */
function firstUnstorable(v: unknown, path: string): string | null {
  if (typeof v === 'string') return UNSTORABLE.test(v) ? path : null;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const p = firstUnstorable(v[i], `${path}/${i}`);
      if (p) return p;
    }
    return null;
  }
  if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      const p = `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      if (UNSTORABLE.test(k)) return p;
      const q = firstUnstorable(x, p);
      if (q) return q;
    }
  }
  return null;
}

export async function logAgentOutput(
  ctx: AppContext,
  agentId: string,
  input: AgentOutputCreate,
): Promise<AgentOutputReceipt> {
  const bad = firstUnstorable(input.output, '/body/output') ?? (input.output_type !== undefined ? firstUnstorable(input.output_type, '/body/output_type') : null);
  if (bad) {
    throw new AppError('validation_error', 'The output contains text that cannot be stored exactly (NUL or a lone surrogate)', {
      details: { errors: [{ path: bad, rule: 'storable_text', message: 'must not contain NUL characters or lone UTF-16 surrogates' }] },
    });
  }
  const text = canonicalJson(input.output);
  const outputHash = sha256Hex(text);
  const outputId = randomUUID();
  // svc_output_append (migration 0011) takes the chain lock and gives the output its leaf.
  const rows = await ctx.db.query<{ created_at: Date; leaf_index: number | string }>(
    'SELECT created_at, leaf_index FROM svc_output_append($1, $2, $3, $4, $5::jsonb, $6)',
    [outputId, input.request_id, agentId, input.output_type ?? null, text, outputHash],
  );
  if (!rows.length) throw new AppError('not_found', 'No context request of this agent has this request_id');
  return {
    output_id: outputId,
    request_id: input.request_id,
    agent_id: agentId,
    created_at: new Date(rows[0]!.created_at).toISOString(),
    output_hash: outputHash,
    leaf_index: Number(rows[0]!.leaf_index),
  };
}

export async function getAgentOutput(ctx: AppContext, agentId: string, outputId: string): Promise<AgentOutput> {
  const [r] = await ctx.db.query<OutputRow>(`SELECT ${OUTPUT_COLUMNS} FROM agent_output_logs WHERE output_id = $1 AND agent_id = $2`, [outputId, agentId]);
  if (!r) throw new AppError('not_found', 'No output of this agent has this output_id');
  return toAgentOutput(r);
}

/** The columns of an output record as its read endpoint returns it. */
export const OUTPUT_COLUMNS = 'output_id, request_id, agent_id, output, output_type, output_hash, created_at, leaf_index';

/** A row of OUTPUT_COLUMNS as the drivers return it (jsonb may arrive as text, int8 as text). */
export interface OutputRow {
  output_id: string;
  request_id: string;
  agent_id: string;
  output: unknown;
  output_type: string | null;
  output_hash: string;
  created_at: Date;
  leaf_index: number | string;
}

/** The wire shape of a stored output (the leaf data of the transparency log is its canonical JSON). */
export function toAgentOutput(r: OutputRow): AgentOutput {
  return {
    output_id: r.output_id,
    request_id: r.request_id,
    agent_id: r.agent_id,
    output: (typeof r.output === 'string' ? JSON.parse(r.output) : r.output) as AgentOutput['output'],
    output_type: r.output_type ?? null,
    output_hash: r.output_hash,
    created_at: new Date(r.created_at).toISOString(),
    leaf_index: Number(r.leaf_index),
  };
}
