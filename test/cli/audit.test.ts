/**
 * `svc audit ...` and `svc witness` as child processes against a real stack (api on port 0,
 * the transparency log signing a checkpoint every 50 ms): keygen, checkpoint --save, prove,
 * verify --since (append-only and every new leaf rechecked), the witness cosigning and
 * refusing a log whose key it does not trust. The pure parts: audit-files.test.ts.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startTestStack, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { generateNoteKey, openNote, signNote } from '../../src/core/tlog/note.js';
import { generateWitnessKey } from '../../src/core/tlog/cosignature.js';
import { sandbox } from './helpers.js';

const witness = generateWitnessKey('witness.test/cli');
let t: TestStack;
let apiKey: string;
let logKey: string;
const box = sandbox();
const requestIds: string[] = [];

const ask = async () => {
  const r = await t.call('api', 'POST', '/api/context', { apiKey, body: { task_type: 'triage' } });
  expect(r.status).toBe(200);
  requestIds.push(r.body.request_id);
  return r.body.audit_leaf_index as number;
};
const output = async (requestId: string) => {
  const r = await t.call('api', 'POST', '/api/audit/output', { apiKey, body: { request_id: requestId, output: { text: `out ${requestId}` } } });
  expect(r.status).toBe(201);
  return r.body.leaf_index as number;
};
/** Waits for a checkpoint covering `size` leaves. */
async function covered(size: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const r = await t.call('api', 'GET', '/api/audit/tlog/checkpoint');
    if (r.status === 200 && Number(String(r.body).split('\n')[1]) >= size) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no checkpoint of size ${size}`);
}
const env = () => ({ SVC_API_ENDPOINT: t.url('api'), SVC_API_KEY: ADMIN_KEY, SVC_TLOG_KEY: logKey });

beforeAll(async () => {
  mkdirSync(box.work, { recursive: true });
  t = await startTestStack({ services: ['api'], env: { TLOG_WITNESS_KEYS: witness.verifierKey, TLOG_CHECKPOINT_INTERVAL_MS: '50' } });
  const agent = await makeAgent(t, { allowed_intents: ['triage'] });
  apiKey = (await issueKey(t, agent.agent_id)).api_key;
  logKey = String((await t.call('api', 'GET', '/api/audit/tlog/key')).body).trim();
  let last = 0;
  for (let i = 0; i < 5; i++) last = await ask();
  await covered(last + 1);
}, 60_000);
afterAll(async () => {
  await t?.close();
  box.cleanup();
});

describe('svc audit keygen', () => {
  it('prints a log key pair, a witness key pair, or the signer key alone', async () => {
    const log = await box.run(['audit', 'keygen', '--name', 'svc.example/log']);
    expect(log.code).toBe(0);
    const [signer, verifier] = log.stdout.trimEnd().split('\n');
    expect(signer).toMatch(/^TLOG_SIGNING_KEY=PRIVATE\+KEY\+svc\.example\/log\+[0-9a-f]{8}\+/);
    expect(verifier).toMatch(/^verifier key: svc\.example\/log\+[0-9a-f]{8}\+/);
    const note = signNote('hello\n', signer.slice('TLOG_SIGNING_KEY='.length));
    expect(openNote(note, [verifier.slice('verifier key: '.length)]).text).toBe('hello\n');
    const w = await box.run(['audit', 'keygen', '--witness', '--name', 'w', '--signer-only']);
    expect(w.stdout).toMatch(/^PRIVATE\+KEY\+w\+[0-9a-f]{8}\+\S+\n$/);
    expect((await box.run(['audit', 'keygen'])).code).toBe(3);
  });
});

describe('svc audit checkpoint, prove, verify', () => {
  it('saves a verified checkpoint; refuses one signed by another key', async () => {
    const r = await box.run(['audit', 'checkpoint', '--save', 'cp.json'], { env: env() });
    expect(r.code, r.stderr).toBe(0);
    const saved = JSON.parse(readFileSync(join(box.work, 'cp.json'), 'utf8'));
    expect(saved).toMatchObject({ origin: expect.any(String), tree_size: expect.any(Number), log_key: logKey });
    expect(saved.tree_size).toBeGreaterThanOrEqual(5);
    const other = generateNoteKey(logKey.split('+')[0]!).verifierKey;
    const bad = await box.run(['audit', 'checkpoint'], { env: { ...env(), SVC_TLOG_KEY: other } });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/signature does not verify/);
  });

  it('names a path it cannot save to (no such directory, a directory) with exit code 4, no stack, nothing left behind', async () => {
    for (const target of ['no-such-dir/cp.json', '.']) {
      const r = await box.run(['audit', 'checkpoint', '--save', target], { env: env() });
      expect({ target, code: r.code }).toEqual({ target, code: 4 });
      expect(r.stderr).toMatch(new RegExp(`svc: ${target.replace('.', '\\.')}: cannot write it: E(NOENT|ISDIR|BUSY)`));
      expect(r.stderr).not.toMatch(/unexpected error|\n\s+at /);
    }
    expect(readdirSync(box.work).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('warns when it trusts the served key on first use', async () => {
    const r = await box.run(['audit', 'checkpoint'], { env: { ...env(), SVC_TLOG_KEY: undefined } });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/trust on first use/);
  });

  it('proves a request is in the log, and fails for an unknown request', async () => {
    const r = await box.run(['audit', 'prove', requestIds[2]!], { env: env() });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/inclusion proof: \d+ hashes, verifies/);
    expect((await box.run(['audit', 'prove', 'no-such-request'], { env: env() })).code).toBe(1);
  });

  it('verifies the growth since the saved checkpoint across tile boundaries, with outputs and management events, and saves the new one', async () => {
    let last = 0;
    for (let i = 0; i < 300; i++) {
      last = i % 4 === 3 ? await output(requestIds[requestIds.length - 1]!) : await ask();
      // Now and then an admin act among them: its event is a leaf the CLI rechecks (chained to the one before).
      if (i % 100 === 50) await makeAgent(t, { allowed_intents: ['triage'] });
    }
    await covered(last + 1);
    const r = await box.run(['audit', 'verify', '--since', 'cp.json', '--save'], { env: env() });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/consistency proof \d+ -> \d+: verifies/);
    expect(r.stdout).toMatch(/rechecked \(\d+ context requests, 75 outputs, 3 management events\), root recomputed and equal/);
    expect(r.stdout).toMatch(/leaves\/s/);
    expect(JSON.parse(readFileSync(join(box.work, 'cp.json'), 'utf8')).tree_size).toBeGreaterThanOrEqual(last + 1);
    // Nothing new: still fine.
    expect((await box.run(['audit', 'verify', '--since', 'cp.json'], { env: env() })).code).toBe(0);
  }, 120_000);

  it('refuses a saved checkpoint edited by hand, and a log key other than the saved one', async () => {
    const saved = JSON.parse(readFileSync(join(box.work, 'cp.json'), 'utf8'));
    writeFileSync(join(box.work, 'edited.json'), JSON.stringify({ ...saved, tree_size: saved.tree_size - 1 }));
    expect((await box.run(['audit', 'verify', '--since', 'edited.json'], { env: env() })).stderr).toMatch(/does not match the signed note/);
    const other = generateNoteKey('x').verifierKey;
    const r = await box.run(['audit', 'verify', '--since', 'cp.json'], { env: { ...env(), SVC_TLOG_KEY: other } });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/not the key the saved checkpoint was checked with/);
  });
});

describe('svc witness', () => {
  it('cosigns the first checkpoint, then each consistent growth; the served checkpoint carries its line', async () => {
    writeFileSync(join(box.work, 'w.key'), `${witness.signerKey}\n`);
    const args = ['witness', '--log', t.url('api'), '--key', 'w.key', '--state', 'wstate', '--once'];
    const first = await box.run(args, { env: { SVC_TLOG_KEY: logKey } });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/first checkpoint: .*\ncosigned .* as witness\.test\/cli \(HTTP 201\)/);
    const again = await box.run(args, { env: { SVC_TLOG_KEY: logKey } });
    expect(again.stdout).toMatch(/unchanged/);
    const last = await ask();
    await covered(last + 1);
    const grown = await box.run(args);
    expect(grown.code, grown.stderr).toBe(0);
    expect(grown.stdout).toMatch(/consistent: \d+ -> \d+/);
    const note = String((await t.call('api', 'GET', '/api/audit/tlog/checkpoint')).body);
    expect(note).toContain('\u2014 witness.test/cli ');
  }, 60_000);

  it('refuses a log whose checkpoint does not verify with the key it trusts (exit 1), and a missing key file (exit 4)', async () => {
    writeFileSync(join(box.work, 'w.key'), `${witness.signerKey}\n`);
    const other = generateNoteKey('x').verifierKey;
    const r = await box.run(['witness', '--log', t.url('api'), '--key', 'w.key', '--state', 'wother', '--once', '--log-key', other]);
    expect(r.code).toBe(1);
    expect((await box.run(['witness', '--log', t.url('api'), '--key', 'nope.key', '--state', 'wother', '--once'])).code).toBe(4);
  });
});
