/**
 * HPACK (RFC 7541) header compression for the lean HTTP/2 server.
 *
 * Why: the gRPC hot path runs on a hand-written HTTP/2 server instead of
 * node:http2, which costs ~40 µs per call against ~20 µs for a lean
 * implementation. This module is that server's header codec:
 *
 * - HpackDecoder: the full decoder (static + dynamic table, all literal
 *   representations, dynamic table size updates, Huffman strings). One
 *   instance per connection; decode() takes one complete header block.
 *   After the first request of a gRPC connection most fields arrive as
 *   one-byte indexed references, which decode to strings already held by
 *   the tables: no allocation beyond the output array.
 * - encodeHeaders: the response side, stateless on purpose: literals
 *   without indexing (6.2.2) using static-table name indices, no Huffman and
 *   no dynamic table, so the client's decoder state never depends on us.
 *
 * Strings are octets read and written as latin1 (names and values alike),
 * so a string's length is its size in bytes (4.1 entry sizes, 6.5.2 list
 * sizes count string lengths).
 */

/** Any malformed header block. The caller answers with a connection error of type COMPRESSION_ERROR. */
export class HpackError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HpackError';
  }
}

// ---------------------------------------------------------------------------
// Static table (RFC 7541 Appendix A). Index 0 is unused.

const STATIC_NAMES: readonly string[] = [
  '',
  ':authority', ':method', ':method', ':path', ':path', ':scheme', ':scheme', // 1-7
  ':status', ':status', ':status', ':status', ':status', ':status', ':status', // 8-14
  'accept-charset', 'accept-encoding', 'accept-language', 'accept-ranges', 'accept', // 15-19
  'access-control-allow-origin', 'age', 'allow', 'authorization', 'cache-control', // 20-24
  'content-disposition', 'content-encoding', 'content-language', 'content-length', // 25-28
  'content-location', 'content-range', 'content-type', 'cookie', 'date', 'etag', // 29-34
  'expect', 'expires', 'from', 'host', 'if-match', 'if-modified-since', // 35-40
  'if-none-match', 'if-range', 'if-unmodified-since', 'last-modified', 'link', // 41-45
  'location', 'max-forwards', 'proxy-authenticate', 'proxy-authorization', 'range', // 46-50
  'referer', 'refresh', 'retry-after', 'server', 'set-cookie', // 51-55
  'strict-transport-security', 'transfer-encoding', 'user-agent', 'vary', 'via', // 56-60
  'www-authenticate', // 61
];

/** Values of entries 1-16; entries 17-61 have empty values. */
const STATIC_VALUES: readonly string[] = [
  '',
  '', 'GET', 'POST', '/', '/index.html', 'http', 'https', // 1-7
  '200', '204', '206', '304', '400', '404', '500', // 8-14
  '', 'gzip, deflate', // 15-16
  ...new Array<string>(61 - 16).fill(''),
];

const STATIC_COUNT = 61;

// ---------------------------------------------------------------------------
// Huffman code (RFC 7541 Appendix B): code (right-aligned) and bit length for
// symbols 0..255 and EOS (256). The code is canonical; the tests check that,
// the prefix property and completeness.

