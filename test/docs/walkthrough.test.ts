/**
 * The README's walkthrough ("Walkthrough: from an empty system to an audited answer"), run as
 * it is written, so that it cannot rot. The section between `<!-- walkthrough:start -->` and
 * `<!-- walkthrough:end -->` is read from README.md: each ```sh block is a step, a ```text
 * block right after it is that step's expected output (`...` stands for anything within a
 * line), and a block whose info string names a file (```ts walk.mts, ```python walk.py) is
 * saved under that name, as the reader is told to. The steps run in one bash process with
 * `set -euo pipefail`, in a directory that looks like the repository root to them
 * (`node_modules` and `clients` are symlinks to the repository's), against a real stack on
 * port 0 (PGlite, or PostgreSQL and Redis like the other suites): the section's
 * `${SVC:-...}`, `${SVC_GRPC:-...}` and `${ADMIN:-...}` pick up this stack's addresses and
 * admin key from the environment.
 *
 * Asserted: every step's output matches the README's, nothing is written to stderr, the three
 * requests (REST, Connect, gRPC) were served the deployed SCD, and audit verify is `ok` over
 * exactly those three records, whose ids are the ones the steps printed.
 *
 * The Python step is skipped, with the reason printed, only when its interpreter cannot
 * `import grpc` (python3-grpcio and python3-protobuf, `make py-tools`); the audit step's
 * counts are then checked for two requests instead of its printed output.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startTestStack, type TestStack } from '../harness.js';
import { pythonHasGrpc, runProcess } from '../run-process.js';
import { outputPattern, readSection, scriptOf } from './readme-steps.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SCD = 'scd:project:phi-notes';
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

const walk = readSection(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'), 'walkthrough');
const stepWith = (needle: string): number => {
  const found = walk.steps.flatMap((s, i) => (s.script.includes(needle) ? [i] : []));
  if (found.length !== 1) throw new Error(`the walkthrough should have one sh step with ${needle}, it has ${found.length}`);
  return found[0]!;
};
const REST = stepWith('/api/context');
const CONNECT = stepWith('walk.mts');
const GRPC = stepWith('walk.py');
const AUDIT = stepWith('/api/audit/verify');

// The interpreter the Python step names; the step is skipped only when it cannot import grpc.
const python = /(\S*python3?)\s+walk\.py/.exec(walk.steps[GRPC]!.script)?.[1] ?? 'python3';
const pythonMissing = !pythonHasGrpc(python);
const skipReason = `${python} cannot import grpc: install python3-grpcio and python3-protobuf (make py-tools)`;
if (pythonMissing) console.warn(`test/docs/walkthrough.test.ts: the Python (gRPC) step is skipped: ${skipReason}`);

describe("README's walkthrough", () => {
  let t: TestStack;
  let dir: string;

  beforeAll(async () => {
    t = await startTestStack({ services: ['api', 'context-grpc'] });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-walkthrough-'));
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    fs.symlinkSync(path.join(ROOT, 'clients'), path.join(dir, 'clients'));
    for (const [file, body] of walk.files) fs.writeFileSync(path.join(dir, file), body);
  });
  afterAll(async () => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    await t?.close();
  });

  it('runs as written: three requests served the deployed SCD, in a valid audit chain', async () => {
    expect(walk.steps.length).toBeGreaterThanOrEqual(6);
    expect([...walk.files.keys()].sort()).toEqual(['walk.mts', 'walk.py']);
    const run = scriptOf(walk.steps, (i) => (i === GRPC && pythonMissing ? 'echo skipped' : null));
    fs.writeFileSync(path.join(dir, 'walkthrough.sh'), run.script);
    const env: Record<string, string | undefined> = {
      ...process.env,
      SVC: t.url('api'),
      SVC_GRPC: new URL(t.url('context-grpc')).host,
      ADMIN: ADMIN_KEY,
      KEY: undefined,
      PYTHONDONTWRITEBYTECODE: '1',
      // npx is npm: without this it may look for a newer npm (a registry request) and print a
      // notice on stderr, which is not the walkthrough's output.
      npm_config_update_notifier: 'false',
    };
    const { code, stdout, stderr } = await runProcess('bash', ['walkthrough.sh'], { cwd: dir, env, timeoutMs: 50_000 });
    const report = `exit ${code}\n--- stdout\n${stdout}\n--- stderr\n${stderr}`;
    expect(code, report).toBe(0);
    expect(stderr, report).toBe('');

    // Each step's output, cut at the markers.
    const outputs = run.outputs(stdout);
    expect(outputs, report).not.toBeNull();
    walk.steps.forEach((s, i) => {
      if (s.expected === null) return;
      if (pythonMissing && (i === GRPC || i === AUDIT)) return;
      expect(outputs![i], `step ${i}:\n${s.script}`).toMatch(outputPattern(s.expected));
    });

    // REST: the deployed SCD, and the audit record's id.
    const rest = JSON.parse(outputs![REST]!);
    expect(rest).toMatchObject({ success: true, agent_id: 'agent:claims-bot', role_id: 'role:claims', scd_ids: [SCD] });
    const ids = [rest.request_id as string];
    // Connect (TypeScript) and gRPC (Python) print: success, the SCD ids, the request id.
    const connect = new RegExp(`^true \\[ '${SCD}' \\] (${UUID})$`).exec(outputs![CONNECT]!);
    expect(connect, outputs![CONNECT]).not.toBeNull();
    ids.push(connect![1]!);
    if (!pythonMissing) {
      const grpc = new RegExp(`^True \\['${SCD}'\\] (${UUID})$`).exec(outputs![GRPC]!);
      expect(grpc, outputs![GRPC]).not.toBeNull();
      ids.push(grpc![1]!);
    }

    // Audit: verify ok over exactly these records, as the last line of the audit step printed.
    const verify = JSON.parse(outputs![AUDIT]!.split('\n').at(-1)!);
    // record_count: the requests and the management events of the steps (agent, key, bundle, tag, deployment).
    expect(verify).toMatchObject({ status: 'ok', record_count: ids.length + verify.management_events.event_count, tampered_at_sequence: null, error: null });
    expect(verify.management_events).toMatchObject({ status: 'ok' });
    const records = await t.call('api', 'GET', '/api/audit/requests?agent_id=agent%3Aclaims-bot', { admin: true });
    expect(records.status).toBe(200);
    expect(records.body.records.map((r: any) => [r.request_id, r.request_params.via, r.context_scd_ids])).toEqual(
      ids.map((id, i) => [id, ['rest', 'connect', 'grpc'][i], [SCD]]),
    );
  });
});
