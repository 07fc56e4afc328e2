/**
 * Meta routes:
 * - GET /v1/capabilities  → listCapabilitiesHandler (the selected tenant, if any, is passed on)
 * - GET /v1/health        → getHealthHandler (200 for `ok` and `degraded` alike: the body says which
 *   connectors are not ready; a runtime that cannot be built fails every route with 500)
 * - GET /v1/openapi.json  → getOpenApiHandler (public; needs no runtime)
 */
import { buildOpenApiDocument } from '../shared/openapi.js';
import { createRouteHandler, type HttpDeps, type ProxyHandler } from '../shared/route-handler.js';
import { productionRuntime } from '../shared/production-runtime.js';
import { ROUTES } from '../../lib/http/routes.js';

export function createListCapabilitiesHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(ROUTES.listCapabilities, deps, async ({ caller, tenant_id, runtime }) => {
    const rt = await runtime();
    return { status: 200, body: await rt.capabilities(caller, tenant_id) };
  });
}

export function createGetHealthHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(ROUTES.getHealth, deps, async ({ caller, runtime }) => {
    const rt = await runtime();
    return { status: 200, body: await rt.health(caller) };
  });
}

let openApiDocument: unknown;

export function createGetOpenApiHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(ROUTES.getOpenApi, deps, async () => {
    openApiDocument ??= buildOpenApiDocument();
    return { status: 200, body: openApiDocument };
  });
}

const production: HttpDeps = { runtime: productionRuntime };

/** Deployed handlers (functions/http/meta.<name>). */
export const listCapabilitiesHandler = createListCapabilitiesHandler(production);
export const getHealthHandler = createGetHealthHandler(production);
export const getOpenApiHandler = createGetOpenApiHandler(production);
