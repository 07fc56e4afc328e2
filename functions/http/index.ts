/**
 * Every HTTP route's handler, built with the given dependencies: what the
 * local HTTP server (dev/local/http-server.ts) and the end-to-end tests run.
 * The deployed Lambdas use the per-module exports the route table names
 * (lib/http/routes.ts, `handler`).
 */
import type { RouteId } from '../../lib/http/routes.js';
import type { HttpDeps, ProxyHandler } from '../shared/route-handler.js';
import { createCancelActionHandler, createGetActionHandler, createStreamActionHandler, createSubmitActionHandler } from './actions.js';
import { createDecideApprovalHandler, createGetApprovalHandler, createListApprovalsHandler } from './approvals.js';
import { createGetHealthHandler, createGetOpenApiHandler, createListCapabilitiesHandler } from './meta.js';
import { createOperatorOverviewHandler, createOperatorReconcileHandler, createOperatorResolveHandler } from './operator.js';
import { createGetTransactionHandler, createListOperatorHandler } from './transactions.js';
import { createMcpGetHandler, createMcpPostHandler } from './mcp.js';

export function createHttpHandlers(deps: HttpDeps): Record<RouteId, ProxyHandler> {
  return {
    submitAction: createSubmitActionHandler(deps),
    getAction: createGetActionHandler(deps),
    cancelAction: createCancelActionHandler(deps),
    streamAction: createStreamActionHandler(deps),
    getTransaction: createGetTransactionHandler(deps),
    listOperator: createListOperatorHandler(deps),
    operatorOverview: createOperatorOverviewHandler(deps),
    operatorReconcile: createOperatorReconcileHandler(deps),
    operatorResolve: createOperatorResolveHandler(deps),
    listApprovals: createListApprovalsHandler(deps),
    getApproval: createGetApprovalHandler(deps),
    decideApproval: createDecideApprovalHandler(deps),
    listCapabilities: createListCapabilitiesHandler(deps),
    getHealth: createGetHealthHandler(deps),
    getOpenApi: createGetOpenApiHandler(deps),
    mcp: createMcpPostHandler(deps),
    mcpStream: createMcpGetHandler(deps),
  };
}

export type { HttpDeps, ProxyHandler };