const HUFFMAN_CODES: readonly number[] = [
  0x1ff8, 0x7fffd8, 0xfffffe2, 0xfffffe3, 0xfffffe4, 0xfffffe5, 0xfffffe6, 0xfffffe7, // 0
  0xfffffe8, 0xffffea, 0x3ffffffc, 0xfffffe9, 0xfffffea, 0x3ffffffd, 0xfffffeb, 0xfffffec, // 8
  0xfffffed, 0xfffffee, 0xfffffef, 0xffffff0, 0xffffff1, 0xffffff2, 0x3ffffffe, 0xffffff3, // 16
  0xffffff4, 0xffffff5, 0xffffff6, 0xffffff7, 0xffffff8, 0xffffff9, 0xffffffa, 0xffffffb, // 24
  0x14, 0x3f8, 0x3f9, 0xffa, 0x1ff9, 0x15, 0xf8, 0x7fa, // 32
  0x3fa, 0x3fb, 0xf9, 0x7fb, 0xfa, 0x16, 0x17, 0x18, // 40
  0x0, 0x1, 0x2, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, // 48
  0x1e, 0x1f, 0x5c, 0xfb, 0x7ffc, 0x20, 0xffb, 0x3fc, // 56
  0x1ffa, 0x21, 0x5d, 0x5e, 0x5f, 0x60, 0x61, 0x62, // 64
  0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, // 72
  0x6b, 0x6c, 0x6d, 0x6e, 0x6f, 0x70, 0x71, 0x72, // 80
  0xfc, 0x73, 0xfd, 0x1ffb, 0x7fff0, 0x1ffc, 0x3ffc, 0x22, // 88
  0x7ffd, 0x3, 0x23, 0x4, 0x24, 0x5, 0x25, 0x26, // 96
  0x27, 0x6, 0x74, 0x75, 0x28, 0x29, 0x2a, 0x7, // 104
  0x2b, 0x76, 0x2c, 0x8, 0x9, 0x2d, 0x77, 0x78, // 112
  0x79, 0x7a, 0x7b, 0x7ffe, 0x7fc, 0x3ffd, 0x1ffd, 0xffffffc, // 120
  0xfffe6, 0x3fffd2, 0xfffe7, 0xfffe8, 0x3fffd3, 0x3fffd4, 0x3fffd5, 0x7fffd9, // 128
  0x3fffd6, 0x7fffda, 0x7fffdb, 0x7fffdc, 0x7fffdd, 0x7fffde, 0xffffeb, 0x7fffdf, // 136
  0xffffec, 0xffffed, 0x3fffd7, 0x7fffe0, 0xffffee, 0x7fffe1, 0x7fffe2, 0x7fffe3, // 144
  0x7fffe4, 0x1fffdc, 0x3fffd8, 0x7fffe5, 0x3fffd9, 0x7fffe6, 0x7fffe7, 0xffffef, // 152
  0x3fffda, 0x1fffdd, 0xfffe9, 0x3fffdb, 0x3fffdc, 0x7fffe8, 0x7fffe9, 0x1fffde, // 160
  0x7fffea, 0x3fffdd, 0x3fffde, 0xfffff0, 0x1fffdf, 0x3fffdf, 0x7fffeb, 0x7fffec, // 168
  0x1fffe0, 0x1fffe1, 0x3fffe0, 0x1fffe2, 0x7fffed, 0x3fffe1, 0x7fffee, 0x7fffef, // 176
  0xfffea, 0x3fffe2, 0x3fffe3, 0x3fffe4, 0x7ffff0, 0x3fffe5, 0x3fffe6, 0x7ffff1, // 184
  0x3ffffe0, 0x3ffffe1, 0xfffeb, 0x7fff1, 0x3fffe7, 0x7ffff2, 0x3fffe8, 0x1ffffec, // 192
  0x3ffffe2, 0x3ffffe3, 0x3ffffe4, 0x7ffffde, 0x7ffffdf, 0x3ffffe5, 0xfffff1, 0x1ffffed, // 200
  0x7fff2, 0x1fffe3, 0x3ffffe6, 0x7ffffe0, 0x7ffffe1, 0x3ffffe7, 0x7ffffe2, 0xfffff2, // 208
  0x1fffe4, 0x1fffe5, 0x3ffffe8, 0x3ffffe9, 0xffffffd, 0x7ffffe3, 0x7ffffe4, 0x7ffffe5, // 216
  0xfffec, 0xfffff3, 0xfffed, 0x1fffe6, 0x3fffe9, 0x1fffe7, 0x1fffe8, 0x7ffff3, // 224
  0x3fffea, 0x3fffeb, 0x1ffffee, 0x1ffffef, 0xfffff4, 0xfffff5, 0x3ffffea, 0x7ffff4, // 232
  0x3ffffeb, 0x7ffffe6, 0x3ffffec, 0x3ffffed, 0x7ffffe7, 0x7ffffe8, 0x7ffffe9, 0x7ffffea, // 240
  0x7ffffeb, 0xffffffe, 0x7ffffec, 0x7ffffed, 0x7ffffee, 0x7ffffef, 0x7fffff0, 0x3ffffee, // 248
  0x3fffffff, // 256
];

