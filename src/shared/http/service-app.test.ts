/**
 * specDocument: each contract of spec/ parsed once a process, a copy of its own for each
 * caller. openapi-backend given that copy ends with the same dereferenced definition as given
 * the file's path (which it parses itself, with another YAML parser), and one caller's changes
 * (openapi-backend dereferences in place) never reach the next.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OpenAPIBackend } from 'openapi-backend';
import YAML from 'yaml';
import { SPEC_DIR, specDocument } from './service-app.js';

const contracts = fs.readdirSync(SPEC_DIR).filter((f) => /^openapi-.*\.yaml$/.test(f));

describe('specDocument', () => {
  it('finds the contracts', () => expect(contracts.length).toBeGreaterThanOrEqual(5));

  it.each(contracts)('%s: the parsed file, and openapi-backend dereferences it as it does the file', async (file) => {
    const doc = specDocument(file);
    expect(doc).toEqual(YAML.parse(fs.readFileSync(path.join(SPEC_DIR, file), 'utf8')));
    const fromPath = new OpenAPIBackend({ definition: path.join(SPEC_DIR, file), strict: true, validate: true, quick: false });
    const fromCopy = new OpenAPIBackend({ definition: doc as never, strict: true, validate: true, quick: false });
    await Promise.all([fromPath.init(), fromCopy.init()]);
    expect(fromCopy.definition).toEqual(fromPath.definition);
  });

  it('gives each caller a copy of its own', () => {
    const file = contracts[0]!;
    const a = specDocument(file);
    const b = specDocument(file);
    expect(a).not.toBe(b);
    (a.info as { title: string }).title = 'changed';
    delete a.paths;
    expect(specDocument(file)).toEqual(b);
    expect((specDocument(file).info as { title: string }).title).not.toBe('changed');
  });
});
