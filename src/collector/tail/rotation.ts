/**
 * Finding the files of a rotated export (external-formats.md 1.1). The active file keeps
 * the configured path; a backup is renamed by inserting a timestamp (and, in newer
 * releases, a reason) before the extension: `data.json` -> `data-<timestamp>[-size].json`.
 * A file is identified by device and inode, which a rename keeps.
 */
import fs from 'node:fs/promises';
import type { Stats } from 'node:fs';
import path from 'node:path';

export interface FileInfo {
  path: string;
  key: string;
  size: number;
  mtimeMs: number;
}

export function fileKey(st: Pick<Stats, 'dev' | 'ino'>): string {
  return `${st.dev}:${st.ino}`;
}

export async function statFile(p: string): Promise<FileInfo | null> {
  try {
    const st = await fs.stat(p);
    if (!st.isFile()) return null;
    return { path: p, key: fileKey(st), size: st.size, mtimeMs: st.mtimeMs };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/** `<stem>-*<ext>` beside the active file, oldest first (mtime, then name). */
export async function listRotated(activePath: string): Promise<FileInfo[]> {
  const dir = path.dirname(activePath);
  const base = path.basename(activePath);
  const ext = path.extname(base);
  const stem = ext ? base.slice(0, -ext.length) : base;
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return [];
  }
  const out: FileInfo[] = [];
  for (const name of names) {
    if (name === base || !name.startsWith(stem + '-') || !name.endsWith(ext) || name.length <= stem.length + 1 + ext.length) continue;
    const info = await statFile(path.join(dir, name)).catch(() => null);
    if (info) out.push(info);
  }
  out.sort((a, b) => a.mtimeMs - b.mtimeMs || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return out;
}
