/**
 * The security matrix, generated from the route table and the
 * mode list: every route of lib/http/routes.ts, and POST /v1/actions
 * in every transaction mode (and as a plain invocation), is called over real
 * HTTP on the local stack as five callers against the owner's records:
 *
 * - `other_tenant`: a member of another tenant only, holding every scope;
 * - `other_principal`: another principal of the owner's tenant (read/write);
 * - `no_scope`: the owner herself, with a token holding no scope;
 * - `operator`: an operator of the tenant (read/write + aip:operator);
 * - `approver`: an approver of the tenant (read + aip:approve).
 *
 * Each answer is checked against the expected one, and every answer that is
 * not an allowed write must leave the table (fingerprinted before and after)
 * and the provider ledger unchanged. A route or mode without a row fails.
 *
 * The matrix is then run again with faults planted in the authority rule
 * (lib/runtime/authority.ts) and in the read path that feeds it: each must
 * make some cell fail, or the matrix would not be worth its name (such a run
 * stops at the first failing cell; fixtures are always made with the fault
 * lifted). (Tenant
 * membership is checked twice, by the edge's tenant selection and by the
 * rule; a fault in the rule's check alone is masked by the edge over HTTP, so
 * the rule's own check is proved by a property test in
 * test/unit/runtime/authority.test.ts instead.) The counts go to the
 * reliability report.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTE_LIST, type RouteDefinition } from '../../lib/http/routes.js';
import { PAYMENTS_PROVIDER } from '../../lib/connectors/reference/payments.js';
import type { CallerIdentity } from '../../lib/auth/identity.js';
import { SteppedClock } from '../../lib/ports/clock.js';
import { Authority } from '../../lib/runtime/authority.js';
import { Runtime } from '../../lib/runtime/runtime.js';
import { TRANSACTION_MODES } from '../../lib/transactions/status.js';
import { recordScenario, tableFingerprint } from '../reliability/support.js';
import { within } from '../support/wait.js';
import { charge, executed, planned, reconcileUntil, RW, securityStack, uid, type Answer, type SecurityStack } from './support.js';

const T = 'demo';
const OTHER = 'acme';
const ACTORS = ['other_tenant', 'other_principal', 'no_scope', 'operator', 'approver'] as const;
type Actor = (typeof ACTORS)[number];

interface Fixtures {
  completed: { id: string; transaction_id: string; charge_id: string };
  plan: { plan_id: string; transaction_id: string };
  pending: { action_id: string; approval_id: string };
  unknown: { transaction_id: string };
  /** outcome_unknown with no operation to look up, escalated to a human by the reconcile consumer. */
  escalated: { transaction_id: string; operation_id: string };
}
type FixtureKind = keyof Fixtures;

interface Request {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly body?: unknown;
}

/** An expected answer. `writes`: an allowed change (not fingerprinted; run on a fresh fixture). */
interface Expected {
  readonly status: number;
  readonly code?: string;
  readonly writes?: boolean;
  /** Extra checks on the body (e.g. what a listing may show). */
  readonly check?: (body: Record<string, unknown>, f: Fixtures) => void;
}

interface Row {
  /** The fixture the request names (made by the owner). */
  readonly uses?: FixtureKind;
  readonly request: (f: Fixtures) => Request;
  readonly expect: Readonly<Record<Actor, Expected>>;
}

const ok = (status = 200, check?: Expected['check']): Expected => ({ status, ...(check ? { check } : {}) });
const no = (status: number, code: string, check?: Expected['check']): Expected => ({ status, code, ...(check ? { check } : {}) });
const wrote = (status: number): Expected => ({ status, writes: true });
const tenantForbidden = no(403, 'auth.tenant_forbidden');
const noScope = no(403, 'auth.insufficient_scope');
const detailsOnly = (keys: string[]) => (b: Record<string, unknown>) => expect(Object.keys((b.details as object | undefined) ?? {}).sort()).toEqual(keys);
/** The structured content of an MCP tools/call answer, and the code of its tool error (if it is one). */
const mcpResult = (b: Record<string, unknown>) =>
  ((b.result as { structuredContent?: Record<string, any> } | undefined)?.structuredContent ?? {}) as Record<string, any>;