const HUFFMAN_LENGTHS: readonly number[] = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0
  28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 16
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, // 32
  5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, // 48
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, // 64
  7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, // 80
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, // 96
  6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, // 112
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 128
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 144
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 160
  21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 176
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 192
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 208
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 224
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 240
  30, // 256
];

/** Transition flags of the nibble state machine (bits 0-7: next state, 8-15: emitted symbol). */
const HUFF_EMIT = 1 << 16;
/** The bits consumed since the last symbol are a valid padding (all ones, at most 7). */
const HUFF_ACCEPT = 1 << 17;
/** The EOS symbol was decoded: always an error (5.2). */
const HUFF_FAIL = 1 << 18;

/**
 * Huffman decoding as a state machine over nibbles, built once at load.
 * The states are the 256 internal nodes of the code tree (257 leaves);
 * HUFF_TABLE[state * 16 + nibble] gives the next state, and the symbol when
 * the nibble completed one (at most one: no code is shorter than 5 bits).
 */
const HUFF_TABLE: Uint32Array = buildHuffmanTable();

function buildHuffmanTable(): Uint32Array {
  // kids[node * 2 + bit]: an internal node id (> 0), a leaf (-1 - symbol), or 0 (not yet built).
  const kids = new Int32Array(512);
  let nodes = 1;
  for (let sym = 0; sym <= 256; sym++) {
    const code = HUFFMAN_CODES[sym]!;
    const len = HUFFMAN_LENGTHS[sym]!;
    let node = 0;
    for (let bit = len - 1; bit > 0; bit--) {
      const k = node * 2 + ((code >>> bit) & 1);
      let next = kids[k]!;
      if (next === 0) {
        next = nodes++;
        kids[k] = next;
      } else if (next < 0) {
        throw new Error('hpack: Huffman table is not prefix-free');
      }
      node = next;
    }
    const k = node * 2 + (code & 1);
    if (kids[k] !== 0) throw new Error('hpack: Huffman table is not prefix-free');
    kids[k] = -1 - sym;
  }
  if (nodes !== 256) throw new Error('hpack: Huffman table is not complete');
  for (let i = 0; i < 512; i++) if (kids[i] === 0) throw new Error('hpack: Huffman table is not complete');

  // Valid end states: the root, or up to 7 one-bits into a code (a prefix of EOS).
  const accept = new Uint8Array(256);
  for (let node = 0, depth = 0; depth <= 7; depth++) {
    accept[node] = 1;
    node = kids[node * 2 + 1]!;
  }

  const table = new Uint32Array(256 * 16);
  for (let state = 0; state < 256; state++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let node = state;
      let entry = 0;
      for (let bit = 3; bit >= 0; bit--) {
        const next = kids[node * 2 + ((nibble >>> bit) & 1)]!;
        if (next >= 0) {
          node = next;
          continue;
        }
        const sym = -1 - next;
        if (sym === 256) {
          entry = HUFF_FAIL;
          break;
        }
        entry = HUFF_EMIT | (sym << 8);
        node = 0;
      }
      table[state * 16 + nibble] = entry === HUFF_FAIL ? HUFF_FAIL : entry | node | (accept[node] ? HUFF_ACCEPT : 0);
    }
  }
  return table;
}

// ---------------------------------------------------------------------------
// Byte helpers.

interface Latin1Buffer extends Buffer {
  latin1Slice(start: number, end: number): string;
}

/** Buffer#latin1Slice (Node's own fast path under toString('latin1')); toString where it is missing. */
const HAS_LATIN1_SLICE = typeof (Buffer.prototype as Partial<Latin1Buffer>).latin1Slice === 'function';

