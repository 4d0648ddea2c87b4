/** Ownership routes (spec 4.10, README "Ownership transfers"): thin adapters from the contract to the verbs. */
import type { operations } from '../../../gen/openapi/control-plane.js';
import type { RouteModule } from '../../shared/service.js';
import { AppError } from '../../shared/errors.js';
import { whoOf } from '../../shared/http/who.js';
import { acceptTransfer } from '../../core/ownership/accept-transfer.js';
import { cancelTransfer, rejectTransfer } from '../../core/ownership/close-transfer.js';
import { deactivateOwner } from '../../core/ownership/deactivate-owner.js';
import { startTransferExpiryJob } from '../../core/ownership/expire-transfers.js';
import { forceAssignTransfer } from '../../core/ownership/force-assign.js';
import { getOwnershipHistory } from '../../core/ownership/ownership-history.js';
import { requestTransfer } from '../../core/ownership/request-transfer.js';

/** The acceptance token: header X-Acceptance-Token or body acceptance_token; both given must agree. */
function tokenOf(headers: Record<string, string>, body: { acceptance_token?: string } | undefined): string | null {
  const h = headers['x-acceptance-token'] || undefined;
  const b = body?.acceptance_token;
  if (h !== undefined && b !== undefined && h !== b) {
    const message = 'acceptance token differs between the X-Acceptance-Token header and the body';
    throw new AppError('validation_error', message, { details: { errors: [{ path: '/body/acceptance_token', rule: 'acceptance_token', message }] } });
  }
  return h ?? b ?? null;
}

export const routes = {
  handlers: {
    // The body carries the acceptance token: no cache may keep it.
    createOwnershipTransfer: async (req, ctx) => ({
      status: 201,
      body: await requestTransfer(ctx, req.params.agent_id, req.body, whoOf(req)),
      headers: { 'cache-control': 'no-store' },
    }),
    acceptOwnershipTransfer: async (req, ctx) => ({
      status: 200,
      body: await acceptTransfer(ctx, req.params.agent_id, req.params.transfer_id, tokenOf(req.headers, req.body), whoOf(req)),
    }),
    rejectOwnershipTransfer: async (req, ctx) => ({
      status: 200,
      body: await rejectTransfer(ctx, req.params.agent_id, req.params.transfer_id, tokenOf(req.headers, req.body), whoOf(req)),
    }),
    cancelOwnershipTransfer: async (req, ctx) => ({ status: 200, body: await cancelTransfer(ctx, req.params.agent_id, req.params.transfer_id, whoOf(req)) }),
    forceAssignOwnershipTransfer: async (req, ctx) => ({
      status: 200,
      body: await forceAssignTransfer(ctx, req.params.agent_id, req.params.transfer_id, req.body, whoOf(req)),
    }),
    getOwnershipHistory: async (req, ctx) => ({ status: 200, body: await getOwnershipHistory(ctx, req.params.agent_id) }),
    // The body carries the new transfers' acceptance tokens: no cache may keep it.
    deactivateOwner: async (req, ctx) => ({ status: 200, body: await deactivateOwner(ctx, req.params.owner_id, whoOf(req)), headers: { 'cache-control': 'no-store' } }),
  },
  start: (ctx) => startTransferExpiryJob(ctx),
} satisfies RouteModule<operations>;