const mcpToolError = (b: Record<string, unknown>) => ((b.result as { isError?: boolean } | undefined)?.isError === true ? mcpResult(b).error?.code : undefined);
const approvalIds = (b: Record<string, unknown>) => ((b.items as { approval_id: string }[] | undefined) ?? []).map((a) => a.approval_id);

/** A submit of a payments.charge body naming the owner's record. */
const submitOf =
  (body: (f: Fixtures) => unknown) =>
  (f: Fixtures): Request => ({ method: 'POST', path: '/v1/actions', body: body(f) });

/** POST /v1/actions naming another action's ID: only its owner may resubmit it. */
const resubmitRow = (transaction?: Record<string, unknown>): Row => ({
  uses: 'completed',
  request: submitOf((f) => charge(f.completed.id, transaction ?? {}, {}, 1_234)),
  expect: {
    other_tenant: tenantForbidden,
    other_principal: no(409, 'runtime.action_conflict', detailsOnly(['action_id'])),
    no_scope: noScope,
    operator: no(409, 'runtime.action_conflict', detailsOnly(['action_id', 'fields'])),
    approver: noScope,
  },
});

/** The rows: one per mode of POST /v1/actions, one per other route. */
const SUBMIT_ROWS: Readonly<Record<string, Row>> = {
  none: {
    uses: 'completed',
    request: submitOf((f) => ({ id: f.completed.id, capability_id: 'payments.charge', input: { amount: 1_234, currency: 'eur', customer: 'cus_sec' } })),
    expect: resubmitRow().expect,
  },
  dry_run: resubmitRow({ mode: 'dry_run' }),
  plan: resubmitRow({ mode: 'plan' }),
  execute: {
    uses: 'completed',
    request: submitOf((f) => charge(uid('m-exec'), { mode: 'execute', transaction_id: f.completed.transaction_id })),
    expect: {
      other_tenant: tenantForbidden,
      other_principal: no(409, 'runtime.execution_contract_mismatch', detailsOnly(['transaction_id'])),
      no_scope: noScope,
      operator: no(409, 'runtime.execution_contract_mismatch', detailsOnly(['fields', 'transaction_id'])),
      approver: noScope,
    },
  },
  commit: {
    uses: 'plan',
    request: submitOf((f) => charge(uid('m-commit'), { mode: 'commit', plan_id: f.plan.plan_id })),
    expect: {
      other_tenant: tenantForbidden,
      other_principal: no(404, 'runtime.plan_not_found', detailsOnly(['plan_id'])),
      no_scope: noScope,
      operator: no(409, 'runtime.plan_principal_mismatch'),
      approver: noScope,
    },
  },
  compensate: {
    uses: 'completed',
    request: submitOf((f) => ({
      id: uid('m-comp'),
      capability_id: 'payments.charge',
      input: { charge_id: f.completed.charge_id },
      transaction: { mode: 'compensate', compensation_for: f.completed.id },
    })),
    expect: {
      other_tenant: tenantForbidden,
      other_principal: no(404, 'runtime.compensation_target_not_found', detailsOnly(['compensation_for'])),
      no_scope: noScope,
      // The tenant's compensator scope (default: the operator scope); compensations need an approval here.
      operator: wrote(202),
      approver: noScope,
    },
  },
  reconcile: {
    uses: 'unknown',
    request: submitOf((f) => charge(uid('m-rec'), { mode: 'reconcile', transaction_id: f.unknown.transaction_id })),
    expect: {
      other_tenant: tenantForbidden,
      other_principal: no(404, 'transaction.not_found', detailsOnly(['transaction_id'])),
      no_scope: noScope,
      operator: wrote(202),
      approver: noScope,
    },
  },
  rollback_not_supported: {
    uses: 'completed',
    // payments.charge does not declare the mode: refused at step 3, before any record is named or written.
    request: submitOf((f) => charge(uid('m-rns'), { mode: 'rollback_not_supported', transaction_id: f.completed.transaction_id })),
    expect: {
      other_tenant: tenantForbidden,
      other_principal: no(422, 'runtime.mode_unsupported'),
      no_scope: noScope,
      operator: no(422, 'runtime.mode_unsupported'),
      approver: noScope,
    },
  },
};