function latin1(buf: Latin1Buffer, start: number, end: number): string {
  return HAS_LATIN1_SLICE ? buf.latin1Slice(start, end) : buf.toString('latin1', start, end);
}

/** Output of Huffman decoding, reused (decoding is synchronous). Grown on demand. */
let huffScratch = Buffer.allocUnsafe(4096) as Latin1Buffer;

/**
 * Read cursor shared by the decoding helpers (decoding is synchronous, so one
 * module-level cursor is safe and spares a result object per integer/string).
 */
let cursor = 0;

const MAX_INT = 0x7fffffff;

/**
 * Integer with an N-bit prefix (5.1) at `cursor`; `mask` is 2^N - 1. Values
 * above 2^31 - 1 are refused, as are encodings longer than needed for them.
 */
function readInt(src: Uint8Array, end: number, mask: number): number {
  let value = src[cursor++]! & mask;
  if (value < mask) return value;
  let mul = 1;
  for (;;) {
    if (cursor >= end) throw new HpackError('truncated integer');
    const b = src[cursor++]!;
    value += (b & 0x7f) * mul;
    if (value > MAX_INT) throw new HpackError('integer overflow');
    if ((b & 0x80) === 0) return value;
    mul *= 128;
    if (mul > 0x10000000) throw new HpackError('integer overflow');
  }
}

/** String literal (5.2) at `cursor`, raw or Huffman, as latin1. */
function readString(buf: Latin1Buffer, end: number): string {
  if (cursor >= end) throw new HpackError('truncated string');
  const huffman = (buf[cursor]! & 0x80) !== 0;
  const len = readInt(buf, end, 0x7f);
  const start = cursor;
  if (len > end - start) throw new HpackError('truncated string');
  cursor = start + len;
  if (len === 0) return '';
  return huffman ? huffmanDecode(buf, start, start + len) : latin1(buf, start, start + len);
}

function huffmanDecode(src: Uint8Array, start: number, end: number): string {
  // Every code has at least 5 bits: at most 8/5 symbols per input byte.
  const max = Math.ceil(((end - start) * 8) / 5);
  if (huffScratch.length < max) huffScratch = Buffer.allocUnsafe(Math.max(max, huffScratch.length * 2)) as Latin1Buffer;
  const out = huffScratch;
  const table = HUFF_TABLE;
  let n = 0;
  let state = 0;
  let e = 0;
  for (let i = start; i < end; i++) {
    const b = src[i]!;
    e = table[(state << 4) | (b >>> 4)]!;
    if ((e & (HUFF_EMIT | HUFF_FAIL)) !== 0) {
      if ((e & HUFF_FAIL) !== 0) throw new HpackError('Huffman string contains EOS');
      out[n++] = e >>> 8;
    }
    state = e & 0xff;
    e = table[(state << 4) | (b & 0x0f)]!;
    if ((e & (HUFF_EMIT | HUFF_FAIL)) !== 0) {
      if ((e & HUFF_FAIL) !== 0) throw new HpackError('Huffman string contains EOS');
      out[n++] = e >>> 8;
    }
    state = e & 0xff;
  }
  if ((e & HUFF_ACCEPT) === 0) throw new HpackError('invalid Huffman padding');
  return latin1(out, 0, n);
}

function asBuffer(block: Uint8Array): Latin1Buffer {
  return (Buffer.isBuffer(block) ? block : Buffer.from(block.buffer, block.byteOffset, block.byteLength)) as Latin1Buffer;
}

// ---------------------------------------------------------------------------
// Decoder.

/** Per-entry overhead of table and list sizes (4.1, RFC 7540 6.5.2). */
const ENTRY_OVERHEAD = 32;

export class HpackDecoder {
  private readonly maxTableSize: number;
  private readonly maxListSize: number;
  /** Current dynamic table capacity: maxTableSize until the peer's size updates lower it. */
  private capacity: number;
  /** Sum of the entries' sizes (name + value + 32). */
  private size = 0;
  private count = 0;
  /** Ring slot of the next insertion; the newest entry is at head - 1. */
  private head = 0;
  private readonly mask: number;
  private readonly names: string[];
  private readonly values: string[];

