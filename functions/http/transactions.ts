/**
 * Transaction routes:
 * - GET /v1/transactions            → getTransactionHandler
 * - GET /v1/operator/transactions   → listOperatorHandler
 */
import { createRouteHandler, type HttpDeps, type ProxyHandler } from '../shared/route-handler.js';
import { productionRuntime } from '../shared/production-runtime.js';
import type { TransactionSelector } from '../shared/runtime-api.js';
import { ROUTES } from '../../lib/http/routes.js';

export function createGetTransactionHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(ROUTES.getTransaction, deps, async ({ caller, tenant_id, query, runtime }) => {
    const selector: TransactionSelector = { tenant_id: tenant_id as string };
    if (query.transaction_id !== undefined) selector.transaction_id = query.transaction_id;
    if (query.plan_id !== undefined) selector.plan_id = query.plan_id;
    if (query.action_id !== undefined) selector.action_id = query.action_id;
    const include = query.include ?? { result: false, receipts: false };
    const rt = await runtime();
    return { status: 200, body: await rt.getTransaction(caller, selector, include) };
  });
}

export function createListOperatorHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(ROUTES.listOperator, deps, async ({ caller, tenant_id, query, runtime }) => {
    const rt = await runtime();
    const body = await rt.listOperator(caller, {
      view: query.view,
      ...(tenant_id !== undefined ? { tenant_id } : {}),
      ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
      ...(query.limit !== undefined ? { limit: query.limit } : {}),
    });
    return { status: 200, body };
  });
}

const production: HttpDeps = { runtime: productionRuntime };

/** Deployed handlers (functions/http/transactions.<name>). */
export const getTransactionHandler = createGetTransactionHandler(production);
export const listOperatorHandler = createListOperatorHandler(production);
