import http2 from 'node:http2';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HpackDecoder, HpackError, encodeHeaders } from './hpack.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

/** Flat [name, value, ...] from pairs. */
const flat = (pairs: ReadonlyArray<readonly [string, string]>): string[] => pairs.flatMap(([n, v]) => [n, v]);

/** Integer with an N-bit prefix (5.1), test-side. */
function int(value: number, prefixBits: number, firstBits = 0): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [firstBits | value];
  const out = [firstBits | max];
  let rest = value - max;
  while (rest >= 128) {
    out.push((rest % 128) | 0x80);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return out;
}

/** Raw string literal. */
const str = (s: string): number[] => [...int(s.length, 7), ...Buffer.from(s, 'latin1')];
/** Huffman string literal from already-encoded bytes. */
const hstr = (bytes: Uint8Array): number[] => [...int(bytes.length, 7, 0x80), ...bytes];
/** Literal without indexing, new name (6.2.2), with a Huffman-coded value. */
const litHuff = (name: string, value: Uint8Array): Uint8Array => Uint8Array.from([0x00, ...str(name), ...hstr(value)]);

function expectHpackError(fn: () => unknown, message?: RegExp): void {
  let thrown: unknown;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(HpackError);
  if (message) expect((thrown as Error).message).toMatch(message);
}

// ---------------------------------------------------------------------------
// Test-side Huffman encoder. Code lengths of RFC 7541 Appendix B (symbols 0..255, EOS);
// the code is canonical, so the codes follow from the lengths.

const LENGTHS = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28,
  28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12,
  10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6,
  5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22,
  22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20,
  22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28,
  27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28,
  27, 27, 27, 27, 27, 26, 30,
];

const CODES: number[] = (() => {
  const order = LENGTHS.map((_, sym) => sym).sort((a, b) => LENGTHS[a]! - LENGTHS[b]! || a - b);
  const codes = new Array<number>(257).fill(0);
  let code = 0;
  let prevLen = LENGTHS[order[0]!]!;
  order.forEach((sym, i) => {
    const len = LENGTHS[sym]!;
    if (i > 0) code = (code + 1) * 2 ** (len - prevLen);
    prevLen = len;
    codes[sym] = code;
  });
  return codes;
})();

/** Bit writer: append codes MSB first, pad with `padBits` of `padValue`. */
function huffmanBits(symbols: readonly number[], pad?: { bits: number; value: number }): Uint8Array {
  const bits: number[] = [];
  for (const sym of symbols) {
    const len = LENGTHS[sym]!;
    for (let b = len - 1; b >= 0; b--) bits.push(Math.floor(CODES[sym]! / 2 ** b) % 2);
  }
  if (pad) {
    for (let b = pad.bits - 1; b >= 0; b--) bits.push((pad.value >>> b) & 1);
  } else {
    while (bits.length % 8 !== 0) bits.push(1); // EOS prefix
  }
  expect(bits.length % 8).toBe(0);
  const out = new Uint8Array(bits.length / 8);
  bits.forEach((bit, i) => {
    out[i >> 3]! |= bit << (7 - (i & 7));
  });
  return out;
}

const huffman = (s: string): Uint8Array => huffmanBits([...Buffer.from(s, 'latin1')]);

// ---------------------------------------------------------------------------

