/**
 * The REST edge's types, read from openapi-typescript's `operations` (gen/openapi/*.ts): what
 * a handler of one operation receives (path, query, body) and what it may answer (one of the
 * operation's declared statuses with that status's JSON body). A handler that reads an
 * undeclared parameter, returns a body the spec does not declare for the status, or names an
 * operation the spec does not have fails `tsc`; the values are still checked at run time by
 * openapi-backend against the same document, which is what makes the request types true.
 */
import type { ErrorBody, ValidationIssue } from '../errors.js';

/** What openapi-typescript emits for one operation (`operations[id]`). */
interface OperationShape {
  parameters: { query?: unknown; header?: unknown; path?: unknown; cookie?: unknown };
  requestBody?: unknown;
  responses: object;
}

/** No fields: reading any property of it fails typecheck (`{}` rather than an index signature). */
type NoFields = Record<never, never>;

/** A parameter group (`path?: never` or `query?: {...}`) as the edge hands it over: always an object. */
type Fields<T> = [NonNullable<T>] extends [never] ? NoFields : NonNullable<T>;

/** The JSON body of a request body or response object (a text/plain one: its text); never for another media type. */
type JsonOf<T> = T extends { content: infer C }
  ? 'application/json' extends keyof C
    ? C['application/json' & keyof C]
    : 'text/plain' extends keyof C
      ? string
      : never
  : undefined;

type PathParams<Op extends OperationShape> = Fields<Op['parameters']['path']>;
type QueryParams<Op extends OperationShape> = Fields<Op['parameters']['query']>;
/** The validated JSON body; `undefined` when the operation has none, or may be sent without one. */
type RequestBody<Op extends OperationShape> =
  | JsonOf<NonNullable<Op['requestBody']>>
  | (undefined extends Op['requestBody'] ? undefined : never);

/** What a handler sees of the request: validated and coerced by the contract. */
export interface RequestInfo<Op extends OperationShape> {
  requestId: string;
  /** The name of the admin key presented (X-Admin-Key), null when none was: the actor of management events. */
  actor: string | null;
  method: string;
  path: string;
  params: PathParams<Op>;
  query: QueryParams<Op>;
  /** Lower-cased names; credentials (X-Api-Key, Authorization) are read here, not declared as parameters. */
  headers: Record<string, string>;
  body: RequestBody<Op>;
  /** The raw request (for streaming responses and abort signals). */
  raw: Request;
}

/**
 * A request the contract has not accepted (or not judged): for the validationFail,
 * payloadTooLarge and internalError hooks. Nothing in it is typed beyond what HTTP gives.
 */
export interface UncheckedRequest {
  requestId: string;
  actor: string | null;
  method: string;
  path: string;
  params: Record<string, unknown>;
  query: Record<string, unknown>;
  headers: Record<string, string>;
  body: unknown;
  raw: Request;
}

type Headers = Record<string, string>;

/** One declared response: its status and its JSON body (no body for a response without content). */
type ReplyFor<S, R> = [JsonOf<R>] extends [never]
  ? never // not JSON (text/event-stream): only a Response can answer it
  : [JsonOf<R>] extends [undefined]
    ? { status: S; body?: undefined; headers?: Headers }
    : { status: S; body: JsonOf<R>; headers?: Headers };

/** The union, over an operation's declared statuses, of `{status, body}` with that status's body. */
type Reply<Op extends OperationShape> = { [S in keyof Op['responses']]: ReplyFor<S, Op['responses'][S]> }[keyof Op['responses']];

declare const errorBrand: unique symbol;
/**
 * An error answer built by `errorResult` from an AppError: its status comes from the one
 * code-to-status table (as for a thrown AppError), so it is not matched against the
 * operation's statuses; its body is the spec's `Error`. The brand (types only) keeps a
 * handler from passing off a hand-made `{status, body}` as one.
 */
export type ErrorReply = { status: number; body: ErrorBody; headers?: Headers } & { readonly [errorBrand]: true };

/**
 * What a handler answers: a declared reply, an error reply, or a ready Response (a stream,
 * or bytes the context API encodes itself), which is not checked.
 */
type HandlerResult<Op extends OperationShape> = Reply<Op> | ErrorReply | Response;

/** The answer of a hook that runs outside one operation's typing (any status, any body). */
export type UncheckedResult = { status: number; body?: unknown; headers?: Headers } | Response;

export type OperationHandler<Op extends OperationShape, C, Oa = unknown> = (req: RequestInfo<Op>, ctx: C, oa: Oa) => Promise<HandlerResult<Op>> | HandlerResult<Op>;

/** A service's operations as openapi-typescript emits them (`operations` of gen/openapi/<service>.ts). */
export type OperationsShape<Ops> = { [K in keyof Ops]: OperationShape };

/** One optional handler per operationId of the service's `operations`; any other key fails typecheck. */
export type Handlers<Ops extends OperationsShape<Ops>, C, Oa = unknown> = { [K in keyof Ops]?: OperationHandler<Ops[K], C, Oa> };

/** Called instead of the generic 400 for one operation (the context API answers its own body). */
export type ValidationFailHandler<Op extends OperationShape, C> = (
  req: UncheckedRequest,
  ctx: C,
  errors: ValidationIssue[],
) => Promise<HandlerResult<Op>> | HandlerResult<Op>;

/** The operationIds a list of route modules handles (as their literal `handlers` keys). */
type Served<M> = M extends readonly (infer E)[] ? (E extends { handlers: infer H } ? keyof H : never) : never;

/**
 * `unknown` when the modules handle every operation of `Ops`; otherwise an object type naming
 * the operations nobody handles, which the modules argument then fails to match. Route modules
 * are declared `{...} satisfies RouteModule<operations>` so that their keys stay literal (a
 * module annotated `: RouteModule<operations>` would claim every key).
 */
export type ServesEvery<Ops, M> = [Exclude<keyof Ops, Served<M>>] extends [never] ? unknown : { unhandledOperations: Exclude<keyof Ops, Served<M>> };
