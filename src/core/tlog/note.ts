/**
 * C2SP signed notes (c2sp.org/signed-note) with Ed25519, compatible with Go's
 * golang.org/x/mod/sumdb/note: the same key strings, the same signature bytes (Ed25519 is
 * deterministic), the same parsing rules.
 *
 * A signed note is a text ending in a newline, a blank line, and one or more signature lines
 * `— <key name> <base64(4-byte key ID || signature)>\n`. The key ID of a key is
 * SHA-256(name || 0x0A || type byte || public key)[:4]; for note signatures the type is 0x01.
 *
 * Keys as strings: signer key `PRIVATE+KEY+<name>+<hash8hex>+<base64(type || 32-byte seed)>`,
 * verifier key `<name>+<hash8hex>+<base64(type || 32-byte public key)>`.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';

/** Signature type byte of Ed25519 note signatures. */
const ALG_ED25519 = 0x01;
/** More signature lines than this make a note malformed (Go's limit; the spec asks for at least 16). */
const MAX_SIGNATURES = 100;

const EM_DASH_PREFIX = '\u2014 ';

/** A malformed key, note or signature line, or a note that does not verify. */
export class NoteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NoteError';
  }
}

/** One signature line of a note, as parsed (not yet verified). */
export interface NoteSignature {
  name: string;
  /** The 4-byte key ID as an unsigned 32-bit integer. */
  keyHash: number;
  /** The signature bytes after the key ID. */
  signature: Buffer;
  /** The base64 text of the line (key ID and signature). */
  base64: string;
}

/** Verifies signatures by one key; what openNote is given. */
export interface NoteVerifier {
  name: string;
  keyHash: number;
  /** Does `sig` (the signature bytes after the key ID) sign `msg` (the note text)? */
  verify(msg: Buffer, sig: Buffer): boolean;
}

export interface ParsedVerifierKey extends NoteVerifier {
  /** The signature type byte. */
  type: number;
  /** The 32-byte Ed25519 public key. */
  publicKey: Buffer;
  /** The key string as given. */
  text: string;
}

export interface ParsedSignerKey {
  name: string;
  keyHash: number;
  type: number;
  /** The 32-byte Ed25519 public key derived from the seed. */
  publicKey: Buffer;
  privateKey: KeyObject;
  /** The verifier key string of this signer. */
  verifierKey: string;
}

// ---------------------------------------------------------------------------------------
// Names, key IDs, base64

// Go's unicode.IsSpace: the Latin-1 spaces and the Unicode White_Space characters.
const SPACE_OR_PLUS = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000+]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** A key name: non-empty, well-formed, no Unicode spaces and no plus. */
export function isValidKeyName(name: string): boolean {
  return typeof name === 'string' && name !== '' && !SPACE_OR_PLUS.test(name) && !LONE_SURROGATE.test(name);
}

/** SHA-256(name || 0x0A || type || publicKey)[:4] as an unsigned 32-bit integer. */
function keyId(name: string, type: number, publicKey: Uint8Array): number {
  return createHash('sha256').update(name, 'utf8').update(Buffer.from([0x0a, type])).update(publicKey).digest().readUInt32BE(0);
}

const hex8 = (n: number) => n.toString(16).padStart(8, '0');

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Standard padded base64 (RFC 4648 section 4), canonical only; null when `s` is anything else. */
export function decodeBase64Strict(s: string): Buffer | null {
  if (!BASE64.test(s)) return null;
  const b = Buffer.from(s, 'base64');
  return b.toString('base64') === s ? b : null;
}

// ---------------------------------------------------------------------------------------
// Ed25519 keys from raw bytes

const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** The Ed25519 private key object of a 32-byte seed. */
function ed25519PrivateKey(seed: Uint8Array): KeyObject {
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

/** The raw 32-byte public key of an Ed25519 key object. */
function ed25519RawPublicKey(key: KeyObject): Buffer {
  const spki = (key.type === 'public' ? key : createPublicKey(key)).export({ format: 'der', type: 'spki' });
  return Buffer.from(spki.subarray(spki.length - 32));
}

/** The Ed25519 public key object of a 32-byte raw public key. */
export function ed25519PublicKeyObject(raw: Uint8Array): KeyObject {
  return createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, raw]), format: 'der', type: 'spki' });
}

