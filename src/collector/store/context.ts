/** The collector store and redactor of a context: opened lazily, once, closed with the context. */
import type { AppContext } from '../../shared/app-context.js';
import { Redactor } from '../redact/redactor.js';
import { CollectorStore } from './store.js';

export function collectorStore(ctx: AppContext): CollectorStore {
  return ctx.singleton('collector-store', () => {
    const store = new CollectorStore(ctx.config.collector.dbPath);
    ctx.onClose(() => store.close());
    return store;
  });
}

export function collectorRedactor(ctx: AppContext): Redactor {
  return ctx.singleton('collector-redactor', () => new Redactor(ctx.config.collector.hmacSecret, { pseudonymize: ctx.config.collector.pseudonymizeAttributes }));
}
