/**
 * The one domain error type, with a closed set of codes, and its table at the edge: code to
 * HTTP status. Bodies follow the spec: `{error, message, details?}`.
 */
import type { components } from '../../gen/openapi/control-plane.js';

/** The general error body (spec 7.2); every service's contract declares the same `Error`. */
export type ErrorBody = components['schemas']['Error'];

export type ErrorCode =
  | 'validation_error'
  | 'auth_failed'
  | 'intent_not_allowed'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'precondition_failed'
  | 'license_limit'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'immutable'
  | 'not_implemented'
  | 'unavailable'
  | 'internal_error';

const HTTP_STATUS: Record<ErrorCode, number> = {
  validation_error: 400,
  auth_failed: 401,
  license_limit: 402,
  intent_not_allowed: 403,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  immutable: 409,
  precondition_failed: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  internal_error: 500,
  not_implemented: 501,
  unavailable: 503,
};

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;
  constructor(code: ErrorCode, message: string, opts: { details?: Record<string, unknown>; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'AppError';
    this.code = code;
    this.details = opts.details;
  }
  get status(): number {
    return HTTP_STATUS[this.code];
  }
  /** The general error body of spec 7.2. `immutable` is reported as a conflict on the wire. */
  toBody(): ErrorBody {
    const error: ErrorBody['error'] = this.code === 'immutable' ? 'conflict' : this.code;
    return this.details === undefined ? { error, message: this.message } : { error, message: this.message, details: this.details };
  }
}

/**
 * One contract violation of a request, as the spec's validation_error details list them:
 * `path` is a JSON pointer prefixed with /body, /query, /path or /headers; `rule` the JSON
 * Schema keyword or check that failed.
 */
export type ValidationIssue = components['schemas']['ValidationIssue'];
