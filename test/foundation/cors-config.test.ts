/** CORS_ORIGINS: exact origins, comma-separated; anything else stops start-up naming each bad entry. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/shared/config.js';

const load = (value: string | undefined) => loadConfig({ SVC_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cors-')), CORS_ORIGINS: value });

describe('CORS_ORIGINS', () => {
  it('is empty when unset or blank: no cross-origin caller', () => {
    expect(load(undefined).corsOrigins).toEqual([]);
    expect(load(' , ').corsOrigins).toEqual([]);
  });

  it('takes exact origins, with a port or not, spaces around commas ignored', () => {
    expect(load('https://console.example.org, http://127.0.0.1:5173,https://x.example:8443').corsOrigins).toEqual([
      'https://console.example.org',
      'http://127.0.0.1:5173',
      'https://x.example:8443',
    ]);
  });

  it('refuses what a browser never sends as Origin, listing every bad entry', () => {
    try {
      load('https://ok.example, https://a.example/, console.example.org, https://b.example/app, *, https://c.example:443');
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const p = (e as ConfigError).problems.find((l) => l.startsWith('CORS_ORIGINS'))!;
      for (const bad of ['"https://a.example/"', '"console.example.org"', '"https://b.example/app"', '"*"', '"https://c.example:443"']) expect(p).toContain(bad);
      expect(p).not.toContain('ok.example');
    }
  });
});
