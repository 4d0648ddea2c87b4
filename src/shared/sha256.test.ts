import { hash } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { hexIs, sha256Into, sha256Native } from './sha256.js';
import { rng } from '../../test/rng.js';

describe('sha256Into', () => {
  it('runs on the native addon that npm ci builds (native/sha256)', () => {
    // make test installs with npm ci, whose postinstall builds the addon; without it every
    // verify path would hash on node:crypto, correct but several times slower a record.
    expect(sha256Native).toBe(true);
  });

  it('agrees with node:crypto on ranges of every length up to 700 bytes, with and without a prefix byte', () => {
    const r = rng(7);
    const src = Buffer.from(Array.from({ length: 2048 }, () => Math.floor(r() * 256)));
    const out = Buffer.alloc(96);
    for (let n = 0; n <= 700; n++) {
      const start = Math.floor(r() * (src.length - n));
      const off = Math.floor(r() * 64);
      sha256Into(out, off, src, start, start + n);
      expect(out.subarray(off, off + 32).equals(hash('sha256', src.subarray(start, start + n), 'buffer')), `n ${n}`).toBe(true);
      const prefix = n % 2;
      sha256Into(out, off, src, start, start + n, prefix);
      expect(out.subarray(off, off + 32).equals(hash('sha256', Buffer.concat([Buffer.from([prefix]), src.subarray(start, start + n)]), 'buffer')), `n ${n}, prefix ${prefix}`).toBe(true);
    }
    // The SHA-256 of the empty string, and a Uint8Array that is not a Buffer.
    sha256Into(out, 0, new Uint8Array(0), 0, 0);
    expect(out.subarray(0, 32).toString('hex')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('refuses ranges outside their buffers and arguments of the wrong kind, writing nothing', () => refuses(sha256Into));

  it('runs on node:crypto with SVC_SHA256_NATIVE=0, with the same answers and refusals', async () => {
    vi.resetModules();
    vi.stubEnv('SVC_SHA256_NATIVE', '0');
    try {
      const js = await import('./sha256.js');
      expect(js.sha256Native).toBe(false);
      const src = Buffer.from('the audit log');
      const a = Buffer.alloc(32);
      const b = Buffer.alloc(32);
      js.sha256Into(a, 0, src, 4, 9, 1);
      sha256Into(b, 0, src, 4, 9, 1);
      expect(a.equals(b)).toBe(true);
      refuses(js.sha256Into);
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });
});

/** Every call must throw a RangeError and leave `out` as it was. */
function refuses(sha256: typeof sha256Into): void {
  const src = Buffer.alloc(10);
  const out = Buffer.alloc(40, 0xaa);
  const bad: [unknown[], string][] = [
    [[out, 0, src, 0, 11], 'end past src'],
    [[out, 0, src, 5, 4], 'start after end'],
    [[out, 9, src, 0, 10], 'no room at outOffset'],
    [[out, -1, src, 0, 10], 'negative offset'],
    [[out, 0.5, src, 0, 10], 'fractional offset'],
    [[out, 0, src, 0, 2 ** 32], 'offset past 2^32'],
    [[out, 0, 'text', 0, 1], 'src a string'],
    [[{}, 0, src, 0, 1], 'out not a buffer'],
    [[out, 0, src, 0, 1, 256], 'prefix not a byte'],
    [[out, 0, src, 0], 'too few arguments'],
  ];
  for (const [args, why] of bad) {
    expect(() => (sha256 as (...a: unknown[]) => void)(...args), why).toThrow(RangeError);
    expect(out.equals(Buffer.alloc(40, 0xaa)), why).toBe(true);
  }
}

describe('hexIs', () => {
  it('tells whether 64 bytes are the lowercase hex of a digest', () => {
    const d = hash('sha256', 'x', 'buffer');
    const text = Buffer.from(`"${d.toString('hex')}"`);
    expect(hexIs(d, 0, text, 1)).toBe(true);
    expect(hexIs(d, 0, Buffer.from(`"${d.toString('hex').toUpperCase()}"`), 1)).toBe(false);
    const one = Buffer.from(text);
    one[40] = one[40] === 0x30 ? 0x31 : 0x30;
    expect(hexIs(d, 0, one, 1)).toBe(false);
    expect(hexIs(d, 0, text, 4)).toBe(false); // not 64 bytes left
  });
});
