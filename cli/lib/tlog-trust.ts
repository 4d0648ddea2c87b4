/**
 * What the CLI trusts about a transparency log: the log's note verifier key (given, saved with
 * a checkpoint, or fetched once with a warning), checkpoints opened with it, and checkpoint
 * files (`svc audit checkpoint --save`, `svc audit verify --since/--save`).
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { parseCheckpoint } from '../../src/core/tlog/checkpoint.js';
import { openNote, parseVerifierKey } from '../../src/core/tlog/note.js';
import { CliError, EXIT, usageError } from './errors.js';
import { err } from './io.js';
import type { TlogClient } from './tlog-client.js';

/** A checkpoint whose log signature verified. */
export interface VerifiedCheckpoint {
  origin: string;
  size: number;
  root: Buffer;
  /** The whole signed note as served (cosignatures included). */
  note: string;
  /** The note's text (the checkpoint body). */
  text: string;
  /** The verifier key it was checked with. */
  logKey: string;
}

/** Opens `note` with `logKey` and parses its checkpoint; a CliError (exit 1) when either fails. */
export function verifyCheckpoint(note: string, logKey: string): VerifiedCheckpoint {
  let text: string;
  try {
    text = openNote(note, [logKey]).text;
  } catch (e) {
    throw new CliError(`the checkpoint's log signature does not verify with ${logKey}: ${(e as Error).message}`);
  }
  let c;
  try {
    c = parseCheckpoint(text);
  } catch (e) {
    throw new CliError((e as Error).message);
  }
  return { origin: c.origin, size: c.size, root: c.root, note, text, logKey };
}

/**
 * The log key to trust: `given` (--log-key), else SVC_TLOG_KEY, else `stored` (from a saved
 * checkpoint or state), else fetched from the log with a trust-on-first-use warning.
 */
export async function resolveLogKey(client: TlogClient, given: string | undefined, stored?: string): Promise<string> {
  const key = given ?? process.env.SVC_TLOG_KEY ?? stored;
  if (key) {
    try { parseVerifierKey(key); } catch (e) { throw usageError(`log key '${key}': ${(e as Error).message}`); }
    if (stored && key !== stored) throw new CliError(`the log key ${key} is not the key the saved checkpoint was checked with (${stored})`);
    return key;
  }
  const fetched = await client.logKey();
  try { parseVerifierKey(fetched); } catch (e) { throw new CliError(`the log served a malformed key '${fetched}': ${(e as Error).message}`); }
  err(`warning: trusting the log key ${fetched} as served by ${client.conn.endpoint}/api/audit/tlog/key (trust on first use:`);
  err('  weaker than a key obtained out of band; pass --log-key or set SVC_TLOG_KEY)');
  return fetched;
}

/** Fetches the current checkpoint and verifies its log signature. */
export async function fetchCheckpoint(client: TlogClient, logKey: string): Promise<VerifiedCheckpoint> {
  return verifyCheckpoint(await client.checkpoint(), logKey);
}

/** The JSON of a saved checkpoint file. */
interface SavedCheckpoint {
  origin: string;
  tree_size: number;
  root: string;
  note: string;
  log_key: string;
}

function toSaved(c: VerifiedCheckpoint): SavedCheckpoint {
  return { origin: c.origin, tree_size: c.size, root: c.root.toString('base64'), note: c.note, log_key: c.logKey };
}

/**
 * Writes a file whole or not at all (temporary file, then rename). A path that cannot be
 * written (no such directory, a directory, no permission) is exit code 4 with the path and
 * the reason, the temporary file removed (it was an unexpected error with a stack).
 */
export function writeFileAtomic(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, text, { mode: 0o644 });
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw new CliError(`${path}: cannot write it: ${(e as Error).message}`, EXIT.unreadable);
  }
}

export function saveCheckpoint(path: string, c: VerifiedCheckpoint): void {
  writeFileAtomic(path, JSON.stringify(toSaved(c), null, 2) + '\n');
}

/**
 * Loads a saved checkpoint and re-verifies it: its note must open with its own log_key and say
 * the size and root the file says (a file edited by hand is refused).
 */
export function loadCheckpoint(path: string): VerifiedCheckpoint {
  let raw: string;
  try { raw = readFileSync(path, 'utf8'); } catch (e) { throw new CliError(`${path}: ${(e as Error).message}`, EXIT.unreadable); }
  let s: Partial<SavedCheckpoint>;
  try { s = JSON.parse(raw) as Partial<SavedCheckpoint>; } catch { throw new CliError(`${path}: not a saved checkpoint (not JSON)`, EXIT.unreadable); }
  if (!s || typeof s.note !== 'string' || typeof s.log_key !== 'string') throw new CliError(`${path}: not a saved checkpoint (note and log_key are needed)`, EXIT.unreadable);
  const c = verifyCheckpoint(s.note, s.log_key);
  if (c.size !== s.tree_size || c.root.toString('base64') !== s.root || c.origin !== s.origin) {
    throw new CliError(`${path}: tree_size, root or origin does not match the signed note it holds`);
  }
  return c;
}

export const describe = (c: { size: number; root: Buffer; origin: string }) => `${c.origin} size ${c.size} root ${c.root.toString('base64')}`;
