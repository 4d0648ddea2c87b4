/**
 * The server as `make run` and the systemd units run it: dist/, compiled by `make build` (which
 * `make test` runs first). Every service starts from it in embedded mode and answers, and what
 * the compiled modules read beside them is found: the OpenAPI specs (request validation and the
 * API reference), the migrations, the SCS JSON schemas, the console's assets.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ADMIN_KEY, freePort, JWT_SECRET } from '../harness.js';
import { caller, publishCorpus } from '../fixtures/corpus.js';
import { NODE_FLAGS, SERVER_ENV } from '../audit/server-process.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MAIN = path.join(ROOT, 'dist/src/main.js');


describe('the built server (dist/)', () => {
  it('starts every service, finds its specs, migrations, schemas and assets, and stops on SIGTERM with exit 0', { timeout: 120_000 }, async () => {
    expect(fs.existsSync(MAIN), 'dist/src/main.js is missing: run make build (make test runs it)').toBe(true);
    const names = ['API_PORT', 'RULES_PORT', 'CONTEXT_GRPC_PORT', 'CONTEXT_WEBHOOK_PORT', 'TELEMETRY_PORT', 'COLLECTOR_PORT'] as const;
    const ports = Object.fromEntries(await Promise.all(names.map(async (n) => [n, await freePort()] as const))) as Record<(typeof names)[number], number>;
    const data = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-built-'));
    const child = spawn(process.execPath, [...NODE_FLAGS, MAIN], {
      cwd: ROOT,
      env: {
        ...SERVER_ENV,
        PATH: process.env.PATH,
        HOME: os.tmpdir(),
        SVC_DATA_DIR: data,
        ADMIN_API_KEY: ADMIN_KEY,
        JWT_SECRET,
        COLLECTOR_HMAC_SECRET: JWT_SECRET,
        DEPLOYMENT_ID: '0b8f2f8e-7c1a-4d47-9a3e-2f0f6f7f2a12',
        LOG_LEVEL: 'info',
        ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(`exit ${code ?? signal}`)));
    try {
      const api = `http://127.0.0.1:${ports.API_PORT}`;
      // Up once it logged `listening` for each service: it handles SIGTERM from then on.
      let up = false;
      for (let i = 0; i < 600 && !up && child.exitCode === null; i++) {
        up = (out.match(/"msg":"listening"/g) ?? []).length === names.length;
        if (!up) await new Promise((r) => setTimeout(r, 100));
      }
      expect({ up, out: up ? '' : out }).toEqual({ up: true, out: '' });
      // Every service answers its health check.
      for (const n of names) {
        const r = await fetch(`http://127.0.0.1:${ports[n]}/health`);
        expect({ n, status: r.status }).toEqual({ n, status: 200 });
      }
      // The spec is found: the edge validates against it (an unknown field in a body the spec
      // closes is a 400 validation_error) and the API reference serves it.
      const call = caller(api);
      const bad = await call('api', 'POST', '/api/agents', { admin: true, body: { name: 7 } });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe('validation_error');
      const spec = await fetch(`${api}/openapi.yaml`);
      expect(spec.status).toBe(200);
      expect(await spec.text()).toMatch(/^openapi: 3\.0\.3/);
      // The migrations ran (an agent is stored).
      const made = await call('api', 'POST', '/api/agents', { admin: true, body: { agent_id: 'agent:built-server', name: 'built server', role_id: 'role:nurse', allowed_intents: [] } });
      expect(made.status).toBe(201);
      // The SCS JSON schemas (read from beside the compiled module): the fixture corpus's
      // bundles, their SCDs checked against them, are published and deployed.
      const published = await publishCorpus(call, { workload: 'W1' });
      expect(published.allScdIds.length).toBeGreaterThan(0);
      // The console's assets (read from beside the compiled module).
      const css = await fetch(`${api}/console/assets/console.css`);
      expect(css.status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await exited;
      fs.rmSync(data, { recursive: true, force: true });
    }
    const exit = await exited;
    expect({ exit, out: exit === 'exit 0' ? '' : out }).toEqual({ exit: 'exit 0', out: '' });
  });
});
