/**
 * Signed notes against Go's golang.org/x/mod/sumdb/note test vectors (note_test.go): the
 * PeterNeumann and EnochRoot keys, the signed note Go produces, Open's verified / unverified
 * split and its malformed inputs, and key manglings that Go rejects.
 */
import { describe, expect, it } from 'vitest';
import {
  NoteError,
  generateNoteKey,
  isValidKeyName,
  openNote,
  parseNote,
  parseSignatureLine,
  parseSignerKey,
  parseVerifierKey,
  signNote,
} from './note.js';

// From golang.org/x/mod/sumdb/note/note_test.go.
const PETER_SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const PETER_VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const ENOCH_VKEY = 'EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop';
const TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const PETER_SIG = '\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n';
const ENOCH_SIG = '\u2014 EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n';

describe('Go sumdb/note vectors', () => {
  it('signNote produces exactly the note Go signs', () => {
    expect(signNote(TEXT, PETER_SKEY)).toBe(`${TEXT}\n${PETER_SIG}`);
  });

  it('the signer key derives the verifier key', () => {
    const s = parseSignerKey(PETER_SKEY);
    expect(s.name).toBe('PeterNeumann');
    expect(s.keyHash).toBe(0xc74f20a3);
    expect(s.verifierKey).toBe(PETER_VKEY);
    const v = parseVerifierKey(PETER_VKEY);
    expect(v.publicKey).toEqual(s.publicKey);
    expect(v.keyHash).toBe(0xc74f20a3);
  });

  it('openNote: one verified and one unknown, both verified, none verified', () => {
    const note = `${TEXT}\n${PETER_SIG}${ENOCH_SIG}`;
    const one = openNote(note, [PETER_VKEY]);
    expect(one.text).toBe(TEXT);
    expect(one.verified.map((s) => [s.name, s.keyHash])).toEqual([['PeterNeumann', 0xc74f20a3]]);
    expect(one.unverified.map((s) => [s.name, s.keyHash])).toEqual([['EnochRoot', 0xaf0cfe78]]);

    const both = openNote(note, [PETER_VKEY, parseVerifierKey(ENOCH_VKEY)]);
    expect(both.verified.map((s) => s.name)).toEqual(['PeterNeumann', 'EnochRoot']);
    expect(both.unverified).toEqual([]);

    expect(() => openNote(note, [])).toThrow('note has no verifiable signatures');
  });

  it('openNote: duplicates, ambiguity, too many signatures, an invalid signature', () => {
    expect(() => openNote(`${TEXT}\n${ENOCH_SIG}`, [ENOCH_VKEY, PETER_VKEY, ENOCH_VKEY])).toThrow('ambiguous key EnochRoot+af0cfe78');
    expect(openNote(`${TEXT}\n${PETER_SIG}`, [ENOCH_VKEY, PETER_VKEY, ENOCH_VKEY]).verified).toHaveLength(1);
    expect(() => openNote(`${TEXT}\n${PETER_SIG.repeat(101)}`, [PETER_VKEY])).toThrow(/malformed note/);
    expect(openNote(`${TEXT}\n${PETER_SIG.repeat(100)}`, [PETER_VKEY]).verified).toHaveLength(1);
    const tampered = `${TEXT}\n${PETER_SIG.slice(0, 60)}ABCD${PETER_SIG.slice(60)}`;
    expect(() => openNote(tampered, [PETER_VKEY])).toThrow('invalid signature for key PeterNeumann+c74f20a3');
    // Repeats: the verified key once, identical unverified lines once.
    const enochABCD = `${ENOCH_SIG.slice(0, 60)}ABCD${ENOCH_SIG.slice(60)}`;
    const dup = openNote(`${TEXT}\n${PETER_SIG}${PETER_SIG}${ENOCH_SIG}${ENOCH_SIG}${enochABCD}`, [PETER_VKEY]);
    expect(dup.verified).toHaveLength(1);
    expect(dup.unverified.map((s) => s.base64)).toEqual([ENOCH_SIG.slice(12, -1), enochABCD.slice(12, -1)]);
    // A changed text no longer verifies.
    expect(() => openNote(`${TEXT.replace('cryptography', 'cryptographY')}\n${PETER_SIG}`, [PETER_VKEY])).toThrow(/invalid signature/);
  });

  it('openNote rejects the malformed messages Go rejects', () => {
    const bad: Array<string | Uint8Array> = [
      TEXT,
      `${TEXT}\n`,
      `${TEXT}\n${PETER_SIG.slice(0, -1)}`,
      `\x01${TEXT}\n${PETER_SIG}`,
      Buffer.concat([Buffer.from([0xff]), Buffer.from(`${TEXT}\n${PETER_SIG}`)]),
      `${TEXT}\n\u2014 Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=`,
      `${TEXT}\n${PETER_SIG}Unexpected line.\n`,
    ];
    for (const m of bad) {
      expect(() => openNote(m, [PETER_VKEY])).toThrow(NoteError);
      expect(() => openNote(m, [PETER_VKEY])).toThrow(/malformed note|malformed signature line/);
    }
    // The same note as bytes opens.
    expect(openNote(Buffer.from(`${TEXT}\n${PETER_SIG}`), [PETER_VKEY]).text).toBe(TEXT);
  });

  it('rejects every substring and every one-byte change of the keys (as Go does)', () => {
    for (const [key, parse] of [
      [PETER_VKEY, parseVerifierKey],
      [PETER_SKEY, parseSignerKey],
    ] as const) {
      expect(() => parse(key)).not.toThrow();
      for (let i = 0; i <= key.length; i++) {
        for (let j = i + 1; j <= key.length; j++) {
          if (i === 0 && j === key.length) continue;
          expect(() => parse(key.slice(i, j)), key.slice(i, j)).toThrow(NoteError);
        }
      }
      for (let i = 0; i < key.length; i++) {
        const changed = key.slice(0, i) + String.fromCharCode(key.charCodeAt(i) + 1) + key.slice(i + 1);
        expect(() => parse(changed), changed).toThrow(NoteError);
      }
    }
    // Wrong-length key with an adjusted hash, and an unknown algorithm with an adjusted hash.
    expect(() => parseVerifierKey('PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==')).toThrow(NoteError);
    expect(() => parseVerifierKey('PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW')).toThrow(/unsupported verifier key type/);
  });
});