const ROUTE_ROWS: Readonly<Record<string, Row>> = {
  getAction: {
    uses: 'completed',
    request: (f) => ({ method: 'GET', path: `/v1/actions/${f.completed.id}` }),
    expect: {
      other_tenant: tenantForbidden,
      other_principal: no(404, 'action.not_found'),
      no_scope: noScope,
      operator: ok(),
      approver: no(404, 'action.not_found'),
    },
  },
  cancelAction: {
    uses: 'pending',
    request: (f) => ({ method: 'POST', path: `/v1/actions/${f.pending.action_id}/cancel`, body: {} }),
    expect: { other_tenant: tenantForbidden, other_principal: no(404, 'action.not_found'), no_scope: noScope, operator: wrote(200), approver: noScope },
  },
  streamAction: {
    uses: 'completed',
    request: (f) => ({ method: 'GET', path: `/v1/actions/${f.completed.id}/stream` }),
    expect: {
      other_tenant: tenantForbidden,
      other_principal: no(404, 'action.not_found'),
      no_scope: noScope,
      operator: ok(),
      approver: no(404, 'action.not_found'),
    },
  },
  getTransaction: {
    uses: 'completed',
    request: (f) => ({ method: 'GET', path: `/v1/transactions?transaction_id=${f.completed.transaction_id}&include=result,receipts` }),
    expect: {
      other_tenant: tenantForbidden,
      other_principal: no(404, 'transaction.not_found'),
      no_scope: noScope,
      operator: ok(),
      approver: no(404, 'transaction.not_found'),
    },
  },
  listOperator: {
    uses: 'unknown',
    request: () => ({ method: 'GET', path: '/v1/operator/transactions?view=outcome_unknown' }),
    expect: {
      other_tenant: tenantForbidden,
      other_principal: noScope,
      no_scope: noScope,
      operator: ok(200, (b, f) => expect(JSON.stringify(b)).toContain(f.unknown.transaction_id)),
      approver: noScope,
    },
  },
  operatorOverview: {
    uses: 'unknown',
    request: () => ({ method: 'GET', path: '/v1/operator/overview' }),
    expect: { other_tenant: tenantForbidden, other_principal: noScope, no_scope: noScope, operator: ok(), approver: noScope },
  },
  operatorReconcile: {
    uses: 'unknown',
    request: (f) => ({ method: 'POST', path: `/v1/operator/transactions/${f.unknown.transaction_id}/reconcile`, body: { reason: 'matrix' } }),
    expect: { other_tenant: tenantForbidden, other_principal: noScope, no_scope: noScope, operator: wrote(202), approver: noScope },
  },
  operatorResolve: {
    uses: 'escalated',
    request: (f) => ({
      method: 'POST',
      path: `/v1/operator/transactions/${f.escalated.transaction_id}/resolve`,
      body: {
        effect: 'committed',
        // The operation the provider committed, as the provider names it: the runtime asks the provider before a
        // resolution is recorded, and another provider name would contradict its answer.
        provider_operation: { provider: PAYMENTS_PROVIDER, operation_id: f.escalated.operation_id },
        reason: 'found at the provider (matrix)',
      },
    }),
    expect: { other_tenant: tenantForbidden, other_principal: noScope, no_scope: noScope, operator: wrote(200), approver: noScope },
  },
  listApprovals: {
    uses: 'pending',
    request: () => ({ method: 'GET', path: '/v1/approvals' }),
    expect: {
      other_tenant: tenantForbidden,
      other_principal: ok(200, (b, f) => expect(approvalIds(b)).not.toContain(f.pending.approval_id)),
      no_scope: ok(200, (b, f) => expect(approvalIds(b)).toContain(f.pending.approval_id)),
      operator: ok(200, (b, f) => expect(approvalIds(b)).toContain(f.pending.approval_id)),
      approver: ok(200, (b, f) => expect(approvalIds(b)).toContain(f.pending.approval_id)),
    },
  },
  getApproval: {
    uses: 'pending',
    request: (f) => ({ method: 'GET', path: `/v1/approvals/${f.pending.approval_id}` }),
    expect: {
      other_tenant: tenantForbidden,
      other_principal: no(404, 'approval.not_found'),
      no_scope: ok(200, (b, f) => expect(b).toMatchObject({ approval_id: f.pending.approval_id, facts: { approvals: { so_far: 0 } } })),
      operator: ok(200, (b, f) => expect(b).toMatchObject({ approval_id: f.pending.approval_id })),
      approver: ok(200, (b, f) => expect(b).toMatchObject({ approval_id: f.pending.approval_id })),
    },
  },
  decideApproval: {
    uses: 'pending',
    request: (f) => ({ method: 'POST', path: `/v1/approvals/${f.pending.approval_id}/decision`, body: { decision: 'deny', reason: 'matrix' } }),
    expect: {
      other_tenant: tenantForbidden,
      other_principal: no(404, 'approval.not_found'),
      no_scope: no(403, 'runtime.approver_forbidden'),
      operator: no(403, 'runtime.approver_forbidden'),
      approver: wrote(200),
    },
  },
  listCapabilities: {
    request: () => ({ method: 'GET', path: '/v1/capabilities' }),
    expect: { other_tenant: tenantForbidden, other_principal: ok(), no_scope: ok(), operator: ok(), approver: ok() },
  },
  getHealth: {
    request: () => ({ method: 'GET', path: '/v1/health' }),
    expect: { other_tenant: ok(), other_principal: ok(), no_scope: ok(), operator: ok(), approver: ok() },
  },
  // The MCP endpoint reading the owner's action (tools/call of aip.get_action): the same answers as GET /v1/actions/{id}, as MCP says them.
  mcp: {
    uses: 'completed',
    request: (f) => ({
      method: 'POST',
      path: '/v1/mcp',
      body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'aip.get_action', arguments: { action_id: f.completed.id } } },
    }),
    expect: {
      other_tenant: tenantForbidden,
      other_principal: ok(200, (b) => expect(mcpToolError(b)).toBe('action.not_found')),
      // Without a scope the tool is not offered at all: an invalid-params JSON-RPC error, no action read.
      no_scope: ok(200, (b) => expect((b.error as { code?: number } | undefined)?.code).toBe(-32602)),
      operator: ok(200, (b, f) => expect(mcpResult(b).action_result).toMatchObject({ action_id: f.completed.id, status: 'completed' })),
      approver: ok(200, (b) => expect(mcpToolError(b)).toBe('action.not_found')),
    },
  },
  mcpStream: {
    request: () => ({ method: 'GET', path: '/v1/mcp' }),
    expect: {
      other_tenant: no(405, 'request.method_not_allowed'),
      other_principal: no(405, 'request.method_not_allowed'),
      no_scope: no(405, 'request.method_not_allowed'),
      operator: no(405, 'request.method_not_allowed'),
      approver: no(405, 'request.method_not_allowed'),
    },
  },
  getOpenApi: {
    request: () => ({ method: 'GET', path: '/v1/openapi.json' }),
    expect: { other_tenant: ok(), other_principal: ok(), no_scope: ok(), operator: ok(), approver: ok() },
  },
};

