/**
 * A witness's state directory (`svc witness --state DIR`): `state.json` holds the log's
 * verifier key the witness trusts and the last checkpoint it cosigned (origin, size, root,
 * the note as posted). Written whole or not at all.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CliError, EXIT } from './errors.js';
import { verifyCheckpoint, writeFileAtomic, type VerifiedCheckpoint } from './tlog-trust.js';

interface WitnessState {
  log_key: string;
  /** The last checkpoint cosigned; null before the first. */
  checkpoint: { origin: string; tree_size: number; root: string; note: string } | null;
}

export const stateFile = (dir: string) => join(dir, 'state.json');

/** The state in `dir`, or null when there is none yet. The stored note is re-verified with the stored key. */
export function loadWitnessState(dir: string): { logKey: string; last: VerifiedCheckpoint | null } | null {
  const file = stateFile(dir);
  if (!existsSync(file)) return null;
  let s: Partial<WitnessState>;
  try { s = JSON.parse(readFileSync(file, 'utf8')) as Partial<WitnessState>; } catch (e) { throw new CliError(`${file}: not a witness state file (${(e as Error).message})`, EXIT.unreadable); }
  if (!s || typeof s.log_key !== 'string') throw new CliError(`${file}: not a witness state file (no log_key)`, EXIT.unreadable);
  if (!s.checkpoint) return { logKey: s.log_key, last: null };
  const c = verifyCheckpoint(s.checkpoint.note, s.log_key);
  if (c.size !== s.checkpoint.tree_size || c.root.toString('base64') !== s.checkpoint.root || c.origin !== s.checkpoint.origin) {
    throw new CliError(`${file}: tree_size, root or origin does not match the signed note it holds`);
  }
  return { logKey: s.log_key, last: c };
}

export function saveWitnessState(dir: string, logKey: string, last: VerifiedCheckpoint | null): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const state: WitnessState = {
    log_key: logKey,
    checkpoint: last && { origin: last.origin, tree_size: last.size, root: last.root.toString('base64'), note: last.note },
  };
  writeFileAtomic(stateFile(dir), JSON.stringify(state, null, 2) + '\n');
}