  /**
   * @param maxTableSize our SETTINGS_HEADER_TABLE_SIZE (default 4096): the largest dynamic table size update accepted.
   * @param maxListSize limit on the decoded header list size counted as RFC 7540 6.5.2 does (name + value + 32 per
   *   field), default 64 KiB; a larger list is an HpackError.
   */
  constructor(maxTableSize = 4096, maxListSize = 65536) {
    if (!(maxTableSize >= 0 && maxTableSize <= MAX_INT)) throw new RangeError('maxTableSize');
    this.maxTableSize = maxTableSize;
    this.maxListSize = maxListSize;
    this.capacity = maxTableSize;
    // Every entry takes at least 32 octets: the ring never holds more than maxTableSize / 32 of them.
    let slots = 1;
    while (slots <= maxTableSize / ENTRY_OVERHEAD) slots *= 2;
    this.mask = slots - 1;
    this.names = new Array<string>(slots).fill('');
    this.values = new Array<string>(slots).fill('');
  }

  /**
   * Decodes one complete header block (HEADERS + CONTINUATION fragments joined) into
   * [name0, value0, name1, value1, ...], updating the dynamic table. Throws HpackError
   * on any malformed input.
   */
  decode(block: Uint8Array): string[] {
    const buf = asBuffer(block);
    const end = buf.length;
    const out: string[] = [];
    let listSize = 0;
    cursor = 0;
    while (cursor < end) {
      const b = buf[cursor]!;
      let name: string;
      let value: string;
      if ((b & 0x80) !== 0) {
        // 6.1 Indexed Header Field.
        let index = b & 0x7f;
        if (index === 0x7f) index = readInt(buf, end, 0x7f);
        else cursor++;
        if (index === 0) throw new HpackError('index 0');
        if (index <= STATIC_COUNT) {
          name = STATIC_NAMES[index]!;
          value = STATIC_VALUES[index]!;
        } else {
          const slot = this.slot(index);
          name = this.names[slot]!;
          value = this.values[slot]!;
        }
      } else if ((b & 0x40) !== 0) {
        // 6.2.1 Literal Header Field with Incremental Indexing.
        const index = readInt(buf, end, 0x3f);
        name = index === 0 ? readString(buf, end) : this.nameAt(index);
        value = readString(buf, end);
        this.add(name, value);
      } else if ((b & 0x20) !== 0) {
        // 6.3 Dynamic Table Size Update: only before the first field of a block.
        if (out.length !== 0) throw new HpackError('dynamic table size update after a header field');
        const newSize = readInt(buf, end, 0x1f);
        if (newSize > this.maxTableSize) throw new HpackError('dynamic table size update above the maximum');
        this.capacity = newSize;
        this.evictTo(newSize);
        continue;
      } else {
        // 6.2.2 Literal without Indexing (0000) / 6.2.3 Never Indexed (0001).
        const index = readInt(buf, end, 0x0f);
        name = index === 0 ? readString(buf, end) : this.nameAt(index);
        value = readString(buf, end);
      }
      listSize += name.length + value.length + ENTRY_OVERHEAD;
      if (listSize > this.maxListSize) throw new HpackError('header list too large');
      out.push(name, value);
    }
    return out;
  }

  /** Ring slot of dynamic table index (62 = newest). */
  private slot(index: number): number {
    const i = index - STATIC_COUNT;
    if (i > this.count) throw new HpackError('index beyond the tables');
    return (this.head - i) & this.mask;
  }

  private nameAt(index: number): string {
    return index <= STATIC_COUNT ? STATIC_NAMES[index]! : this.names[this.slot(index)]!;
  }

