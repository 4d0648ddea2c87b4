/**
 * The console's server-side sessions (migration 0015). Signing in with an admin or auditor
 * key opens one: the browser gets a random token (HttpOnly cookie), the database keeps its
 * SHA-256, the key's name and role and the session's CSRF token; the key itself is kept
 * nowhere. A session ends at sign-out, after `console.idleMinutes` without a request, after
 * `console.sessionHours` in all, or as soon as its key's name is no longer configured with
 * that role (a key removed from ADMIN_API_KEYS or AUDITOR_API_KEYS ends its sessions).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { and, eq, lt, or } from 'drizzle-orm';
import type { AppContext } from '../shared/app-context.js';
import { consoleSessions } from '../core/db/schema/index.js';
import { recordEvent, type Who } from '../core/audit/events.js';

export type ConsoleRole = 'admin' | 'auditor';

export interface Session {
  name: string;
  role: ConsoleRole;
  csrf: string;
  tokenHash: string;
}

/** last_seen_at is written at most this often per session (a page view is not a write). */
const TOUCH_EVERY_MS = 60_000;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
export const randomToken = () => randomBytes(32).toString('base64url');

/** The role of the key presented at sign-in (admin first), with its name; null for any other. */
export function roleOfKey(ctx: AppContext, key: string): { name: string; role: ConsoleRole } | null {
  const admin = ctx.config.adminKeyring.match(key);
  if (admin !== null) return { name: admin, role: 'admin' };
  const auditor = ctx.config.auditorKeyring.match(key);
  return auditor !== null ? { name: auditor, role: 'auditor' } : null;
}

/** Opens a session for a key's name and role (with its `console.signed_in` event); the token goes in the cookie. */
export async function openSession(ctx: AppContext, who: { name: string; role: ConsoleRole }, requestId: string): Promise<{ token: string; session: Session }> {
  const token = randomToken();
  const session: Session = { name: who.name, role: who.role, csrf: randomToken(), tokenHash: sha256(token) };
  const now = ctx.clock.now();
  await ctx.db.tx(async (db) => {
    await db.orm.insert(consoleSessions).values({ token_hash: session.tokenHash, key_name: who.name, role: who.role, csrf_token: session.csrf, created_at: now, last_seen_at: now });
    await recordEvent(db, { actor: who.name, request_id: requestId }, { event_type: 'console.signed_in', resource_type: 'console_session', resource_id: who.name, after: { role: who.role } }, now);
  });
  return { token, session };
}

/** The live session of a cookie's token, or null (unknown, idle too long, too old, or its key gone). */
export async function readSession(ctx: AppContext, token: string | undefined): Promise<Session | null> {
  if (!token || token.length > 128) return null;
  const tokenHash = sha256(token);
  const [row] = await ctx.db.orm.select().from(consoleSessions).where(eq(consoleSessions.token_hash, tokenHash));
  if (!row) return null;
  const now = ctx.clock.now().getTime();
  const { idleMinutes, sessionHours } = ctx.config.console;
  const keyring = row.role === 'admin' ? ctx.config.adminKeyring : ctx.config.auditorKeyring;
  const expired = now - row.last_seen_at.getTime() > idleMinutes * 60_000 || now - row.created_at.getTime() > sessionHours * 3_600_000;
  if (expired || !keyring.names.includes(row.key_name)) {
    await ctx.db.orm.delete(consoleSessions).where(eq(consoleSessions.token_hash, tokenHash));
    return null;
  }
  if (now - row.last_seen_at.getTime() > TOUCH_EVERY_MS) {
    await ctx.db.orm.update(consoleSessions).set({ last_seen_at: new Date(now) }).where(eq(consoleSessions.token_hash, tokenHash));
  }
  return { name: row.key_name, role: row.role, csrf: row.csrf_token, tokenHash };
}

/** Ends a session (sign-out), with its `console.signed_out` event. */
export async function endSession(ctx: AppContext, session: Session, who: Who): Promise<void> {
  await ctx.db.tx(async (db) => {
    const gone = await db.orm.delete(consoleSessions).where(eq(consoleSessions.token_hash, session.tokenHash)).returning({ token_hash: consoleSessions.token_hash });
    if (gone.length) await recordEvent(db, who, { event_type: 'console.signed_out', resource_type: 'console_session', resource_id: session.name, before: { role: session.role } }, ctx.clock.now());
  });
}

/** Deletes the sessions that can no longer be used (idle or too old). */
export async function sweepSessions(ctx: AppContext): Promise<void> {
  const now = ctx.clock.now().getTime();
  const { idleMinutes, sessionHours } = ctx.config.console;
  await ctx.db.orm
    .delete(consoleSessions)
    .where(or(lt(consoleSessions.last_seen_at, new Date(now - idleMinutes * 60_000)), and(lt(consoleSessions.created_at, new Date(now - sessionHours * 3_600_000)))));
}

/** Compares a submitted CSRF token with the expected one in constant time. */
export function sameToken(expected: string, given: unknown): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}
