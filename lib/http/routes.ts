/**
 * THE route table of the HTTPS API (API Gateway REST API, proxy integration).
 *
 * One entry per route: method and resource path (API Gateway syntax,
 * `{id}`), authentication, the scopes one of which the caller needs, the
 * tenant requirement, the zod schemas of path, query and body, the documented
 * responses, and the Lambda entry (module path relative to the repository
 * root + exported handler name) that serves it.
 *
 * Shared by:
 * - the handlers (functions/http/*.ts), which build their middy chain from their entry
 *   (functions/shared/route-handler.ts);
 * - the local HTTP server (dev/local/http-server.ts), which matches requests with {@link matchRoute};
 * - the CDK stateless stack, which creates one method per entry;
 * - the OpenAPI generator (functions/shared/openapi.ts).
 *
 * Data only: it imports no handler code (only schemas) and names each Lambda
 * entry by its module path, so the CDK app and the local server import it cheaply.
 */
import type * as z from '../common/zod.js';
import { OPERATOR_SCOPE } from '../auth/scopes.js';
import {
  ActionPathSchema,
  ActionStateSchema,
  ApprovalPathSchema,
  CancelBodySchema,
  CapabilityListSchema,
  DecisionBodySchema,
  EmptyQuerySchema,
  GetActionQuerySchema,
  GetTransactionQuerySchema,
  HealthSchema,
  OperatorReconcileBodySchema,
  ResolveBodySchema,
  TransactionPathSchema,
  OperatorQuerySchema,
  PageQuerySchema,
  RuntimeObjectSchema,
  StreamQuerySchema,
  SubmitBodySchema,
  SubmitResponseSchema,
  TransactionResultSchema,
} from './schemas.js';

export type HttpMethod = 'GET' | 'POST';
/**
 * Whether a route needs a selected tenant (X-AIP-Tenant, or the caller's only
 * tenant): `required`; `optional` (without one, the runtime answers across
 * the caller's tenants); `none` (no tenant selection at all).
 */
export type TenantRequirement = 'required' | 'optional' | 'none';
export type BodyPolicy = 'none' | 'optional' | 'required';

/** Scopes the edge checks (any one of a route's list suffices). */
export const SCOPES = {
  actionsRead: 'aip:actions:read',
  actionsWrite: 'aip:actions:write',
  operator: OPERATOR_SCOPE,
} as const;

