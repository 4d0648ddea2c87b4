/**
 * cosignature/v1: a published witness verifier key (transparency-dev/formats' test data)
 * parses with our type-0x04 key ID, published cosignatures decode to their timestamps, and
 * our cosignatures round-trip while every bit flip, a wrong key, body, name or time fails.
 */
import { describe, expect, it } from 'vitest';
import { formatCheckpoint } from './checkpoint.js';
import {
  ALG_COSIGNATURE_V1,
  cosign,
  cosignatureMessage,
  generateWitnessKey,
  parseWitnessSignerKey,
  parseWitnessVerifierKey,
  verifyCosignatureLine,
} from './cosignature.js';
import { ed25519PublicKeyObject, ed25519Verify, generateNoteKey, openNote, parseSignatureLine, parseVerifierKey, signNote } from './note.js';

const BODY = formatCheckpoint({ origin: 'svc.example/log', size: 20852163, root: Buffer.from('CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=', 'base64') });

describe('published vectors', () => {
  it('a real Ed25519 cosignature/v1 verifier key parses (key ID over name, 0x0A, 0x04, key)', () => {
    // From transparency-dev/formats note/note_cosigv1_test.go ("native algEd25519CosignatureV1 verifier").
    const v = parseWitnessVerifierKey('remora.n621.de+da77ade7+BOvN63jn/bLvkieywe8R6UYAtVtNbZpXh34x7onlmtw2');
    expect(v.name).toBe('remora.n621.de');
    expect(v.keyHash).toBe(0xda77ade7);
    expect(v.type).toBe(ALG_COSIGNATURE_V1);
    // The same key is not a note (0x01) key.
    expect(() => parseVerifierKey('remora.n621.de+da77ade7+BOvN63jn/bLvkieywe8R6UYAtVtNbZpXh34x7onlmtw2')).toThrow(/type 0x04 \(want 0x01\)/);
  });

  it('published cosignatures carry their timestamps big-endian after the key ID', () => {
    // transparency-dev/formats TestCosignatureTimestamp: time 1727964367.
    const a = parseSignatureLine('\u2014 w ZGhGuQAAAABm/qTPeyKXD+R2rzyQsxPiP8mXum7qq/iF0u4vanlqJyocWODBt97w9uL+8qT7S5gxEHWWOworDcFiEBYJXORmnFBOBA==');
    expect(a.signature).toHaveLength(72);
    expect(Number(a.signature.readBigUInt64BE(0))).toBe(1727964367);
    // c2sp.org/tlog-cosignature's example line: its time line reads 1679315147.
    const b = parseSignatureLine('\u2014 witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==');
    expect(Number(b.signature.readBigUInt64BE(0))).toBe(1679315147);
  });
});