describe('keys, lines and texts', () => {
  it('generateNoteKey round-trips through sign and open', () => {
    const { signerKey, verifierKey } = generateNoteKey('svc.example/log');
    expect(signerKey).toMatch(/^PRIVATE\+KEY\+svc\.example\/log\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$/);
    expect(verifierKey).toMatch(/^svc\.example\/log\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$/);
    expect(parseSignerKey(signerKey).verifierKey).toBe(verifierKey);
    const text = 'svc.example/log\n7\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n';
    const note = signNote(text, signerKey);
    expect(openNote(note, [verifierKey]).text).toBe(text);
    expect(() => openNote(note, [PETER_VKEY])).toThrow('note has no verifiable signatures');
    expect(() => generateNoteKey('a b')).toThrow(NoteError);
    expect(() => generateNoteKey('a+b')).toThrow(NoteError);
    expect(() => generateNoteKey('')).toThrow(NoteError);
  });

  it('signNote refuses texts it could not sign into a valid note', () => {
    expect(() => signNote('abc', PETER_SKEY)).toThrow(/must end in a newline/);
    expect(() => signNote('a\tb\n', PETER_SKEY)).toThrow(/control characters/);
    expect(() => signNote('a\rb\n', PETER_SKEY)).toThrow(/control characters/);
    // A text with blank lines is fine: the signatures start after the last blank line.
    const t = 'a\n\nb\n';
    expect(openNote(signNote(t, PETER_SKEY), [PETER_VKEY]).text).toBe(t);
  });

  it('parseSignatureLine', () => {
    const s = parseSignatureLine(PETER_SIG);
    expect(s.name).toBe('PeterNeumann');
    expect(s.keyHash).toBe(0xc74f20a3);
    expect(s.signature).toHaveLength(64);
    expect(parseSignatureLine(PETER_SIG.trimEnd()).base64).toBe(s.base64);
    for (const bad of [
      PETER_SIG.replace('\u2014', '-'),
      PETER_SIG.replace('\u2014 ', '\u2014'),
      '\u2014 PeterNeumann',
      '\u2014 PeterNeumann ',
      '\u2014 PeterNeumann AAAA', // 3 bytes: too short
      '\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM', // no padding
      '\u2014 PeterNeumann x08go_ZJkuBS9UG_SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=', // url-safe
      '\u2014 Peter\u00a0Neumann AAAAAAA=',
    ]) {
      expect(() => parseSignatureLine(bad), bad).toThrow(NoteError);
    }
  });

  it('key names follow the spec', () => {
    expect(isValidKeyName('example.com/log42')).toBe(true);
    expect(isValidKeyName('ünïcode')).toBe(true);
    for (const n of ['', 'a b', 'a+b', 'a\u3000b', 'a\u2028b', 'a\nb', '\ud800']) expect(isValidKeyName(n), n).toBe(false);
  });

  it('parseNote splits at the last blank line', () => {
    const p = parseNote(`a\n\nb\n\n${PETER_SIG}${ENOCH_SIG}`);
    expect(p.text).toBe('a\n\nb\n');
    expect(p.signatures.map((s) => s.name)).toEqual(['PeterNeumann', 'EnochRoot']);
  });
});
