// The audit record page's inclusion proof, checked in this browser with WebCrypto (no server
// trust beyond the log's key shown on the page): the leaf hash SHA-256(0x00 || leaf), the audit
// path folded to a root (RFC 9162 2.1.3.2), the checkpoint note parsed (C2SP tlog-checkpoint)
// and its Ed25519 signature by the log's key verified (C2SP signed-note), the root and size
// compared, and every field the page shows compared with the proven leaf's.
'use strict';
(function () {
  const out = document.getElementById('proof-result');
  const holder = document.getElementById('proof-data');
  if (!out || !holder) return;
  const te = new TextEncoder();

  function done(state, text) {
    out.dataset.state = state;
    out.textContent = text;
  }

  class ProofError extends Error {}
  const fail = (msg) => {
    throw new ProofError(msg);
  };

  function b64(s, what) {
    if (typeof s !== 'string' || !/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s)) fail(`${what} is not base64`);
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  function concat(...parts) {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
  const equal = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
  const sha256 = async (bytes) => new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  const toB64 = (bytes) => btoa(String.fromCharCode(...bytes));

  // RFC 8785 canonical JSON of a parsed value (JSON.parse reorders integer-like keys).
  function canonical(v) {
    if (v === null || typeof v !== 'object') return JSON.stringify(v);
    if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  }

  // RFC 9162 2.1.3.2: the root the audit path gives for leaf `index` in a tree of `size` leaves.
  async function rootFromPath(leafHash, index, size, path) {
    if (index >= size) fail(`leaf ${index} is not below the tree size ${size}`);
    let fn = BigInt(index);
    let sn = BigInt(size) - 1n;
    let r = leafHash;
    for (const p of path) {
      if (sn === 0n) fail('the audit path is longer than the tree allows');
      if ((fn & 1n) === 1n || fn === sn) {
        r = await sha256(concat([0x01], p, r));
        if ((fn & 1n) === 0n) {
          while ((fn & 1n) === 0n && fn !== 0n) {
            fn >>= 1n;
            sn >>= 1n;
          }
        }
      } else {
        r = await sha256(concat([0x01], r, p));
      }
      fn >>= 1n;
      sn >>= 1n;
    }
    if (sn !== 0n) fail('the audit path is shorter than the tree needs');
    return r;
  }

  // C2SP signed-note: the text (up to and including the newline before the blank line) and its signature lines.
  function openNote(note) {
    const split = note.lastIndexOf('\n\n');
    if (split < 0) fail('the checkpoint note has no signature block');
    const text = note.slice(0, split + 1);
    const block = note.slice(split + 2);
    if (!block.endsWith('\n')) fail('the checkpoint note does not end with a newline');
    const sigs = block
      .slice(0, -1)
      .split('\n')
      .map((line) => {
        const m = /^\u2014 (\S+) (\S+)$/.exec(line);
        if (!m) fail('a signature line of the checkpoint is malformed');
        const bytes = b64(m[2], 'a signature');
        if (bytes.length < 5) fail('a signature line of the checkpoint is too short');
        return { name: m[1], keyHash: bytes.slice(0, 4), sig: bytes.slice(4) };
      });
    return { text, sigs };
  }

  // C2SP tlog-checkpoint: origin, decimal size, base64 root, then optional extension lines.
  function parseCheckpoint(text) {
    const lines = text.slice(0, -1).split('\n');
    if (lines.length < 3) fail('the checkpoint has fewer than three lines');
    const [origin, sizeText, rootText] = lines;
    if (!origin) fail('the checkpoint has no origin');
    if (!/^(0|[1-9][0-9]*)$/.test(sizeText)) fail('the checkpoint size is not a decimal number');
    const root = b64(rootText, 'the checkpoint root');
    if (root.length !== 32) fail('the checkpoint root is not 32 bytes');
    return { origin, size: Number(sizeText), root, rootText };
  }

  // C2SP vkey: <name>+<hex key hash>+<base64(0x01 || 32-byte Ed25519 public key)>.
  async function parseVerifierKey(vkey) {
    // The name has no '+'; the base64 may (so not a plain split on '+').
    const m = typeof vkey === 'string' ? /^([^+]+)\+([0-9a-f]{8})\+(.+)$/.exec(vkey) : null;
    if (!m) fail('the log key is malformed');
    const parts = m.slice(1);
    const bytes = b64(parts[2], 'the log key');
    if (bytes.length !== 33 || bytes[0] !== 0x01) fail('the log key is not an Ed25519 key');
    const pub = bytes.slice(1);
    const keyHash = (await sha256(concat(te.encode(parts[0]), [0x0a, 0x01], pub))).slice(0, 4);
    const hex = [...keyHash].map((x) => x.toString(16).padStart(2, '0')).join('');
    if (hex !== parts[1]) fail('the log key hash does not match the key');
    return { name: parts[0], keyHash, pub };
  }

  async function check(d) {
    const leaf = b64(d.leaf, 'the leaf data');
    const path = (d.hashes || []).map((h) => {
      const x = b64(h, 'an audit path hash');
      if (x.length !== 32) fail('an audit path hash is not 32 bytes');
      return x;
    });
    // The leaf is the record this page shows: every field shown, with the same value.
    let record;
    try {
      record = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(leaf));
    } catch {
      fail('the leaf data is not JSON');
    }
    if (!record || typeof record !== 'object' || Array.isArray(record)) fail('the leaf data is not a record');
    if (record.request_id !== d.request_id || record.leaf_index !== d.leaf_index) fail(`the leaf is not record ${d.request_id} at leaf ${d.leaf_index}`);
    const shown = document.querySelectorAll('#record [data-field]');
    const names = new Set();
    for (const el of shown) {
      const name = el.dataset.field;
      names.add(name);
      if (!Object.prototype.hasOwnProperty.call(record, name) || canonical(record[name]) !== el.dataset.value) fail(`the field ${name} shown is not the proven leaf's`);
    }
    if (!names.has('request_id')) fail('the page shows no request_id');
    for (const k of Object.keys(record)) if (!names.has(k)) fail(`the leaf's field ${k} is not shown`);
    // The log's key and its signature on the checkpoint.
    const key = await parseVerifierKey(d.verifier_key);
    const note = openNote(d.checkpoint);
    const sig = note.sigs.find((s) => s.name === key.name && equal(s.keyHash, key.keyHash));
    if (!sig) fail(`the checkpoint carries no signature by the log key ${key.name}`);
    if (sig.sig.length !== 64) fail('the log signature is not 64 bytes');
    let pub;
    try {
      pub = await crypto.subtle.importKey('raw', key.pub, { name: 'Ed25519' }, false, ['verify']);
    } catch (e) {
      fail(`this browser cannot verify Ed25519 signatures (${e.message})`);
    }
    if (!(await crypto.subtle.verify({ name: 'Ed25519' }, pub, sig.sig, te.encode(note.text)))) fail(`the checkpoint signature by ${key.name} does not verify`);
    // The checkpoint's size and root, and the root the proof gives.
    const cp = parseCheckpoint(note.text);
    if (cp.size !== d.tree_size) fail(`the checkpoint's tree size ${cp.size} is not the proof's ${d.tree_size}`);
    const root = await rootFromPath(await sha256(concat([0x00], leaf)), d.leaf_index, cp.size, path);
    if (!equal(root, cp.root)) fail(`the proof gives the root ${toB64(root)}, not the checkpoint's ${cp.rootText}`);
    return `Verified in this browser: record ${d.request_id} is leaf ${d.leaf_index} of the log ${cp.origin}, included in the tree of size ${cp.size} with root ${cp.rootText}, whose checkpoint is signed by the log key ${key.name}.`;
  }

  let data;
  try {
    data = JSON.parse(holder.dataset.proof || '');
  } catch {
    done('failed', 'Failed: the proof data on the page is not readable.');
    return;
  }
  if (!globalThis.crypto || !globalThis.crypto.subtle) {
    done('failed', 'Failed: this browser has no WebCrypto here (it needs a secure context: https or localhost).');
    return;
  }
  check(data).then(
    (text) => done('ok', text),
    (e) => done('failed', `Failed: ${e instanceof ProofError ? e.message : `unexpected error (${e && e.message})`}.`),
  );
})();
