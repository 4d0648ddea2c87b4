/**
 * Teardown checks that make a test fail when it leaves something of a server open, as
 * connect-es's `useNodeServer` does (its teardown waits until `getConnections` is 0):
 *
 * - connections: every `connection` a server accepts is tracked (at the `net.Server` level,
 *   so it holds for HTTP/1.1, HTTP/2 and whatever replaces them); at teardown, before the
 *   server is told to close, each server must reach zero open connections (its own
 *   `getConnections` count and the tracked sockets) within a short bounded wait. A client
 *   that keeps a keep-alive connection or an HTTP/2 stream open fails the test, naming the
 *   server and the peer. Without this check `close()` hides the leak: it closes idle
 *   keep-alive connections and sends GOAWAY itself.
 * - timers: `setTimeout`/`setInterval` calls made while a test stack is open are recorded
 *   with their creation stack; after teardown any interval, or any timeout not due within
 *   the wait, created from the product's code (a frame under src/) that is still pending
 *   is a leak (a job that outlives `close()` runs against a closed database).
 *
 * The bounded waits absorb the sockets and timers that are already finishing (a FIN on its
 * way, a destroy timer of one second), so a clean test never fails on timing.
 */
import type net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src') + path.sep;

/** How long teardown waits for connections to finish closing and soon-due timers to fire. */
export const LEAK_WAIT_MS = 2000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface ServerTracker {
  name: string;
  server: net.Server;
  /** Sockets the server accepted that are not closed yet. */
  open(): net.Socket[];
  /** The server's own count (0 once the server is closed). */
  connections(): Promise<number>;
}

/** Tracks the connections a server accepts from now on. */
export function trackServer(name: string, server: net.Server): ServerTracker {
  const sockets = new Map<net.Socket, number>();
  server.on('connection', (sock: net.Socket) => {
    sockets.set(sock, Date.now());
    sock.once('close', () => sockets.delete(sock));
  });
  return {
    name,
    server,
    open: () => [...sockets.keys()].filter((s) => !s.destroyed),
    connections: () =>
      new Promise<number>((resolve) => {
        if (!server.listening) return resolve(0);
        server.getConnections((err, n) => resolve(err ? 0 : n));
      }),
  };
}

function describeSocket(tracker: ServerTracker, sock: net.Socket): string {
  const half = sock.readableEnded ? '; the client has closed its side, the server has not' : '';
  return `${tracker.name}: a connection from ${sock.remoteAddress}:${sock.remotePort} is still open (read ${sock.bytesRead} B, wrote ${sock.bytesWritten} B${half})`;
}

/**
 * Waits up to `waitMs` for every server to have no open connection; returns one line per
 * connection still open after that, and destroys those sockets so that the teardown that
 * follows does not wait for its drain timeout.
 */
export async function connectionLeaks(trackers: ServerTracker[], waitMs = LEAK_WAIT_MS, allowed: Partial<Record<string, string>> = {}): Promise<string[]> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const counts = await Promise.all(trackers.map((t) => t.connections()));
    const open = trackers.flatMap((t) => t.open().map((s) => [t, s] as const));
    if (open.length === 0 && counts.every((n) => n === 0)) return [];
    if (Date.now() >= deadline) {
      const lines = open.map(([t, s]) => describeSocket(t, s));
      trackers.forEach((t, i) => {
        const untracked = counts[i]! - t.open().length;
        if (untracked > 0) lines.push(`${t.name}: ${untracked} more open connection(s) by the server's own count`);
      });
      for (const [, s] of open) s.destroy();
      // A known product defect, named by the test with its reason: reported, not failed.
      const known = lines.filter((l) => allowed[l.slice(0, l.indexOf(':'))]);
      for (const l of known) console.warn(`[leak check] allowed (${allowed[l.slice(0, l.indexOf(':'))]}): ${l}`);
      return lines.filter((l) => !known.includes(l));
    }
    await sleep(10);
  }
}

// ---- timers ----

