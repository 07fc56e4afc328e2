/**
 * The Lambda functions of the AIP runtime, as {@link FunctionDefinition}s:
 *
 * - one function per HTTP route of THE route table (lib/http/routes.ts),
 *   generated from it, so the API can never drift from the handlers; routes
 *   that name the same module and export share one function;
 * - the JWT authorizer (functions/authorizer.ts), with the REST API only (the
 *   HTTP API uses API Gateway's built-in JWT authorizer);
 * - the invoke worker and the reconcile consumer (SQS event sources with
 *   partial batch responses);
 * - the sweeper, run by an EventBridge rule every minute.
 *
 * Grants are per function and follow what the Runtime does on each path
 * (see {@link ROUTE_ACCESS} and docs/infra.md, "Least privilege").
 */
import { Duration } from 'aws-cdk-lib';
import { ROUTE_LIST, type RouteDefinition, type RouteId } from '../lib/http/routes.js';
import type { InfraConfig } from './config.js';
import type { FunctionAccess, FunctionDefinition } from './functions.js';

/**
 * What each route's Runtime path touches. Keyed by every route ID, so adding a
 * route to the table without deciding its grants fails the typecheck here.
 *
 * - Reads (`getAction`, `streamAction`, `getTransaction`, `listOperator`) only
 *   read the table.
 * - `listApprovals` and `getApproval` write: they expire lapsed approvals and
 *   withdraw doomed ones on the way.
 * - `listOperator` and `listApprovals` read the cursor key secret: they seal
 *   the cursors they return and open the ones they get (lib/runtime/cursor.ts).
 * - `submitAction` admits (table writes), enqueues the invocation, and runs
 *   `downstream_validation`/`full_simulation` previews inline, which resolve
 *   connector credentials; with `attemptWhenWaited: 'inline'` it also runs a
 *   waited execute's first attempt, hence the schedule grant
 *   (`withInlineAttempt` below).
 * - `decideApproval` resumes an approved action: table writes and the enqueue.
 *   Approving an operator's resolution applies it, and `operatorResolve`
 *   resolves: both first look the operation up at the provider through the
 *   connector (lib/runtime/provider-lookup.ts), which resolves its credentials.
 * - `cancelAction` only writes the table.
 * - `getHealth` may probe the store; `listCapabilities` reads the admitted
 *   manifests (built from code, not the table); `getOpenApi` needs nothing.
 * - `mcp` does what submitAction, getAction, cancelAction, getTransaction and
 *   listApprovals do (docs/mcp.md); `mcpStream` (its GET, always 405) shares its function and grants.
 */
export const ROUTE_ACCESS = {
  submitAction: { table: 'readWrite', sendTo: ['invoke'], connectorSecrets: true },
  getAction: { table: 'read' },
  cancelAction: { table: 'readWrite' },
  streamAction: { table: 'read' },
  getTransaction: { table: 'read' },
  listOperator: { table: 'read', cursorKey: true },
  operatorOverview: { table: 'read' },
  operatorReconcile: { table: 'readWrite', sendTo: ['reconcile'] },
  operatorResolve: { table: 'readWrite', cancelSchedules: true, connectorSecrets: true },
  listApprovals: { table: 'readWrite', cursorKey: true },
  // Like the listing: an overdue approval is expired, a doomed one withdrawn, on the way.
  getApproval: { table: 'readWrite' },
  // An approved resolution (four eyes) settles the record and cancels its schedule.
  decideApproval: { table: 'readWrite', sendTo: ['invoke'], cancelSchedules: true, connectorSecrets: true },
  listCapabilities: {},
  getHealth: { table: 'read' },
  getOpenApi: {},
  // Every tools/call submits (as submitAction), tasks/cancel cancels, tasks/get and the read tools read, and
  // aip.list_pending_approvals lists approvals (expiring lapsed ones) with sealed cursors.
  mcp: { table: 'readWrite', sendTo: ['invoke'], connectorSecrets: true, cursorKey: true },
  // The GET of /v1/mcp (always 405) shares the POST's function, so its grants are the function's.
  mcpStream: { table: 'readWrite', sendTo: ['invoke'], connectorSecrets: true, cursorKey: true },
} as const satisfies Record<RouteId, FunctionAccess>;

/** `submitAction` → `SubmitAction`. */
function pascal(id: string): string {
  return id.charAt(0).toUpperCase() + id.slice(1);
}

