/**
 * LeafRecordChecker's byte-level fast path against its parse path (the reference: a checker
 * made with parseOnly, which runs JSON.parse and core/audit/hash.ts on every leaf): over
 * generated chains of context request records (legacy ones first), agent outputs between them,
 * values of every kind as the writer stores them (storableJson: escapes, control characters,
 * astral characters, lone surrogates made U+FFFD, NUL), and tampered leaves (a byte flipped or
 * replaced, a digit changed, keys swapped, whitespace or an equivalent escape put in, a leaf cut
 * short), the verdicts are the same leaf by leaf, and a tampered leaf is accepted only when it
 * still parses to the same record.
 */
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { canonicalJson, computeContentHash, computeRecordHash, LEGACY_SENTINEL, sha256Hex, storableJson, type ChainFields } from '../audit/hash.js';
import { LeafRecordChecker, type ChainTip } from './record-check.js';
import { rng } from '../../../test/rng.js';


const GENESIS = sha256Hex('record-check genesis');
const PIECES = ['a', 'Z', '0', ' ', 'scd:project:x', '"', '\\', '/', '\n', '\t', '\b', '\f', '\r', '\u0001', '\u001f', '\u007f', '\u0000', 'é', '€', '\u2028', '\uFFFD', '😀', '𝄞', '\ud800', '\udfff', '{', '}', '[', ']', ',', ':'];

function gen(r: () => number) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const str = (max = 6): string => Array.from({ length: Math.floor(r() * max) }, () => pick(PIECES)).join('');
  const plain = (): string => `id-${Math.floor(r() * 1e9).toString(36)}`;
  const num = (): number =>
    pick([0, 1, -1, 7, 42, -123456, 2 ** 31, 123456789012345, -999999999999999, 1234567890123456, 2 ** 53 + 2, 1.5, -0.25, 1e21, 1e-7, 3.14159, -0, 1e300, NaN, Infinity]);
  const value = (depth: number): unknown => {
    const k = Math.floor(r() * (depth > 2 ? 5 : 8));
    if (k === 0) return null;
    if (k === 1) return r() < 0.5;
    if (k === 2) return num();
    if (k === 3 || k === 4) return r() < 0.5 ? plain() : str();
    if (k === 5) return Array.from({ length: Math.floor(r() * 4) }, () => value(depth + 1));
    return object(depth + 1);
  };
  const object = (depth: number): Record<string, unknown> => {
    const o: Record<string, unknown> = {};
    for (let n = Math.floor(r() * 5); n > 0; n--) o[pick([plain, str, () => String(Math.floor(r() * 20)), () => pick(['a', 'b', 'aa', 'B', '_', 'é', '😀', '\uFFFF'])])()] = value(depth);
    return o;
  };
  const maybe = <T>(p: number, f: () => T): T | null => (r() < p ? f() : null);
  return { pick, str, plain, value, object, maybe };
}

interface Chain {
  leaves: Buffer[];
  records: Array<Record<string, unknown>>;
}

