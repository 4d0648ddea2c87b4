/**
 * The Python client (clients/python) against the real stack: this file boots the services
 * on port 0, deploys content for a fresh agent, then runs the client's unittest suite
 * (clients/python/tests) with the ports and keys in its environment, and asserts on its exit
 * code and report. The Python side requests context over gRPC (served with the deployed SCD
 * ids; a wrong key and a disallowed intent refused in-band), subscribes (SNAPSHOT, then an
 * UPDATE when it moves the tag over REST), drives the REST API (agents, keys, bundles,
 * deployments, tags; a 404 raising ApiError with error "not_found"; audit verify ok), and
 * closes every channel (the harness's teardown fails on a connection left open).
 *
 * The interpreter is the first of SVC_PYTHON, /usr/bin/python3 (Debian's, where `make
 * py-tools` installs python3-grpcio) and python3 that can `import grpc`; when none can, the
 * file is skipped with that reason.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startTestStack, type TestStack } from '../harness.js';
import { LEAK_WAIT_MS } from '../leak-check.js';
import { bundle, deploy, publish, scdDoc, uid } from '../content/factories.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { pythonHasGrpc, runProcess } from '../run-process.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLIENT = path.join(ROOT, 'clients/python');

function findPython(): { python: string | null; reason: string } {
  const candidates = [process.env.SVC_PYTHON, '/usr/bin/python3', 'python3'].filter((c): c is string => !!c);
  for (const c of candidates) if (pythonHasGrpc(c)) return { python: c, reason: '' };
  return { python: null, reason: `no Python interpreter can import grpc (tried ${candidates.join(', ')}): install python3-grpcio and python3-protobuf (make py-tools)` };
}

const { python, reason } = findPython();
if (!python) console.warn(`test/clients/python-client.test.ts skipped: ${reason}`);

describe.skipIf(!python)('Python client against the running stack', () => {
  let t: TestStack;
  const u = uid();
  const role = `role:pyc-${u}`;
  const bundleId = `bundle:pyc-${u}`;
  const tag = `pyc-${u}:prod`;
  const scds = [`scd:project:pyc-${u}-a`, `scd:project:pyc-${u}-b`];
  let agentId: string;
  let apiKey: string;

  beforeAll(async () => {
    t = await startTestStack({ services: ['api', 'context-grpc'] });
    await publish(t, bundle(bundleId, 'concern', { applies_to: { roles: [role] }, scds }));
    await publish(t, bundle(bundleId, 'concern', { version: '1.1.0', applies_to: { roles: [role] }, documents: [...scds, `scd:project:pyc-${u}-c`].map((s) => scdDoc(s)) }));
    await deploy(t, [[bundleId, '1.0.0']]);
    const r = await t.call('api', 'POST', '/api/tags', { admin: true, body: { tag, bundle_id: bundleId, bundle_version: '1.0.0' } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    agentId = (await makeAgent(t, { role_id: role, allowed_intents: ['code_review'] })).agent_id;
    apiKey = (await issueKey(t, agentId)).api_key;
  });
  afterAll(async () => {
    await t?.close();
  });

  const env = (): Record<string, string> => ({
    PYTHONPATH: path.join(CLIENT, 'src'),
    PYTHONDONTWRITEBYTECODE: '1',
    SVC_API_URL: t.url('api'),
    SVC_CONTEXT_TARGET: new URL(t.url('context-grpc')).host,
    SVC_ADMIN_KEY: ADMIN_KEY,
    SVC_AGENT_ID: agentId,
    SVC_API_KEY: apiKey,
    SVC_TASK_TYPE: 'code_review',
    SVC_SCD_IDS: scds.join(','),
    SVC_TAG: tag,
    SVC_BUNDLE_ID: bundleId,
  });

  it('passes its unittest suite: gRPC context and Subscribe, REST calls and errors, audit verify', async () => {
    const { code, stdout, stderr } = await runProcess(python!, ['-m', 'unittest', 'discover', '-s', path.join(CLIENT, 'tests'), '-v'], { cwd: ROOT, env: { ...process.env, ...env() }, timeoutMs: 50_000 });
    // unittest reports on stderr, last.
    const out = stdout + stderr;
    expect(code, out).toBe(0);
    expect(out).toMatch(/Ran 11 tests in /);
    expect(out).toMatch(/\nOK\s*$/);
    expect(out).not.toMatch(/skipped|expected failure/);

    // The calls reached this stack: the tag was moved by the Python side, and the agent's
    // context requests (served and refused) are in the audit log.
    const tagNow = await t.call('api', 'GET', `/api/tags/${encodeURIComponent(tag)}`, { admin: true });
    expect(tagNow.body.bundle_version).toBe('1.1.0');
    const audit = await t.call('api', 'GET', `/api/audit/requests?agent_id=${encodeURIComponent(agentId)}&limit=100`, { admin: true });
    expect(audit.status).toBe(200);
    expect(audit.body.records.length).toBeGreaterThanOrEqual(4);
  });
  it('close() ends the gRPC connection while the Python process lives on', async () => {
    // The suite's processes exit, which closes their sockets whether or not close() works;
    // here the process waits after close() while the server's connections are counted.
    const server = t.stack.services['context-grpc']!.server;
    const connections = () => new Promise<number>((resolve, reject) => server.getConnections((e, n) => (e ? reject(e) : resolve(n))));
    const until = async (n: number, what: string) => {
      const deadline = Date.now() + LEAK_WAIT_MS;
      while ((await connections()) !== n) {
        if (Date.now() > deadline) throw new Error(`${what}: ${await connections()} connections open on context-grpc, expected ${n}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    await until(0, 'before the check');
    const child = spawn(python!, [path.join(CLIENT, 'tests/close_check.py')], { cwd: ROOT, env: { ...process.env, ...env() }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
      const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
      expect((await lines.next()).value, stderr).toBe('OPEN');
      expect(await connections()).toBe(1);
      child.stdin.write('\n');
      expect((await lines.next()).value, stderr).toBe('CLOSED');
      await until(0, 'after close()'); // the process is still running
      expect(child.exitCode).toBeNull();
      child.stdin.end('\n');
      expect(await exited, stderr).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