function mergeAccess(accesses: readonly FunctionAccess[]): FunctionAccess {
  const table = accesses.some((a) => a.table === 'readWrite') ? 'readWrite' : accesses.some((a) => a.table === 'read') ? 'read' : undefined;
  const sendTo = [...new Set(accesses.flatMap((a) => a.sendTo ?? []))];
  return {
    ...(table ? { table } : {}),
    ...(sendTo.length > 0 ? { sendTo } : {}),
    ...(accesses.some((a) => a.reconcileSchedules) ? { reconcileSchedules: true } : {}),
    ...(accesses.some((a) => a.cancelSchedules) ? { cancelSchedules: true } : {}),
    ...(accesses.some((a) => a.connectorSecrets) ? { connectorSecrets: true } : {}),
    ...(accesses.some((a) => a.cursorKey) ? { cursorKey: true } : {}),
  };
}

/** API Gateway's default (and, without a quota increase, maximum) REST integration timeout. */
export const API_INTEGRATION_TIMEOUT_SECONDS = 29;

/**
 * One definition per distinct handler (module + export) of the route table.
 * The timeout is the longest the grouped routes suggest.
 */
export function routeFunctionDefinitions(routes: readonly RouteDefinition[] = ROUTE_LIST): FunctionDefinition[] {
  const groups = new Map<string, RouteDefinition[]>();
  for (const route of routes) {
    const key = `${route.handler.module}#${route.handler.export}`;
    groups.set(key, [...(groups.get(key) ?? []), route]);
  }
  for (const route of routes) {
    if (route.timeoutSeconds < 1 || route.timeoutSeconds > API_INTEGRATION_TIMEOUT_SECONDS) {
      throw new Error(
        `Route ${route.id} suggests a ${route.timeoutSeconds} s timeout; API Gateway stops waiting for a REST integration after ` +
          `${API_INTEGRATION_TIMEOUT_SECONDS} s, so a route function may run 1-${API_INTEGRATION_TIMEOUT_SECONDS} s`,
      );
    }
  }
  return [...groups.values()].map((group) => {
    const first = group[0]!;
    const ids = group.map((route) => route.id as RouteId);
    return {
      id: `Http${pascal(first.id)}`,
      entry: first.handler.module,
      handler: first.handler.export,
      description: `HTTP ${group.map((route) => `${route.method} ${route.path}`).join(', ')}`,
      timeout: Duration.seconds(Math.max(...group.map((route) => route.timeoutSeconds))),
      trigger: { kind: 'api', routes: ids },
      access: mergeAccess(ids.map((id) => ROUTE_ACCESS[id])),
    };
  });
}

export const AUTHORIZER_FUNCTION_ID = 'Authorizer';
export const INVOKE_WORKER_FUNCTION_ID = 'InvokeWorker';
export const RECONCILE_CONSUMER_FUNCTION_ID = 'ReconcileConsumer';
export const SWEEPER_FUNCTION_ID = 'Sweeper';

/** Records per SQS batch. Each record is an independent attempt; a small batch bounds what one timeout sends back to the queue. */
export const INVOKE_BATCH_SIZE = 5;
export const RECONCILE_BATCH_SIZE = 5;
export const SWEEPER_TIMEOUT = Duration.seconds(60);

/**
 * `attemptWhenWaited: 'inline'`: the submit function runs the first attempt of an action whose client waits
 * (lib/runtime/pipeline/inline-attempt.ts), so it may settle it as `outcome_unknown`, which creates the one-time
 * reconciliation schedule (and deletes it when a later write settles it): the worker's `reconcileSchedules` grant.
 * It already reads the connector secrets (previews) and, with remote placement, invokes the connector host (every
 * function with table access). `queue` leaves the submit function without it (docs/infra.md, "Least privilege").
 */
function withInlineAttempt(config: InfraConfig, definition: FunctionDefinition): FunctionDefinition {
  const submits = definition.trigger?.kind === 'api' && definition.trigger.routes.includes('submitAction');
  if (!submits || config.attemptWhenWaited !== 'inline') return definition;
  return { ...definition, access: { ...definition.access, reconcileSchedules: true } };
}

/**
 * `api.provisionedConcurrency` (route ID → environments) applied to the functions that serve those routes; a function
 * serving two of them takes the larger count. A route ID the route table does not have is refused at synth.
 */
