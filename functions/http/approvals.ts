/**
 * Approval routes:
 * - GET  /v1/approvals                → listApprovalsHandler
 * - GET  /v1/approvals/{id}           → getApprovalHandler
 * - POST /v1/approvals/{id}/decision  → decideApprovalHandler
 */
import { createRouteHandler, type HttpDeps, type ProxyHandler } from '../shared/route-handler.js';
import { productionRuntime } from '../shared/production-runtime.js';
import { ROUTES } from '../../lib/http/routes.js';

export function createListApprovalsHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(ROUTES.listApprovals, deps, async ({ caller, tenant_id, query, runtime }) => {
    const rt = await runtime();
    const page = {
      ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
      ...(query.limit !== undefined ? { limit: query.limit } : {}),
    };
    return { status: 200, body: await rt.listApprovals(caller, tenant_id as string, page) };
  });
}

export function createGetApprovalHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(ROUTES.getApproval, deps, async ({ caller, tenant_id, path, runtime }) => {
    const rt = await runtime();
    return { status: 200, body: await rt.getApproval(caller, tenant_id as string, path.id) };
  });
}

export function createDecideApprovalHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(ROUTES.decideApproval, deps, async ({ caller, tenant_id, path, body, runtime }) => {
    const rt = await runtime();
    const decision = { decision: body.decision, ...(body.reason !== undefined ? { reason: body.reason } : {}) };
    return { status: 200, body: await rt.decideApproval(caller, tenant_id as string, path.id, decision) };
  });
}

const production: HttpDeps = { runtime: productionRuntime };

/** Deployed handlers (functions/http/approvals.<name>). */
export const listApprovalsHandler = createListApprovalsHandler(production);
export const getApprovalHandler = createGetApprovalHandler(production);
export const decideApprovalHandler = createDecideApprovalHandler(production);