export interface RouteResponse {
  readonly description: string;
  /** Body schema; absent for problem responses (they use the Problem schema). */
  readonly schema?: z.ZodMiniType;
  /** Response headers worth documenting. */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface RouteDefinition<P extends z.ZodMiniType = z.ZodMiniType, Q extends z.ZodMiniType = z.ZodMiniType, B extends z.ZodMiniType = z.ZodMiniType> {
  readonly id: string;
  readonly method: HttpMethod;
  /** API Gateway resource path, e.g. `/v1/actions/{id}`. */
  readonly path: string;
  readonly summary: string;
  readonly description: string;
  readonly tag: string;
  /** `jwt`: the Lambda authorizer runs first; `none`: public. */
  readonly auth: 'jwt' | 'none';
  /** The caller needs at least one of these scopes; empty: any authenticated caller. */
  readonly scopes: readonly string[];
  readonly tenant: TenantRequirement;
  readonly pathParams?: P;
  readonly query: Q;
  readonly body: BodyPolicy;
  /** Documented body schema (POST /v1/actions is validated by the protocol envelope validator). */
  readonly bodySchema?: B;
  /** Whether the route honours `Prefer: wait=N`. */
  readonly preferWait?: boolean;
  /** Success responses by status; every route also documents its problem responses. */
  readonly responses: Readonly<Record<number, RouteResponse>>;
  /** Problem statuses the route can answer with (besides 401/403 from the authorizer and 500). */
  readonly problems: readonly number[];
  /** Lambda entry: module relative to the repository root, and exported handler. */
  readonly handler: { readonly module: string; readonly export: string };
  /** Suggested Lambda timeout (API Gateway's integration limit is 29 s). */
  readonly timeoutSeconds: number;
}

function route<P extends z.ZodMiniType, Q extends z.ZodMiniType, B extends z.ZodMiniType>(r: RouteDefinition<P, Q, B>): RouteDefinition<P, Q, B> {
  return r;
}

const ACTIONS_MODULE = 'functions/http/actions.ts';
const TRANSACTIONS_MODULE = 'functions/http/transactions.ts';
const APPROVALS_MODULE = 'functions/http/approvals.ts';
const META_MODULE = 'functions/http/meta.ts';
const OPERATOR_MODULE = 'functions/http/operator.ts';
const MCP_MODULE = 'functions/http/mcp.ts';

const LOCATION_HEADERS = {
  Location: 'The action status URL (GET it, optionally with ?wait=N)',
  'Retry-After': 'Seconds to wait before polling',
};

export const ROUTES = {
  submitAction: route({
    id: 'submitAction',
    method: 'POST',
    path: '/v1/actions',
    summary: 'Submit an action',
    description:
      'Admits a native action envelope or a TransactionRequest. 202 with the status URL when the connector is invoked through the queue ' +
      '(or the action waits for a human approval); 200/201 when the runtime answers by itself (schema-only previews, plans, replays); ' +
      '422 with the failed action result when admission rejected it. With `Prefer: wait=N` (N at most 25) the call waits up to N seconds ' +
      'for a queued action to finish and then answers 200 with its terminal result.',
    tag: 'actions',
    auth: 'jwt',
    scopes: [SCOPES.actionsWrite],
    tenant: 'required',
    query: EmptyQuerySchema,
    body: 'required',
    bodySchema: SubmitBodySchema,
    preferWait: true,
    responses: {
      200: { description: 'Answered by the runtime, or finished within the Prefer: wait window', schema: SubmitResponseSchema },
      201: { description: 'Created and answered by the runtime', schema: SubmitResponseSchema },
      202: {
        description: 'Accepted: the connector runs through the queue, or the action waits for an approval',
        schema: SubmitResponseSchema,
        headers: LOCATION_HEADERS,
      },
      422: { description: 'Rejected at admission: the body carries the failed action result', schema: SubmitResponseSchema },
    },
    problems: [400, 404, 409, 413, 415, 503],
    handler: { module: ACTIONS_MODULE, export: 'submitActionHandler' },
    timeoutSeconds: 29,
  }),
  getAction: route({
    id: 'getAction',
    method: 'GET',
    path: '/v1/actions/{id}',
    summary: 'Get an action’s status and result',
    description: 'With `?wait=N` (N at most 25) long-polls until the action reaches a terminal status or requires_human, or N seconds pass.',
    tag: 'actions',
    auth: 'jwt',
    scopes: [SCOPES.actionsRead, SCOPES.actionsWrite],
    tenant: 'required',
    pathParams: ActionPathSchema,
    query: GetActionQuerySchema,
    body: 'none',
    responses: { 200: { description: 'The action result (and its transaction, if any)', schema: ActionStateSchema } },
    problems: [400, 404],
    handler: { module: ACTIONS_MODULE, export: 'getActionHandler' },
    timeoutSeconds: 29,
  }),
  cancelAction: route({
    id: 'cancelAction',
    method: 'POST',
    path: '/v1/actions/{id}/cancel',
    summary: 'Cancel an action',
    description: 'Requests cancellation. The body may be omitted or be an empty JSON object.',
    tag: 'actions',
    auth: 'jwt',
    scopes: [SCOPES.actionsWrite],
    tenant: 'required',
    pathParams: ActionPathSchema,
    query: EmptyQuerySchema,
    body: 'optional',
    bodySchema: CancelBodySchema,
    responses: { 200: { description: 'The cancellation outcome', schema: RuntimeObjectSchema } },
    problems: [400, 404, 409, 415],
    handler: { module: ACTIONS_MODULE, export: 'cancelActionHandler' },
    timeoutSeconds: 10,
  }),
  streamAction: route({
    id: 'streamAction',
    method: 'GET',
    path: '/v1/actions/{id}/stream',
    summary: 'Read an action’s persisted stream chunks',
    description: 'Chunks with a sequence number greater than `after`, in order.',
    tag: 'actions',
    auth: 'jwt',
    scopes: [SCOPES.actionsRead, SCOPES.actionsWrite],
    tenant: 'required',
    pathParams: ActionPathSchema,
    query: StreamQuerySchema,
    body: 'none',
    responses: { 200: { description: 'A page of stream chunks', schema: RuntimeObjectSchema } },
    problems: [400, 404],
    handler: { module: ACTIONS_MODULE, export: 'streamActionHandler' },
    timeoutSeconds: 10,
  }),
  getTransaction: route({
    id: 'getTransaction',
    method: 'GET',
    path: '/v1/transactions',
    summary: 'Get a transaction',
    description: 'Select by exactly one of transaction_id, plan_id or action_id; `include=result,receipts` adds the action result and the receipt chain.',
    tag: 'transactions',
    auth: 'jwt',
    scopes: [SCOPES.actionsRead, SCOPES.actionsWrite, SCOPES.operator],
    tenant: 'required',
    query: GetTransactionQuerySchema,
    body: 'none',
    responses: { 200: { description: 'The transaction', schema: TransactionResultSchema } },
    problems: [400, 404],
    handler: { module: TRANSACTIONS_MODULE, export: 'getTransactionHandler' },
    timeoutSeconds: 10,
  }),
  listOperator: route({
    id: 'listOperator',
    method: 'GET',
    path: '/v1/operator/transactions',
    summary: 'Operator listing of stuck work',
    description:
      'Lists by view: outcome_unknown, reconciling, stalled_committing, pending_approvals, requires_human. Paginated with cursor and limit. ' +
      'Without X-AIP-Tenant, a caller of several tenants gets all of them.',
    tag: 'operator',
    auth: 'jwt',
    scopes: [SCOPES.operator],
    tenant: 'optional',
    query: OperatorQuerySchema,
    body: 'none',
    responses: { 200: { description: 'A page of records', schema: RuntimeObjectSchema } },
    problems: [400],
    handler: { module: TRANSACTIONS_MODULE, export: 'listOperatorHandler' },
    timeoutSeconds: 10,
  }),
  operatorOverview: route({
    id: 'operatorOverview',
    method: 'GET',
    path: '/v1/operator/overview',
    summary: 'Operator overview of stuck work',
    description:
      'Each operator list (outcome_unknown, requires_human, reconciling, stalled_committing, pending_approvals) with the size of its first page ' +
      '(`more` when there is more) and the age of its oldest item. Without X-AIP-Tenant, a caller of several tenants gets all of them.',
    tag: 'operator',
    auth: 'jwt',
    scopes: [SCOPES.operator],
    tenant: 'optional',
    query: EmptyQuerySchema,
    body: 'none',
    responses: { 200: { description: 'The lists', schema: RuntimeObjectSchema } },
    problems: [400],
    handler: { module: OPERATOR_MODULE, export: 'operatorOverviewHandler' },
    timeoutSeconds: 10,
  }),
  operatorReconcile: route({
    id: 'operatorReconcile',
    method: 'POST',
    path: '/v1/operator/transactions/{id}/reconcile',
    summary: 'Reconcile now',
    description:
      'An operator asks for the reconciliation of an outcome_unknown transaction (escalated or not) now. The attempt bound is reset once; ' +
      'a receipt names the operator and the reason. The reconcile consumer runs it: poll the transaction.',
    tag: 'operator',
    auth: 'jwt',
    scopes: [SCOPES.operator],
    tenant: 'required',
    pathParams: TransactionPathSchema,
    query: EmptyQuerySchema,
    body: 'optional',
    bodySchema: OperatorReconcileBodySchema,
    responses: { 202: { description: 'Requested: the transaction as it is now', schema: RuntimeObjectSchema } },
    problems: [400, 404, 409, 415],
    handler: { module: OPERATOR_MODULE, export: 'operatorReconcileHandler' },
    timeoutSeconds: 10,
  }),
  operatorResolve: route({
    id: 'operatorResolve',
    method: 'POST',
    path: '/v1/operator/transactions/{id}/resolve',
    summary: 'Resolve an escalated transaction with evidence',
    description:
      'For a transaction escalated to a human (requires_human): the operator records what the provider says happened (`effect`), the ' +
      'provider operation if one was found, a reason and references to the evidence. The runtime first looks the operation up at the ' +
      'provider (the connector’s reconcile) and records its answer beside the operator’s; a resolution the provider contradicts is refused ' +
      '(409 operator.resolution_contradicts_provider) unless it carries provider_override with a reason. The transaction settles reconciled ' +
      'with all of it in its receipt (200), or, where the tenant policy asks for four eyes, waits for a second operator as an approval (202).',
    tag: 'operator',
    auth: 'jwt',
    scopes: [SCOPES.operator],
    tenant: 'required',
    pathParams: TransactionPathSchema,
    query: EmptyQuerySchema,
    body: 'required',
    bodySchema: ResolveBodySchema,
    responses: {
      200: { description: 'Resolved: the transaction, reconciled', schema: RuntimeObjectSchema },
      202: { description: 'Waiting for a second operator: the approval', schema: RuntimeObjectSchema },
    },
    problems: [400, 404, 409, 415],
    handler: { module: OPERATOR_MODULE, export: 'operatorResolveHandler' },
    // The provider lookup (resolution.provider_lookup_timeout_ms, 5 s by default, at most 15 s) and the writes.
    timeoutSeconds: 20,
  }),
  listApprovals: route({
    id: 'listApprovals',
    method: 'GET',
    path: '/v1/approvals',
    summary: 'List pending approvals',
    description:
      'Pending approvals of the tenant, oldest expiry first: an approver (any one of an approval policy’s approver scopes) or an operator sees every one, ' +
      'any other member only those requested for them (docs/authority.md). Paginated with an opaque cursor bound to the caller and the listing.',
    tag: 'approvals',
    auth: 'jwt',
    scopes: [],
    tenant: 'required',
    query: PageQuerySchema,
    body: 'none',
    responses: { 200: { description: 'A page of approvals', schema: RuntimeObjectSchema } },
    problems: [400],
    handler: { module: APPROVALS_MODULE, export: 'listApprovalsHandler' },
    timeoutSeconds: 10,
  }),
  getApproval: route({
    id: 'getApproval',
    method: 'GET',
    path: '/v1/approvals/{id}',
    summary: 'Get an approval with what it approves',
    description:
      'The approval (any status) with `facts`: the capability and mode, the input as the data contract lets it be shown, for a commit the plan ' +
      'with its preview and fidelity, who asked and when, the policy and the approvals so far. Who may read it: docs/authority.md (read_approval); ' +
      'anyone else is told it does not exist.',
    tag: 'approvals',
    auth: 'jwt',
    scopes: [],
    tenant: 'required',
    pathParams: ApprovalPathSchema,
    query: EmptyQuerySchema,
    body: 'none',
    responses: { 200: { description: 'The approval with its facts', schema: RuntimeObjectSchema } },
    problems: [404],
    handler: { module: APPROVALS_MODULE, export: 'getApprovalHandler' },
    timeoutSeconds: 10,
  }),
  decideApproval: route({
    id: 'decideApproval',
    method: 'POST',
    path: '/v1/approvals/{id}/decision',
    summary: 'Approve or deny',
    description: 'Records one decision. The approval policy’s approver scopes and self-approval rule are enforced by the runtime.',
    tag: 'approvals',
    auth: 'jwt',
    scopes: [],
    tenant: 'required',
    pathParams: ApprovalPathSchema,
    query: EmptyQuerySchema,
    body: 'required',
    bodySchema: DecisionBodySchema,
    responses: { 200: { description: 'The decided approval', schema: RuntimeObjectSchema } },
    problems: [400, 404, 409, 415],
    handler: { module: APPROVALS_MODULE, export: 'decideApprovalHandler' },
    // Approving a resolution asks the provider first (as operatorResolve).
    timeoutSeconds: 20,
  }),
  listCapabilities: route({
    id: 'listCapabilities',
    method: 'GET',
    path: '/v1/capabilities',
    summary: 'List capabilities',
    description:
      'The admitted capabilities of the enabled connectors that the caller’s scopes allow it to invoke: schemas and contracts. ' +
      'With a selected tenant, each also lists that tenant’s approval policies selecting it.',
    tag: 'meta',
    auth: 'jwt',
    scopes: [],
    tenant: 'optional',
    query: EmptyQuerySchema,
    body: 'none',
    responses: { 200: { description: 'The capability registry', schema: CapabilityListSchema } },
    problems: [400],
    handler: { module: META_MODULE, export: 'listCapabilitiesHandler' },
    timeoutSeconds: 10,
  }),
  getHealth: route({
    id: 'getHealth',
    method: 'GET',
    path: '/v1/health',
    summary: 'Health and connector readiness',
    description:
      'Readiness of every hosted connector (its health check, bounded in time). 200 whether `ok` or `degraded`: the body names the connectors ' +
      'that are not ready. A runtime that cannot start answers 500 on every route.',
    tag: 'meta',
    auth: 'jwt',
    scopes: [],
    tenant: 'none',
    query: EmptyQuerySchema,
    body: 'none',
    responses: { 200: { description: 'Ready (`ok`) or degraded', schema: HealthSchema } },
    problems: [400],
    handler: { module: META_MODULE, export: 'getHealthHandler' },
    timeoutSeconds: 10,
  }),
  mcp: route({
    id: 'mcp',
    method: 'POST',
    path: '/v1/mcp',
    summary: 'Model Context Protocol endpoint (Streamable HTTP, stateless)',
    description:
      'One JSON-RPC message per POST (MCP 2025-11-25, Streamable HTTP without sessions, JSON responses). Tools are the capabilities the ' +
      'caller may invoke, one per transaction mode, plus state reads; every tools/call is admitted like POST /v1/actions, and anything that ' +
      'does not finish at once is an MCP task whose ID is the action ID. Needs `Accept: application/json, text/event-stream`. docs/mcp.md.',
    tag: 'mcp',
    auth: 'jwt',
    scopes: [],
    tenant: 'required',
    query: EmptyQuerySchema,
    body: 'required',
    bodySchema: RuntimeObjectSchema,
    responses: {
      200: { description: 'The JSON-RPC response', schema: RuntimeObjectSchema },
      202: { description: 'A notification or response was accepted (no body)' },
    },
    problems: [400, 406, 413, 415],
    handler: { module: MCP_MODULE, export: 'mcpHandler' },
    timeoutSeconds: 29,
  }),
  mcpStream: route({
    id: 'mcpStream',
    method: 'GET',
    path: '/v1/mcp',
    summary: 'MCP server-to-client stream (not offered)',
    description: 'Always 405: the stateless MCP endpoint offers no standalone SSE stream (the client then uses POST only).',
    tag: 'mcp',
    auth: 'jwt',
    scopes: [],
    tenant: 'none',
    query: EmptyQuerySchema,
    body: 'none',
    responses: {},
    problems: [405],
    handler: { module: MCP_MODULE, export: 'mcpHandler' },
    // One function serves both methods of /v1/mcp: the POST's timeout.
    timeoutSeconds: 29,
  }),
  getOpenApi: route({
    id: 'getOpenApi',
    method: 'GET',
    path: '/v1/openapi.json',
    summary: 'This API’s OpenAPI 3.1 document',
    description: 'Public: no token needed.',
    tag: 'meta',
    auth: 'none',
    scopes: [],
    tenant: 'none',
    query: EmptyQuerySchema,
    body: 'none',
    responses: { 200: { description: 'The OpenAPI document' } },
    problems: [400],
    handler: { module: META_MODULE, export: 'getOpenApiHandler' },
    timeoutSeconds: 10,
  }),
} as const;

export type RouteId = keyof typeof ROUTES;
export const ROUTE_LIST: readonly RouteDefinition[] = Object.values(ROUTES) as RouteDefinition[];

export interface RouteMatch {
  readonly route: RouteDefinition;
  /** Decoded path parameters (API Gateway decodes them too). */
  readonly pathParameters: Record<string, string> | null;
}

function segments(path: string): string[] {
  return path.split('/').slice(1);
}

/**
 * Matches a request path (without query string) against the table the way
 * API Gateway matches resources: segment by segment, `{name}` matching one
 * non-empty segment. Returns `undefined` when no resource has this path, and
 * `{ allowed }` when the path exists but not for this method.
 */
export function matchRoute(
  method: string,
  rawPath: string,
  routes: readonly RouteDefinition[] = ROUTE_LIST,
): RouteMatch | { readonly allowed: readonly HttpMethod[] } | undefined {
  const actual = segments(rawPath);
  const allowed: HttpMethod[] = [];
  for (const r of routes) {
    const pattern = segments(r.path);
    if (pattern.length !== actual.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < pattern.length && ok; i++) {
      const p = pattern[i] as string;
      const a = actual[i] as string;
      const name = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(p)?.[1];
      if (name !== undefined) {
        if (a.length === 0) ok = false;
        else {
          let decoded: string;
          try {
            decoded = decodeURIComponent(a);
          } catch {
            decoded = a;
          }
          params[name] = decoded;
        }
      } else if (p !== a) ok = false;
    }
    if (!ok) continue;
    if (r.method === method) return { route: r, pathParameters: Object.keys(params).length > 0 ? params : null };
    allowed.push(r.method);
  }
  return allowed.length > 0 ? { allowed } : undefined;
}
