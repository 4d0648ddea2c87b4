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
 * - An integer parameter (query, path or header) that is not written as a plain decimal
 *   integer (`malformedIntegers`): the contract's validator turns any text JavaScript's
 *   Number() reads into a number, so `0x10`, `1e3`, `+1` and ` 1` were 16, 1000, 1 and 1.
 *   And one past 2^53 - 1, which no JavaScript number holds exactly (`leaf_index=9007199254740993`
 *   was leaf 9007199254740992): refused here and, in bodies, by the int64 format (SAFE_INT64).
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

/** Where an integer parameter of an operation is, as its text must be checked (malformedIntegers). */
export interface IntegerParam {
  in: 'query' | 'path' | 'header';
  name: string;
}

/** An integer parameter's text: decimal digits, a minus sign allowed (`minimum` refuses it where it must). */
const DECIMAL_INTEGER = /^-?[0-9]+$/;

/**
 * The integer parameters of an operation, from its `parameters` as openapi-backend
 * dereferenced them (and the path's own, which it merges in). Header names in lower case.
 */
export function integerParams(parameters: readonly unknown[] | undefined): IntegerParam[] {
  const out: IntegerParam[] = [];
  for (const p of parameters ?? []) {
    const { in: where, name, schema } = p as { in?: string; name?: string; schema?: { type?: string } };
    if (schema?.type !== 'integer' || typeof name !== 'string') continue;
    if (where === 'query' || where === 'path') out.push({ in: where, name });
    else if (where === 'header') out.push({ in: where, name: name.toLowerCase() });
  }
  return out;
}

/**
 * The integer parameters whose text is not a plain decimal integer, or is one JavaScript
 * cannot hold exactly (past 2^53 - 1 either way). `path` gives the path parameters' texts (as
 * routed, before the validator coerced them); a query parameter given more than once is the
 * validator's to refuse (not an integer), each of its texts is checked here too.
 */
export function malformedIntegers(params: readonly IntegerParam[], query: URLSearchParams, headers: Record<string, string>, path: () => Record<string, unknown>): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  let pathTexts: Record<string, unknown> | undefined;
  for (const p of params) {
    const texts = p.in === 'query' ? query.getAll(p.name) : p.in === 'header' ? (headers[p.name] === undefined ? [] : [headers[p.name]!]) : [(pathTexts ??= path())[p.name]];
    for (const text of texts) {
      if (typeof text !== 'string') continue;
      if (!DECIMAL_INTEGER.test(text)) {
        issues.push({ path: `/${p.in}/${p.name}`, rule: 'type', message: 'must be an integer written in decimal digits (a minus sign allowed)' });
        break;
      }
      if (!Number.isSafeInteger(Number(text))) {
        issues.push({ path: `/${p.in}/${p.name}`, rule: 'format', message: SAFE_INT64_MESSAGE });
        break;
      }
    }
  }
  return issues;
}

/**
 * The int64 format as the contract's validator checks it: a number JavaScript holds exactly.
 * ajv-formats' own accepts any integer, so a JSON body's 9007199254740993 (read as
 * 9007199254740992) or 1e23 passed as int64.
 */
export const SAFE_INT64 = { type: 'number' as const, validate: (n: number) => Number.isSafeInteger(n) };
export const SAFE_INT64_MESSAGE = `must be an integer from -${Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}`;

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
