/**
 * gRPC health (`grpc.health.v1.Health`) and server reflection (v1 and v1alpha) on 8002,
 * through a real client: `buf curl` over gRPC with HTTP/2 prior knowledge and no .proto
 * (everything it knows of the services comes from reflection). Watch is seen to go
 * SERVING -> NOT_SERVING when the launcher drains, and (PostgreSQL) when the database's
 * connections are refused, then SERVING again.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fromBinary } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, DB_PASSWORD, REAL, startTestStack, type TestStack } from '../harness.js';
import { pythonHasGrpc, runProcess, type ProcessResult } from '../run-process.js';
import { openDb } from '../../src/core/db/index.js';
import { proxyFor } from '../foundation/tcp-proxy.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
/**
 * The buf binary itself, not node_modules/.bin/buf: that is a node wrapper that runs the
 * binary with spawnSync, and a signal to the wrapper would leave the binary (and its
 * connection) running.
 */
const BUF = (() => {
  const pkg = { x64: 'x64', arm64: 'aarch64' }[process.arch as string];
  try {
    return createRequire(import.meta.url).resolve(`@bufbuild/buf-${process.platform}-${pkg}/bin/buf`);
  } catch {
    return path.join(ROOT, 'node_modules/.bin/buf');
  }
})();
const BASE_ARGS = ['curl', '--protocol', 'grpc', '--http2-prior-knowledge'];

function bufCurl(args: string[]): Promise<ProcessResult> {
  return runProcess(BUF, [...BASE_ARGS, ...args], { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME }, timeoutMs: 30_000 });
}

