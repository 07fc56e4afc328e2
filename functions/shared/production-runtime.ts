/**
 * The runtime the deployed HTTP handlers use: the container-wide Runtime of
 * the composition root (./bootstrap.ts `getRuntime`, built lazily from the
 * function environment on the first invocation; in-process hosts install
 * their own with `installRuntime`), adapted to the edge's RuntimeApi.
 *
 * Under provisioned concurrency (`api.provisionedConcurrency`, docs/infra.md)
 * the Runtime is built during INIT instead: {@link composeAtProvisionedInit}.
 *
 * The `CoreRuntime` assignment is the compile-time check that the Runtime
 * satisfies the edge's contract (capabilities and health included). If the
 * two drift, tsc reports it here; adapt here, not in the handlers.
 */
import { getRuntime } from './bootstrap.js';
import type { RuntimeApi } from './runtime-api.js';

/** The Runtime implements the optional methods too (the wait's pollAction). */
export type CoreRuntime = RuntimeApi & Required<Pick<RuntimeApi, 'pollAction'>>;

export function toRuntimeApi(core: CoreRuntime): RuntimeApi {
  return {
    submit: (caller, body, opts) => core.submit(caller, body, opts),
    getAction: (caller, tenant, id) => core.getAction(caller, tenant, id),
    getActionResult: (caller, tenant, id) => core.getActionResult(caller, tenant, id),
    getActionTimed: (caller, tenant, id) => core.getActionTimed(caller, tenant, id),
    pollAction: (caller, tenant, id, full) => core.pollAction(caller, tenant, id, full),
    cancel: (caller, tenant, id) => core.cancel(caller, tenant, id),
    readStream: (caller, tenant, id, after) => core.readStream(caller, tenant, id, after),
    getTransaction: (caller, selector, include) => core.getTransaction(caller, selector, include),
    listOperator: (caller, query) => core.listOperator(caller, query),
    listApprovals: (caller, tenant, page) => core.listApprovals(caller, tenant, page),
    getApproval: (caller, tenant, id) => core.getApproval(caller, tenant, id),
    decideApproval: (caller, tenant, id, decision) => core.decideApproval(caller, tenant, id, decision),
    capabilities: (caller, tenant) => core.capabilities(caller, tenant),
    health: (caller) => core.health(caller),
    operatorOverview: (caller, tenant) => core.operatorOverview(caller, tenant),
    requestReconcile: (caller, tenant, id, input) => core.requestReconcile(caller, tenant, id, input),
    resolve: (caller, tenant, id, resolution) => core.resolve(caller, tenant, id, resolution),
  };
}

let adapted: { core: unknown; api: RuntimeApi } | undefined;

export async function productionRuntime(): Promise<RuntimeApi> {
  const core: CoreRuntime = await getRuntime();
  if (adapted?.core !== core) adapted = { core, api: toRuntimeApi(core) };
  return adapted.api;
}

/** AWS_LAMBDA_INITIALIZATION_TYPE of an environment Lambda initializes for provisioned concurrency. */
export const PROVISIONED_INITIALIZATION = 'provisioned-concurrency';

/**
 * Builds the Runtime during INIT when Lambda initializes the environment for provisioned concurrency: that INIT runs
 * before any request reaches the environment, so its first request finds the Runtime built (docs/bench/analysis.md,
 * "Issue 22: provisioned concurrency"). The bundle of a function with provisioned concurrency awaits this at its top
 * level (infra/bundling.ts `provisionedEntryPlugin`); no other bundle calls it. An environment of such a function
 * that Lambda starts on demand (beyond the provisioned count) builds the Runtime on its first request, as every other
 * function does. Nothing is sent during the build: the stores and clients are made, no request leaves. A failed
 * build is not kept (./bootstrap.ts `getRuntime`): the first request builds again, and its logs and answer show the
 * failure. Resolves whether it built.
 */
export async function composeAtProvisionedInit(env: NodeJS.ProcessEnv, build: () => Promise<unknown> = productionRuntime): Promise<boolean> {
  if (env.AWS_LAMBDA_INITIALIZATION_TYPE !== PROVISIONED_INITIALIZATION) return false;
  try {
    await build();
    return true;
  } catch {
    return false;
  }
}