/** The cells the route table and the mode list call for. */
function requiredRows(routes: readonly RouteDefinition[]): string[] {
  const out: string[] = [];
  for (const r of routes) {
    if (r.id === 'submitAction') for (const m of ['none', ...TRANSACTION_MODES]) out.push(`submitAction:${m}`);
    else out.push(r.id);
  }
  return out.sort();
}
const MATRIX: Readonly<Record<string, Row>> = {
  ...Object.fromEntries(Object.entries(SUBMIT_ROWS).map(([m, r]) => [`submitAction:${m}`, r])),
  ...ROUTE_ROWS,
};

// --- the stack, the callers, the fixtures -------------------------------------------------------

const clock = new SteppedClock();
let s: SecurityStack;
let owner: string;
const tokens = {} as Record<Actor, string>;

beforeAll(async () => {
  s = await securityStack('matrix', T, {
    clock,
    tenants: [T, OTHER],
    approvalPolicies: [
      {
        id: 'matrix-approvals',
        connector: 'payments',
        modes: ['commit', 'compensate'],
        approverScopes: ['aip:approve'],
        minApprovals: 1,
        expiresAfterSeconds: 3600,
      },
    ],
  });
  owner = await s.token('alice', RW);
  Object.assign(tokens, {
    other_tenant: await s.token('mallory', [...RW, 'aip:operator', 'aip:approve'], [OTHER]),
    other_principal: await s.token('carol', RW),
    no_scope: await s.token('alice', []),
    operator: await s.token('ops', [...RW, 'aip:operator']),
    approver: await s.token('appr', ['aip:actions:read', 'aip:approve']),
  });
});
afterAll(async () => s?.stop());

