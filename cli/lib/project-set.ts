/**
 * The documents of the project a bundle belongs to: the nearest ancestor holding `.svc/`,
 * else `--project <dir>`, else the bundle's own directory.
 */
import { dirname, resolve } from 'node:path';
import { existsSync, statSync } from 'node:fs';
import { classifyDocument } from '../../src/core/scs/index.js';
import { findProjectRoot, loadFile, walk, type LoadedFile } from './documents.js';
import { CliError, EXIT } from './errors.js';

export function projectRootFor(path: string, explicit?: string): string {
  if (explicit) {
    const root = resolve(explicit);
    if (!existsSync(root) || !statSync(root).isDirectory()) throw new CliError(`${explicit}: no such directory`, EXIT.unreadable);
    return root;
  }
  return findProjectRoot(path) ?? dirname(resolve(path));
}

export interface ProjectSet {
  root: string;
  files: LoadedFile[];
  scds: Map<string, LoadedFile>;
  bundles: LoadedFile[];
}

/** Loads every well-formed bundle and SCD under `root` (malformed files are left to `svc validate`). */
export function loadProjectSet(root: string): ProjectSet {
  const files = walk(root).map(loadFile).filter((f) => !f.syntax);
  const scds = new Map<string, LoadedFile>();
  const bundles: LoadedFile[] = [];
  for (const f of files) {
    const kind = classifyDocument(f.doc);
    if (kind === 'scd') scds.set(String((f.doc as { id: string }).id), f);
    else if (kind === 'bundle') bundles.push(f);
  }
  return { root, files: files.filter((f) => ['scd', 'bundle'].includes(classifyDocument(f.doc))), scds, bundles };
}

