/** Agent registry routes (spec 4.2): thin adapters from the contract to the verbs. */
import type { operations } from '../../../gen/openapi/control-plane.js';
import type { RouteModule } from '../../shared/service.js';
import { whoOf } from '../../shared/http/who.js';
import { createAgent } from '../../core/agents/create-agent.js';
import { getAgent, listAgents } from '../../core/agents/read-agents.js';
import { revokeAgent, setAgentPolicy, updateAgent } from '../../core/agents/update-agent.js';

export const routes = {
  handlers: {
    createAgent: async (req, ctx) => ({ status: 201, body: await createAgent(ctx, req.body, whoOf(req)) }),
    listAgents: async (req, ctx) => ({ status: 200, body: await listAgents(ctx, req.query) }),
    getAgent: async (req, ctx) => ({ status: 200, body: await getAgent(ctx, req.params.agent_id) }),
    updateAgent: async (req, ctx) => ({ status: 200, body: await updateAgent(ctx, req.params.agent_id, req.body, whoOf(req)) }),
    revokeAgent: async (req, ctx) => ({ status: 200, body: await revokeAgent(ctx, req.params.agent_id, whoOf(req)) }),
    setAgentPolicy: async (req, ctx) => ({ status: 200, body: await setAgentPolicy(ctx, req.params.agent_id, req.body, whoOf(req)) }),
  },
} satisfies RouteModule<operations>;