  /** 4.4: evict from the oldest end until the entry fits; an entry larger than the table empties it. */
  private add(name: string, value: string): void {
    const entrySize = name.length + value.length + ENTRY_OVERHEAD;
    if (entrySize > this.capacity) {
      this.evictTo(0);
      return;
    }
    this.evictTo(this.capacity - entrySize);
    const head = this.head;
    this.names[head] = name;
    this.values[head] = value;
    this.head = (head + 1) & this.mask;
    this.count++;
    this.size += entrySize;
  }

  private evictTo(limit: number): void {
    const names = this.names;
    const values = this.values;
    while (this.size > limit) {
      const oldest = (this.head - this.count) & this.mask;
      this.size -= names[oldest]!.length + values[oldest]!.length + ENTRY_OVERHEAD;
      names[oldest] = '';
      values[oldest] = '';
      this.count--;
    }
  }
}

// ---------------------------------------------------------------------------
// Encoder.

/** Lowest static index per name (what 6.2.2 literals reference). */
const STATIC_NAME_INDEX = new Map<string, number>();
for (let i = STATIC_COUNT; i >= 1; i--) STATIC_NAME_INDEX.set(STATIC_NAMES[i]!, i);

/** Octets an integer takes with an N-bit prefix (prefixMax = 2^N - 1). */
function intSize(value: number, prefixMax: number): number {
  if (value < prefixMax) return 1;
  let size = 2;
  for (let rest = value - prefixMax; rest >= 128; rest = Math.floor(rest / 128)) size++;
  return size;
}

function writeInt(out: Buffer, pos: number, value: number, prefixMax: number, firstBits: number): number {
  if (value < prefixMax) {
    out[pos++] = firstBits | value;
    return pos;
  }
  out[pos++] = firstBits | prefixMax;
  let rest = value - prefixMax;
  while (rest >= 128) {
    out[pos++] = (rest % 128) | 0x80;
    rest = Math.floor(rest / 128);
  }
  out[pos++] = rest;
  return pos;
}

/** latin1 bytes of `s` at `pos`; a plain loop beats Buffer#write's call overhead on short strings. */
function writeLatin1(out: Buffer, pos: number, s: string): number {
  const n = s.length;
  if (n > 64) return pos + out.write(s, pos, 'latin1');
  for (let i = 0; i < n; i++) out[pos + i] = s.charCodeAt(i);
  return pos + n;
}

/**
 * Encodes a response header list (flat [name, value, ...], lowercase names) as literals
 * without indexing (6.2.2), referencing the static table's name when it has one; raw
 * latin1 strings, no Huffman, no dynamic table. `:status: 200` is the indexed static
 * entry 8.
 */
export function encodeHeaders(fields: readonly string[]): Buffer {
  const n = fields.length;
  if ((n & 1) !== 0) throw new TypeError('encodeHeaders: fields must be name/value pairs');
  let total = 0;
  for (let i = 0; i < n; i += 2) {
    const name = fields[i]!;
    const value = fields[i + 1]!;
    if (name === ':status' && value === '200') {
      total += 1;
      continue;
    }
    const index = STATIC_NAME_INDEX.get(name) ?? 0;
    total += index === 0 ? 1 + intSize(name.length, 0x7f) + name.length : intSize(index, 0x0f);
    total += intSize(value.length, 0x7f) + value.length;
  }
  const out = Buffer.allocUnsafe(total);
  let pos = 0;
  for (let i = 0; i < n; i += 2) {
    const name = fields[i]!;
    const value = fields[i + 1]!;
    if (name === ':status' && value === '200') {
      out[pos++] = 0x88;
      continue;
    }
    const index = STATIC_NAME_INDEX.get(name) ?? 0;
    if (index === 0) {
      out[pos++] = 0x00;
      pos = writeInt(out, pos, name.length, 0x7f, 0);
      pos = writeLatin1(out, pos, name);
    } else {
      pos = writeInt(out, pos, index, 0x0f, 0);
    }
    pos = writeInt(out, pos, value.length, 0x7f, 0);
    pos = writeLatin1(out, pos, value);
  }
  return out;
}