async function make(kind: FixtureKind): Promise<Fixtures[FixtureKind]> {
  switch (kind) {
    case 'completed': {
      const done = await executed(s, owner);
      expect(done.transaction.status).toBe('committed');
      return {
        id: done.id,
        transaction_id: done.transaction.transaction_id,
        charge_id: (done.answer.body.action_result as { output: { charge_id: string } }).output.charge_id,
      };
    }
    case 'plan': {
      const p = await planned(s, owner);
      return { plan_id: p.plan_id, transaction_id: p.transaction_id };
    }
    case 'pending': {
      const p = await planned(s, owner);
      const id = uid('m-pending');
      const sub = await s.call(owner, 'POST', '/v1/actions', charge(id, { mode: 'commit', plan_id: p.plan_id }));
      expect(sub.status, JSON.stringify(sub.body)).toBe(202);
      return { action_id: id, approval_id: (sub.body.action_result as { metadata: { approval_id: string } }).metadata.approval_id };
    }
    case 'escalated': {
      // The charge's answer is lost and so is the probe's: no operation known. Once due, the consumer escalates it
      // (unless the connector can look the operation up by key; then its lookups are made to fail too).
      s.stack.simulator.setFaults([
        { match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 }, times: 1 },
        { match: { method: 'GET', path: '/v1/operations' }, fault: { type: 'error_before_commit', status: 503 }, times: 'always' },
      ]);
      try {
        const out = await executed(s, owner, { idempotency_key: uid('k') });
        expect(out.transaction.status).toBe('outcome_unknown');
        const operation_id = (s.stack.simulator.ledger().at(-1) as { operation_id: string }).operation_id;
        const txId = out.transaction.transaction_id;
        // Round by round (the runtime's clock moved just to each due time, so the plans and approvals of the other fixtures stay valid).
        await reconcileUntil(s, clock, { token: owner, tenant_id: T, transaction_id: txId });
        return { transaction_id: txId, operation_id };
      } finally {
        s.stack.simulator.setFaults([]);
      }
    }
    case 'unknown': {
      s.stack.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 }, times: 1 }]);
      try {
        const out = await executed(s, owner, { idempotency_key: uid('k') });
        expect(out.transaction.status).toBe('outcome_unknown');
        return { transaction_id: out.transaction.transaction_id };
      } finally {
        s.stack.simulator.setFaults([]);
      }
    }
  }
}

/**
 * The fixtures of one run of the matrix: each shared one made by the owner on
 * first use, and a fresh one for each cell that writes. All are made with no
 * fault planted (a planted fault is lifted while one is made, then planted
 * again), so a fault is caught by a cell, never by the setup.
 */
interface MatrixRun {
  shared(kind: FixtureKind | undefined): Promise<Fixtures>;
  fresh(kind: FixtureKind): Promise<Fixtures[FixtureKind]>;
  plant(): void;
  lift(): void;
}

function matrixRun(fault?: () => () => void): MatrixRun {
  const made: Partial<Fixtures> = {};
  let undo: (() => void) | undefined;
  const run: MatrixRun = {
    plant: () => {
      undo ??= fault?.();
    },
    lift: () => {
      undo?.();
      undo = undefined;
    },
    async fresh(kind) {
      const planted = undo !== undefined;
      run.lift();
      try {
        return await make(kind);
      } finally {
        if (planted) run.plant();
      }
    },
    async shared(kind) {
      if (kind !== undefined && made[kind] === undefined) Object.assign(made, { [kind]: await run.fresh(kind) });
      // A row reads only the fixture it uses.
      return made as Fixtures;
    },
  };
  return run;
}

interface CellResult {
  readonly cell: string;
  readonly ok: boolean;
  readonly problem?: string;
}

/** The action a request admits (a submit's action ID, or the action an approval decision resumes). */
function admittedAction(req: Request, f: Fixtures): string | undefined {
  const b = req.body as { id?: string; action?: { id?: string } } | undefined;
  if (req.path === '/v1/actions') return b?.action?.id ?? b?.id;
  if (req.path.endsWith('/decision')) return f.pending.action_id;
  return undefined;
}

/**
 * Runs one cell: the request, the expected answer, and (unless it is an
 * allowed write) nothing written. An action the request admitted to the
 * queue is waited for (the worker's batch, side records included) so that
 * its writes never land in the next cell's fingerprint.
 */
