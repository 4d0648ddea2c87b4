/** Tag routes (spec 4.4): create, list, read, move. */
import type { operations } from '../../../gen/openapi/control-plane.js';
import type { RouteModule } from '../../shared/service.js';
import { whoOf } from '../../shared/http/who.js';
import { refuseNul } from '../../core/graph/input-text.js';
import { createTag, getTag, listTags, moveTag } from '../../core/tags/tag-service.js';

export const routes = {
  handlers: {
    async createTag(req, ctx) {
      refuseNul(req.body);
      return { status: 201, body: await createTag(ctx, req.body, whoOf(req)) };
    },
    async listTags(req, ctx) {
      return { status: 200, body: await listTags(ctx, { limit: req.query.limit ?? 100, offset: req.query.offset ?? 0 }) };
    },
    async getTag(req, ctx) {
      return { status: 200, body: await getTag(ctx, req.params.tag) };
    },
    async moveTag(req, ctx) {
      refuseNul(req.body);
      return { status: 200, body: await moveTag(ctx, req.params.tag, req.body, whoOf(req)) };
    },
  },
} satisfies RouteModule<operations>;
