/**
 * The README's "Operating svc with the CLI", run as it is written (like the walkthrough: the
 * section between `<!-- operating:start -->` and `<!-- operating:end -->`, each ```sh block a
 * step and the ```text block after it its expected stdout) with the real `svc` bin, against a
 * real stack on port 0 (PGlite, or PostgreSQL and Redis like the other suites). The steps run
 * in one bash process with `set -euo pipefail`, in a scratch directory whose `bin` is the
 * repository's; `SVC_API_ENDPOINT`, `SVC_CONTEXT_ENDPOINT` and `SVC_API_KEY` point them at
 * this stack.
 *
 * Asserted: every step's output matches the README's; stderr holds only the key's "shown once"
 * notice; the two requests were served and audited for the agent; the key is revoked.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startTestStack, type TestStack } from '../harness.js';
import { runProcess } from '../run-process.js';
import { outputPattern, readSection, scriptOf } from './readme-steps.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const section = readSection(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'), 'operating');

describe('README: Operating svc with the CLI', () => {
  let t: TestStack;
  let dir: string;

  beforeAll(async () => {
    t = await startTestStack({ services: ['api', 'context-grpc'] });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-operating-'));
    fs.symlinkSync(path.join(ROOT, 'bin'), path.join(dir, 'bin'));
  });
  afterAll(async () => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    await t?.close();
  });

  it('runs as written: a project published and deployed, an agent served over REST and gRPC, the audit log verified, a revoked key refused', async () => {
    expect(section.steps.length).toBeGreaterThanOrEqual(6);
    expect(section.files.size).toBe(0);
    const run = scriptOf(section.steps);
    fs.writeFileSync(path.join(dir, 'operating.sh'), run.script);
    const env: Record<string, string | undefined> = {
      ...process.env,
      SVC_API_ENDPOINT: t.url('api'),
      SVC_CONTEXT_ENDPOINT: t.url('context-grpc'),
      SVC_API_KEY: ADMIN_KEY,
      SVC_AGENT_KEY: undefined,
      SVC_CONFIG_HOME: path.join(dir, '.user-config'), // no test reads ~
      NO_COLOR: '1',
    };
    const { code, stdout, stderr } = await runProcess('bash', ['operating.sh'], { cwd: dir, env, timeoutMs: 180_000 });
    const report = `exit ${code}\n--- stdout\n${stdout}\n--- stderr\n${stderr}`;
    expect(code, report).toBe(0);
    // The only diagnostic: the new key's notice (stderr, so that stdout is the key alone).
    expect(stderr.trim().split('\n'), report).toEqual([expect.stringMatching(/^svc: key laptop issued to agent:triage-bot \(prefix sk_\w+, expires \S+\); store it now: it is not shown again$/)]);

    const outputs = run.outputs(stdout);
    expect(outputs, report).not.toBeNull();
    section.steps.forEach((s, i) => {
      if (s.expected === null) return;
      expect(outputs![i], `step ${i}:\n${s.script}`).toMatch(outputPattern(s.expected));
    });

    const records = await t.call('api', 'GET', '/api/audit/requests?agent_id=agent%3Atriage-bot', { admin: true });
    // The two requests served (REST, then gRPC), then the one refused with the revoked key.
    expect(records.body.records.map((r: any) => [r.intent_valid, r.context_scd_ids?.length ?? null])).toEqual([[true, 12], [true, 12], [false, null]]);
    const key = await t.call('api', 'GET', '/api/agents/agent:triage-bot/api-keys/laptop', { admin: true });
    expect(key.body.status).toBe('revoked');
  });
});
