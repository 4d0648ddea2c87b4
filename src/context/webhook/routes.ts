/**
 * Tag-update webhook (port 8003): `POST /webhook/tag-update`, authenticated by an HS256
 * bearer JWT signed with JWT_SECRET (audience `svc-context-webhook`, lifetime at most 300 s).
 * The token is checked before anything about the body, so an unauthenticated caller learns
 * nothing from validation errors.
 */
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import { errorResult, type ErrorReply, type UncheckedRequest, type ValidationIssue } from '../../shared/http/openapi-app.js';
import type { operations } from '../../../gen/openapi/context-webhook.js';
import type { RouteModule } from '../../shared/service.js';
import { verifyWebhookToken } from '../../core/tokens/jwt.js';
import { acceptTagUpdate } from './tag-update.js';

const CHALLENGE = { 'www-authenticate': 'Bearer' };

/** Null when the bearer token is good; otherwise the 401 to answer. */
async function checkBearer(req: Pick<UncheckedRequest, 'headers'>, ctx: AppContext): Promise<ErrorReply | null> {
  const header = req.headers['authorization'];
  if (!header) return errorResult(new AppError('auth_failed', 'Authorization: Bearer <token> is required'), CHALLENGE);
  const m = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(header);
  if (!m) return errorResult(new AppError('auth_failed', 'Authorization must be "Bearer <token>"'), CHALLENGE);
  const v = await verifyWebhookToken(m[1]!, ctx.config.jwtSecret, ctx.clock.now());
  if (!v.ok) return errorResult(new AppError('auth_failed', `Invalid bearer token: ${v.reason}`), { 'www-authenticate': 'Bearer error="invalid_token"' });
  return null;
}

export const routes = {
  handlers: {
    async receiveTagUpdate(req, ctx) {
      const denied = await checkBearer(req, ctx);
      if (denied) return denied;
      const { deliveredTo } = await acceptTagUpdate(ctx, req.body);
      return { status: 202, body: { status: 'accepted', delivered_to: deliveredTo } };
    },
  },
  validationFail: {
    async receiveTagUpdate(req, ctx, errors: ValidationIssue[]) {
      const denied = await checkBearer(req, ctx);
      if (denied) return denied;
      return errorResult(new AppError('validation_error', 'The request does not match the contract', { details: { errors } }));
    },
  },
} satisfies RouteModule<operations>;
