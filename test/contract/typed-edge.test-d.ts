/**
 * Type-level proof that the contract drives the edge: checked by `tsc` (`make typecheck`,
 * tsconfig includes test/), never run. Each `@ts-expect-error` marks a handler that does not
 * follow the spec; if the edge's types stopped catching it, the directive would be unused and
 * typecheck would fail. A spec change a handler does not follow fails the same way, through
 * gen/openapi (make gen) and the route module's `RouteModule<operations>`.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import { expectTypeOf } from 'vitest';
import type { ContextService } from '../../gen/proto/context_pb.js';
import type { components, operations } from '../../gen/openapi/control-plane.js';
import type { operations as RulesOperations } from '../../gen/openapi/rules.js';
import type { AppContext } from '../../src/shared/app-context.js';
import { AppError } from '../../src/shared/errors.js';
import { errorResult, type OperationHandler, type RequestInfo } from '../../src/shared/http/openapi-app.js';
import type { RouteModule } from '../../src/shared/service.js';
import { httpService } from '../../src/shared/http/service-app.js';
import { routes as agents } from '../../src/api/agents/routes.js';

type S = components['schemas'];
declare const agent: S['Agent'];
declare const detail: S['AgentDetail'];

// What a handler receives is the operation's, from gen/openapi.
expectTypeOf<RequestInfo<operations['getAgent']>['params']>().toEqualTypeOf<{ agent_id: S['AgentId'] }>();
expectTypeOf<RequestInfo<operations['createAgent']>['body']>().toEqualTypeOf<S['AgentCreate']>();
expectTypeOf<RequestInfo<operations['listAgents']>['query']['status']>().toEqualTypeOf<'active' | 'suspended' | 'revoked' | 'inactive' | undefined>();
// An optional request body may be absent; a body with a default is optional (no defaults are applied).
expectTypeOf<RequestInfo<operations['mintSubscribeToken']>['body']>().toEqualTypeOf<S['SubscribeTokenRequest'] | undefined>();
expectTypeOf<S['SubscribeTokenRequest']['ttl_seconds']>().toEqualTypeOf<number | undefined>();

// A handler that follows the contract compiles.
export const good: RouteModule<operations> = {
  handlers: {
    getAgent: async (req) => ({ status: 200, body: { ...detail, agent_id: req.params.agent_id } }),
    listAgents: (req) => ({ status: 200, body: { agents: [], total: 0, limit: req.query.limit ?? 100, offset: req.query.offset ?? 0 } }),
    createAgent: (req) => ({ status: 201, body: { ...agent, name: req.body.name } }),
    // A declared error status with the spec's Error body, or an AppError's reply.
    updateAgent: () => ({ status: 404, body: { error: 'not_found', message: 'No such agent' } }),
    revokeAgent: () => errorResult(new AppError('not_found', 'No such agent')),
    // No body for a 204.
    revokeAgentApiKey: () => ({ status: 204 }),
  },
};

export const bad: RouteModule<operations> = {
  handlers: {
    // A body missing a required field (AgentDetail without `keys` and the rest).
    // @ts-expect-error -- `body` is not the 200's AgentDetail
    getAgent: async (req) => ({ status: 200, body: { ...agent, agent_id: req.params.agent_id } }),
    listAgents: (req) => {
      // @ts-expect-error -- `role` is not a query parameter of listAgents (role_id is)
      const role: string | undefined = req.query.role;
      return { status: 200, body: { agents: [], total: 0, limit: 100, offset: 0, role } };
    },
    getMcpServer: (req) => {
      // @ts-expect-error -- getMcpServer declares no query parameters at all
      const limit: number = req.query.limit;
      // @ts-expect-error -- its path parameter is server_id, not agent_id
      const id: string = req.params.agent_id;
      return errorResult(new AppError('not_found', `${limit} ${id}`));
    },
    createAgent: (req) => {
      // @ts-expect-error -- AgentCreate has no field `owner`
      const owner: string = req.body.owner;
      return errorResult(new AppError('not_implemented', owner));
    },
    // A status the operation does not declare.
    // @ts-expect-error -- listAgentApiKeys declares no 418
    listAgentApiKeys: () => ({ status: 418, body: { error: 'conflict', message: 'teapot' } }),
    // A hand-made error body under a success status is not an error reply.
    // @ts-expect-error -- revokeAgent's 200 answers AgentRevocation, not Error
    revokeAgent: () => ({ status: 200, body: { error: 'not_found', message: 'x' } }),
    // The right body under another declared status.
    // @ts-expect-error -- updateAgent answers its Agent with 200; 201 is not declared
    updateAgent: async () => ({ status: 201, body: agent }),
  },
};

// An operationId the spec does not have.
export const unknownOperation: RouteModule<operations> = {
  handlers: {
    // @ts-expect-error -- no operation `deleteAgent` in the control-plane contract
    deleteAgent: () => ({ status: 204 }),
  },
};

// Another service's module is not this service's.
declare const rulesModule: RouteModule<RulesOperations>;
// @ts-expect-error -- the rules engine's operations are not the control plane's
export const crossed: RouteModule<operations> = rulesModule;

// A handler declared apart is checked against its operation where it is typed.
// @ts-expect-error -- a SubscribeToken needs agent_id and expires_at
export const token: OperationHandler<operations['mintSubscribeToken'], AppContext> = async () => ({ status: 200, body: { token: 't' } });

// A service must handle every operation of its contract (never called; types only).
export function partialService() {
  return httpService<operations>()({
    name: 'api',
    specFile: 'openapi-control-plane.yaml',
    port: () => 0,
    // @ts-expect-error -- the agents' module alone leaves the other operations unhandled
    modules: [agents],
  });
}

// The gRPC handlers are typed by protoc-gen-es (request-context.ts and subscribe.ts declare
// `ServiceImpl<typeof ContextService>[...]`); the same kind of mistakes fail there.
export const grpcBad: Partial<ServiceImpl<typeof ContextService>> = {
  // @ts-expect-error -- processingTimeMs is an int32 (a number), not a string
  requestContext: async (req) => ({ success: true, taskType: req.taskType, processingTimeMs: '1' }),
};
export const grpcUnknown: Partial<ServiceImpl<typeof ContextService>> = {
  // @ts-expect-error -- ContextService has no method `unsubscribe`
  unsubscribe: async () => ({}),
};
