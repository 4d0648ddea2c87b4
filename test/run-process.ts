/**
 * Child processes for tests that run another program to completion (the Python client's
 * suite, the README's walkthrough): its exit code and output, killed after a time limit.
 */
import { spawn, spawnSync } from 'node:child_process';

export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `cmd args` in `cwd` with exactly `env`; SIGKILL after `timeoutMs`. */
export function runProcess(cmd: string, args: string[], opts: { cwd: string; env: Record<string, string | undefined>; timeoutMs: number }): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** True when the interpreter can import grpc and protobuf (python3-grpcio, python3-protobuf). */
export function pythonHasGrpc(python: string): boolean {
  return spawnSync(python, ['-c', 'import grpc, google.protobuf'], { encoding: 'utf8' }).status === 0;
}