interface TimerRecord {
  timer: NodeJS.Timeout;
  kind: 'setTimeout' | 'setInterval';
  due: number;
  at: number;
  where: Error;
}

interface Window {
  opened: number;
  closed: number | null;
}

const records: TimerRecord[] = [];
const windows = new Set<Window>();
let installed = false;

const isDone = (r: TimerRecord) => (r.timer as unknown as { _destroyed?: boolean })._destroyed === true;

function install(): void {
  if (installed) return;
  installed = true;
  const realTimeout = globalThis.setTimeout;
  const realInterval = globalThis.setInterval;
  const record = (kind: TimerRecord['kind'], timer: NodeJS.Timeout, ms: unknown) => {
    if (![...windows].some((w) => w.closed === null)) return;
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 25;
    const where = new Error(kind);
    Error.stackTraceLimit = limit;
    records.push({ timer, kind, due: Date.now() + (Number(ms) || 0), at: Date.now(), where });
    if (records.length > 2000) {
      const live = records.filter((r) => !isDone(r));
      records.splice(0, records.length, ...live);
    }
  };
  const patchedTimeout = function (this: unknown, ...args: Parameters<typeof setTimeout>) {
    const t = realTimeout(...args);
    record('setTimeout', t, args[1]);
    return t;
  } as typeof setTimeout;
  const patchedInterval = function (this: unknown, ...args: Parameters<typeof setInterval>) {
    const t = realInterval(...args);
    record('setInterval', t, args[1]);
    return t;
  } as typeof setInterval;
  // util.promisify(setTimeout) and friends read these.
  Object.assign(patchedTimeout, realTimeout);
  Object.assign(patchedInterval, realInterval);
  for (const sym of Object.getOwnPropertySymbols(realTimeout)) (patchedTimeout as any)[sym] = (realTimeout as any)[sym];
  globalThis.setTimeout = patchedTimeout;
  globalThis.setInterval = patchedInterval;
}

/** The product frame (under src/) that created a timer, or null when none did. */
function productFrame(r: TimerRecord): string | null {
  const lines = (r.where.stack ?? '').split('\n').slice(1);
  // A test file under src/ (`*.test.ts`) is the test's own code, not the product's.
  const frame = lines.find((l) => l.includes(SRC) && !l.includes(`${path.sep}node_modules${path.sep}`) && !/\.test\.ts:\d+:\d+\)?$/.test(l.trim()));
  return frame ? frame.trim().replace(/^at /, '') : null;
}

export interface TimerWindow {
  /** Ends the window and returns one line per timer of the product it leaked. */
  leaks(waitMs?: number): Promise<string[]>;
}

/**
 * Starts recording timers for one test stack. At `leaks()`, a pending timer created during
 * this window counts only if no other still-open window was open when it was created (that
 * stack's own teardown checks it then).
 */
export function openTimerWindow(): TimerWindow {
  install();
  const w: Window = { opened: Date.now(), closed: null };
  windows.add(w);
  return {
    async leaks(waitMs = LEAK_WAIT_MS) {
      w.closed = Date.now();
      const others = [...windows].filter((o) => o !== w && o.closed === null);
      const mine = (r: TimerRecord) =>
        r.at >= w.opened && !others.some((o) => r.at >= o.opened) && productFrame(r) !== null;
      const deadline = Date.now() + waitMs;
      let pending = records.filter((r) => mine(r) && !isDone(r));
      // Timeouts due within the wait are let fire (e.g. a socket's destroy timer set at close).
      while (pending.some((r) => r.kind === 'setTimeout' && r.due <= deadline) && Date.now() < deadline) {
        await sleep(20);
        pending = pending.filter((r) => !isDone(r));
      }
      windows.delete(w);
      if (![...windows].some((o) => o.closed === null)) records.length = 0;
      return pending.map((r) => `a ${r.kind} of ${r.due - r.at} ms created at ${productFrame(r)} is still pending after close`);
    },
  };
}
