/**
 * C2SP tlog-checkpoint note bodies (c2sp.org/tlog-checkpoint):
 *
 *     <origin>\n<tree size>\n<base64 root hash>\n[<extension line>\n]*
 *
 * The origin is non-empty; the size is ASCII decimal with no leading zeroes (0 for the empty
 * tree); the root is the standard base64 of the 32-byte RFC 6962 root; extension lines, if
 * any, are non-empty and kept as they are. Sizes are limited to safe integers (2^53 - 1).
 */
import { decodeBase64Strict } from './note.js';

export interface Checkpoint {
  origin: string;
  size: number;
  root: Buffer;
  /** Extension lines, without their newlines (usually none). */
  extensions: string[];
}

/** A checkpoint body that does not follow the spec. */
export class CheckpointError extends Error {
  constructor(message: string) {
    super(`malformed checkpoint: ${message}`);
    this.name = 'CheckpointError';
  }
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f]/;

function checkOrigin(origin: string): void {
  if (typeof origin !== 'string' || origin === '') throw new CheckpointError('the origin is empty');
  if (CONTROL.test(origin)) throw new CheckpointError('the origin contains a newline or control character');
}

/** The checkpoint body of a tree head (throws CheckpointError on an invalid origin, size, root or extension line). */
export function formatCheckpoint(c: { origin: string; size: number; root: Uint8Array; extensions?: string[] }): string {
  checkOrigin(c.origin);
  if (!Number.isSafeInteger(c.size) || c.size < 0) throw new CheckpointError(`the size ${String(c.size)} is not a non-negative safe integer`);
  if (!(c.root instanceof Uint8Array) || c.root.length !== 32) throw new CheckpointError('the root hash must be 32 bytes');
  const ext = c.extensions ?? [];
  for (const e of ext) {
    if (typeof e !== 'string' || e === '' || CONTROL.test(e)) throw new CheckpointError('an extension line is empty or has a newline or control character');
  }
  return [c.origin, String(c.size), Buffer.from(c.root).toString('base64'), ...ext].map((l) => `${l}\n`).join('');
}

/** Parses a checkpoint body (the note text, ending in a newline), strictly. */
export function parseCheckpoint(body: string): Checkpoint {
  if (typeof body !== 'string' || !body.endsWith('\n')) throw new CheckpointError('the body must end in a newline');
  const lines = body.slice(0, -1).split('\n');
  if (lines.length < 3) throw new CheckpointError('want at least three lines: origin, size, root hash');
  const [origin, sizeText, rootText, ...extensions] = lines;
  checkOrigin(origin);
  if (!/^(0|[1-9][0-9]*)$/.test(sizeText)) throw new CheckpointError(`the size ${JSON.stringify(sizeText)} is not a decimal with no leading zeroes`);
  const size = Number(sizeText);
  if (!Number.isSafeInteger(size)) throw new CheckpointError(`the size ${sizeText} is larger than 2^53 - 1`);
  const root = decodeBase64Strict(rootText);
  if (!root || root.length !== 32) throw new CheckpointError('the root hash is not the base64 of 32 bytes');
  for (const e of extensions) {
    if (e === '' || CONTROL.test(e)) throw new CheckpointError('an extension line is empty or has a control character');
  }
  return { origin, size, root, extensions };
}
