import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readFixture } from '../../../test/collector/helpers.js';
import { codeCli } from '../code-cli/definition.js';
import { cowork } from '../cowork/definition.js';
import { Redactor } from '../redact/redactor.js';
import type { ActivityRow } from '../store/store.js';
import type { OtlpProfile } from './events.js';
import { inferFromAttributes, lastPart } from './events.js';
import { processOtlpLine, type Counters } from './lines.js';

const SECRET = 'events-test-secret';
const hmac = (v: string) => 'hmac-sha256:' + createHmac('sha256', SECRET).update(v).digest('hex');
const NOW = '2030-01-01T00:00:00.000Z';

function ingest(profile: OtlpProfile, text: string) {
  const rows: ActivityRow[] = [];
  const counters: Counters = {};
  const ctx = { profile, redactor: new Redactor(SECRET), now: NOW };
  for (const line of text.split('\n')) processOtlpLine(line, ctx, rows, counters);
  return { rows, counters };
}
const raw = (r: ActivityRow) => JSON.parse(r.raw_attributes) as Record<string, unknown>;

describe('coding CLI export (fixture code-cli.jsonl)', () => {
  const { rows, counters } = ingest(codeCli.profile, readFixture('code-cli.jsonl'));
  const byName = (n: string) => rows.filter((r) => lastPart(r.event_name) === n);

  it('ingests logs lines; skips and counts metric, trace and malformed lines', () => {
    expect(rows).toHaveLength(11);
    expect(counters).toEqual({ lines_skipped_metrics: 1, lines_skipped_traces: 1, lines_malformed: 3 });
  });

  it('types events by the last dotted part of their name', () => {
    expect(rows.map((r) => [lastPart(r.event_name), r.event_type])).toEqual([
      ['user_prompt', 'prompt'],
      ['api_request', 'model_call'],
      ['tool_decision', 'approval'],
      ['tool_result', 'tool_call'],
      ['tool_result', 'mcp_call'],
      ['api_error', 'error'],
      ['assistant_response', 'unknown'],
      ['tool_result', 'tool_call'],
      ['user_prompt', 'prompt'],
      ['api_request', 'model_call'],
      ['tool_decision', 'approval'],
    ]);
    expect(rows[8].event_name).toBe('vendor_code.user_prompt'); // raw name kept
  });

  it('fills model columns for model requests only, coercing both wire forms', () => {
    const [a, b] = byName('api_request');
    expect(a).toMatchObject({ model: 'vendor-model-1', cost_usd: 0.1068, input_tokens: 1200, output_tokens: 350, duration_ms: 5321 });
    expect(b).toMatchObject({ model: 'vendor-model-2', cost_usd: 0.5, input_tokens: 10, output_tokens: 20, duration_ms: 900 });
    for (const r of rows.filter((x) => x.event_type !== 'model_call')) {
      expect([r.model, r.cost_usd, r.input_tokens, r.output_tokens]).toEqual([null, null, null, null]);
    }
  });

  it('fills decision columns for approvals and success for tool results only', () => {
    const [d1, d2] = byName('tool_decision');
    expect(d1).toMatchObject({ tool_name: 'Bash', decision: 'accept', decision_source: 'user_temporary', success: null });
    expect(d2).toMatchObject({ tool_name: 'Edit', decision: 'reject', decision_source: 'user_reject' });
    const [bash, mcp, doc] = byName('tool_result');
    expect(bash).toMatchObject({ tool_name: 'Bash', success: 'true', decision: null, decision_source: null });
    expect(mcp).toMatchObject({ tool_name: 'mcp__github__create_issue', success: 'false', mcp_server_scope: 'user', error_message: 'mcp_error' });
    expect(doc).toMatchObject({ tool_name: 'Bash', success: 'true', observed_at: '2026-01-01T00:00:00.123Z' });
    for (const r of rows.filter((x) => x.event_type !== 'tool_call' && x.event_type !== 'mcp_call')) expect(r.success).toBeNull();
  });

  it('uses account id, session id and prompt id; never an e-mail', () => {
    const r = byName('user_prompt')[0];
    expect(r).toMatchObject({
      actor_identity: hmac('user_01SYNTHUSER0000000000000'), // pseudonymized
      session_id: '5e7a0c2b-1111-4222-8333-944445555666',
      correlation_id: 'c0ffee00-1234-4abc-8def-0123456789ab',
      observed_at: '2026-01-01T00:00:01.000Z',
    });
    expect(byName('tool_decision')[1].actor_identity).toBe(hmac('abc123'));
    for (const row of rows) expect(row.raw_attributes).not.toMatch(/user_01SYNTHUSER|7a8b9c0d-0000-4000-8000-000000001234|0b1c2d3e-0000-4000-8000-00000000abcd/);
  });

  it('masks the e-mail always, inside opted-in text too, and says so', () => {
    for (const r of rows) expect(JSON.stringify(r)).not.toMatch(/@/);
    const prompt = byName('user_prompt')[1];
    expect(raw(prompt)['user.email']).toBe(hmac('dev@example.com'));
    expect(raw(prompt).prompt).toBe(`please e-mail the report to ${hmac('alice.smith+q3@corp.example.org')} today`);
    expect(prompt.redaction_masked_keys).toBe('["prompt","user.account_id","user.email","user.id"]');
    expect(prompt.redaction_masked_count).toBe(4);
    // Opted-out text stays the upstream placeholder, and lengths are kept.
    expect(raw(byName('user_prompt')[0])).toMatchObject({ prompt: '<REDACTED>', prompt_length: '42' });
    expect(byName('user_prompt')[0].redaction_masked_keys).toBe('["organization.id","user.account_id","user.account_uuid","user.email","user.id"]');
  });

  it('derives the same event_id from the same record, and distinct ids otherwise', () => {
    const again = ingest(codeCli.profile, readFixture('code-cli.jsonl')).rows;
    expect(again.map((r) => r.event_id)).toEqual(rows.map((r) => r.event_id));
    expect(new Set(rows.map((r) => r.event_id)).size).toBe(rows.length);
    const other = ingest(cowork.profile, readFixture('code-cli.jsonl')).rows;
    expect(other[0].event_id).not.toBe(rows[0].event_id); // the source is part of the id
  });
});