/** `n` leaves: `legacy` legacy records, then chained context requests with outputs between, as the server writes them. */
function makeChain(seed: number, n: number, legacy: number): Chain {
  const r = rng(seed);
  const g = gen(r);
  const leaves: Buffer[] = [];
  const records: Array<Record<string, unknown>> = [];
  let prevRh = GENESIS;
  let prevCh = GENESIS;
  let seq = 0;
  const push = (rec: Record<string, unknown>) => {
    const withIndex = { ...rec, leaf_index: leaves.length };
    records.push(withIndex);
    leaves.push(Buffer.from(canonicalJson(withIndex), 'utf8'));
  };
  while (leaves.length < n) {
    const t = new Date(Math.floor(r() * 4e12) - (r() < 0.02 ? 7e13 : 0) + (r() < 0.02 ? 3e14 : 0));
    if (seq < legacy) {
      seq++;
      push({ request_id: `legacy-${seq}`, agent_id: g.maybe(0.5, g.plain), task_type: 'old', request_params: g.maybe(0.5, () => storableJson(g.object(0))), intent_valid: r() < 0.5,
        validation_errors: null, context_bundle_ids: null, context_scd_ids: null, processing_time_ms: null, requested_at: t.toISOString(), chain_sequence: seq,
        previous_hash: LEGACY_SENTINEL, record_hash: LEGACY_SENTINEL, content_hash: null, chain_id: null, parent_request_id: null });
      continue;
    }
    if (seq > legacy && r() < 0.3) {
      const output = storableJson(g.object(0));
      push({ output_id: g.plain(), request_id: g.plain(), agent_id: g.plain(), output, output_type: g.maybe(0.5, () => g.pick(['text', 'code'])), output_hash: sha256Hex(canonicalJson(output)), created_at: t.toISOString() });
      continue;
    }
    seq++;
    const odd = r() < 0.15; // strings with escapes or non-ASCII text in the record_content fields
    const f: ChainFields = storableJson({
      chain_sequence: seq,
      request_id: odd ? g.str() : g.plain(),
      agent_id: g.maybe(0.8, () => (odd ? g.str() : `agent:${g.plain()}`)),
      task_type: odd ? g.str() : g.pick(['code_review', 'deploy_prod', 'x']),
      request_params: g.maybe(0.7, () => g.object(0)),
      intent_valid: r() < 0.8,
      validation_errors: g.maybe(0.3, () => ({ error_code: 'INTENT_NOT_ALLOWED', error_message: `Task type "${g.str()}" is not allowed`, ...g.object(1) })),
      context_bundle_ids: g.maybe(0.8, () => Array.from({ length: Math.floor(r() * 4) }, () => (r() < 0.1 ? g.str() : `bundle:${g.plain()}:1.0.0`))),
      context_scd_ids: g.maybe(0.8, () => Array.from({ length: Math.floor(r() * 60) }, () => (r() < 0.05 ? g.str() : `scd:project:${g.plain()}`))),
      processing_time_ms: g.maybe(0.9, () => Math.floor(r() * 5000)),
      requested_at: t,
      chain_id: g.maybe(0.2, g.plain),
      parent_request_id: g.maybe(0.2, () => (odd ? g.str() : g.plain())),
    }) as ChainFields;
    f.requested_at = t; // storableJson made it a plain object
    const rh = computeRecordHash(f, prevRh);
    const ch = computeContentHash(f, prevCh);
    push({ ...f, requested_at: t.toISOString(), previous_hash: prevRh, record_hash: rh, content_hash: ch });
    prevRh = rh;
    prevCh = ch;
  }
  return { leaves, records };
}

/** The verdict, or what was thrown (the parse path throws on a lone surrogate in a free-form object). */
function verdict(c: LeafRecordChecker, i: number, data: Uint8Array, at?: { buf: Uint8Array; s: number }): string | null {
  try {
    return at ? c.checkAt(i, at.buf, at.s, at.s + data.length) : c.check(i, data);
  } catch (e) {
    return `threw: ${(e as Error).message}`;
  }
}

const REQUEST_KEYS = ['agent_id', 'chain_id', 'chain_sequence', 'content_hash', 'context_bundle_ids', 'context_scd_ids', 'intent_valid', 'leaf_index', 'parent_request_id',
  'previous_hash', 'processing_time_ms', 'record_hash', 'request_id', 'request_params', 'requested_at', 'task_type', 'validation_errors'];

/**
 * What a leaf says to the checker, however it is written (null when it is not JSON or has no
 * canonical form): a request record's fields (an absent one is null, as the rules take it),
 * requested_at as a date, an output record's output, output_hash and leaf_index (nothing else
 * of it is checked).
 */
function meaning(data: Uint8Array): string | null {
  try {
    const r = JSON.parse(Buffer.from(data).toString('utf8')) as Record<string, unknown>;
    // requested_at is hashed as Date reads it (its toISOString()): "...Z" and "...z" say the same.
    if ('chain_sequence' in r) return canonicalJson(REQUEST_KEYS.map((k) => (k === 'requested_at' && typeof r[k] === 'string' ? new Date(r[k]).toISOString() : r[k] ?? null)));
    if ('output_id' in r) return canonicalJson(['output', r.output, r.output_hash, r.leaf_index]);
    return canonicalJson(r);
  } catch {
    return null;
  }
}

