/** MCP server registry routes (spec 4.3). */
import type { operations } from '../../../gen/openapi/control-plane.js';
import type { RouteModule } from '../../shared/service.js';
import { whoOf } from '../../shared/http/who.js';
import { createMcpServer, deleteMcpServer, getMcpServer, listMcpServers, updateMcpServer } from '../../core/mcp-servers/service.js';

export const routes = {
  handlers: {
    createMcpServer: async (req, ctx) => ({ status: 200, body: await createMcpServer(ctx, req.body, whoOf(req)) }),
    listMcpServers: async (req, ctx) => ({ status: 200, body: await listMcpServers(ctx, req.query) }),
    getMcpServer: async (req, ctx) => ({ status: 200, body: await getMcpServer(ctx, req.params.server_id) }),
    updateMcpServer: async (req, ctx) => ({ status: 200, body: await updateMcpServer(ctx, req.params.server_id, req.body, whoOf(req)) }),
    deleteMcpServer: async (req, ctx) => ({ status: 200, body: await deleteMcpServer(ctx, req.params.server_id, whoOf(req)) }),
  },
} satisfies RouteModule<operations>;
