import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse, stringify } from 'yaml';
import { startTestStack, type TestStack } from '../harness.js';
import { sandbox } from './helpers.js';

// Every case spawns the real bin (tsx start-up, ~1 s each on an idle machine): allow for a loaded one.
vi.setConfig({ testTimeout: 240_000 });

/**
 * One verdict from `svc validate --strict` and `POST /api/bundles` (issue 23): the same files,
 * judged by both. Valid means: the CLI finds no error (exit 0, or 2 for warnings only), and the
 * API stores the version (201) with `validation_status` valid. Invalid: the CLI finds an error
 * (exit 1); the API refuses it (400) or stores it as invalid (strict SCS findings are stored,
 * not refused).
 */
const now = '2026-01-05T10:00:00Z';
const long = (n: number) => 'x'.repeat(n);

interface Case { name: string; want: 'valid' | 'invalid'; bundle?: Record<string, unknown>; scd?: Record<string, unknown>; scdDrop?: string[] }

const CASES: Case[] = [
  // Valid: what the SCS schemas accept, the API accepts.
  { name: 'prov-source', want: 'valid', bundle: { provenance: { created_by: 'me', created_at: now, source: 'https://example.com/origin' } } },
  { name: 'prov-more', want: 'valid', bundle: { provenance: { created_by: 'me', created_at: now, updated_by: 'you', updated_at: now, rationale: 'why', review: { by: 'qa', ticket: 42 } } } },
  { name: 'prov-empty-author', want: 'valid', bundle: { provenance: { created_by: '', created_at: now } } },
  { name: 'scd-extras', want: 'valid', scd: { domain: 'clinical', provenance: { created_by: 'me', created_at: now, source: 'interview' } } },
  { name: 'svc-fields', want: 'valid', bundle: { schema_version: '0.3.0', applies_to: { roles: ['role:nurse'] } }, scd: { applies_to: { roles: ['role:nurse', 'role:doctor'] } } },
  { name: 'v01-domain', want: 'valid', bundle: { type: 'domain', schema_version: '0.1.0' } },
  // Invalid: what the SCS schemas refuse, or the control plane cannot store.
  { name: 'top-extra', want: 'invalid', bundle: { source: 'https://example.com' } },
  { name: 'bad-date', want: 'invalid', bundle: { provenance: { created_by: 'me', created_at: 'yesterday' } } },
  { name: 'no-created-at', want: 'invalid', bundle: { provenance: { created_by: 'me', source: 'x' } } },
  { name: 'leading-zero', want: 'invalid', bundle: { version: '01.0.0' } },
  { name: 'long-title', want: 'invalid', bundle: { title: long(300) } },
  { name: 'long-author', want: 'invalid', bundle: { provenance: { created_by: long(300), created_at: now } } },
  { name: 'bad-role', want: 'invalid', bundle: { applies_to: { roles: ['nurse'] } } },
  { name: 'scd-no-provenance', want: 'invalid', scdDrop: ['provenance'] },
  { name: 'scd-long-description', want: 'invalid', scd: { description: long(5000) } },
  { name: 'v03-domain', want: 'invalid', bundle: { type: 'domain' } },
  { name: 'nul', want: 'invalid', scd: { content: { summary: 'a\u0000b' } } },
];

const files = (c: Case) => {
  const scdId = `scd:project:v-${c.name}`;
  const bundle = { id: `bundle:v-${c.name}`, type: 'concern', version: '1.0.0', title: `Case ${c.name}`, description: 'one verdict', imports: [], scds: [scdId], provenance: { created_by: 'me', created_at: now }, ...c.bundle };
  const scd: Record<string, unknown> = { id: scdId, type: 'project', title: 'An SCD', version: '1.0.0', description: 'content for the case', content: { summary: c.name }, provenance: { created_by: 'me', created_at: now }, ...c.scd };
  for (const k of c.scdDrop ?? []) delete scd[k];
  return { bundle, scd };
};

describe('svc validate --strict and POST /api/bundles give one verdict on the same files', () => {
  const s = sandbox();
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack({ services: ['api'] });
    for (const c of CASES) {
      const dir = join(s.work, c.name);
      mkdirSync(dir, { recursive: true });
      const { bundle, scd } = files(c);
      writeFileSync(join(dir, 'bundle.yaml'), stringify(bundle));
      writeFileSync(join(dir, 'scd.yaml'), stringify(scd));
    }
  });
  afterAll(async () => {
    await t?.close();
    s.cleanup();
  });

  it('accepts what the SCS schemas accept (extra provenance fields included) and refuses what they refuse, in both', async () => {
    const cli = await Promise.all(CASES.map((c) => s.run(['validate', c.name, '--strict', '-o', 'json'])));
    const verdicts: Array<[string, string, string, string]> = [];
    for (const [i, c] of CASES.entries()) {
      const report = JSON.parse(cli[i].stdout) as { errors: number; findings: Array<{ rule: string; path: string }> };
      expect([0, 1, 2], c.name).toContain(cli[i].code);
      const cliVerdict = report.errors === 0 ? 'valid' : 'invalid';
      // The API gets the files as `svc bundle publish` sends them: the manifest and its SCD documents.
      const bundle = parse(readFileSync(join(s.work, c.name, 'bundle.yaml'), 'utf8')) as Record<string, unknown>;
      const scd = parse(readFileSync(join(s.work, c.name, 'scd.yaml'), 'utf8')) as unknown;
      const api = await t.call('api', 'POST', '/api/bundles', { admin: true, body: { ...bundle, documents: [scd] } });
      expect([201, 400], `${c.name}: ${JSON.stringify(api.body)}`).toContain(api.status);
      const apiVerdict = api.status === 201 && api.body.validation_status === 'valid' ? 'valid' : 'invalid';
      verdicts.push([c.name, c.want, cliVerdict, apiVerdict]);
      if (c.name === 'prov-source') {
        // The field is kept as posted.
        const stored = await t.call('api', 'GET', `/api/bundles/${encodeURIComponent(String(bundle.id))}/versions/1.0.0`, { admin: true });
        expect(stored.body.provenance.source).toBe('https://example.com/origin');
      }
      if (c.want === 'invalid') expect(report.findings.length, c.name).toBeGreaterThan(0);
    }
    expect(verdicts).toEqual(CASES.map((c) => [c.name, c.want, c.want, c.want]));
  });
});