/** Ed25519 verification that never throws (a wrong-length signature is simply false). */
export function ed25519Verify(publicKey: KeyObject, msg: Uint8Array, sig: Uint8Array): boolean {
  if (sig.length !== 64) return false;
  try {
    return verify(null, msg, publicKey, sig);
  } catch {
    return false;
  }
}

/** A fresh Ed25519 key pair as (seed, raw public key). */
function newEd25519Seed(): { seed: Buffer; publicKey: Buffer } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const pkcs8 = privateKey.export({ format: 'der', type: 'pkcs8' });
  return { seed: Buffer.from(pkcs8.subarray(pkcs8.length - 32)), publicKey: ed25519RawPublicKey(publicKey) };
}

// ---------------------------------------------------------------------------------------
// Key strings

/** Splits `s` at the first `sep`: [before, after] ('' after when absent), like Go's note.chop. */
function chop(s: string, sep: string): [string, string] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, ''] : [s.slice(0, i), s.slice(i + sep.length)];
}

/** The verifier key string of `name` with Ed25519 public key `publicKey` and signature type `type`. */
function formatVerifierKey(name: string, type: number, publicKey: Uint8Array): string {
  if (!isValidKeyName(name)) throw new NoteError(`invalid key name ${JSON.stringify(name)}: it must be non-empty, with no spaces and no '+'`);
  const encoded = Buffer.concat([Buffer.from([type]), publicKey]);
  return `${name}+${hex8(keyId(name, type, publicKey))}+${encoded.toString('base64')}`;
}

/** Parses a verifier key `<name>+<hash>+<base64(type || pubkey)>` of an Ed25519 type (`type`, default 0x01). */
export function parseVerifierKeyOfType(vkey: string, type: number): ParsedVerifierKey {
  if (typeof vkey !== 'string') throw new NoteError('malformed verifier key: not a string');
  const [name, rest] = chop(vkey, '+');
  const [hash16, key64] = chop(rest, '+');
  const key = decodeBase64Strict(key64);
  if (!isValidKeyName(name) || !/^[0-9a-fA-F]{8}$/.test(hash16) || !key || key.length === 0) {
    throw new NoteError('malformed verifier key: want <name>+<8 hex digits>+<base64 key>');
  }
  const keyHash = parseInt(hash16, 16);
  if (key[0] !== type) throw new NoteError(`unsupported verifier key type 0x${key[0].toString(16).padStart(2, '0')} (want 0x${type.toString(16).padStart(2, '0')})`);
  const publicKey = key.subarray(1);
  if (publicKey.length !== 32) throw new NoteError(`malformed verifier key: an Ed25519 key is 32 bytes, got ${publicKey.length}`);
  if (keyId(name, type, publicKey) !== keyHash) throw new NoteError('verifier key hash does not match its name and key');
  const keyObject = ed25519PublicKeyObject(publicKey);
  return {
    name,
    keyHash,
    type,
    publicKey: Buffer.from(publicKey),
    text: vkey,
    verify: (msg, sig) => ed25519Verify(keyObject, msg, sig),
  };
}

/** Parses an Ed25519 note verifier key (type 0x01); throws NoteError on anything malformed. */
export function parseVerifierKey(vkey: string): ParsedVerifierKey {
  return parseVerifierKeyOfType(vkey, ALG_ED25519);
}

/** Parses a signer key `PRIVATE+KEY+<name>+<hash>+<base64(type || seed)>` of an Ed25519 type (`type`). */
export function parseSignerKeyOfType(skey: string, type: number): ParsedSignerKey {
  if (typeof skey !== 'string') throw new NoteError('malformed signer key: not a string');
  const [priv1, r1] = chop(skey, '+');
  const [priv2, r2] = chop(r1, '+');
  const [name, r3] = chop(r2, '+');
  const [hash16, key64] = chop(r3, '+');
  const key = decodeBase64Strict(key64);
  if (priv1 !== 'PRIVATE' || priv2 !== 'KEY' || !isValidKeyName(name) || !/^[0-9a-fA-F]{8}$/.test(hash16) || !key || key.length === 0) {
    throw new NoteError('malformed signer key: want PRIVATE+KEY+<name>+<8 hex digits>+<base64 key>');
  }
  if (key[0] !== type) throw new NoteError(`unsupported signer key type 0x${key[0].toString(16).padStart(2, '0')} (want 0x${type.toString(16).padStart(2, '0')})`);
  const seed = key.subarray(1);
  if (seed.length !== 32) throw new NoteError(`malformed signer key: an Ed25519 seed is 32 bytes, got ${seed.length}`);
  const privateKey = ed25519PrivateKey(seed);
  const publicKey = ed25519RawPublicKey(privateKey);
  const keyHash = parseInt(hash16, 16);
  if (keyId(name, type, publicKey) !== keyHash) throw new NoteError('signer key hash does not match its name and key');
  return { name, keyHash, type, publicKey, privateKey, verifierKey: formatVerifierKey(name, type, publicKey) };
}

