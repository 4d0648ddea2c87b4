/**
 * PostgreSQL cannot store U+0000 in text or jsonb: such a value would fail in the database
 * as an opaque 500. Content routes refuse it first, as a 400 naming where it is.
 */
import { AppError } from '../../shared/errors.js';

/** The JSON pointer of the first string (or key) holding U+0000, or null. */
export function findNul(v: unknown, at = ''): string | null {
  if (typeof v === 'string') return v.includes('\u0000') ? at : null;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const p = findNul(v[i], `${at}/${i}`);
      if (p !== null) return p;
    }
    return null;
  }
  if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      const key = `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      if (k.includes('\u0000')) return key;
      const p = findNul(x, key);
      if (p !== null) return p;
    }
  }
  return null;
}

/** Throws 400 `validation_error` when the body holds U+0000 anywhere. */
export function refuseNul(body: unknown): void {
  const p = findNul(body);
  if (p !== null) {
    const path = `/body${p}`;
    throw new AppError('validation_error', `${path} contains the NUL character (U+0000), which cannot be stored`, {
      details: { errors: [{ path, rule: 'nul_character', message: 'contains U+0000' }] },
    });
  }
}
