/**
 * C2SP tlog-cosignature, `cosignature/v1` with Ed25519 (signature type 0x04,
 * c2sp.org/tlog-cosignature): a witness's timestamped signature on a checkpoint.
 *
 * - Witness verifier key `<name>+<hash8hex>+<base64(0x04 || 32-byte public key)>`, key ID
 *   SHA-256(name || 0x0A || 0x04 || public key)[:4]; signer key
 *   `PRIVATE+KEY+<name>+<hash8hex>+<base64(0x04 || 32-byte seed)>`.
 * - Signed message: `cosignature/v1\ntime <unix seconds>\n` followed by the checkpoint body.
 * - Signature line: `— <name> base64(key ID (4) || timestamp (8, big-endian) || Ed25519 signature (64))`.
 *
 * The message does not commit to the witness name, so one key must serve one witness name.
 * Timestamps are limited to safe integers (2^53 - 1 seconds).
 */
import { sign } from 'node:crypto';
import { parseCheckpoint } from './checkpoint.js';
import {
  NoteError,
  ed25519PublicKeyObject,
  ed25519Verify,
  formatSignatureLine,
  generateKeyOfType,
  parseSignatureLine,
  parseSignerKeyOfType,
  parseVerifierKeyOfType,
  type ParsedSignerKey,
  type ParsedVerifierKey,
} from './note.js';

/** Signature type byte of Ed25519 cosignatures. */
export const ALG_COSIGNATURE_V1 = 0x04;
const SIG_BYTES = 8 + 64;

/** The message a witness signs: `cosignature/v1\ntime <t>\n` + checkpoint body. */
export function cosignatureMessage(checkpointBody: string, timeSeconds: number): Buffer {
  return Buffer.from(`cosignature/v1\ntime ${timeSeconds}\n${checkpointBody}`, 'utf8');
}

/** A new witness key pair (type 0x04) as note key strings. */
export function generateWitnessKey(name: string): { signerKey: string; verifierKey: string } {
  return generateKeyOfType(name, ALG_COSIGNATURE_V1);
}

/** Parses a witness signer key; throws NoteError when malformed or not of type 0x04. */
export function parseWitnessSignerKey(skey: string): ParsedSignerKey {
  return parseSignerKeyOfType(skey, ALG_COSIGNATURE_V1);
}

/**
 * Parses a witness verifier key; throws NoteError when malformed or not of type 0x04. The
 * result is also a NoteVerifier for openNote (its verify takes the checkpoint body and the
 * timestamp || signature bytes).
 */
export function parseWitnessVerifierKey(vkey: string): ParsedVerifierKey {
  const v = parseVerifierKeyOfType(vkey, ALG_COSIGNATURE_V1);
  // The note-level verify of a cosignature: the signature bytes are timestamp || Ed25519 signature.
  const key = ed25519PublicKeyObject(v.publicKey);
  return {
    ...v,
    verify: (msg, sig) => {
      const t = timestampOf(sig);
      return t !== null && ed25519Verify(key, Buffer.concat([Buffer.from(`cosignature/v1\ntime ${t}\n`), msg]), sig.subarray(8));
    },
  };
}

/** The timestamp of a cosignature's signature bytes (after the key ID), or null when the length or range is wrong. */
function timestampOf(sig: Uint8Array): number | null {
  if (sig.length !== SIG_BYTES) return null;
  const t = Buffer.from(sig.buffer, sig.byteOffset, 8).readBigUInt64BE(0);
  if (t > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  return Number(t);
}

/**
 * The cosignature line (`— <name> <base64>\n`) of `witnessSignerKey` on `checkpointBody` at
 * `timeSeconds`. The body must be a valid checkpoint (parseCheckpoint); the time a
 * non-negative safe integer.
 */
export function cosign(checkpointBody: string, witnessSignerKey: string | ParsedSignerKey, timeSeconds: number): string {
  parseCheckpoint(checkpointBody);
  if (!Number.isSafeInteger(timeSeconds) || timeSeconds < 0) throw new RangeError(`cosignature time ${String(timeSeconds)} is not a non-negative safe integer`);
  const signer = typeof witnessSignerKey === 'string' ? parseWitnessSignerKey(witnessSignerKey) : witnessSignerKey;
  if (signer.type !== ALG_COSIGNATURE_V1) throw new NoteError('a cosignature needs a witness key of type 0x04');
  const sig = Buffer.alloc(SIG_BYTES);
  sig.writeBigUInt64BE(BigInt(timeSeconds), 0);
  sign(null, cosignatureMessage(checkpointBody, timeSeconds), signer.privateKey).copy(sig, 8);
  return formatSignatureLine(signer.name, signer.keyHash, sig);
}

export type CosignatureCheck = { ok: true; time: number } | { ok: false; reason: string };

/**
 * Verifies one cosignature line against a checkpoint body and a witness verifier key.
 * Never throws for a bad line or signature: the reason says what is wrong. (A malformed
 * verifier key is the caller's configuration error and throws NoteError.)
 */
export function verifyCosignatureLine(line: string, checkpointBody: string, witnessVerifierKey: string | ParsedVerifierKey): CosignatureCheck {
  const v = typeof witnessVerifierKey === 'string' ? parseWitnessVerifierKey(witnessVerifierKey) : witnessVerifierKey;
  if (v.type !== ALG_COSIGNATURE_V1) throw new NoteError('a cosignature is verified with a witness key of type 0x04');
  let parsed;
  try {
    parsed = parseSignatureLine(line);
  } catch (e) {
    return { ok: false, reason: (e as Error).message };
  }
  if (parsed.name !== v.name) return { ok: false, reason: `the line is signed by ${JSON.stringify(parsed.name)}, not ${JSON.stringify(v.name)}` };
  if (parsed.keyHash !== v.keyHash) return { ok: false, reason: 'the key ID does not match the witness key' };
  if (parsed.signature.length !== SIG_BYTES) return { ok: false, reason: `a cosignature/v1 signature is 76 bytes with its key ID, got ${parsed.signature.length + 4}` };
  const time = timestampOf(parsed.signature);
  if (time === null) return { ok: false, reason: 'the timestamp is out of range' };
  try {
    parseCheckpoint(checkpointBody);
  } catch (e) {
    return { ok: false, reason: (e as Error).message };
  }
  if (!v.verify(Buffer.from(checkpointBody, 'utf8'), parsed.signature)) return { ok: false, reason: 'the signature does not verify' };
  return { ok: true, time };
}