/** Parses an Ed25519 note signer key (type 0x01); throws NoteError on anything malformed. */
export function parseSignerKey(skey: string): ParsedSignerKey {
  return parseSignerKeyOfType(skey, ALG_ED25519);
}

/** A new key pair of signature type `type` as Go formats it. */
export function generateKeyOfType(name: string, type: number): { signerKey: string; verifierKey: string } {
  if (!isValidKeyName(name)) throw new NoteError(`invalid key name ${JSON.stringify(name)}: it must be non-empty, with no spaces and no '+'`);
  const { seed, publicKey } = newEd25519Seed();
  const hash = hex8(keyId(name, type, publicKey));
  return {
    signerKey: `PRIVATE+KEY+${name}+${hash}+${Buffer.concat([Buffer.from([type]), seed]).toString('base64')}`,
    verifierKey: formatVerifierKey(name, type, publicKey),
  };
}

/** A new Ed25519 note key pair (Go's note.GenerateKey). */
export function generateNoteKey(name: string): { signerKey: string; verifierKey: string } {
  return generateKeyOfType(name, ALG_ED25519);
}

// ---------------------------------------------------------------------------------------
// Notes

/** Note texts and signed notes: well-formed, no ASCII control characters other than newline. */
function hasOnlyAllowedChars(s: string): boolean {
  // eslint-disable-next-line no-control-regex
  return !/[\u0000-\u0009\u000b-\u001f]/.test(s) && !LONE_SURROGATE.test(s);
}

/** The signature line `— <name> <base64>\n`. */
export function formatSignatureLine(name: string, keyHash: number, signature: Uint8Array): string {
  if (!isValidKeyName(name)) throw new NoteError(`invalid key name ${JSON.stringify(name)}`);
  const raw = Buffer.alloc(4 + signature.length);
  raw.writeUInt32BE(keyHash >>> 0, 0);
  raw.set(signature, 4);
  return `${EM_DASH_PREFIX}${name} ${raw.toString('base64')}\n`;
}

/**
 * Parses one signature line `— <name> <base64>` (a trailing newline is allowed). Throws
 * NoteError when the line is not one: no em dash and space, invalid name, base64 that is not
 * standard padded base64, or fewer than 5 decoded bytes.
 */
export function parseSignatureLine(line: string): NoteSignature {
  let l = line;
  if (l.endsWith('\n')) l = l.slice(0, -1);
  if (!l.startsWith(EM_DASH_PREFIX) || l.includes('\n')) throw new NoteError('malformed signature line: want "\u2014 <name> <base64>"');
  const [name, b64] = chop(l.slice(EM_DASH_PREFIX.length), ' ');
  const raw = decodeBase64Strict(b64);
  if (!isValidKeyName(name) || b64 === '' || !raw || raw.length < 5) throw new NoteError('malformed signature line: want "\u2014 <name> <base64>"');
  return { name, keyHash: raw.readUInt32BE(0), signature: Buffer.from(raw.subarray(4)), base64: b64 };
}

/** Checks a note text as signNote requires it: ends in a newline, no control characters but newline. */
function checkText(text: string): void {
  if (typeof text !== 'string' || !text.endsWith('\n')) throw new NoteError('malformed note: the text must end in a newline');
  if (!hasOnlyAllowedChars(text)) throw new NoteError('malformed note: the text has control characters or is not well-formed UTF-16/UTF-8');
}

/** The signature line of `text` by `signer` (no check of `text`; signNote checks it). */
function signatureLineFor(text: string, signer: ParsedSignerKey, message: Buffer = Buffer.from(text, 'utf8')): string {
  return formatSignatureLine(signer.name, signer.keyHash, sign(null, message, signer.privateKey));
}

