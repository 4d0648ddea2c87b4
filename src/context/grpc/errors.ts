/**
 * A domain error as the ConnectError a gRPC/Connect client gets: a refusal of the domain
 * (an AppError with a code below) keeps its message under the gRPC code the proto names;
 * anything else is INTERNAL with no detail (the caller logs it).
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { AppError } from '../../shared/errors.js';

const CODES: Partial<Record<AppError['code'], Code>> = { validation_error: Code.InvalidArgument, not_found: Code.NotFound, unavailable: Code.Unavailable };

/** Whether `e` is a refusal that connectError passes on with its own code and message. */
export const isRefusal = (e: unknown): e is AppError => e instanceof AppError && CODES[e.code] !== undefined;

export function connectError(e: unknown): ConnectError {
  return isRefusal(e) ? new ConnectError(e.message, CODES[e.code]) : new ConnectError('Internal error', Code.Internal);
}