describe('cowork export (fixture cowork.jsonl)', () => {
  const { rows, counters } = ingest(cowork.profile, readFixture('cowork.jsonl'));

  it('types named events and infers the rest from attribute patterns', () => {
    expect(counters).toEqual({ lines_skipped_metrics: 1 });
    expect(rows.map((r) => [r.event_name, r.event_type])).toEqual([
      ['user_prompt', 'prompt'],
      ['tool_decision', 'approval'],
      ['tool_result', 'mcp_call'],
      ['api_request', 'model_call'],
      ['api_error', 'error'],
      ['api_request', 'model_call'], // inferred: model + tokens
      ['unknown', 'unknown'], // a plain log line
      ['tool_result', 'tool_call'], // inferred: tool + success
      ['user_prompt', 'prompt'], // inferred: prompt_length
    ]);
  });

  it('masks prompt text, tool inputs, workspace paths, the OS login and e-mail; hashes prompts', () => {
    const [prompt, , mcp] = rows;
    expect(raw(prompt).prompt).toBe(hmac('Summarise the Q3 plan for my boss'));
    expect(raw(prompt)['workspace.host_paths']).toBe(hmac('["/Users/dana/Projects/secret-plan"]'));
    expect(raw(prompt)['process.owner']).toBe(hmac('dana'));
    expect(raw(prompt)['user.email']).toBe(hmac('dana@example.com'));
    expect(prompt.redaction_masked_keys).toBe('["organization.id","process.owner","prompt","user.account_id","user.account_uuid","user.email","user.id","workspace.host_paths"]');
    expect(raw(mcp).tool_parameters).toBe(hmac('{"mcp_server_name":"drive","mcp_tool_name":"search"}'));
    expect(raw(mcp).tool_input).toMatch(/^hmac-sha256:/);
    expect(mcp.event_type).toBe('mcp_call'); // inferred before the parameters were masked
  });

  it('masks IP addresses in keys and text, and an e-mail used as the actor id', () => {
    const inferred = rows[5];
    expect(inferred.actor_identity).toBe(hmac('carol@example.net'));
    expect(raw(inferred).trace_id).toBe('5b8efff798038103d269b633813fc60c');
    const log = rows[6];
    expect(raw(log)['log.body']).toBe(`User ${hmac('198.51.100.23')} logged in from ${hmac('2001:db8::7')}`);
    expect(raw(log)['net.peer.ip']).toBe(hmac('198.51.100.23'));
    expect(raw(log)['client.address']).toBe(hmac('203.0.113.77'));
    expect(rows[4].error_message).toBe(`upstream connect error to ${hmac('192.0.2.44')}:443`);
    for (const r of rows) expect(JSON.stringify(r)).not.toMatch(/@|\b(198\.51\.100|203\.0\.113|192\.0\.2)\.\d+|2001:db8::7/);
  });

  it('falls back from timeUnixNano to observedTimeUnixNano to ingestion time', () => {
    expect(rows[7].observed_at).toBe('2026-03-02T10:16:08.000Z');
    expect(rows[8].observed_at).toBe(NOW);
  });
});

describe('attribute inference', () => {
  it('returns null when no pattern matches', () => {
    expect(inferFromAttributes({ foo: 'bar' })).toBeNull();
    expect(inferFromAttributes({ model: 'm', response_length: 3 })).toBeNull();
    expect(inferFromAttributes({ model: 'm', error: 'x' })).toBe('error');
    expect(inferFromAttributes({ tool_name: 'x', decision: 'reject' })).toBe('approval');
  });
});
