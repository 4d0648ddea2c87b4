/**
 * The integrator's loop (issue 21): at TLOG_CHECKPOINT_INTERVAL_MS=1000 it appends the new
 * records to the tree in five turns an interval and signs a checkpoint at every fifth, so the
 * stored tree runs ahead of the latest checkpoint between two, and each checkpoint still
 * covers what was committed before the interval began.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../harness.js';
import { issueKey, makeAgent } from '../identity/fixtures.js';
import { leafCount } from '../../src/core/tlog/leaves.js';
import { treeState } from '../../src/core/tlog/tiles.js';

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ services: ['api'], env: { TLOG_CHECKPOINT_INTERVAL_MS: '1000' } });
});
afterAll(async () => {
  await t?.close();
});

const checkpointSize = async () => Number((await t.ctx.db.query<{ n: number | string | null }>('SELECT max(tree_size) AS n FROM audit_tlog_checkpoints'))[0]!.n ?? 0);

describe('the integrator loop', () => {
  it('appends between checkpoints (the tree ahead of the latest one), and signs one covering them within the interval', { timeout: 30_000 }, async () => {
    const agent = await makeAgent(t, { allowed_intents: ['triage'] });
    const key = (await issueKey(t, agent.agent_id)).api_key;
    // A record appended just before a signing turn is integrated and signed at once: try again
    // then (four turns in five append without signing).
    let seenAhead = false;
    for (let attempt = 0; attempt < 6 && !seenAhead; attempt++) {
      expect((await t.call('api', 'POST', '/api/context', { apiKey: key, body: { task_type: 'triage' } })).status).toBe(200);
      const n = await leafCount(t.ctx.db);
      const t0 = Date.now();
      let covered = false;
      while (!covered && Date.now() - t0 < 5_000) {
        // The tree first: a turn that appends and signs commits both at once, so a checkpoint
        // read after the tree covers whatever that tree holds of such a turn.
        const tree = (await treeState(t.ctx.db)).size;
        const signed = await checkpointSize();
        if (tree >= n && signed < n) seenAhead = true;
        covered = signed >= n;
        if (!covered) await new Promise((r) => setTimeout(r, 10));
      }
      // Covered by a checkpoint (the loop above waits at most 5 s, five intervals).
      expect(covered).toBe(true);
    }
    expect(seenAhead).toBe(true);
  });
});