describe('RFC 7541 Appendix C', () => {
  it('C.2.1 literal with indexing adds to the dynamic table', () => {
    const d = new HpackDecoder();
    expect(d.decode(hex('400a637573746f6d2d6b65790d637573746f6d2d686561646572'))).toEqual([
      'custom-key',
      'custom-header',
    ]);
    expect(d.decode(hex('be'))).toEqual(['custom-key', 'custom-header']);
    expectHpackError(() => d.decode(hex('bf')), /index/);
  });

  it('C.2.2 literal without indexing leaves the table empty', () => {
    const d = new HpackDecoder();
    expect(d.decode(hex('040c2f73616d706c652f70617468'))).toEqual([':path', '/sample/path']);
    expectHpackError(() => d.decode(hex('be')));
  });

  it('C.2.3 never-indexed literal leaves the table empty', () => {
    const d = new HpackDecoder();
    expect(d.decode(hex('100870617373776f726406736563726574'))).toEqual(['password', 'secret']);
    expectHpackError(() => d.decode(hex('be')));
  });

  it('C.2.4 indexed field', () => {
    expect(new HpackDecoder().decode(hex('82'))).toEqual([':method', 'GET']);
  });

  const requests = [
    flat([
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/'],
      [':authority', 'www.example.com'],
    ]),
    flat([
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/'],
      [':authority', 'www.example.com'],
      ['cache-control', 'no-cache'],
    ]),
    flat([
      [':method', 'GET'],
      [':scheme', 'https'],
      [':path', '/index.html'],
      [':authority', 'www.example.com'],
      ['custom-key', 'custom-value'],
    ]),
  ];
  const requestTable = flat([
    ['custom-key', 'custom-value'],
    ['cache-control', 'no-cache'],
    [':authority', 'www.example.com'],
  ]);

  it('C.3 requests without Huffman on one decoder', () => {
    const d = new HpackDecoder();
    expect(d.decode(hex('828684410f7777772e6578616d706c652e636f6d'))).toEqual(requests[0]);
    expect(d.decode(hex('828684be58086e6f2d6361636865'))).toEqual(requests[1]);
    expect(d.decode(hex('828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565'))).toEqual(requests[2]);
    // Dynamic table after C.3.3: [62] custom-key, [63] cache-control, [64] :authority.
    expect(d.decode(hex('bebfc0'))).toEqual(requestTable);
    expectHpackError(() => d.decode(hex('c1')));
  });

  it('C.4 requests with Huffman on one decoder', () => {
    const d = new HpackDecoder();
    expect(d.decode(hex('828684418cf1e3c2e5f23a6ba0ab90f4ff'))).toEqual(requests[0]);
    expect(d.decode(hex('828684be5886a8eb10649cbf'))).toEqual(requests[1]);
    expect(d.decode(hex('828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf'))).toEqual(requests[2]);
    expect(d.decode(hex('bebfc0'))).toEqual(requestTable);
    expectHpackError(() => d.decode(hex('c1')));
  });

  const responses = [
    flat([
      [':status', '302'],
      ['cache-control', 'private'],
      ['date', 'Mon, 21 Oct 2013 20:13:21 GMT'],
      ['location', 'https://www.example.com'],
    ]),
    flat([
      [':status', '307'],
      ['cache-control', 'private'],
      ['date', 'Mon, 21 Oct 2013 20:13:21 GMT'],
      ['location', 'https://www.example.com'],
    ]),
    flat([
      [':status', '200'],
      ['cache-control', 'private'],
      ['date', 'Mon, 21 Oct 2013 20:13:22 GMT'],
      ['location', 'https://www.example.com'],
      ['content-encoding', 'gzip'],
      ['set-cookie', 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1'],
    ]),
  ];

  function checkResponseTables(d: HpackDecoder): void {
    // After C.5.1 (222 octets): [62] location, [63] date, [64] cache-control, [65] :status 302.
    expect(d.decode(hex('bebfc0c1'))).toEqual(
      flat([
        ['location', 'https://www.example.com'],
        ['date', 'Mon, 21 Oct 2013 20:13:21 GMT'],
        ['cache-control', 'private'],
        [':status', '302'],
      ]),
    );
  }

  function checkAfterSecond(d: HpackDecoder): void {
    // Adding ":status: 307" (42) evicted ":status: 302": [62] :status 307 ... [65] cache-control.
    expect(d.decode(hex('bebfc0c1'))).toEqual(
      flat([
        [':status', '307'],
        ['location', 'https://www.example.com'],
        ['date', 'Mon, 21 Oct 2013 20:13:21 GMT'],
        ['cache-control', 'private'],
      ]),
    );
    expectHpackError(() => d.decode(hex('c2')));
  }

  function checkAfterThird(d: HpackDecoder): void {
    // C.5.3 / C.6.3 final table (215 octets): three entries.
    expect(d.decode(hex('bebfc0'))).toEqual(
      flat([
        ['set-cookie', 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1'],
        ['content-encoding', 'gzip'],
        ['date', 'Mon, 21 Oct 2013 20:13:22 GMT'],
      ]),
    );
    expectHpackError(() => d.decode(hex('c1')));
  }

  it('C.5 responses without Huffman, table size 256, with eviction', () => {
    const d = new HpackDecoder(256);
    expect(
      d.decode(
        hex(
          '4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d',
        ),
      ),
    ).toEqual(responses[0]);
    checkResponseTables(d);
    expect(d.decode(hex('4803333037c1c0bf'))).toEqual(responses[1]);
    checkAfterSecond(d);
    expect(
      d.decode(
        hex(
          '88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157' +
            '454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31',
        ),
      ),
    ).toEqual(responses[2]);
    checkAfterThird(d);
  });

  it('C.6 responses with Huffman, table size 256, with eviction', () => {
    const d = new HpackDecoder(256);
    expect(
      d.decode(
        hex(
          '488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3',
        ),
      ),
    ).toEqual(responses[0]);
    checkResponseTables(d);
    expect(d.decode(hex('4883640effc1c0bf'))).toEqual(responses[1]);
    checkAfterSecond(d);
    expect(
      d.decode(
        hex(
          '88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007',
        ),
      ),
    ).toEqual(responses[2]);
    checkAfterThird(d);
  });
});

describe('dynamic table', () => {
  it('an entry larger than the table empties it and is not added', () => {
    const d = new HpackDecoder(100);
    d.decode(Uint8Array.from([0x40, ...str('a'), ...str('b')])); // 34 octets
    expect(d.decode(hex('be'))).toEqual(['a', 'b']);
    // 32 + 1 + 68 = 101 > 100
    expect(d.decode(Uint8Array.from([0x40, ...str('c'), ...str('x'.repeat(68))]))).toEqual(['c', 'x'.repeat(68)]);
    expectHpackError(() => d.decode(hex('be')));
  });

  it('an entry exactly the table size fits', () => {
    const d = new HpackDecoder(100);
    d.decode(Uint8Array.from([0x40, ...str('c'), ...str('x'.repeat(67))]));
    expect(d.decode(hex('be'))).toEqual(['c', 'x'.repeat(67)]);
  });

  it('indexed literal names can reference dynamic entries, including one evicted by the same insert', () => {
    const d = new HpackDecoder(70);
    d.decode(Uint8Array.from([0x40, ...str('name'), ...str('v1')])); // 38
    // Insert with name index 62 (the entry about to be evicted): 4 + 30 + 32 = 66 -> evicts it.
    const v2 = 'y'.repeat(30);
    expect(d.decode(Uint8Array.from([0x40 | 62, ...str(v2)]))).toEqual(['name', v2]);
    expect(d.decode(hex('be'))).toEqual(['name', v2]);
    expectHpackError(() => d.decode(hex('bf')));
  });

  it('size updates at the start of a block shrink (evicting) and restore the table', () => {
    const d = new HpackDecoder();
    d.decode(hex('828684410f7777772e6578616d706c652e636f6d'));
    expect(d.decode(hex('be'))).toEqual([':authority', 'www.example.com']);
    // Two updates (0 then 4096) before the first field: allowed, and the first evicts everything.
    expect(d.decode(Uint8Array.from([0x20, ...int(4096, 5, 0x20), 0x82]))).toEqual([':method', 'GET']);
    expectHpackError(() => d.decode(hex('be')));
    d.decode(Uint8Array.from([0x40, ...str('k'), ...str('v')]));
    expect(d.decode(hex('be'))).toEqual(['k', 'v']);
    // A block made of a size update alone is valid.
    expect(d.decode(Uint8Array.from(int(4096, 5, 0x20)))).toEqual([]);
    expect(d.decode(new Uint8Array(0))).toEqual([]);
  });

  it('a reduced capacity bounds later insertions', () => {
    const d = new HpackDecoder();
    d.decode(Uint8Array.from([...int(40, 5, 0x20)]));
    d.decode(Uint8Array.from([0x40, ...str('a'), ...str('b')])); // 34
    d.decode(Uint8Array.from([0x40, ...str('c'), ...str('d')])); // 34 -> evicts a
    expect(d.decode(hex('be'))).toEqual(['c', 'd']);
    expectHpackError(() => d.decode(hex('bf')));
  });

  it('many insertions wrap the ring and keep FIFO order', () => {
    const d = new HpackDecoder(4096);
    const entry = (i: number): [string, string] => [`n${String(i).padStart(3, '0')}`, 'v'.repeat(60)]; // 4+60+32 = 96
    for (let i = 0; i < 500; i++) {
      const [n, v] = entry(i);
      expect(d.decode(Uint8Array.from([0x40, ...str(n), ...str(v)]))).toEqual([n, v]);
    }
    // 4096 / 96 -> 42 entries: 458..499, newest first.
    const newest = d.decode(Uint8Array.from(int(62, 7, 0x80)));
    expect(newest).toEqual(entry(499));
    expect(d.decode(Uint8Array.from(int(62 + 41, 7, 0x80)))).toEqual(entry(458));
    expectHpackError(() => d.decode(Uint8Array.from(int(62 + 42, 7, 0x80))));
  });

  it('accepts a plain Uint8Array view with an offset', () => {
    const backing = new Uint8Array([0xff, 0x82, 0x84, 0xff]);
    expect(new HpackDecoder().decode(backing.subarray(1, 3))).toEqual([':method', 'GET', ':path', '/']);
  });

  it('keeps names as sent', () => {
    expect(new HpackDecoder().decode(Uint8Array.from([0x00, ...str('X-Mixed'), ...str('V')]))).toEqual([
      'X-Mixed',
      'V',
    ]);
  });
});

describe('Huffman', () => {
  it('the code table is canonical, matches known codes of Appendix B', () => {
    // Spot checks against the RFC's printed codes.
    expect([CODES[0], LENGTHS[0]]).toEqual([0x1ff8, 13]);
    expect([CODES[32], LENGTHS[32]]).toEqual([0x14, 6]); // ' '
    expect([CODES[48], LENGTHS[48]]).toEqual([0x0, 5]); // '0'
    expect([CODES[97], LENGTHS[97]]).toEqual([0x3, 5]); // 'a'
    expect([CODES[255], LENGTHS[255]]).toEqual([0x3ffffee, 26]);
    expect([CODES[256], LENGTHS[256]]).toEqual([0x3fffffff, 30]); // EOS
    expect(LENGTHS.reduce((sum, len) => sum + 2 ** -len, 0)).toBe(1); // complete
    // The test encoder reproduces the RFC's C.4.1 encoding.
    expect(Buffer.from(huffman('www.example.com')).toString('hex')).toBe('f1e3c2e5f23a6ba0ab90f4ff');
    expect(Buffer.from(huffman('custom-value')).toString('hex')).toBe('25a849e95bb8e8b4bf');
  });

  it('round-trips every byte value, alone and all together', () => {
    const d = new HpackDecoder(4096, 1 << 20);
    for (let b = 0; b < 256; b++) {
      const value = String.fromCharCode(b);
      expect(d.decode(litHuff('x', huffmanBits([b])))).toEqual(['x', value]);
      // Twice, so symbols also start mid-byte.
      expect(d.decode(litHuff('x', huffmanBits([b, b, 97, b])))).toEqual(['x', value + value + 'a' + value]);
    }
    const all = Array.from({ length: 256 }, (_, i) => i);
    const expected = String.fromCharCode(...all);
    expect(d.decode(litHuff('all', huffmanBits(all)))).toEqual(['all', expected]);
    expect(d.decode(litHuff('rev', huffmanBits([...all].reverse())))).toEqual(['rev', [...expected].reverse().join('')]);
    // Huffman names too.
    expect(d.decode(Uint8Array.from([0x00, ...hstr(huffman('x-name')), ...hstr(huffman(''))]))).toEqual(['x-name', '']);
  });

  it('round-trips a long random string (scratch buffer growth)', () => {
    let seed = 1;
    const symbols = Array.from({ length: 20_000 }, () => {
      seed = (seed * 48271) % 2147483647; // Park-Miller: exact in doubles
      return seed & 0xff;
    });
    expect(new Set(symbols).size).toBe(256);
    const d = new HpackDecoder(4096, 1 << 20);
    expect(d.decode(litHuff('r', huffmanBits(symbols)))).toEqual(['r', String.fromCharCode(...symbols)]);
    // Short, all 5-bit codes: maximum expansion.
    const zeros = '0'.repeat(8000);
    expect(d.decode(litHuff('z', huffman(zeros)))).toEqual(['z', zeros]);
  });

  it('accepts padding of 1 to 7 one-bits and no padding', () => {
    const d = new HpackDecoder();
    // 'a' = 00011 (5 bits) + 111
    expect(d.decode(litHuff('x', Uint8Array.of(0x1f)))).toEqual(['x', 'a']);
    // 'aaa...' 8 symbols = 40 bits, no padding
    expect(d.decode(litHuff('x', huffmanBits([...Buffer.from('aaaaaaaa')], { bits: 0, value: 0 })))).toEqual([
      'x',
      'aaaaaaaa',
    ]);
    // '0' + '1' = 10 bits + 6 bits padding
    expect(d.decode(litHuff('x', huffman('01')))).toEqual(['x', '01']);
  });

  it('rejects EOS inside a string', () => {
    const d = new HpackDecoder();
    expectHpackError(() => d.decode(litHuff('x', Uint8Array.of(0xff, 0xff, 0xff, 0xff))), /EOS/);
    // 'a' then EOS, padded: 5 + 30 + 5 bits
    expectHpackError(() => d.decode(litHuff('x', huffmanBits([97, 256]))), /EOS/);
    // EOS then 'a'
    expectHpackError(() => d.decode(litHuff('x', huffmanBits([256, 97]))), /EOS/);
  });

  it('rejects padding longer than 7 bits', () => {
    const d = new HpackDecoder();
    // 'a' + 11 one-bits
    expectHpackError(() => d.decode(litHuff('x', huffmanBits([97], { bits: 11, value: 0x7ff }))), /padding/);
    // 'a' + 3 one-bits + a full 0xff byte
    expectHpackError(() => d.decode(litHuff('x', Uint8Array.of(0x1f, 0xff))), /padding/);
    // only padding: 8 one-bits
    expectHpackError(() => d.decode(litHuff('x', Uint8Array.of(0xff))), /padding/);
  });

  it('rejects padding that is not all ones', () => {
    const d = new HpackDecoder();
    // 0b100 is also the start of 'b' (100011): a truncated code is not padding either.
    for (const pad of [0b000, 0b011, 0b100, 0b101, 0b110]) {
      expectHpackError(() => d.decode(litHuff('x', huffmanBits([97], { bits: 3, value: pad }))), /padding/);
    }
    // 'aa' + 111110: 6 bits, not all ones (a prefix of the 8-bit codes 111110xx).
    expectHpackError(() => d.decode(litHuff('x', huffmanBits([97, 97], { bits: 6, value: 0b111110 }))), /padding/);
  });
});

describe('malformed blocks', () => {
  it('index 0', () => {
    expectHpackError(() => new HpackDecoder().decode(hex('80')), /index 0/);
    expectHpackError(() => new HpackDecoder().decode(hex('82 80')), /index 0/);
  });

  it('index beyond the static and dynamic tables', () => {
    expectHpackError(() => new HpackDecoder().decode(hex('be')), /beyond/);
    expectHpackError(() => new HpackDecoder().decode(Uint8Array.from(int(1000, 7, 0x80))), /beyond/);
    // As a literal's name index: with incremental indexing, without, never indexed.
    expectHpackError(() => new HpackDecoder().decode(Uint8Array.from([...int(62, 6, 0x40), ...str('v')])), /beyond/);
    expectHpackError(() => new HpackDecoder().decode(Uint8Array.from([...int(62, 4, 0x00), ...str('v')])), /beyond/);
    expectHpackError(() => new HpackDecoder().decode(Uint8Array.from([...int(62, 4, 0x10), ...str('v')])), /beyond/);
    expect(new HpackDecoder().decode(Uint8Array.from([...int(61, 4, 0x10), ...str('v')]))).toEqual([
      'www-authenticate',
      'v',
    ]);
  });

  it('truncated integers', () => {
    expectHpackError(() => new HpackDecoder().decode(hex('ff')), /truncated integer/);
    expectHpackError(() => new HpackDecoder().decode(hex('ff 80')), /truncated integer/);
    expectHpackError(() => new HpackDecoder().decode(hex('7f')), /truncated integer/);
    expectHpackError(() => new HpackDecoder().decode(hex('3f')), /truncated integer/);
    expectHpackError(() => new HpackDecoder().decode(hex('00 7f')), /truncated integer/); // string length
  });

  it('truncated strings', () => {
    expectHpackError(() => new HpackDecoder().decode(hex('00 05 61')), /truncated string/); // name
    expectHpackError(() => new HpackDecoder().decode(hex('00')), /truncated string/); // name length missing
    expectHpackError(() => new HpackDecoder().decode(hex('00 01 61')), /truncated string/); // value missing
    expectHpackError(() => new HpackDecoder().decode(hex('44 03 2f 61')), /truncated string/); // value short
    expectHpackError(() => new HpackDecoder().decode(hex('44 83 ff')), /truncated string/); // Huffman value short
  });

  it('integer overflow', () => {
    // 2^31 - 1 is decodable (then out of range as an index).
    expectHpackError(() => new HpackDecoder().decode(Uint8Array.from(int(2 ** 31 - 1, 7, 0x80))), /beyond/);
    expectHpackError(() => new HpackDecoder().decode(Uint8Array.from(int(2 ** 31, 7, 0x80))), /overflow/);
    expectHpackError(() => new HpackDecoder().decode(hex('ff ff ff ff ff ff ff ff ff 0f')), /overflow/);
    // Redundant zero continuation bytes beyond 31 bits.
    expectHpackError(() => new HpackDecoder().decode(hex('ff 80 80 80 80 80 00')), /overflow/);
    // A huge string length.
    expectHpackError(() => new HpackDecoder().decode(hex('00 7f ff ff ff ff 0f')), /overflow/);
  });

  it('size update above the maximum', () => {
    expectHpackError(() => new HpackDecoder().decode(Uint8Array.from(int(4097, 5, 0x20))), /above the maximum/);
    expectHpackError(() => new HpackDecoder(256).decode(Uint8Array.from(int(257, 5, 0x20))), /above the maximum/);
    expect(new HpackDecoder(256).decode(Uint8Array.from([...int(256, 5, 0x20), 0x82]))).toEqual([':method', 'GET']);
  });

  it('size update after a field', () => {
    expectHpackError(() => new HpackDecoder().decode(hex('82 20')), /after a header field/);
    expectHpackError(() => new HpackDecoder().decode(hex('20 82 3f e1 1f')), /after a header field/);
  });

  it('header list over maxListSize', () => {
    // ":method: GET" counts 7 + 3 + 32 = 42.
    const d = new HpackDecoder(4096, 84);
    expect(d.decode(hex('82 82'))).toEqual([':method', 'GET', ':method', 'GET']);
    expectHpackError(() => d.decode(hex('82 82 82')), /too large/);
    // Literals count too (and the limit applies per block).
    const big = Uint8Array.from([0x00, ...str('n'), ...str('v'.repeat(60))]); // 1 + 60 + 32 = 93
    expectHpackError(() => d.decode(big), /too large/);
    expect(new HpackDecoder(4096, 93).decode(big)).toEqual(['n', 'v'.repeat(60)]);
  });
});

// ---------------------------------------------------------------------------
// Interop with node:http2 through a raw TCP server speaking just enough HTTP/2.

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const FRAME_HEADERS = 0x1;
const FRAME_SETTINGS = 0x4;
const FRAME_GOAWAY = 0x7;
const FRAME_CONTINUATION = 0x9;
const FLAG_ACK = 0x1;
const FLAG_END_STREAM = 0x1;
const FLAG_END_HEADERS = 0x4;
const FLAG_PADDED = 0x8;
const FLAG_PRIORITY = 0x20;

function frame(type: number, flags: number, streamId: number, payload: Uint8Array = new Uint8Array(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

interface CapturedBlock {
  streamId: number;
  block: Buffer;
}

interface RawServer {
  port: number;
  blocks: CapturedBlock[];
  close(): Promise<void>;
}

/**
 * A raw TCP server: checks the client preface, sends an empty SETTINGS, ACKs the client's
 * SETTINGS, joins HEADERS + CONTINUATION fragments and hands each block to `onBlock`,
 * which may write a response.
 */
async function startRawServer(onBlock: (socket: net.Socket, captured: CapturedBlock) => void): Promise<RawServer> {
  const blocks: CapturedBlock[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buf = Buffer.alloc(0);
    let prefaceSeen = false;
    let pending: { streamId: number; parts: Buffer[] } | undefined;
    socket.write(frame(FRAME_SETTINGS, 0, 0));
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (!prefaceSeen) {
        if (buf.length < PREFACE.length) return;
        if (!buf.subarray(0, PREFACE.length).equals(PREFACE)) {
          socket.destroy();
          return;
        }
        prefaceSeen = true;
        buf = buf.subarray(PREFACE.length);
      }
      while (buf.length >= 9) {
        const length = buf.readUIntBE(0, 3);
        if (buf.length < 9 + length) break;
        const type = buf[3]!;
        const flags = buf[4]!;
        const streamId = buf.readUInt32BE(5) & 0x7fffffff;
        let payload = buf.subarray(9, 9 + length);
        buf = buf.subarray(9 + length);
        if (type === FRAME_SETTINGS && (flags & FLAG_ACK) === 0) {
          socket.write(frame(FRAME_SETTINGS, FLAG_ACK, 0));
        } else if (type === FRAME_HEADERS) {
          if ((flags & FLAG_PADDED) !== 0) payload = payload.subarray(1, payload.length - payload[0]!);
          if ((flags & FLAG_PRIORITY) !== 0) payload = payload.subarray(5);
          pending = { streamId, parts: [Buffer.from(payload)] };
        } else if (type === FRAME_CONTINUATION && pending) {
          pending.parts.push(Buffer.from(payload));
        } else if (type === FRAME_GOAWAY) {
          socket.end();
        }
        if ((type === FRAME_HEADERS || type === FRAME_CONTINUATION) && (flags & FLAG_END_HEADERS) !== 0 && pending) {
          const captured = { streamId: pending.streamId, block: Buffer.concat(pending.parts) };
          pending = undefined;
          blocks.push(captured);
          onBlock(socket, captured);
        }
      }
    });
    socket.on('end', () => socket.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    blocks,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

function connect(port: number): http2.ClientHttp2Session {
  const client = http2.connect(`http://127.0.0.1:${port}`);
  client.on('error', () => {});
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        if (client.closed || client.destroyed) return resolve();
        client.close(() => resolve());
      }),
  );
  return client;
}

/** Sends a request and resolves with the response headers once the stream has ended. */
function request(
  client: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
): Promise<http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader> {
  return new Promise((resolve, reject) => {
    const req = client.request(headers, { endStream: true });
    let response: (http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader) | undefined;
    req.on('response', (h) => {
      response = h;
    });
    req.on('error', reject);
    req.resume();
    req.on('close', () => (response ? resolve(response) : reject(new Error(`stream closed, rst ${req.rstCode}`))));
  });
}

const RESPONSE_FIELDS = [
  ':status',
  '200',
  'content-type',
  'application/grpc+proto',
  'grpc-status',
  '0',
  'x-custom',
  'v',
] as const;

describe('interop with node:http2', () => {
  it('decodes the HEADERS blocks of a real node:http2 client', async () => {
    const server = await startRawServer((socket, { streamId }) => {
      socket.write(frame(FRAME_HEADERS, FLAG_END_STREAM | FLAG_END_HEADERS, streamId, encodeHeaders([':status', '200'])));
    });
    cleanups.push(() => server.close());
    const client = connect(server.port);
    const authority = `127.0.0.1:${server.port}`;
    const longValue = 'abcdefghijklmnopqrstuvwxyz0123456789-'.repeat(4); // Huffman-friendly
    const printable = Array.from({ length: 0x7e - 0x20 + 1 }, (_, i) => String.fromCharCode(0x20 + i))
      .join('')
      .trim();
    const requests: Array<{ headers: http2.OutgoingHttpHeaders; expected: string[] }> = [];
    const grpcRequest = (i: number, extra: Array<[string, string]>): (typeof requests)[number] => {
      const regular: Array<[string, string]> = [
        ['content-type', 'application/grpc'],
        ['te', 'trailers'],
        ['user-agent', 'grpc-node-js/1.14.7'],
        ['grpc-accept-encoding', 'identity,deflate,gzip'],
        ['x-request-id', `req-${i}-${longValue}`],
        ...extra,
      ];
      return {
        headers: {
          ':method': 'POST',
          ':path': '/svc.v1.Context/Get',
          ':scheme': 'http',
          ':authority': authority,
          ...Object.fromEntries(regular),
        },
        expected: flat([
          [':method', 'POST'],
          [':authority', authority],
          [':scheme', 'http'],
          [':path', '/svc.v1.Context/Get'],
          ...regular,
        ]),
      };
    };
    requests.push(grpcRequest(1, [['x-long', longValue]]));
    requests.push(grpcRequest(2, [['x-long', longValue]])); // repeated: dynamic table hits
    requests.push(grpcRequest(3, [['x-long', longValue.toUpperCase()], ['x-printable', printable]]));
    requests.push(grpcRequest(4, [['authorization', 'Bearer abc.def.ghi'], ['x-big', 'q'.repeat(5000)]]));
    requests.push(grpcRequest(5, [['x-long', longValue]]));

    for (const { headers } of requests) {
      const response = await request(client, headers);
      expect(response[':status']).toBe(200);
    }

    expect(server.blocks).toHaveLength(requests.length);
    const d = new HpackDecoder();
    server.blocks.forEach(({ block }, i) => {
      const fields = d.decode(block);
      // node orders pseudo-headers its own way; compare pseudo-headers as a set and regular fields in order.
      const pseudo = (list: string[]): string[] =>
        flatPairs(list)
          .filter(([n]) => n.startsWith(':'))
          .map(([n, v]) => `${n}=${v}`)
          .sort();
      const regular = (list: string[]): string[][] => flatPairs(list).filter(([n]) => !n.startsWith(':'));
      expect(pseudo(fields)).toEqual(pseudo(requests[i]!.expected));
      expect(regular(fields)).toEqual(regular(requests[i]!.expected));
    });
    // The client did compress: Huffman strings in the first block, dynamic-table references later.
    const [first, second] = server.blocks;
    expect(second!.block.length).toBeLessThan(first!.block.length / 2);
    expect([...second!.block].some((b) => b >= 0xbe)).toBe(true);
    // nghttp2 Huffman-coded the long value: its canonical encoding appears verbatim in the first block.
    expect(first!.block.includes(Buffer.from(hstr(huffman(longValue))))).toBe(true);
  });

  it('encodeHeaders output decodes with HpackDecoder', () => {
    const block = encodeHeaders(RESPONSE_FIELDS);
    expect(block[0]).toBe(0x88);
    expect(new HpackDecoder().decode(block)).toEqual([...RESPONSE_FIELDS]);
    const other = [
      ':status',
      '404',
      'content-type',
      'text/plain',
      'x-long',
      'z'.repeat(300),
      'grpc-message',
      'caf\u00e9',
      'www-authenticate',
      'Basic',
      'x-empty',
      '',
    ];
    const d = new HpackDecoder();
    expect(d.decode(encodeHeaders(other))).toEqual(other);
    // Literals without indexing: the decoder's dynamic table stays empty.
    expectHpackError(() => d.decode(hex('be')));
    expect(encodeHeaders([])).toHaveLength(0);
    expect(() => encodeHeaders([':status'])).toThrow(TypeError);
  });

  it('node:http2 client accepts an encodeHeaders response', async () => {
    const server = await startRawServer((socket, { streamId }) => {
      socket.write(frame(FRAME_HEADERS, FLAG_END_STREAM | FLAG_END_HEADERS, streamId, encodeHeaders(RESPONSE_FIELDS)));
    });
    cleanups.push(() => server.close());
    const client = connect(server.port);
    for (let i = 0; i < 3; i++) {
      const response = await request(client, { ':method': 'POST', ':path': '/svc.v1.Context/Get' });
      expect(response[':status']).toBe(200);
      expect(response['content-type']).toBe('application/grpc+proto');
      expect(response['grpc-status']).toBe('0');
      expect(response['x-custom']).toBe('v');
    }
    const notFound = await startRawServer((socket, { streamId }) => {
      socket.write(
        frame(
          FRAME_HEADERS,
          FLAG_END_STREAM | FLAG_END_HEADERS,
          streamId,
          encodeHeaders([':status', '404', 'content-type', 'text/plain', 'x-long', 'y'.repeat(200)]),
        ),
      );
    });
    cleanups.push(() => notFound.close());
    const response = await request(connect(notFound.port), { ':path': '/' });
    expect(response[':status']).toBe(404);
    expect(response['x-long']).toBe('y'.repeat(200));
  });
});

function flatPairs(list: readonly string[]): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < list.length; i += 2) out.push([list[i]!, list[i + 1]!]);
  return out;
}
