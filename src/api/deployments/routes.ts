/** Deployment routes (spec 4.4): deploy, read one, list. */
import type { operations } from '../../../gen/openapi/control-plane.js';
import type { RouteModule } from '../../shared/service.js';
import { whoOf } from '../../shared/http/who.js';
import { refuseNul } from '../../core/graph/input-text.js';
import { createDeployment, getDeployment, listDeployments } from '../../core/deployments/deployment-service.js';

export const routes = {
  handlers: {
    async createDeployment(req, ctx) {
      refuseNul(req.body);
      return { status: 201, body: await createDeployment(ctx, req.body, whoOf(req)) };
    },
    async getDeployment(req, ctx) {
      return { status: 200, body: await getDeployment(ctx, req.params.deployment_id) };
    },
    async listDeployments(req, ctx) {
      return { status: 200, body: await listDeployments(ctx, { status: req.query.status, limit: req.query.limit ?? 100, offset: req.query.offset ?? 0 }) };
    },
  },
} satisfies RouteModule<operations>;