/** The tampered variants of a leaf. */
function tamper(r: () => number, d: Buffer): Buffer[] {
  const out: Buffer[] = [];
  const at = () => Math.floor(r() * d.length);
  const edit = (k: number, f: (b: Buffer) => void) => {
    for (let j = 0; j < k; j++) {
      const b = Buffer.from(d);
      f(b);
      out.push(b);
    }
  };
  edit(3, (b) => (b[at()]! ^= 1 << Math.floor(r() * 8)));
  const BYTES = [0x22, 0x5c, 0x2c, 0x3a, 0x7b, 0x7d, 0x5b, 0x5d, 0x30, 0x39, 0x2d, 0x2e, 0x65, 0x61, 0x20, 0x0a, 0x01, 0x7f, 0x80, 0xc3, 0xff];
  edit(3, (b) => (b[at()] = BYTES[Math.floor(r() * BYTES.length)]!));
  const digitsAt = [...d.keys()].filter((i) => d[i]! >= 0x30 && d[i]! <= 0x39);
  edit(2, (b) => {
    const i = digitsAt[Math.floor(r() * digitsAt.length)];
    if (i !== undefined) b[i] = 0x30 + ((b[i]! - 0x30 + 1 + Math.floor(r() * 9)) % 10);
  });
  const text = d.toString('utf8');
  // Two top-level members swapped (the same record in another order), or two keys' names swapped.
  const rec = JSON.parse(text) as Record<string, unknown>;
  const keys = Object.keys(rec);
  const [a, b] = [keys[Math.floor(r() * keys.length)]!, keys[Math.floor(r() * keys.length)]!];
  const swapped: Record<string, unknown> = {};
  for (const k of keys) swapped[k === a ? b : k === b ? a : k] = rec[k === a ? b : k === b ? a : k];
  out.push(Buffer.from(`{${keys.map((k) => `${JSON.stringify(k === a ? b : k === b ? a : k)}:${canonicalJson(rec[k])}`).join(',')}}`));
  out.push(Buffer.from(`{${Object.keys(swapped).map((k) => `${JSON.stringify(k)}:${canonicalJson(swapped[k])}`).join(',')}}`));
  // Whitespace, an equivalent escape, a cut.
  const i = text.indexOf(',"', Math.floor(r() * text.length));
  if (i > 0) out.push(Buffer.from(`${text.slice(0, i)} ${text.slice(i)}`));
  const j = text.search(/"[a-z]/);
  if (j >= 0) out.push(Buffer.from(`${text.slice(0, j + 1)}\\u00${text.charCodeAt(j + 1).toString(16)}${text.slice(j + 2)}`));
  out.push(d.subarray(0, at()));
  out.push(Buffer.concat([d, Buffer.from(' ')]));
  return out;
}

const CONTENT_ORDER = ['request_id', 'agent_id', 'task_type', 'request_params', 'intent_valid', 'validation_errors', 'context_bundle_ids', 'context_scd_ids',
  'processing_time_ms', 'requested_at', 'chain_id', 'parent_request_id'];
const inner = (t: Buffer) => t.subarray(1, t.length - 1);
const netstring = (t: Buffer) => Buffer.concat([Buffer.from(`${t.length}:`), t, Buffer.from(',')]);

/**
 * A forged leaf: the record with some fields' JSON texts replaced by `texts` (written as
 * given, maybe not canonical, maybe not JSON), and hashes recomputed over those texts as they
 * stand (record_content from the texts between quotes, content netstrings of the texts):
 * what a checker that hashed spans without proving them canonical would accept. `extra` is
 * written before the fields (a duplicate key, say).
 */
function forge(rec: Record<string, unknown>, prevCh: string, texts: Record<string, Buffer>, extra = ''): Buffer {
  const t = (k: string) => texts[k] ?? Buffer.from(canonicalJson(rec[k] ?? null));
  if ('output_id' in rec) {
    const out: Record<string, Buffer> = {};
    for (const k of Object.keys(rec).sort()) out[k] = t(k);
    out.output_hash = Buffer.from(`"${createHashHex(t('output'))}"`);
    return Buffer.concat([Buffer.from(`{${extra}`), ...Object.keys(out).flatMap((k, i) => [Buffer.from(`${i ? ',' : ''}"${k}":`), out[k]!]), Buffer.from('}')]);
  }
  // record_content: a forged string's text between its quotes, as it stands; the others' values.
  const raw = (k: string) => (texts[k] ? (texts[k].toString() === 'null' ? Buffer.alloc(0) : inner(texts[k])) : Buffer.from(String(rec[k] ?? ''), 'utf8'));
  const rh = createHashHex(Buffer.concat([t('chain_sequence'), raw('request_id'), raw('agent_id'), raw('task_type'), t('intent_valid'), raw('requested_at'), raw('previous_hash')]));
  const prev = rec.previous_hash === GENESIS && prevCh === GENESIS ? inner(t('previous_hash')) : Buffer.from(prevCh);
  const ch = createHashHex(Buffer.concat([prev, netstring(t('chain_sequence')), ...CONTENT_ORDER.map((k) => netstring(t(k)))]));
  const fields: Record<string, Buffer> = {};
  for (const k of REQUEST_KEYS) fields[k] = t(k);
  fields.record_hash = Buffer.from(`"${rh}"`);
  fields.content_hash = Buffer.from(`"${ch}"`);
  return Buffer.concat([Buffer.from(`{${extra}`), ...REQUEST_KEYS.flatMap((k, i) => [Buffer.from(`${i ? ',' : ''}"${k}":`), fields[k]!]), Buffer.from('}')]);
}
const createHashHex = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Texts a field may be forged to: equivalent to its canonical JSON but not it, or not JSON at all. */
function forgeries(rec: Record<string, unknown>, r: () => number): Array<[Record<string, Buffer>, string?]> {
  const B = (s: string | Buffer) => (typeof s === 'string' ? Buffer.from(s, 'utf8') : s);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const out: Array<[Record<string, Buffer>, string?]> = [];
  const stringKeys = ('output_id' in rec ? [] : ['request_id', 'agent_id', 'task_type', 'chain_id', 'parent_request_id', 'requested_at']).filter((k) => typeof rec[k] === 'string');
  const objectKey = 'output_id' in rec ? 'output' : pick(['request_params', 'validation_errors', 'context_scd_ids', 'context_bundle_ids']);
  const obj = canonicalJson(rec[objectKey] ?? null);
  // A letter in a string written as \u00xx, \/ for /, a short escape as \u00xx, an upper-case hex escape.
  for (const k of [...stringKeys, objectKey]) {
    const text = canonicalJson(rec[k] ?? null);
    // The canonical text, but record_content hashed over it as written (its escapes not undone).
    if (stringKeys.includes(k) && text.includes('\\')) out.push([{ [k]: B(text) }]);
    const m = /"[^"\\]*?([a-z/é])/.exec(text);
    if (m) {
      const at = m.index + m[0].length - 1;
      const c = text[at]!;
      out.push([{ [k]: B(`${text.slice(0, at)}${c === '/' ? '\\/' : `\\u00${c.charCodeAt(0).toString(16)}`}${text.slice(at + 1)}`) }]);
    }
    if (text.includes('\\n')) out.push([{ [k]: B(text.replace('\\n', '\\u000a')) }]);
    if (/\\u00[01][a-f]/.test(text)) out.push([{ [k]: B(text.replace(/\\u00([01][a-f])/, (_, h: string) => `\\u00${h.toUpperCase()}`)) }]);
    // Bytes that are not UTF-8 inside a string: a stray byte, an overlong '/', an encoded surrogate.
    const q = text.indexOf('"');
    if (q >= 0) for (const bad of [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80]]) out.push([{ [k]: Buffer.concat([B(text.slice(0, q + 1)), Buffer.from(bad), B(text.slice(q + 1))]) }]);
  }
  // The object with whitespace, its keys out of order, a number written otherwise, or broken.
  if (obj.startsWith('{') && obj.length > 2) {
    out.push([{ [objectKey]: B(obj.replace(':', ': ')) }]);
    const o = rec[objectKey] as Record<string, unknown>;
    const ks = Object.keys(o).sort();
    if (ks.length > 1) out.push([{ [objectKey]: B(`{${[...ks].reverse().map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`) }]);
    out.push([{ [objectKey]: B(`${obj.slice(0, -1)},}`) }], [{ [objectKey]: B(obj.slice(0, -1)) }], [{ [objectKey]: B(`${obj.slice(0, -1)}]`) }]);
  }
  const num = /([:,[])(-?\d+)([,\]}])/.exec(obj);
  if (num) {
    for (const alt of [`${num[2]}.0`, `${num[2]}e0`, `${num[2]}E+0`, `0${num[2]}`, num[2] === '0' ? '-0' : `+${num[2]}`]) {
      out.push([{ [objectKey]: B(`${obj.slice(0, num.index + 1)}${alt}${obj.slice(num.index + 1 + num[2]!.length)}`) }]);
    }
  }
  if ('chain_sequence' in rec) {
    const seq = String(rec.chain_sequence);
    out.push([{ chain_sequence: B(`${seq}.0`) }], [{ chain_sequence: B(`0${seq}`) }], [{ leaf_index: B(`${String(rec.leaf_index)}.0`) }], [{ intent_valid: B(String(rec.intent_valid).slice(0, 3)) }]);
    const at = String(rec.requested_at);
    out.push([{ requested_at: B(JSON.stringify(at.replace('.000Z', 'Z').replace(/\.\d\d\dZ$/, '0Z'))) }], [{ requested_at: B(JSON.stringify(at.replace('T', ' '))) }], [{ requested_at: B(JSON.stringify(at.replace(/T\d\d/, 'T24'))) }]);
    out.push([{ processing_time_ms: B(rec.processing_time_ms === null ? 'nul' : `${String(rec.processing_time_ms)}.0`) }]);
    // A key given twice: JSON.parse keeps the last one.
    out.push([{ chain_id: B('"forged"') }, '"chain_id":"forged",'], [{}, '"chain_id":"forged",'], [{ request_params: B('[]') }, '"request_params":[],']);
  }
  return out;
}

