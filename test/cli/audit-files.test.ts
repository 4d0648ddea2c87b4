/**
 * The pure parts of `svc audit` and `svc witness`: the witness's decisions, and the state and
 * checkpoint files (round trip, and refusal of a file edited by hand).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateNoteKey, signNote } from '../../src/core/tlog/note.js';
import { formatCheckpoint } from '../../src/core/tlog/checkpoint.js';
import { decide } from '../../cli/commands/witness.js';
import { loadCheckpoint, saveCheckpoint, verifyCheckpoint } from '../../cli/lib/tlog-trust.js';
import { loadWitnessState, saveWitnessState, stateFile } from '../../cli/lib/witness-state.js';

const box = { dir: mkdtempSync(join(tmpdir(), 'svc-audit-files-')) };
afterAll(() => rmSync(box.dir, { recursive: true, force: true }));

describe('pure parts', () => {
  const key = generateNoteKey('svc.test/pure');
  const cp = (size: number, fill: number) => verifyCheckpoint(signNote(formatCheckpoint({ origin: 'svc.test/pure', size, root: Buffer.alloc(32, fill) }), key.signerKey), key.verifierKey);

  it('witness decisions: first, unchanged, grown, shrunk, forked, another origin', () => {
    expect(decide(null, cp(3, 1))).toEqual({ action: 'cosign', first: true });
    expect(decide(cp(3, 1), cp(3, 1))).toEqual({ action: 'unchanged' });
    expect(decide(cp(3, 1), cp(4, 2))).toEqual({ action: 'check-consistency' });
    expect(decide(cp(4, 2), cp(3, 1))).toMatchObject({ action: 'conflict', why: expect.stringMatching(/shrank/) });
    expect(decide(cp(3, 1), cp(3, 2))).toMatchObject({ action: 'conflict', why: expect.stringMatching(/two roots/) });
    expect(decide(cp(3, 1), { ...cp(4, 2), origin: 'elsewhere' })).toMatchObject({ action: 'conflict' });
  });

  it('state and checkpoint files round-trip, and refuse edits', () => {
    const dir = join(box.dir, 'state-pure');
    saveWitnessState(dir, key.verifierKey, null);
    expect(loadWitnessState(dir)).toEqual({ logKey: key.verifierKey, last: null });
    saveWitnessState(dir, key.verifierKey, cp(7, 3));
    expect(loadWitnessState(dir)!.last).toMatchObject({ size: 7, root: Buffer.alloc(32, 3) });
    const s = JSON.parse(readFileSync(stateFile(dir), 'utf8'));
    writeFileSync(stateFile(dir), JSON.stringify({ ...s, checkpoint: { ...s.checkpoint, tree_size: 8 } }));
    expect(() => loadWitnessState(dir)).toThrow(/does not match the signed note/);

    const file = join(box.dir, 'cp-pure.json');
    saveCheckpoint(file, cp(9, 4));
    expect(loadCheckpoint(file)).toMatchObject({ size: 9, logKey: key.verifierKey });
    const j = JSON.parse(readFileSync(file, 'utf8'));
    writeFileSync(file, JSON.stringify({ ...j, note: j.note.replace('\n9\n', '\n10\n') }));
    expect(() => loadCheckpoint(file)).toThrow(/does not verify/);
    writeFileSync(file, JSON.stringify({ ...j, log_key: generateNoteKey('svc.test/pure').verifierKey }));
    expect(() => loadCheckpoint(file)).toThrow(/does not verify/);
  });
});
