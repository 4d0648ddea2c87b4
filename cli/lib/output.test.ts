import { afterEach, describe, expect, it, vi } from 'vitest';
import { outputFormat, paint, table } from './output.js';

const tty = { isTTY: true } as NodeJS.WriteStream;
const pipe = { isTTY: false } as NodeJS.WriteStream;

describe('cli/lib/output', () => {
  const saved = { NO_COLOR: process.env.NO_COLOR, TERM: process.env.TERM };
  afterEach(() => {
    for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
    vi.restoreAllMocks();
  });

  it('colours only a terminal, never under NO_COLOR (any non-empty value) or TERM=dumb', () => {
    delete process.env.NO_COLOR;
    process.env.TERM = 'xterm';
    expect(paint('HEAD', 'bold', tty)).toBe('\u001b[1mHEAD\u001b[22m');
    expect(paint('HEAD', 'bold', pipe)).toBe('HEAD');
    process.env.NO_COLOR = '1';
    expect(paint('HEAD', 'bold', tty)).toBe('HEAD');
    process.env.NO_COLOR = '';
    expect(paint('HEAD', 'bold', tty)).toBe('\u001b[1mHEAD\u001b[22m'); // an empty NO_COLOR does not count (no-color.org)
    process.env.TERM = 'dumb';
    expect(paint('HEAD', 'bold', tty)).toBe('HEAD');
  });

  it('aligns a table, shows absent cells as -, and prints the empty text for no rows', () => {
    process.env.NO_COLOR = '1';
    const lines: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => { lines.push(String(s)); return true; });
    table([{ id: 'a', n: null, l: ['x', 'y'] }, { id: 'longer', n: 2, l: [] }], [['id', (r) => r.id], ['n', (r) => r.n], ['list', (r) => r.l]]);
    table([], [['id', () => 1]], 'no agents');
    expect(lines.join('')).toBe('ID      N  LIST\na       -  x,y\nlonger  2  -\nno agents\n');
  });

  it('-o takes text or json, anything else is a usage error (exit 3)', () => {
    expect(outputFormat(undefined)).toBe('text');
    expect(outputFormat('json')).toBe('json');
    expect(() => outputFormat('yaml')).toThrow(expect.objectContaining({ exitCode: 3, message: "--output must be text or json, not 'yaml'" }));
  });
});
