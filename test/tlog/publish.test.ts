/**
 * Checkpoints leave the database (issue 21): each new checkpoint is appended to
 * $TLOG_EXPORT_DIR/checkpoints.jsonl and POSTed to TLOG_CHECKPOINT_WEBHOOK, retried while the
 * receiver fails, in order, without holding up requests.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { transparencyLog } from '../../src/core/tlog/log.js';
import { leafCount } from '../../src/core/tlog/leaves.js';

let t: TestStack;
let receiver: http.Server;
const received: string[] = [];
let refusals = 0;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-tlog-publish-'));

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      // The first two deliveries fail: the log must retry.
      if (refusals < 2) {
        refusals++;
        res.writeHead(503, { connection: 'close' }).end();
        return;
      }
      expect(req.headers['content-type']).toMatch(/^text\/plain/);
      received.push(body);
      res.writeHead(204, { connection: 'close' }).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/checkpoints`;
  t = await startTestStack({ services: ['api'], env: { TLOG_EXPORT_DIR: dir, TLOG_CHECKPOINT_WEBHOOK: url, TLOG_CHECKPOINT_INTERVAL_MS: '100' } });
});
afterAll(async () => {
  await t?.close();
  await new Promise((r) => receiver.close(r));
  fs.rmSync(dir, { recursive: true, force: true });
});

const sizeOf = (note: string) => Number(note.split('\n')[1]);

describe('checkpoints leave the database', () => {
  it('appends each checkpoint to the export file and delivers it to the webhook, retrying', async () => {
    const agent = await makeAgent(t, { allowed_intents: ['triage'] });
    const key = (await issueKey(t, agent.agent_id)).api_key;
    for (let i = 0; i < 3; i++) expect((await t.call('api', 'POST', '/api/context', { apiKey: key, body: { task_type: 'triage' } })).status).toBe(200);
    await transparencyLog(t.ctx).integrate();
    const served = (await t.call('api', 'GET', '/api/audit/tlog/checkpoint')).body as string;
    // Every leaf: the three requests and the management events of the agent and its key.
    const size = await leafCount(t.ctx.db);
    expect(sizeOf(served)).toBe(size);
    // Delivered in order, after the two refusals, within the retries' backoff.
    for (let i = 0; i < 100 && !received.some((n) => sizeOf(n) === size); i++) await new Promise((r) => setTimeout(r, 100));
    expect(refusals).toBe(2);
    expect(received.at(-1)).toBe(served);
    const sizes = received.map(sizeOf);
    expect(sizes).toEqual([...sizes].sort((a, b) => a - b));
    const lines = fs.readFileSync(path.join(dir, 'checkpoints.jsonl'), 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    expect(lines.at(-1)).toEqual({ tree_size: size, root: served.split('\n')[2], note: served });
    expect(lines.map((l) => l.tree_size)).toEqual(sizes);
  });
});