/** A `buf curl` left running (a Watch): its output so far, and a wait for a pattern in it. */
function bufCurlStream(args: string[]) {
  const child = spawn(BUF, [...BASE_ARGS, ...args], { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    for (const w of waiters) w();
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return {
    /** The statuses received so far, in order. */
    statuses: () => [...stdout.matchAll(/"status":\s*"([A-Z_]+)"/g)].map((m) => m[1]),
    /** Resolves once `n` statuses have arrived; rejects (with the output) after 20 s. */
    async statusCount(n: number): Promise<string[]> {
      await new Promise<void>((resolve, reject) => {
        const check = () => {
          if ([...stdout.matchAll(/"status":\s*"([A-Z_]+)"/g)].length >= n) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`expected ${n} statuses; stdout: ${stdout}; stderr: ${stderr}`));
        }, 20_000);
        waiters.add(check);
        check();
      });
      return [...stdout.matchAll(/"status":\s*"([A-Z_]+)"/g)].map((m) => m[1]!);
    },
    exited,
    stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

describe('health and reflection on 8002', () => {
  let t: TestStack;
  let url: string;
  beforeAll(async () => {
    t = await startTestStack({ services: ['context-grpc'] });
    url = t.url('context-grpc');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('buf curl lists the services and methods from reflection alone (v1 and v1alpha)', async () => {
    const want = ['grpc.health.v1.Health', 'grpc.reflection.v1.ServerReflection', 'grpc.reflection.v1alpha.ServerReflection', 'svc.context.v1.ContextService', 'svc.context.v1.TransparencyLogService'];
    for (const reflect of ['grpc-v1', 'grpc-v1alpha']) {
      const services = await bufCurl(['--reflect-protocol', reflect, '--list-services', url]);
      expect(services.stderr).toBe('');
      expect(services.code).toBe(0);
      expect(services.stdout.trim().split('\n').sort()).toEqual(want);
    }
    const methods = await bufCurl(['--list-methods', url]);
    expect(methods.code).toBe(0);
    const list = methods.stdout.trim().split('\n');
    for (const m of ['svc.context.v1.ContextService/RequestContext', 'svc.context.v1.ContextService/Subscribe', 'grpc.health.v1.Health/Check', 'grpc.health.v1.Health/Watch']) expect(list).toContain(m);
  });

  it('buf curl calls RequestContext with the schema it got by reflection', async () => {
    const r = await bufCurl(['-d', '{"api_key":"not-a-key","task_type":"code_review"}', `${url}/svc.context.v1.ContextService/RequestContext`]);
    expect(r.code).toBe(0);
    const body = JSON.parse(r.stdout);
    expect(body.success).toBeUndefined(); // false is the default, omitted in JSON
    expect(body.errorCode).toBe('AUTH_FAILED');
  });

  it('answers file_by_filename, file_containing_symbol, extensions and errors on one reflection stream', async () => {
    const requests = [
      { file_by_filename: 'context.proto' },
      { file_containing_symbol: 'svc.context.v1.ContextService.RequestContext' },
      { file_containing_symbol: 'grpc.health.v1.HealthCheckResponse.ServingStatus' },
      { file_containing_symbol: 'svc.context.v1.CONTEXT_MESSAGE_TYPE_SNAPSHOT' },
      { file_by_filename: 'nope.proto' },
      { file_containing_symbol: 'svc.context.v1.Nope' },
      { all_extension_numbers_of_type: 'svc.context.v1.ContextMessage' },
      { all_extension_numbers_of_type: 'svc.context.v1.Nope' },
      { file_containing_extension: { containing_type: 'svc.context.v1.ContextMessage', extension_number: 100 } },
    ];
    for (const version of ['v1', 'v1alpha']) {
      const r = await bufCurl(['-d', requests.map((q) => JSON.stringify({ host: 'h', ...q })).join('\n'), `${url}/grpc.reflection.${version}.ServerReflection/ServerReflectionInfo`]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const answers = r.stdout.trim().split(/\n(?=\{)/).map((s) => JSON.parse(s));
      expect(answers).toHaveLength(requests.length);
      const fileNames = (a: any) => (a.fileDescriptorResponse.fileDescriptorProto as string[]).map((b) => fromBinary(FileDescriptorProtoSchema, Buffer.from(b, 'base64')).name);
      expect(answers[0].validHost).toBe('h');
      expect(answers[0].originalRequest.fileByFilename).toBe('context.proto');
      const ctxFile = fromBinary(FileDescriptorProtoSchema, Buffer.from(answers[0].fileDescriptorResponse.fileDescriptorProto[0], 'base64'));
      expect(ctxFile.package).toBe('svc.context.v1');
      expect(ctxFile.service.map((s) => s.name)).toEqual(['ContextService', 'TransparencyLogService']);
      expect(fileNames(answers[1])).toEqual(['context.proto']);
      expect(fileNames(answers[2])).toEqual(['grpc/health/v1/health.proto']);
      expect(fileNames(answers[3])).toEqual(['context.proto']);
      expect(answers[4].errorResponse).toEqual({ errorCode: 5, errorMessage: 'file nope.proto not found' });
      expect(answers[5].errorResponse).toEqual({ errorCode: 5, errorMessage: 'symbol svc.context.v1.Nope not found' });
      expect(answers[6].allExtensionNumbersResponse).toEqual({ baseTypeName: 'svc.context.v1.ContextMessage' });
      expect(answers[7].errorResponse.errorCode).toBe(5);
      expect(answers[8].errorResponse.errorCode).toBe(5);
    }
  });

  it('Check answers SERVING for the server and each service, NOT_FOUND for an unknown one', async () => {
    for (const service of ['', 'svc.context.v1.ContextService', 'grpc.health.v1.Health', 'grpc.reflection.v1.ServerReflection']) {
      const r = await bufCurl(['-d', JSON.stringify({ service }), `${url}/grpc.health.v1.Health/Check`]);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual({ status: 'SERVING' });
    }
    const unknown = await bufCurl(['-d', '{"service":"no.such.Service"}', `${url}/grpc.health.v1.Health/Check`]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('not_found');
  });

  it('Watch answers SERVICE_UNKNOWN for an unknown service and ends when the client leaves', async () => {
    const w = bufCurlStream(['-d', '{"service":"no.such.Service"}', `${url}/grpc.health.v1.Health/Watch`]);
    expect(await w.statusCount(1)).toEqual(['SERVICE_UNKNOWN']);
    await w.stop();
  });

  it('List answers every service', async () => {
    const r = await bufCurl(['-d', '{}', `${url}/grpc.health.v1.Health/List`]);
    expect(r.code).toBe(0);
    const { statuses } = JSON.parse(r.stdout);
    expect(Object.keys(statuses).sort()).toEqual(['', 'grpc.health.v1.Health', 'grpc.reflection.v1.ServerReflection', 'grpc.reflection.v1alpha.ServerReflection', 'svc.context.v1.ContextService', 'svc.context.v1.TransparencyLogService']);
    for (const s of Object.values(statuses)) expect(s).toEqual({ status: 'SERVING' });
  });
});

const PYTHON = '/usr/bin/python3';
const PY_SKIP = !pythonHasGrpc(PYTHON)
  ? `${PYTHON} cannot import grpc (python3-grpcio, python3-protobuf)`
  : spawnSync('protoc', ['--version']).status !== 0 || spawnSync('grpc_python_plugin', ['--help']).error
    ? 'protoc and grpc_python_plugin are needed to generate the health stubs (protobuf-compiler, protobuf-compiler-grpc)'
    : '';
if (PY_SKIP) console.log(`Python grpcio health client skipped: ${PY_SKIP}`);

const PY_HEALTH = `
import json, sys
sys.path.insert(0, sys.argv[1])
import grpc
import health_pb2 as pb, health_pb2_grpc as pbg
name = pb.HealthCheckResponse.ServingStatus.Name
out = {}
with grpc.insecure_channel(sys.argv[2]) as ch:
    stub = pbg.HealthStub(ch)
    out["check"] = name(stub.Check(pb.HealthCheckRequest(service=""), timeout=10).status)
    try:
        stub.Check(pb.HealthCheckRequest(service="no.such.Service"), timeout=10)
        out["unknown"] = "OK"
    except grpc.RpcError as e:
        out["unknown"] = e.code().name
    watch = stub.Watch(pb.HealthCheckRequest(service="svc.context.v1.ContextService"), timeout=10)
    out["watch"] = name(next(watch).status)
    watch.cancel()
print(json.dumps(out))
`;

describe.skipIf(!!PY_SKIP)('Python grpcio against gRPC health', () => {
  it('Check and Watch answer with stubs generated from spec/grpc/health/v1/health.proto', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-health-py-'));
    const t = await startTestStack({ services: ['context-grpc'] });
    try {
      const gen = spawnSync('protoc', ['-I', path.join(ROOT, 'spec/grpc/health/v1'), `--python_out=${dir}`, `--grpc_out=${dir}`, `--plugin=protoc-gen-grpc=${spawnSync('sh', ['-c', 'command -v grpc_python_plugin'], { encoding: 'utf8' }).stdout.trim()}`, 'health.proto'], { encoding: 'utf8' });
      expect(gen.stderr).toBe('');
      const r = await runProcess(PYTHON, ['-c', PY_HEALTH, dir, new URL(t.url('context-grpc')).host], { cwd: ROOT, env: { PATH: process.env.PATH }, timeoutMs: 30_000 });
      expect(r.stderr).toBe('');
      expect(JSON.parse(r.stdout)).toEqual({ check: 'SERVING', unknown: 'NOT_FOUND', watch: 'SERVING' });
    } finally {
      await t.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('Watch when the process drains', () => {
  it('sees SERVING, then NOT_SERVING when the launcher stops the stack, and the stream ends', async () => {
    const t = await startTestStack({ services: ['context-grpc'] });
    try {
      const w = bufCurlStream(['-d', '{"service":"svc.context.v1.ContextService"}', `${t.url('context-grpc')}/grpc.health.v1.Health/Watch`]);
      expect(await w.statusCount(1)).toEqual(['SERVING']);
      // The launcher's close (what SIGTERM runs) marks the context as draining first.
      const closing = t.stack.close();
      expect(await w.statusCount(2)).toEqual(['SERVING', 'NOT_SERVING']);
      expect(await w.exited).toBe(0);
      await closing;
      expect(t.ctx.draining).toBe(true);
    } finally {
      await t.close();
    }
  });
});

describe.skipIf(!REAL)('Watch while PostgreSQL refuses connections', () => {
  if (!REAL) console.log('skipped: the database is taken away through a TCP proxy in front of PostgreSQL (SVC_TEST_REAL=1 and DATABASE_URL); PGlite runs in process and cannot be cut off');
  let base: Awaited<ReturnType<typeof createTestDb>>;
  beforeAll(async () => {
    base = await createTestDb();
  });
  afterAll(async () => {
    await base?.close();
  });

  it('Watch goes SERVING -> NOT_SERVING -> SERVING, and Check answers NOT_SERVING meanwhile', async () => {
    const { proxy, url: viaProxy } = await proxyFor(base.appUrl!, 5432);
    const db = await openDb({ url: viaProxy, password: DB_PASSWORD, max: 2 });
    let t: TestStack | undefined;
    try {
      t = await startTestStack({ services: ['context-grpc'], testDb: { ...base, db } });
      const url = t.url('context-grpc');
      const w = bufCurlStream(['-d', '{"service":""}', `${url}/grpc.health.v1.Health/Watch`]);
      expect(await w.statusCount(1)).toEqual(['SERVING']);
      await proxy.stop();
      expect(await w.statusCount(2)).toEqual(['SERVING', 'NOT_SERVING']);
      const check = await bufCurl(['-d', '{"service":"svc.context.v1.ContextService"}', `${url}/grpc.health.v1.Health/Check`]);
      expect(JSON.parse(check.stdout)).toEqual({ status: 'NOT_SERVING' });
      // Health and reflection work without the database.
      expect(JSON.parse((await bufCurl(['-d', '{"service":"grpc.health.v1.Health"}', `${url}/grpc.health.v1.Health/Check`])).stdout)).toEqual({ status: 'SERVING' });
      await proxy.start();
      expect(await w.statusCount(3)).toEqual(['SERVING', 'NOT_SERVING', 'SERVING']);
      await w.stop();
    } finally {
      await t?.close();
      await db.close();
      await proxy.stop();
    }
  });
});