/**
 * Signs `text` (which must end in a newline and hold no control character other than
 * newline) with a note signer key: `text + "\n" + "— <name> <base64>\n"`, byte for byte what
 * Go's note.Sign produces.
 */
export function signNote(text: string, signerKey: string | ParsedSignerKey): string {
  checkText(text);
  const signer = typeof signerKey === 'string' ? parseSignerKey(signerKey) : signerKey;
  return `${text}\n${signatureLineFor(text, signer)}`;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
function decodeUtf8(b: Uint8Array): string {
  try {
    return utf8.decode(b);
  } catch {
    throw new NoteError('malformed note: not valid UTF-8');
  }
}

/** A signed note split into its text and parsed (unverified) signature lines. */
export interface ParsedNote {
  text: string;
  signatures: NoteSignature[];
}

/**
 * Splits a signed note (text, or bytes that must be valid UTF-8) at its last blank line into text and signature lines, checking the
 * format (valid text, at least one signature line, every line a signature line, at most
 * MAX_SIGNATURES). Verifies nothing.
 */
export function parseNote(noteText: string | Uint8Array): ParsedNote {
  const note = typeof noteText === 'string' ? noteText : decodeUtf8(noteText);
  if (typeof note !== 'string' || !hasOnlyAllowedChars(note)) throw new NoteError('malformed note: control characters or not well-formed');
  const split = note.lastIndexOf('\n\n');
  if (split < 0) throw new NoteError('malformed note: no blank line before the signatures');
  const text = note.slice(0, split + 1);
  const sigs = note.slice(split + 2);
  if (sigs === '' || !sigs.endsWith('\n')) throw new NoteError('malformed note: no signature lines, or the last one does not end in a newline');
  const lines = sigs.slice(0, -1).split('\n');
  if (lines.length > MAX_SIGNATURES) throw new NoteError(`malformed note: more than ${MAX_SIGNATURES} signatures`);
  return { text, signatures: lines.map((l) => parseSignatureLine(l)) };
}

/** The result of opening a note: its text and which signatures verified. */
export interface OpenedNote {
  text: string;
  /** Signatures by known keys, each verified (one per key; repeats dropped). */
  verified: NoteSignature[];
  /** Signatures by keys not among the verifiers (identical repeats dropped). */
  unverified: NoteSignature[];
}

/**
 * Opens a signed note (Go's note.Open): signatures by unknown keys are ignored (listed as
 * unverified), a signature by a known key (same name and key ID) that fails to verify is a
 * NoteError, two verifiers with the same name and key ID are a NoteError when a signature
 * needs them, and a note with no verified signature is a NoteError.
 */
export function openNote(note: string | Uint8Array, verifiers: ReadonlyArray<NoteVerifier | string>): OpenedNote {
  const parsed = parseNote(note);
  const known = new Map<string, NoteVerifier[]>();
  for (const v of verifiers) {
    const verifier = typeof v === 'string' ? parseVerifierKey(v) : v;
    const k = `${verifier.name}+${hex8(verifier.keyHash)}`;
    known.set(k, [...(known.get(k) ?? []), verifier]);
  }
  const message = Buffer.from(parsed.text, 'utf8');
  const verified: NoteSignature[] = [];
  const unverified: NoteSignature[] = [];
  const seen = new Set<string>();
  const seenUnverified = new Set<string>();
  for (const sig of parsed.signatures) {
    const k = `${sig.name}+${hex8(sig.keyHash)}`;
    const candidates = known.get(k);
    if (!candidates) {
      const line = `${sig.name} ${sig.base64}`;
      if (!seenUnverified.has(line)) {
        seenUnverified.add(line);
        unverified.push(sig);
      }
      continue;
    }
    if (candidates.length > 1) throw new NoteError(`ambiguous key ${k}`);
    if (seen.has(k)) continue;
    seen.add(k);
    if (!candidates[0].verify(message, sig.signature)) throw new NoteError(`invalid signature for key ${k}`);
    verified.push(sig);
  }
  if (verified.length === 0) throw new NoteError('note has no verifiable signatures');
  return { text: parsed.text, verified, unverified };
}