async function runCell(name: string, row: Row, actor: Actor, run: MatrixRun): Promise<CellResult> {
  const cell = `${name} × ${actor}`;
  const want = row.expect[actor];
  let f = await run.shared(row.uses);
  if (want.writes === true && row.uses !== undefined) f = { ...f, [row.uses]: await run.fresh(row.uses) };
  const req = row.request(f);
  const admits = admittedAction(req, f);
  const worked = admits !== undefined ? s.stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === admits) : undefined;
  // An operator's reconcile request is worked off by the reconcile consumer.
  const reconciles = /^\/v1\/operator\/transactions\/([^/]+)\/reconcile$/.exec(req.path)?.[1];
  const reconciled = reconciles !== undefined ? s.stack.handled('reconcile', (m) => m.kind === 'reconcile' && m.transaction_id === reconciles) : undefined;
  const before = want.writes === true ? undefined : (await tableFingerprint(s.ddb, s.table)).digest;
  const ledger = s.stack.simulator.ledger().length;
  let answer: Answer;
  try {
    answer = await s.call(tokens[actor], req.method, req.path, req.body, T);
  } catch (err) {
    return { cell, ok: false, problem: `request failed: ${String(err)}` };
  }
  const problems: string[] = [];
  const enqueued =
    answer.body.disposition === 'accepted' ||
    (req.path.endsWith('/decision') && (answer.body.action_result as { status?: string } | undefined)?.status === 'accepted');
  if (enqueued && worked !== undefined && (await within(worked)) === 'timed_out') problems.push('the admitted action was not worked off');
  if (answer.status === 202 && reconciled !== undefined && (await within(reconciled)) === 'timed_out')
    problems.push('the requested reconciliation was not worked off');
  if (answer.status !== want.status) problems.push(`status ${answer.status}, expected ${want.status}`);
  if (want.code !== undefined && answer.body.code !== want.code) problems.push(`code ${String(answer.body.code)}, expected ${want.code}`);
  if (answer.status >= 400 && !(typeof answer.body.type === 'string' && typeof answer.body.code === 'string')) problems.push('not a problem+json body');
  if (want.check !== undefined) {
    try {
      want.check(answer.body, f);
    } catch (err) {
      problems.push(`check: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  if (before !== undefined) {
    const after = (await tableFingerprint(s.ddb, s.table)).digest;
    if (after !== before) problems.push('the table changed');
    if (s.stack.simulator.ledger().length !== ledger) problems.push('the provider ledger changed');
  }
  return {
    cell,
    ok: problems.length === 0,
    ...(problems.length > 0 ? { problem: `${problems.join('; ')} ${JSON.stringify(answer.body).slice(0, 240)}` } : {}),
  };
}

/**
 * Every cell, cheapest first (for a run with a fault planted, which stops at
 * the first failing cell): the cells that only read or are refused (on the
 * shared fixtures, the escalated record last), then those that write (each on
 * a fresh fixture). The order decides nothing else: each cell is checked on
 * its own, its fingerprint taken around its own call.
 */
const CELLS: readonly { readonly name: string; readonly row: Row; readonly actor: Actor }[] = Object.entries(MATRIX)
  .flatMap(([name, row]) => ACTORS.map((actor) => ({ name, row, actor })))
  .map((c) => ({ c, cost: (c.row.expect[c.actor].writes === true ? 2 : 0) + (c.row.uses === 'escalated' ? 1 : 0) }))
  .sort((x, y) => x.cost - y.cost)
  .map(({ c }) => c);

/**
 * Runs the cells with `fault` planted until one fails, which is all a planted
 * fault has to show (the clean run, row by row, runs every cell).
 */
async function runUntilCaught(fault: () => () => void): Promise<CellResult[]> {
  const run = matrixRun(fault);
  run.plant();
  try {
    const out: CellResult[] = [];
    for (const { name, row, actor } of CELLS) {
      const result = await runCell(name, row, actor, run);
      out.push(result);
      if (!result.ok) break;
    }
    return out;
  } finally {
    run.lift();
  }
}

/** Faults planted in the rule: each must be caught by some cell. */
const FAULTS: Record<string, () => () => void> = {
  'the rule allows everything': () =>
    patch('allows', function (this: Authority) {
      return 'owner';
    }),
  'refusals disclose to anyone (no concealment)': () => patch('mayRead', () => true),
  'approvals are listed to anyone': () => {
    const original = Authority.prototype.allows;
    return patch('allows', function (this: Authority, caller, operation, target) {
      return operation === 'read_approval' ? 'approver' : original.call(this, caller, operation, target);
    });
  },
  // A fault outside the rule: the read path hands the rule a caller with the operator scope.
  'reads run with the operator scope': () => {
    const undo = (['getAction', 'getActionResult', 'getTransaction', 'readStream'] as const).map((m) => {
      const original = Runtime.prototype[m] as (...args: unknown[]) => unknown;
      (Runtime.prototype as unknown as Record<string, unknown>)[m] = function (this: Runtime, caller: CallerIdentity, ...rest: unknown[]) {
        return original.call(this, { ...caller, scopes: [...caller.scopes, 'aip:operator'] }, ...rest);
      };
      return () => {
        (Runtime.prototype as unknown as Record<string, unknown>)[m] = original;
      };
    });
    return () => {
      for (const u of undo) u();
    };
  },
  'the owner is not recognised (ownership checks inverted)': () => {
    const original = Authority.prototype.roles;
    return patch('roles', function (this: Authority, caller, target) {
      const roles = original.call(this, caller, target);
      if (roles.has('owner')) roles.delete('owner');
      else if (target !== undefined && target.missing !== true && caller.tenants.includes(target.tenant_id)) roles.add('owner');
      return roles;
    });
  },
};

function patch<K extends 'allows' | 'mayRead' | 'roles'>(key: K, impl: Authority[K]): () => void {
  const original = Authority.prototype[key];
  (Authority.prototype as unknown as Record<string, unknown>)[key] = impl;
  return () => {
    (Authority.prototype as unknown as Record<string, unknown>)[key] = original;
  };
}

const summary = { cells: 0, passed: 0, faults_planted: 0, faults_caught: 0 } as Record<string, number>;

describe('the security matrix', () => {
  it('has a row for every route of the route table and every mode of POST /v1/actions, and nothing else', () => {
    expect(Object.keys(MATRIX).sort()).toEqual(requiredRows(ROUTE_LIST));
    for (const row of Object.values(MATRIX)) expect(Object.keys(row.expect).sort()).toEqual([...ACTORS].sort());
  });

  it('a route the table gains without a row is missing from the matrix (the check above fails)', () => {
    const extra = { ...(ROUTE_LIST[0] as RouteDefinition), id: 'someNewRoute' };
    expect(requiredRows([...ROUTE_LIST, extra])).not.toEqual(Object.keys(MATRIX).sort());
  });

  // One test per row (its five cells), on fixtures shared by the rows: each stays short on a busy machine.
  describe('every cell answers as expected, and no refused or read-only call writes anything', () => {
    const clean = matrixRun();
    for (const [name, row] of Object.entries(MATRIX)) {
      it(name, async () => {
        const results: CellResult[] = [];
        for (const actor of ACTORS) results.push(await runCell(name, row, actor, clean));
        summary.cells = (summary.cells ?? 0) + results.length;
        summary.passed = (summary.passed ?? 0) + results.filter((r) => r.ok).length;
        expect(results.filter((r) => !r.ok).map((r) => `${r.cell}: ${r.problem}`)).toEqual([]);
      });
    }
  });

  for (const [name, plant] of Object.entries(FAULTS)) {
    it(`catches a planted fault: ${name}`, async () => {
      const results = await runUntilCaught(plant);
      const caught = results.find((r) => !r.ok);
      // The report counts the cells run until one caught the fault.
      summary[`fault: ${name} (cells run until caught)`] = results.length;
      summary.faults_planted = (summary.faults_planted ?? 0) + 1;
      if (caught !== undefined) summary.faults_caught = (summary.faults_caught ?? 0) + 1;
      expect(caught?.cell, `no cell of ${results.length} failed with the fault planted`).toBeDefined();
    });
  }
});

afterAll(() => {
  recordScenario('security-matrix', {
    scenario: 'Security matrix: every route and mode × other tenant, other principal, no scope, operator, approver',
    cases: summary.cells ?? 0,
    held: [
      'expected answer in every cell',
      'nothing written by a refusal or a read',
      'a route or mode without a row fails',
      'every planted authority fault caught',
    ],
    counts: summary,
  });
});
