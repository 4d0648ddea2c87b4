/** Agent registry routes (spec 4.2): thin adapters from the contract to the verbs. */
import type { operations } from '../../../gen/openapi/control-plane.js';
import type { RouteModule } from '../../shared/service.js';
import { whoOf } from '../../shared/http/who.js';
import { createAgent } from '../../core/agents/create-agent.js';
import { agentEtag } from '../../core/agents/agent-store.js';
import { getAgent, listAgents } from '../../core/agents/read-agents.js';
import { revokeAgent, setAgentPolicy, updateAgent } from '../../core/agents/update-agent.js';

export const routes = {
  handlers: {
    createAgent: async (req, ctx) => ({ status: 201, body: await createAgent(ctx, req.body, whoOf(req)) }),
    listAgents: async (req, ctx) => ({ status: 200, body: await listAgents(ctx, req.query) }),
    getAgent: async (req, ctx) => {
      const agent = await getAgent(ctx, req.params.agent_id);
      return { status: 200, body: agent, headers: { etag: agentEtag(agent) } };
    },
    updateAgent: async (req, ctx) => {
      const agent = await updateAgent(ctx, req.params.agent_id, req.body, whoOf(req), req.headers['if-match']);
      return { status: 200, body: agent, headers: { etag: agentEtag(agent) } };
    },
    revokeAgent: async (req, ctx) => ({ status: 200, body: await revokeAgent(ctx, req.params.agent_id, whoOf(req)) }),
    setAgentPolicy: async (req, ctx) => {
      const agent = await setAgentPolicy(ctx, req.params.agent_id, req.body, whoOf(req), req.headers['if-match']);
      return { status: 200, body: agent, headers: { etag: agentEtag(agent) } };
    },
  },
} satisfies RouteModule<operations>;
