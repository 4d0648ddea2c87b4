/**
 * Worker threads that run one of our ES modules, from the sources (tsx, vitest) or from
 * dist/ alike.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** The URL of the module `name` beside `importMetaUrl`'s, as the code runs: `.ts` from the sources, `.js` from dist/. */
export function siblingModule(name: string, importMetaUrl: string): string {
  return new URL(`./${name}${importMetaUrl.endsWith('.ts') ? '.ts' : '.js'}`, importMetaUrl).href;
}

/** A worker thread running the module at `entry`; for a `.ts` module it registers tsx's loader first. */
export function moduleWorker(entry: string, opts: Omit<WorkerOptions, 'eval'> = {}): Worker {
  const code = entry.endsWith('.ts')
    ? `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry)}); })`
    : `import(${JSON.stringify(entry)})`;
  return new Worker(code, { ...opts, eval: true });
}