function withProvisionedConcurrency(config: InfraConfig, definitions: FunctionDefinition[]): FunctionDefinition[] {
  const wanted = config.api.provisionedConcurrency;
  const known = new Set(ROUTE_LIST.map((route) => route.id));
  const unknown = Object.keys(wanted).filter((id) => !known.has(id as RouteId));
  if (unknown.length > 0) {
    throw new Error(`api.provisionedConcurrency names no route of the route table: ${unknown.join(', ')} (one of ${[...known].join(', ')})`);
  }
  return definitions.map((definition) => {
    if (definition.trigger?.kind !== 'api') return definition;
    const counts = definition.trigger.routes.flatMap((id) => (wanted[id] !== undefined ? [wanted[id]] : []));
    return counts.length === 0 ? definition : { ...definition, provisionedConcurrency: Math.max(...counts) };
  });
}

/** The REST API's JWT authorizer (functions/authorizer.ts). */
export function authorizerFunctionDefinition(): FunctionDefinition {
  return {
    id: AUTHORIZER_FUNCTION_ID,
    entry: 'functions/authorizer.ts',
    handler: 'handler',
    description: 'Verifies JWT bearer tokens for the REST API (Lambda TOKEN authorizer)',
    // API Gateway waits at most 29 s for the whole request; a JWKS fetch that takes longer has failed anyway.
    timeout: Duration.seconds(10),
    trigger: { kind: 'authorizer' },
    // No data access: it needs the configuration (issuer, audience, JWKS URL) and the network.
    access: {},
  };
}

/** Every function of the runtime for a configuration (the default of `defineAipApp`). */
export function aipFunctionDefinitions(config: InfraConfig): FunctionDefinition[] {
  return [
    ...withProvisionedConcurrency(
      config,
      routeFunctionDefinitions().map((definition) => withInlineAttempt(config, definition)),
    ),
    // The REST API's Lambda TOKEN authorizer; the HTTP API verifies tokens with API Gateway's built-in JWT authorizer instead.
    ...(config.api.type === 'rest' ? [authorizerFunctionDefinition()] : []),
    {
      id: INVOKE_WORKER_FUNCTION_ID,
      entry: 'functions/worker/invoke.ts',
      handler: 'handler',
      description: 'Runs connector invocations from the invoke queue (crash-safe attempts)',
      timeout: Duration.seconds(config.workerTimeoutSeconds),
      consumes: { queue: 'invoke', batchSize: INVOKE_BATCH_SIZE, maxConcurrency: config.workerMaxConcurrency },
      ...(config.workerReservedConcurrency !== undefined ? { reservedConcurrency: config.workerReservedConcurrency } : {}),
      alarmOnErrors: true,
      // Settling an attempt as outcome_unknown creates the one-time reconciliation schedule.
      access: { table: 'readWrite', reconcileSchedules: true, connectorSecrets: true },
    },
    {
      id: RECONCILE_CONSUMER_FUNCTION_ID,
      entry: 'functions/worker/reconcile.ts',
      handler: 'handler',
      description: 'Reconciles outcome_unknown transactions from the reconcile queue',
      timeout: Duration.seconds(config.reconcilerTimeoutSeconds),
      consumes: { queue: 'reconcile', batchSize: RECONCILE_BATCH_SIZE, maxConcurrency: config.reconcilerMaxConcurrency },
      ...(config.reconcilerReservedConcurrency !== undefined ? { reservedConcurrency: config.reconcilerReservedConcurrency } : {}),
      alarmOnErrors: true,
      // Runs the reconcile action inline (provider call), moves the schedule after an unresolved try, deletes it on settlement.
      access: { table: 'readWrite', reconcileSchedules: true, connectorSecrets: true },
    },
    {
      id: SWEEPER_FUNCTION_ID,
      entry: 'functions/scheduled/sweeper.ts',
      handler: 'handler',
      description: 'Every minute: enqueues overdue reconciliations and stalled attempts, expires plans and approvals',
      timeout: SWEEPER_TIMEOUT,
      trigger: { kind: 'schedule', every: Duration.minutes(1) },
      // A failed sweep is not retried: the next minute's run does the same work.
      asyncRetryAttempts: 0,
      alarmOnErrors: true,
      access: { table: 'readWrite', sendTo: ['invoke', 'reconcile'] },
    },
  ];
}