// Thousands of leaves, each checked twice or more: long on a busy machine.
describe('LeafRecordChecker fast path', { timeout: 180_000 }, () => {
  it('gives the parse path verdict on every leaf of generated chains, and takes most of them', () => {
    let leaves = 0;
    let fast = 0;
    for (const [seed, legacy] of [[1, 0], [2, 3], [3, 1], [4, 0]] as const) {
      const chain = makeChain(seed, 1000, legacy);
      const c = new LeafRecordChecker(null);
      const ref = new LeafRecordChecker(null, false, { parseOnly: true });
      chain.leaves.forEach((d, i) => {
        const want = verdict(ref, i, d);
        expect(want, `leaf ${i} of chain ${seed}`).toBeNull();
        expect(verdict(c, i, d), `leaf ${i} of chain ${seed}`).toBe(want);
        expect(c.chainTip).toEqual(ref.chainTip);
      });
      expect([c.requests, c.outputs]).toEqual([ref.requests, ref.outputs]);
      leaves += chain.leaves.length;
      fast += c.fastLeaves;
      expect(ref.fastLeaves).toBe(0);
    }
    // Escaped record_content strings, legacy records, fractions and long integers (frequent here) go the parse path; the rest is fast.
    expect(fast / leaves).toBeGreaterThan(0.35);
  });

  it('gives the parse path verdict on tampered leaves, in a bundle-like buffer, and fails every one that changed what the record says', () => {
    const r = rng(99);
    let tampered = 0;
    let failed = 0;
    for (const [seed, legacy] of [[5, 2], [6, 0]] as const) {
      const chain = makeChain(seed, 400, legacy);
      const ref0 = new LeafRecordChecker(null, false, { parseOnly: true });
      const tips: Array<ChainTip | null> = [];
      chain.leaves.forEach((d, i) => {
        tips.push(ref0.chainTip);
        expect(ref0.check(i, d)).toBeNull();
      });
      chain.leaves.forEach((d, i) => {
        const original = meaning(d);
        for (const t of tamper(r, d)) {
          // The leaf inside a larger buffer, with bytes either side that a scan going past its end would read.
          const buf = Buffer.concat([Buffer.from('{"x":1}'), t, Buffer.from('"}],:0')]);
          const chained = tips[i] !== null;
          const want = verdict(new LeafRecordChecker(tips[i]!, chained, { parseOnly: true }), i, t);
          const fastChecker = new LeafRecordChecker(tips[i]!, chained);
          expect(verdict(fastChecker, i, t), `leaf ${i} tampered: ${t.toString('utf8')}`).toBe(want);
          expect(verdict(new LeafRecordChecker(tips[i]!, chained), i, t, { buf, s: 7 }), `leaf ${i} tampered, in a buffer: ${t.toString('utf8')}`).toBe(want);
          tampered++;
          if (want !== null) failed++;
          // Accepted: it still says what the original said (a legacy record has no hash to check).
          else if (chain.records[i]!.record_hash !== LEGACY_SENTINEL) expect(meaning(t), `leaf ${i} tampered and accepted: ${t.toString('utf8')}`).toBe(original);
        }
      });
    }
    expect(failed).toBeGreaterThan(tampered / 2);
  });

  it('refuses forged leaves whose hashes were computed over texts that are not the canonical JSON of their fields, as the parse path does', () => {
    const r = rng(1234);
    let forged = 0;
    let refused = 0;
    let fastTaken = 0;
    for (const [seed, legacy] of [[8, 1], [9, 0]] as const) {
      const chain = makeChain(seed, 400, legacy);
      const ref0 = new LeafRecordChecker(null, false, { parseOnly: true });
      chain.leaves.forEach((d, i) => {
        const tip = ref0.chainTip;
        expect(ref0.check(i, d)).toBeNull();
        const rec = chain.records[i]!;
        if (rec.record_hash === LEGACY_SENTINEL) return;
        const prevCh = tip?.content_hash ?? GENESIS;
        // The forging itself is right: the canonical texts give back the leaf.
        expect(forge(rec, prevCh, {}).toString(), `leaf ${i}`).toBe(d.toString());
        for (const [texts, extra] of forgeries(rec, r)) {
          const f = forge(rec, prevCh, texts, extra);
          const want = verdict(new LeafRecordChecker(tip, tip !== null, { parseOnly: true }), i, f);
          const c = new LeafRecordChecker(tip, tip !== null);
          expect(verdict(c, i, f), `leaf ${i} forged: ${f.toString('utf8')}`).toBe(want);
          const buf = Buffer.concat([Buffer.from('{"x":"'), f, Buffer.from('"}],:0')]);
          expect(verdict(new LeafRecordChecker(tip, tip !== null), i, f, { buf, s: 6 }), `leaf ${i} forged, in a buffer: ${f.toString('utf8')}`).toBe(want);
          forged++;
          if (want !== null) refused++;
          fastTaken += c.fastLeaves;
        }
        // The leaf without its closing brace (its last value an object: the spans and hashes are the same).
        const cut = d.subarray(0, d.length - 1);
        expect(verdict(new LeafRecordChecker(tip, tip !== null), i, cut)).toBe(verdict(new LeafRecordChecker(tip, tip !== null, { parseOnly: true }), i, cut));
      });
    }
    expect(forged).toBeGreaterThan(3000);
    // Only a key given twice, both times in canonical form, makes a record the rules accept; the fast path takes those too.
    expect(refused).toBeGreaterThan(forged * 0.8);
    expect(fastTaken).toBeGreaterThan(0);
  });

  it('handles the edges of a chain as the parse path does: legacy records, the genesis, a broken link, a stale tip', () => {
    const chain = makeChain(7, 200, 2);
    const legacy = JSON.parse(chain.leaves[0]!.toString()) as Record<string, unknown>;
    for (const parseOnly of [false, true]) {
      const c = new LeafRecordChecker(null, false, { parseOnly });
      chain.leaves.forEach((d, i) => expect(c.check(i, d)).toBeNull());
      const n = chain.leaves.length;
      expect(c.check(n, Buffer.from(canonicalJson({ ...legacy, leaf_index: n })))).toMatch(/legacy record .* after a chained record/);
      // A chained record with no tip after chained records; a tip whose hashes are not hex.
      const firstChained = chain.records.findIndex((x) => x.chain_sequence === 3);
      const d = chain.leaves[firstChained]!;
      expect(new LeafRecordChecker(null, true, { parseOnly }).check(firstChained, d)).toBe('a chained record follows nothing');
      expect(new LeafRecordChecker({ chain_sequence: 2, record_hash: 'x', content_hash: 'y' }, true, { parseOnly }).check(firstChained, d)).toMatch(/previous_hash is not the record_hash/);
      expect(new LeafRecordChecker(null, false, { parseOnly }).check(firstChained, d)).toBeNull();
    }
  });
});