describe('cosign and verifyCosignatureLine', () => {
  const w = generateWitnessKey('witness.svc.example/w1');

  it('round-trips and reports the time', () => {
    expect(w.signerKey).toMatch(/^PRIVATE\+KEY\+witness\.svc\.example\/w1\+[0-9a-f]{8}\+B[A-P]/); // base64 of 0x04 ...
    expect(w.verifierKey).toMatch(/^witness\.svc\.example\/w1\+[0-9a-f]{8}\+B[A-P]/);
    expect(parseWitnessSignerKey(w.signerKey).verifierKey).toBe(w.verifierKey);
    const line = cosign(BODY, w.signerKey, 1_700_000_000);
    expect(line).toMatch(/^\u2014 witness\.svc\.example\/w1 [A-Za-z0-9+/]{100}[A-Za-z0-9+/=]{4}\n$/);
    expect(verifyCosignatureLine(line, BODY, w.verifierKey)).toEqual({ ok: true, time: 1_700_000_000 });
    expect(verifyCosignatureLine(line.trimEnd(), BODY, w.verifierKey)).toEqual({ ok: true, time: 1_700_000_000 });
  });

  it('signs exactly the cosignature/v1 message: key ID || big-endian time || Ed25519(message)', () => {
    const line = cosign(BODY, w.signerKey, 1679315147);
    const sig = parseSignatureLine(line);
    const v = parseWitnessVerifierKey(w.verifierKey);
    expect(sig.keyHash).toBe(v.keyHash);
    expect(sig.signature.subarray(0, 8)).toEqual(Buffer.from('0000000064' + '1850cb', 'hex'));
    const message = cosignatureMessage(BODY, 1679315147);
    expect(message.toString()).toBe(`cosignature/v1\ntime 1679315147\n${BODY}`);
    expect(ed25519Verify(ed25519PublicKeyObject(v.publicKey), message, sig.signature.subarray(8))).toBe(true);
  });

  it('every bit flip in the signature bytes fails', () => {
    const line = cosign(BODY, w.signerKey, 1_700_000_000);
    const sig = parseSignatureLine(line);
    const raw = Buffer.concat([Buffer.alloc(4), sig.signature]);
    raw.writeUInt32BE(sig.keyHash, 0);
    for (let bit = 0; bit < raw.length * 8; bit++) {
      const bad = Buffer.from(raw);
      bad[bit >> 3] ^= 1 << (bit & 7);
      const r = verifyCosignatureLine(`\u2014 ${sig.name} ${bad.toString('base64')}\n`, BODY, w.verifierKey);
      expect(r.ok, `bit ${bit}`).toBe(false);
    }
  });

  it('fails for another key, body, name, length or a note-key signature', () => {
    const line = cosign(BODY, w.signerKey, 42);
    const other = generateWitnessKey('witness.svc.example/w1');
    expect(verifyCosignatureLine(line, BODY, other.verifierKey)).toEqual({ ok: false, reason: 'the key ID does not match the witness key' });
    const body2 = formatCheckpoint({ origin: 'svc.example/log', size: 20852164, root: Buffer.alloc(32) });
    expect(verifyCosignatureLine(line, body2, w.verifierKey)).toEqual({ ok: false, reason: 'the signature does not verify' });
    expect(verifyCosignatureLine(line, `${BODY}extension\n`, w.verifierKey).ok).toBe(false);
    const renamed = line.replace('witness.svc.example/w1', 'witness.svc.example/w2');
    expect(verifyCosignatureLine(renamed, BODY, w.verifierKey)).toMatchObject({ ok: false, reason: expect.stringMatching(/signed by/) });
    expect(verifyCosignatureLine('not a line', BODY, w.verifierKey)).toMatchObject({ ok: false, reason: expect.stringMatching(/malformed/) });
    const sig = parseSignatureLine(line);
    const short = Buffer.concat([Buffer.alloc(4), sig.signature.subarray(0, 71)]);
    short.writeUInt32BE(sig.keyHash, 0);
    expect(verifyCosignatureLine(`\u2014 ${sig.name} ${short.toString('base64')}`, BODY, w.verifierKey)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/76 bytes/),
    });
    expect(verifyCosignatureLine(line, 'not a checkpoint\n', w.verifierKey)).toMatchObject({ ok: false, reason: expect.stringMatching(/malformed checkpoint/) });
    // A note (0x01) key is not a witness key, either way round.
    const n = generateNoteKey('witness.svc.example/w1');
    expect(() => cosign(BODY, n.signerKey, 1)).toThrow(/want 0x04/);
    expect(() => verifyCosignatureLine(line, BODY, n.verifierKey)).toThrow(/want 0x04/);
  });

  it('refuses to cosign a malformed checkpoint or a bad time', () => {
    expect(() => cosign('origin\n1\n', w.signerKey, 1)).toThrow(/malformed checkpoint/);
    expect(() => cosign(BODY, w.signerKey, -1)).toThrow(RangeError);
    expect(() => cosign(BODY, w.signerKey, 1.5)).toThrow(RangeError);
  });

  it('a cosigned checkpoint opens with openNote, the log key and the witness key both verified', () => {
    const log = generateNoteKey('svc.example/log');
    const note = signNote(BODY, log.signerKey) + cosign(BODY, w.signerKey, 1_700_000_123);
    const opened = openNote(note, [log.verifierKey, parseWitnessVerifierKey(w.verifierKey)]);
    expect(opened.verified.map((s) => s.name)).toEqual(['svc.example/log', 'witness.svc.example/w1']);
    // With only the log key the cosignature is an unknown signature, ignored.
    expect(openNote(note, [log.verifierKey]).unverified.map((s) => s.name)).toEqual(['witness.svc.example/w1']);
    // A tampered cosignature by a known witness key rejects the note.
    // (A character inside the signature: the last one before the padding also holds padding
    // bits, and changing only those made the note malformed, not badly signed, for some keys.)
    const line = cosign(BODY, w.signerKey, 1);
    const at = line.length - 20;
    const tampered = signNote(BODY, log.signerKey) + line.slice(0, at) + (line[at] === 'A' ? 'B' : 'A') + line.slice(at + 1);
    expect(() => openNote(tampered, [log.verifierKey, parseWitnessVerifierKey(w.verifierKey)])).toThrow(/invalid signature/);
  });
});
