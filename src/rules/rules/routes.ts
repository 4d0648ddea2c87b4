/** Rules engine routes (spec 4.6, port 8001). */
import type { operations } from '../../../gen/openapi/rules.js';
import type { RouteModule } from '../../shared/service.js';
import { whoOf } from '../../shared/http/who.js';
import { refuseNul } from '../../core/graph/input-text.js';
import { createRule, createRuleSchema, createRuleSet, getRuleSchema, listRules, listRuleSets } from '../../core/rules/rule-service.js';

export const routes = {
  handlers: {
    async createRuleSchema(req, ctx) {
      refuseNul(req.body);
      return { status: 201, body: await createRuleSchema(ctx, req.body, whoOf(req)) };
    },
    async getRuleSchema(req, ctx) {
      return { status: 200, body: await getRuleSchema(ctx, req.params.schema_id) };
    },
    async createRuleSet(req, ctx) {
      refuseNul(req.body);
      return { status: 201, body: await createRuleSet(ctx, req.body, whoOf(req)) };
    },
    async listRuleSets(_req, ctx) {
      return { status: 200, body: await listRuleSets(ctx) };
    },
    async createRule(req, ctx) {
      refuseNul(req.body);
      return { status: 201, body: await createRule(ctx, req.params.rule_set_id, req.query.version, req.body, whoOf(req)) };
    },
    async listRules(req, ctx) {
      return { status: 200, body: await listRules(ctx, req.params.rule_set_id, req.query.version) };
    },
  },
} satisfies RouteModule<operations>;
