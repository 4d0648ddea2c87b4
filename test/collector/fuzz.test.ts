/**
 * The 7002 contract fuzzed against a POPULATED store (the shared suite in test/contract
 * runs with no collector configured): valid and mutated requests for every collector
 * operation, plus hand-picked edge cases. No 5xx; every status declared; every body valid.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { loadOperations, type LoadedOp } from '../contract/operations.js';
import { mutate, Rng, valid, type Schema } from '../contract/gen-values.js';
import { fixture, tmpDir } from './helpers.js';
import { waitFor } from '../wait.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 30);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
let t: TestStack;
let ops: LoadedOp[];
let dir: string;

beforeAll(async () => {
  ops = (await loadOperations()).filter((o) => o.service === 'collector');
  dir = tmpDir();
  fs.copyFileSync(fixture('code-cli.jsonl'), path.join(dir, 'cli.json'));
  fs.copyFileSync(fixture('cowork.jsonl'), path.join(dir, 'cowork.json'));
  t = await startTestStack({
    services: ['collector'],
    env: { COLLECTOR_CODE_CLI_FILE: path.join(dir, 'cli.json'), COLLECTOR_COWORK_FILE: path.join(dir, 'cowork.json'), COLLECTOR_TAIL_INTERVAL_MS: '50' },
  });
  await waitFor(async () => (await t.call('collector', 'GET', '/api/activity/stats')).body.total_events === 20, { timeoutMs: 60_000, what: 'ingestion' });
});
afterAll(async () => {
  await t?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function check(o: LoadedOp, url: string): Promise<string | null> {
  const res = await fetch(t.url('collector') + url, { headers: { connection: 'close' } }); // keeps no connection open
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  if (res.status >= 500) return `${url} -> ${res.status} ${text.slice(0, 200)}`;
  const declared = (o.op.responses as Record<string, unknown>)[String(res.status)];
  if (!declared) return `${url} -> ${res.status} is not declared`;
  const v = o.api.validateResponse(body, o.op, res.status);
  if (v.errors?.length) return `${url} -> ${res.status} does not match: ${JSON.stringify(v.errors.slice(0, 2))}`;
  return null;
}

function buildUrl(o: LoadedOp, r: Rng, broken: boolean): string {
  let p = o.op.path;
  const q = new URLSearchParams();
  for (const prm of (o.op.parameters ?? []) as Array<{ name: string; in: string; required?: boolean; schema?: Schema }>) {
    let v = valid(prm.schema, r);
    if (broken && r.bool(0.6)) v = mutate(prm.schema, v, r);
    const text = typeof v === 'string' ? v : JSON.stringify(v);
    if (prm.in === 'path') p = p.replace(`{${prm.name}}`, encodeURIComponent(text || 'x'));
    else if (prm.in === 'query' && (prm.required || r.bool(0.7))) q.set(prm.name, text ?? '');
  }
  const qs = q.toString();
  return p + (qs ? `?${qs}` : '');
}

describe(`collector contract fuzz on a populated store (seed ${SEED})`, () => {
  it('answers no 5xx and only declared, schema-valid responses', async () => {
    expect(ops.map((o) => o.id).sort()).toEqual([
      'getActivitySourceCoverage',
      'getActivityStats',
      'getCollectorDocs',
      'getCollectorDocsScript',
      'getCollectorHealth',
      'getCollectorMetrics',
      'getCollectorOpenApiJson',
      'getCollectorOpenApiYaml',
      'getCollectorReady',
      'listActivitySources',
      'listObservedActivity',
    ]);
    const r = new Rng(SEED);
    const failures: string[] = [];
    for (const o of ops) {
      for (let i = 0; i < RUNS; i++) {
        for (const broken of [false, true]) {
          const f = await check(o, buildUrl(o, r, broken));
          if (f) failures.push(f);
        }
      }
    }
    const observed = ops.find((o) => o.id === 'listObservedActivity')!;
    const coverage = ops.find((o) => o.id === 'getActivitySourceCoverage')!;
    const edge = [
      [observed, '/api/activity/observed?limit=1e3'],
      [observed, '/api/activity/observed?limit=99999999999999999999999'],
      [observed, '/api/activity/observed?limit=-99999999999999999999999'],
      [observed, '/api/activity/observed?limit=1&limit=2'],
      [observed, '/api/activity/observed?limit=%00'],
      [observed, '/api/activity/observed?limit=0x10'],
      [observed, '/api/activity/observed?source_id=' + 'a'.repeat(129)],
      [observed, '/api/activity/observed?source_id[]=x'],
      [observed, '/api/activity/observed?unknown=1'],
      [coverage, '/api/activity-sources/%2e%2e/coverage'],
      [coverage, '/api/activity-sources/' + 'x'.repeat(5000) + '/coverage'],
    ] as const;
    for (const [o, url] of edge) {
      const f = await check(o, url);
      if (f) failures.push(f);
    }
    expect(failures.slice(0, 20), `${failures.length} failures (FUZZ_SEED=${SEED})`).toEqual([]);
  }, 300_000);
});
