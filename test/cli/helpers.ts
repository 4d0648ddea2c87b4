/**
 * Runs the real `svc` bin (`node bin/svc.js`) as a child process, asynchronously (an API
 * started by the same test process must keep serving while the CLI talks to it), with a
 * private user-config directory so that no test touches ~.
 */
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { expect } from 'vitest';
import type { TestStack } from '../harness.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = join(ROOT, 'bin', 'svc.js');

export interface Run { code: number | null; stdout: string; stderr: string }

function svc(args: string[], opts: { cwd: string; env?: Record<string, string | undefined>; input?: string }): Promise<Run> {
  return new Promise((resolvePromise, reject) => {
    const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: '1', ...opts.env };
    for (const k of ['SVC_API_KEY', 'SVC_API_ENDPOINT']) if (!(opts.env && k in opts.env)) delete env[k];
    const child = spawn(process.execPath, [BIN, ...args], { cwd: opts.cwd, env: env as NodeJS.ProcessEnv, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}

/** A temporary working directory and user-config home; `run` runs svc in it. */
export function sandbox() {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cli-'));
  const home = join(dir, '.user-config');
  const work = join(dir, 'work');
  return {
    dir, home, work,
    env: { SVC_CONFIG_HOME: home },
    run: (args: string[], o: { cwd?: string; env?: Record<string, string | undefined>; input?: string } = {}) =>
      svc(args, { cwd: o.cwd ?? work, env: { SVC_CONFIG_HOME: home, ...o.env }, input: o.input }),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Drives a command through a pseudo-terminal (test/cli/pty-drive.py): expect/send steps. */
export function pty(cmd: string[], cwd: string, env: Record<string, string>, steps: Array<{ expect: string; send: string }>, timeout = 45): Promise<{ code: number | null; output: string; error: string | null }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn('python3', [join(ROOT, 'test', 'cli', 'pty-drive.py')], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let errText = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (errText += d));
    child.on('error', reject);
    child.on('close', () => {
      try { resolvePromise(JSON.parse(out)); } catch { reject(new Error(`pty driver failed: ${errText || out}`)); }
    });
    child.stdin.end(JSON.stringify({ cmd, cwd, env, steps, timeout }));
  });
}

/** A loopback port nothing listens on (bound, then released): the "server unreachable" case. */
export function closedPort(): Promise<number> {
  return new Promise((resolvePromise) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolvePromise(port));
    });
  });
}

/** The stdout of a run that must succeed, parsed as JSON (`-o json`). */
export function parsed(r: Run): any {
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

/** An admin call to the stack's API that must succeed (2xx); resolves to the body. */
export function adminApi(t: () => TestStack) {
  return async (method: string, p: string, body?: unknown) => {
    const r = await t().call('api', method, p, { admin: true, body });
    expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
    return r.body;
  };
}
