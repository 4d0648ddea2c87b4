/**
 * The coding CLI's events through the real path: an OTLP JSON-lines file read by the
 * FileTailer, typed and redacted by processOtlpLine, committed to the SQLite store and read
 * back as the API lists it. Covers the event types of Claude Code's hook, plugin, skill,
 * MCP-connection and permission-mode events, tool_result durations, pseudonymized
 * identifiers, and secrets typed into opted-in prompt and tool text.
 */
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { codeCli } from '../../src/collector/code-cli/definition.js';
import { processOtlpLine } from '../../src/collector/otlp/lines.js';
import { Redactor } from '../../src/collector/redact/redactor.js';
import { CollectorStore, type ObservedActivity } from '../../src/collector/store/store.js';
import { FileTailer } from '../../src/collector/tail/tailer.js';
import { memoryLogger } from '../../src/shared/logger.js';
import { POSITIVES } from '../fixtures/collector/redaction-corpus.js';
import { readFixture, tmpDir } from './helpers.js';

const SECRET = 'claude-code-events-secret';
const hmac = (v: string) => 'hmac-sha256:' + createHmac('sha256', SECRET).update(v).digest('hex');
const SOURCE = codeCli.profile.sourceId;
const s = (key: string, v: string) => ({ key, value: { stringValue: v } });

/** A user_prompt and a tool_result whose opted-in text carries every kind of the corpus. */
function secretsLine(): string {
  const text = POSITIVES.map((p) => p.text).join(' | ');
  const base = [s('user.account_id', 'user_01SYNTHUSER0000000000000'), s('session.id', 'sess-secrets'), s('organization.id', 'org-42')];
  const rec = (seq: number, name: string, attrs: unknown[]) => ({
    timeUnixNano: String((1775034100n + BigInt(seq)) * 1000000000n),
    body: { stringValue: `claude_code.${name}` },
    attributes: [...base, s('event.name', name), ...attrs],
  });
  return JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: [s('service.name', 'claude-code')] },
        scopeLogs: [
          {
            logRecords: [
              rec(1, 'user_prompt', [s('prompt', text), s('prompt_length', String(text.length))]),
              rec(2, 'tool_result', [
                s('tool_name', 'Bash'),
                s('success', 'false'),
                s('duration_ms', '12'),
                // Nested: an OTLP kvlist value, as tool_parameters may arrive.
                { key: 'tool_parameters', value: { kvlistValue: { values: [s('command', text), { key: 'env', value: { kvlistValue: { values: [s('GITHUB_TOKEN', 'whatever'), s('user.id', 'u-7')] } } }] } } },
              ]),
            ],
          },
        ],
      },
    ],
  });
}

let dir: string;
let store: CollectorStore;
let rows: ObservedActivity[];

beforeEach(async () => {
  dir = tmpDir();
  const file = path.join(dir, 'claude-code.jsonl');
  fs.writeFileSync(file, readFixture('claude-code-events.jsonl') + secretsLine() + '\n');
  store = new CollectorStore(path.join(dir, 'collector.sqlite'));
  store.registerSource(SOURCE, codeCli.description, codeCli.coverage);
  const redactor = new Redactor(SECRET);
  await new FileTailer({
    sourceId: SOURCE,
    path: file,
    store,
    logger: memoryLogger(),
    clock: { now: () => new Date('2030-01-01T00:00:00Z') },
    intervalMs: 10,
    processLine: (line, out, counters, now) => processOtlpLine(line, { profile: codeCli.profile, redactor, now }, out, counters),
  }).tick();
  rows = store.listObserved({ limit: 500, sourceId: SOURCE }).reverse(); // oldest first
});
afterEach(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('Claude Code events, tailed and stored', () => {
  it('types hook, plugin, skill, MCP-connection and permission-mode events, and keeps the rest unknown', () => {
    expect(rows.slice(0, 10).map((r) => [r.event_name, r.event_type])).toEqual([
      ['tool_result', 'tool_call'],
      ['hook_registered', 'hook'],
      ['hook_execution_start', 'hook'],
      ['hook_execution_complete', 'hook'],
      ['plugin_installed', 'plugin'],
      ['plugin_loaded', 'plugin'],
      ['skill_activated', 'skill'],
      ['mcp_server_connection', 'mcp_connection'],
      ['permission_mode_changed', 'permission_mode'],
      ['at_mention', 'unknown'],
    ]);
  });

  it('puts durations in duration_ms: tool results, hook completions, MCP connections', () => {
    const by = (n: string) => rows.find((r) => r.event_name === n)!;
    expect(by('tool_result')).toMatchObject({ duration_ms: 187, tool_name: 'Read', success: 'true' });
    expect(by('hook_execution_complete').duration_ms).toBe(42);
    expect(by('hook_execution_start').duration_ms).toBeNull();
    expect(by('mcp_server_connection')).toMatchObject({ duration_ms: 1500, mcp_server_scope: 'project' });
    expect(by('permission_mode_changed').raw_attributes).toMatchObject({ from_mode: 'default', to_mode: 'plan', trigger: 'shift_tab' });
    expect(rows[11]).toMatchObject({ event_type: 'tool_call', duration_ms: 12, success: 'false' });
  });

  it('pseudonymizes user and organization ids: one user, one pseudonym, in columns and raw_attributes', () => {
    const pseudonym = hmac('user_01SYNTHUSER0000000000000');
    for (const r of rows) {
      expect(r.actor_identity).toBe(pseudonym);
      expect(r.raw_attributes['user.account_id']).toBe(pseudonym);
    }
    expect(rows[0].raw_attributes).toMatchObject({
      'user.id': hmac('9f0c1d2e3f4a5b6c7d8e9f00112233445566778899aabbccddeeff0011223344'),
      'user.account_uuid': hmac('7a8b9c0d-0000-4000-8000-000000001234'),
      'organization.id': hmac('0b1c2d3e-0000-4000-8000-00000000abcd'),
      'user.email': hmac('dev@example.com'),
      'session.id': '6f1b2c3d-2222-4333-8444-955556666777',
    });
    expect(rows[0].redaction_masked_keys).toBe('["organization.id","user.account_id","user.account_uuid","user.email","user.id"]');
    expect(store.stats().unique_users).toBe(1);
  });

  it('masks every secret of the corpus in opted-in text, nested values included, and counts each', () => {
    const [prompt, tool] = rows.slice(10);
    const text = String(prompt.raw_attributes.prompt);
    for (const p of POSITIVES) {
      expect(text).not.toContain(p.secret);
      expect(text).toContain(p.kind === 'email' ? hmac(p.address!) : `[redacted:${p.kind}]`);
    }
    // One per corpus entry, plus the account and organization ids.
    expect(prompt.redaction_masked_count).toBe(POSITIVES.length + 2);
    const params = tool.raw_attributes.tool_parameters as { command: string; env: Record<string, string> };
    expect(params.command).toBe(text);
    expect(params.env).toEqual({ GITHUB_TOKEN: '[redacted:secret]', 'user.id': hmac('u-7') });
    expect(tool.redaction_masked_count).toBe(POSITIVES.length + 2 + 2);
    // Nothing of it is in the database files either.
    store.db.pragma('wal_checkpoint(TRUNCATE)');
    const bytes = fs.readFileSync(path.join(dir, 'collector.sqlite')).toString('latin1');
    for (const p of POSITIVES) expect(bytes).not.toContain(p.secret);
    expect(bytes).not.toContain('user_01SYNTHUSER');
  });
});
