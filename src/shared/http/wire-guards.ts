/**
 * What the edge refuses before a request reaches a handler, on every HTTP port, and how it
 * says so: the spec's error body with `application/json`, never node's bare status line.
 *
 * - A request node's HTTP parser rejects (a control character in a header value, a bad
 *   request line, headers over node's limit, a request not received in time): node's own
 *   answer is a status line without body or content type; `answerClientError` sends the
 *   error body instead, then closes the connection as node does.
 * - JSON nested deeper than MAX_JSON_DEPTH: JSON.parse itself copes, but every walk of the
 *   value after it (validation, canonical JSON for the audit hash, the storable-text check)
 *   recurses, and a few thousand levels overflow the stack. `jsonTooDeep` finds it first,
 *   in one pass over the text.
 * - A body in a media type the operation does not declare (`mediaTypeDeclared`).
 */
import type { Duplex } from 'node:stream';
import { AppError, type ValidationIssue } from '../errors.js';

/** The deepest nesting of objects and arrays a JSON body may have (serde_json's default). */
export const MAX_JSON_DEPTH = 128;

/** The issue reported for a body that jsonTooDeep refuses (the edge's and the context fast path's). */
export const TOO_DEEP_ISSUE: ValidationIssue = { path: '/body', rule: 'maxDepth', message: `JSON nested deeper than ${MAX_JSON_DEPTH} levels` };

/** True when the JSON text nests objects/arrays deeper than `max` (strings are skipped). */
export function jsonTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  if (text.length <= max) return false;
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // Skip the string, escapes included.
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c /* \ */) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > max) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    }
  }
  return false;
}

/** The media type of a Content-Type header (lower case, parameters dropped), or ''. */
function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
}

/** True when the request's Content-Type names one of the operation's declared media types. */
export function mediaTypeDeclared(contentType: string | undefined, declared: readonly string[]): boolean {
  const m = mediaType(contentType);
  return m !== '' && declared.some((d) => d.toLowerCase() === m);
}

const CLIENT_ERRORS: Record<string, [status: number, reason: string, error: AppError]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', new AppError('payload_too_large', 'Request headers exceed the server limit')],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', new AppError('validation_error', 'The request was not received in time')],
};
const MALFORMED: [number, string, AppError] = [400, 'Bad Request', new AppError('validation_error', 'Malformed HTTP request (request line or header not valid HTTP/1.1)')];

/**
 * node:http's 'clientError' listener: the error body instead of node's bare status line.
 * As node does, nothing is written when the socket is gone or a response on it has started.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, reason, error] = CLIENT_ERRORS[err.code ?? ''] ?? MALFORMED;
  const body = JSON.stringify(error.toBody());
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
