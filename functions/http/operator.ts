/**
 * Operator routes (operator scope at the edge; the runtime's authority rule decides):
 * - GET  /v1/operator/overview                        → operatorOverviewHandler
 * - POST /v1/operator/transactions/{id}/reconcile     → operatorReconcileHandler
 * - POST /v1/operator/transactions/{id}/resolve       → operatorResolveHandler
 */
import { createRouteHandler, type HttpDeps, type ProxyHandler } from '../shared/route-handler.js';
import { productionRuntime } from '../shared/production-runtime.js';
import { ROUTES } from '../../lib/http/routes.js';

export function createOperatorOverviewHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(ROUTES.operatorOverview, deps, async ({ caller, tenant_id, runtime }) => {
    const rt = await runtime();
    return { status: 200, body: await rt.operatorOverview(caller, tenant_id) };
  });
}

export function createOperatorReconcileHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(ROUTES.operatorReconcile, deps, async ({ caller, tenant_id, path, body, runtime }) => {
    const rt = await runtime();
    return { status: 202, body: await rt.requestReconcile(caller, tenant_id as string, path.id, body.reason !== undefined ? { reason: body.reason } : {}) };
  });
}

export function createOperatorResolveHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(ROUTES.operatorResolve, deps, async ({ caller, tenant_id, path, body, runtime }) => {
    const rt = await runtime();
    const out = await rt.resolve(caller, tenant_id as string, path.id, body);
    return { status: 'approval' in out ? 202 : 200, body: out };
  });
}

const production: HttpDeps = { runtime: productionRuntime };

/** Deployed handlers (functions/http/operator.<name>). */
export const operatorOverviewHandler = createOperatorOverviewHandler(production);
export const operatorReconcileHandler = createOperatorReconcileHandler(production);
export const operatorResolveHandler = createOperatorResolveHandler(production);
