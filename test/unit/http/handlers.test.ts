/**
 * The route handlers over a recording stub of the edge's RuntimeApi: what
 * each route passes to the runtime (caller from the authorizer, selected
 * tenant, validated parameters) and how it shapes the answer.
 */
import { describe, expect, it } from 'vitest';
import {
  actionStatusUrl,
  basePath,
  createCancelActionHandler,
  createGetActionHandler,
  createStreamActionHandler,
  createSubmitActionHandler,
} from '../../../functions/http/actions.js';
import { SETTLED_STATUSES, SettleTimes } from '../../../functions/shared/wait.js';
import { createDecideApprovalHandler, createGetApprovalHandler, createListApprovalsHandler } from '../../../functions/http/approvals.js';
import { createGetHealthHandler, createGetOpenApiHandler, createListCapabilitiesHandler } from '../../../functions/http/meta.js';
import { ROUTES, type RouteDefinition } from '../../../lib/http/routes.js';
import { createGetTransactionHandler, createListOperatorHandler } from '../../../functions/http/transactions.js';
import type { SubmitOutcome } from '../../../functions/shared/runtime-api.js';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { ActionResult } from '../../../packages/connector-sdk/src/protocol/action.js';
import { ALICE, body, deps, expectProblem, fakeClock, header, jsonEvent, lambdaContext, proxyEvent, recordingLogger, stubRuntime } from './support.js';

const ACTION = { id: 'act-1', capability_id: 'payments.refund', input: { amount: 10 } };
const OPERATOR = { ...ALICE, scopes: ['aip:operator'], tenants: ['acme', 'globex'] };

function outcome(disposition: SubmitOutcome['disposition'], http_status: number, status: ActionResult['status']): SubmitOutcome {
  return { disposition, http_status, action_id: 'act-1', tenant_id: 'acme', action_result: { action_id: 'act-1', status } };
}

describe('POST /v1/actions', () => {
  it('passes the caller, the parsed body and the selected tenant; answers 202 with Location when queued', async () => {
    const rt = stubRuntime({ submit: async () => outcome('accepted', 202, 'accepted') });
    const res = await createSubmitActionHandler(deps(rt))(jsonEvent({ path: '/v1/actions', json: ACTION }), lambdaContext());
    expect(res.statusCode).toBe(202);
    expect(header(res, 'location')).toBe('/v1/actions/act-1');
    expect(header(res, 'content-type')).toBe('application/json');
    expect(body(res)).toEqual({
      action_id: 'act-1',
      tenant_id: 'acme',
      disposition: 'accepted',
      status_url: '/v1/actions/act-1',
      action_result: { action_id: 'act-1', status: 'accepted' },
    });
    expect(rt.calls).toEqual([{ method: 'submit', args: [ALICE, ACTION, { tenant_id: 'acme' }] }]);
  });

  it('answers with the runtime’s own status when it answered by itself', async () => {
    for (const [o, status] of [
      [outcome('completed', 200, 'completed'), 200],
      [outcome('replayed', 200, 'completed'), 200],
      [outcome('completed', 201, 'completed'), 201],
      [outcome('rejected', 200, 'failed'), 200],
      [{ ...outcome('completed', 999, 'completed') }, 200],
    ] as const) {
      const rt = stubRuntime({
        submit: async () => ({
          ...o,
          action_result:
            o.action_result.status === 'failed'
              ? { ...o.action_result, error: { code: 'policy.denied', message: 'no', category: 'authorization', retryable: false } }
              : o.action_result,
        }),
      });
      const res = await createSubmitActionHandler(deps(rt))(jsonEvent({ json: ACTION }), lambdaContext());
      expect(res.statusCode).toBe(status);
      expect(header(res, 'location')).toBeUndefined();
    }
  });

  it('accepts a TransactionRequest and validates it with the protocol validator', async () => {
    const rt = stubRuntime({ submit: async () => outcome('completed', 200, 'completed') });
    const req = { action: { ...ACTION, transaction: { mode: 'plan' } }, transaction_id: 'tx-1', requested_by: { id: 'alice', kind: 'user' } };
    expect((await createSubmitActionHandler(deps(rt))(jsonEvent({ json: req }), lambdaContext())).statusCode).toBe(200);
    const bad = { ...req, action: { ...ACTION } };
    expectProblem(await createSubmitActionHandler(deps(rt))(jsonEvent({ json: bad }), lambdaContext()), 400, 'envelope.transaction_context_required');
    expect(rt.calls).toHaveLength(1);
  });

  it('rejects bad envelopes before calling the runtime', async () => {
    const rt = stubRuntime();
    const h = createSubmitActionHandler(deps(rt));
    expectProblem(await h(jsonEvent({ json: { ...ACTION, extra: 1 } }), lambdaContext()), 400, 'envelope.invalid');
    expectProblem(await h(jsonEvent({ json: { ...ACTION, transaction: { mode: 'commit' } } }), lambdaContext()), 400, 'envelope.commit_requires_plan_id');
    expectProblem(await h(jsonEvent({ json: [ACTION] }), lambdaContext()), 400, 'envelope.invalid');
    expectProblem(
      await h(proxyEvent({ method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"id":' }), lambdaContext()),
      400,
      'request.malformed_json',
    );
    expectProblem(await h(proxyEvent({ method: 'POST', body: JSON.stringify(ACTION) }), lambdaContext()), 415, 'request.unsupported_media_type');
    expectProblem(await h(proxyEvent({ method: 'POST' }), lambdaContext()), 400, 'request.invalid');
    expectProblem(await h(jsonEvent({ json: ACTION, query: { x: '1' } }), lambdaContext()), 400, 'request.invalid');
    expect(rt.calls).toEqual([]);
  });

  it('requires aip:actions:write and a tenant', async () => {
    const rt = stubRuntime();
    const h = createSubmitActionHandler(deps(rt));
    expectProblem(await h(jsonEvent({ json: ACTION, caller: { ...ALICE, scopes: ['aip:actions:read'] } }), lambdaContext()), 403, 'auth.insufficient_scope');
    expectProblem(await h(jsonEvent({ json: ACTION, caller: { ...ALICE, tenants: ['acme', 'globex'] } }), lambdaContext()), 400, 'auth.tenant_required');
    expectProblem(await h(jsonEvent({ json: ACTION, caller: null }), lambdaContext()), 401, 'auth.unauthenticated');
    expect(rt.calls).toEqual([]);
  });

  it('tells the runtime that the client waits and how long the function has left; a settled answer (attempt inline) needs no poll', async () => {
    const settled = {
      action_result: { action_id: 'act-1', status: 'completed' as const, output: { ok: true } },
      transaction: { transaction_id: 'tx-1', status: 'committed' },
    } as unknown as NonNullable<SubmitOutcome['settled']>;
    const rt = stubRuntime({ submit: async () => ({ ...outcome('accepted', 202, 'accepted'), settled }) });
    const res = await createSubmitActionHandler(deps(rt))(jsonEvent({ json: ACTION, headers: { Prefer: 'wait=10' } }), lambdaContext(28_000));
    expect(res.statusCode).toBe(200);
    expect(header(res, 'preference-applied')).toBe('wait=10');
    expect(body(res)).toMatchObject({
      disposition: 'accepted',
      action_result: { status: 'completed', output: { ok: true } },
      transaction_result: settled.transaction,
    });
    expect(rt.calls.map((c) => c.method)).toEqual(['submit']);
    const opts = rt.calls[0]!.args[2] as { tenant_id: string; waiting: { wait_ms: number; remaining_ms: () => number } };
    expect(opts.tenant_id).toBe('acme');
    expect(opts.waiting.wait_ms).toBe(10_000);
    expect(opts.waiting.remaining_ms()).toBeGreaterThan(20_000);
    // Without the preference the runtime is not told anything (the attempt goes to the queue).
    const plain = stubRuntime({ submit: async () => outcome('accepted', 202, 'accepted') });
    await createSubmitActionHandler(deps(plain))(jsonEvent({ json: ACTION }), lambdaContext());
    expect(plain.calls[0]!.args[2]).toEqual({ tenant_id: 'acme' });
  });

  it('with Prefer: wait=N polls the action result until it settles, then reads the full state once and answers 200', async () => {
    const clock = fakeClock();
    const start = clock.now();
    const done = () => clock.now() - start >= 1_500;
    const rt = stubRuntime({
      submit: async () => outcome('accepted', 202, 'accepted'),
      getActionResult: async () => ({ action_id: 'act-1', status: done() ? 'completed' : 'running' }),
      getAction: async () => ({
        action_result: { action_id: 'act-1', status: done() ? 'completed' : 'running', ...(done() ? { output: { ok: true } } : {}) },
        transaction: { transaction_id: 'tx-1', status: done() ? 'committed' : 'committing' },
      }),
    });
    const res = await createSubmitActionHandler(deps(rt, { clock, settleTimes: new SettleTimes() }))(
      jsonEvent({ json: ACTION, headers: { Prefer: 'wait=10' } }),
      lambdaContext(),
    );
    expect(res.statusCode).toBe(200);
    expect(header(res, 'preference-applied')).toBe('wait=10');
    expect(body(res)).toMatchObject({
      disposition: 'accepted',
      action_result: { status: 'completed', output: { ok: true } },
      transaction_result: { transaction_id: 'tx-1', status: 'committed' },
    });
    const reads = rt.calls.filter((c) => c.method === 'getAction' || c.method === 'getActionResult');
    expect(reads.every((c) => c.args[1] === 'acme' && c.args[2] === 'act-1')).toBe(true);
    // Polls of the result on the schedule (functions/shared/wait.ts, each after a sleep) until one sees it settled, then one full read.
    expect(reads.map((c) => c.method)).toEqual([...clock.sleeps.map(() => 'getActionResult'), 'getAction']);
    expect(clock.now() - start).toBeGreaterThanOrEqual(1_500);
  });

  it('with a runtime that has pollAction, the poll that sees the action settled carries the full state: no getAction after it', async () => {
    const clock = fakeClock();
    const start = clock.now();
    const done = () => clock.now() - start >= 1_500;
    const asked: ReadonlySet<string>[] = [];
    const rt = Object.assign(stubRuntime({ submit: async () => outcome('accepted', 202, 'accepted') }), {
      pollAction: async (_caller: unknown, tenant: string, id: string, full: ReadonlySet<ActionResult['status']>) => {
        expect([tenant, id]).toEqual(['acme', 'act-1']);
        asked.push(full);
        const action_result = { action_id: 'act-1', status: done() ? ('completed' as const) : ('running' as const) };
        return full.has(action_result.status)
          ? { action_result, state: { action_result, transaction: { transaction_id: 'tx-1', status: 'committed' } } }
          : { action_result };
      },
    });
    const res = await createSubmitActionHandler(deps(rt, { clock, settleTimes: new SettleTimes() }))(
      jsonEvent({ json: ACTION, headers: { Prefer: 'wait=10' } }),
      lambdaContext(),
    );
    expect(res.statusCode).toBe(200);
    expect(body(res)).toMatchObject({ action_result: { status: 'completed' }, transaction_result: { transaction_id: 'tx-1', status: 'committed' } });
    expect(asked.length).toBe(clock.sleeps.length);
    expect(asked.every((full) => full === SETTLED_STATUSES)).toBe(true);
    expect(rt.calls.map((c) => c.method)).toEqual(['submit']);

    // Still running at the deadline: the last poll carries no state, so the full state is read once.
    const running = Object.assign(
      stubRuntime({
        submit: async () => outcome('accepted', 202, 'accepted'),
        getAction: async () => ({ action_result: { action_id: 'act-1', status: 'running' }, transaction: { transaction_id: 'tx-1', status: 'committing' } }),
      }),
      { pollAction: async () => ({ action_result: { action_id: 'act-1', status: 'running' as const } }) },
    );
    const late = await createSubmitActionHandler(deps(running, { clock: fakeClock() }))(
      jsonEvent({ json: ACTION, headers: { Prefer: 'wait=3' } }),
      lambdaContext(),
    );
    expect(late.statusCode).toBe(202);
    expect(body(late)).toMatchObject({ transaction_result: { status: 'committing' } });
    expect(running.calls.map((c) => c.method)).toEqual(['submit', 'getAction']);
  });

  it('with Prefer: wait=N answers 202 with the latest full state when the action is still running after N seconds', async () => {
    const clock = fakeClock();
    const start = clock.now();
    const rt = stubRuntime({
      submit: async () => outcome('accepted', 202, 'accepted'),
      getActionResult: async () => ({ action_id: 'act-1', status: 'running' }),
      getAction: async () => ({ action_result: { action_id: 'act-1', status: 'running' }, transaction: { transaction_id: 'tx-1', status: 'committing' } }),
    });
    const res = await createSubmitActionHandler(deps(rt, { clock }))(jsonEvent({ json: ACTION, headers: { Prefer: 'wait=3' } }), lambdaContext());
    expect(res.statusCode).toBe(202);
    expect(header(res, 'location')).toBe('/v1/actions/act-1');
    expect(body(res)).toMatchObject({ action_result: { status: 'running' }, transaction_result: { status: 'committing' } });
    expect(clock.now() - start).toBe(3_000);
    expect(rt.calls.filter((c) => c.method === 'getAction')).toHaveLength(1);
  });

  it('stops waiting when a queued action needs a human, and keeps answering 202', async () => {
    const rt = stubRuntime({
      submit: async () => outcome('accepted', 202, 'accepted'),
      getActionResult: async () => ({ action_id: 'act-1', status: 'requires_human' }),
      getAction: async () => ({ action_result: { action_id: 'act-1', status: 'requires_human' } }),
    });
    const res = await createSubmitActionHandler(deps(rt))(jsonEvent({ json: ACTION, headers: { Prefer: 'wait=25' } }), lambdaContext());
    expect(res.statusCode).toBe(202);
    expect(header(res, 'location')).toBe('/v1/actions/act-1');
    expect(header(res, 'preference-applied')).toBe('wait=25');
    expect(body(res)).toMatchObject({ action_result: { status: 'requires_human' } });
    expect(rt.calls.map((c) => c.method)).toEqual(['submit', 'getActionResult', 'getAction']);
  });

  it('does not wait on an action that already requires a human (runtime answered 202 requires_human)', async () => {
    const rt = stubRuntime({ submit: async () => outcome('requires_human', 202, 'requires_human') });
    const res = await createSubmitActionHandler(deps(rt))(jsonEvent({ json: ACTION, headers: { Prefer: 'wait=25' } }), lambdaContext());
    expect(res.statusCode).toBe(202);
    expect(header(res, 'location')).toBe('/v1/actions/act-1');
    expect(body(res)).toMatchObject({ disposition: 'requires_human' });
    expect(rt.calls.map((c) => c.method)).toEqual(['submit']);
  });

  it('passes a rejection through with the runtime’s 422 and the failed action result', async () => {
    const failed = {
      ...outcome('rejected', 422, 'failed'),
      action_result: {
        action_id: 'act-1',
        status: 'failed' as const,
        error: { code: 'policy.denied', message: 'no', category: 'authorization' as const, retryable: false },
      },
    };
    const rt = stubRuntime({ submit: async () => failed });
    const res = await createSubmitActionHandler(deps(rt))(jsonEvent({ json: ACTION }), lambdaContext());
    expect(res.statusCode).toBe(422);
    expect(header(res, 'content-type')).toBe('application/json');
    expect(body(res)).toMatchObject({ disposition: 'rejected', action_result: { status: 'failed', error: { code: 'policy.denied' } } });
  });

  it('answers 202 (the action was admitted) when a status read fails during the wait', async () => {
    const unavailable = async (): Promise<never> => {
      throw new AipError('transaction.store_unavailable');
    };
    for (const failing of [
      { getActionResult: unavailable },
      { getActionResult: async () => ({ action_id: 'act-1', status: 'completed' as const }), getAction: unavailable },
    ]) {
      const rt = stubRuntime({ submit: async () => outcome('accepted', 202, 'accepted'), ...failing });
      const res = await createSubmitActionHandler(deps(rt))(jsonEvent({ json: ACTION, headers: { Prefer: 'wait=5' } }), lambdaContext());
      expect(res.statusCode).toBe(202);
      expect(body(res)).toMatchObject({ disposition: 'accepted', action_result: { status: 'accepted' } });
    }
  });

  it('the wait never outlasts the Lambda: with 2 s left it does not poll at all', async () => {
    const rt = stubRuntime({ submit: async () => outcome('accepted', 202, 'accepted') });
    const res = await createSubmitActionHandler(deps(rt))(jsonEvent({ json: ACTION, headers: { Prefer: 'wait=25' } }), lambdaContext(2_000));
    expect(res.statusCode).toBe(202);
    expect(rt.calls.map((c) => c.method)).toEqual(['submit']);
  });

  it('maps runtime AipErrors to their problems and other failures to an opaque 500', async () => {
    const conflict = stubRuntime({
      submit: async () => {
        throw new AipError('idempotency.fingerprint_mismatch');
      },
    });
    expectProblem(await createSubmitActionHandler(deps(conflict))(jsonEvent({ json: ACTION }), lambdaContext()), 409, 'idempotency.fingerprint_mismatch');
    const logger = recordingLogger();
    const broken = stubRuntime({
      submit: async () => {
        throw new Error('ddb://secret-table exploded');
      },
    });
    const res = await createSubmitActionHandler(deps(broken, { observability: { logger } }))(jsonEvent({ json: ACTION }), lambdaContext());
    expectProblem(res, 500, 'internal.unexpected');
    expect(res.body).not.toContain('secret-table');
    expect(JSON.stringify(logger.lines)).not.toContain('secret-table');
  });

  it('logs one access line with route, status and error code but never the body or token', async () => {
    const logger = recordingLogger();
    const rt = stubRuntime({ submit: async () => outcome('accepted', 202, 'accepted') });
    const h = createSubmitActionHandler(deps(rt, { observability: { logger } }));
    await h(jsonEvent({ json: { ...ACTION, input: { card: '4111111111111111' } }, headers: { Authorization: 'Bearer eyJ.secret.sig' } }), lambdaContext());
    await h(jsonEvent({ json: { ...ACTION, nope: '4111111111111111' } }), lambdaContext());
    const access = logger.lines.filter((l) => l.message === 'request');
    expect(access).toHaveLength(2);
    expect(access[0]?.extra[0]).toMatchObject({ route: 'submitAction', status: 202, principal: 'user:alice' });
    expect(access[1]?.extra[0]).toMatchObject({ status: 400, error_code: 'envelope.invalid' });
    const all = JSON.stringify(logger.lines);
    expect(all).not.toContain('4111111111111111');
    expect(all).not.toContain('eyJ.secret.sig');
  });
});

describe('status URL', () => {
  it('keeps the stage or base-path prefix and encodes the ID', () => {
    expect(basePath(proxyEvent({ path: '/v1/actions', stagePrefix: '/prod' }))).toBe('/prod');
    expect(basePath(proxyEvent({ path: '/v1/actions' }))).toBe('');
    expect(actionStatusUrl(proxyEvent({ path: '/v1/actions', stagePrefix: '/prod' }), 'a/b:c')).toBe('/prod/v1/actions/a%2Fb%3Ac');
  });
});

describe('GET /v1/actions/{id}', () => {
  const event = (extra: Parameters<typeof proxyEvent>[0] = {}) =>
    proxyEvent({ resource: '/v1/actions/{id}', path: '/v1/actions/act-1', pathParameters: { id: 'act-1' }, ...extra });

  it('returns the action state from the runtime for the selected tenant', async () => {
    const state = { action_result: { action_id: 'act-1', status: 'completed' as const } };
    const rt = stubRuntime({ getAction: async () => state });
    const res = await createGetActionHandler(deps(rt))(
      event({ caller: { ...ALICE, scopes: ['aip:actions:read'], tenants: ['acme', 'globex'] }, headers: { 'X-AIP-Tenant': 'globex' } }),
      lambdaContext(),
    );
    expect(res.statusCode).toBe(200);
    expect(body(res)).toEqual(state);
    expect(rt.calls[0]?.args.slice(1)).toEqual(['globex', 'act-1']);
  });

  it('long-polls with ?wait=N: the action result until it settles, then the full state once', async () => {
    const clock = fakeClock();
    let n = 0;
    const failed = { action_id: 'act-1', status: 'failed' as const, error: { code: 'x.y', message: 'm', category: 'permanent' as const, retryable: false } };
    const rt = stubRuntime({
      getActionResult: async () => (++n >= 3 ? failed : { action_id: 'act-1', status: 'running' as ActionResult['status'] }),
      getAction: async () => ({ action_result: failed, transaction: { transaction_id: 'tx-1', status: 'failed' } }),
    });
    const res = await createGetActionHandler(deps(rt, { clock }))(event({ query: { wait: '20' } }), lambdaContext());
    expect(body(res)).toEqual({ action_result: failed, transaction: { transaction_id: 'tx-1', status: 'failed' } });
    expect(n).toBe(3);
    expect(rt.calls.filter((c) => c.method === 'getAction')).toHaveLength(1);
  });

  it('a ?wait=N for an action the caller cannot see answers the same not-found problem', async () => {
    const rt = stubRuntime({
      getActionResult: async () => {
        throw new AipError('action.not_found');
      },
    });
    expectProblem(await createGetActionHandler(deps(rt))(event({ query: { wait: '5' } }), lambdaContext()), 404, 'action.not_found');
    expect(rt.calls.map((c) => c.method)).toEqual(['getActionResult']);
  });

  it('maps not found, rejects bad IDs and other tenants', async () => {
    const rt = stubRuntime({
      getAction: async () => {
        throw new AipError('action.not_found');
      },
    });
    const h = createGetActionHandler(deps(rt));
    expectProblem(await h(event(), lambdaContext()), 404, 'action.not_found');
    expectProblem(await h(event({ pathParameters: { id: 'bad id' } }), lambdaContext()), 400, 'request.invalid');
    expectProblem(await h(event({ headers: { 'X-AIP-Tenant': 'globex' } }), lambdaContext()), 403, 'auth.tenant_forbidden');
    expectProblem(await h(event({ method: 'GET', body: '{}', headers: { 'Content-Type': 'application/json' } }), lambdaContext()), 400, 'request.invalid');
  });
});

describe('cancel and stream', () => {
  it('cancel accepts no body or {} and refuses anything else', async () => {
    const rt = stubRuntime({ cancel: async () => ({ action_id: 'act-1', status: 'cancelled' }) });
    const h = createCancelActionHandler(deps(rt));
    const base = { method: 'POST', resource: '/v1/actions/{id}/cancel', path: '/v1/actions/act-1/cancel', pathParameters: { id: 'act-1' } };
    expect((await h(proxyEvent(base), lambdaContext())).statusCode).toBe(200);
    expect((await h(jsonEvent({ ...base, json: {} }), lambdaContext())).statusCode).toBe(200);
    expectProblem(await h(jsonEvent({ ...base, json: { reason: 'x' } }), lambdaContext()), 400, 'request.invalid');
    expect(rt.calls.map((c) => c.args.slice(1))).toEqual([
      ['acme', 'act-1'],
      ['acme', 'act-1'],
    ]);
  });

  it('stream passes `after` as a number', async () => {
    const rt = stubRuntime({ readStream: async () => ({ items: [] }) });
    const h = createStreamActionHandler(deps(rt));
    const base = { resource: '/v1/actions/{id}/stream', path: '/v1/actions/act-1/stream', pathParameters: { id: 'act-1' } };
    await h(proxyEvent({ ...base, query: { after: '41' } }), lambdaContext());
    await h(proxyEvent(base), lambdaContext());
    expect(rt.calls.map((c) => c.args[3])).toEqual([41, undefined]);
    expectProblem(await h(proxyEvent({ ...base, query: { after: 'x' } }), lambdaContext()), 400, 'request.invalid');
  });
});

describe('transactions and operator', () => {
  it('GET /v1/transactions passes exactly one selector and the include flags', async () => {
    const rt = stubRuntime({ getTransaction: async () => ({ transaction_id: 'tx-1', status: 'committed' }) });
    const res = await createGetTransactionHandler(deps(rt))(
      proxyEvent({ path: '/v1/transactions', query: { plan_id: 'plan:tx-1', include: 'receipts' } }),
      lambdaContext(),
    );
    expect(res.statusCode).toBe(200);
    expect(rt.calls[0]?.args.slice(1)).toEqual([
      { tenant_id: 'acme', plan_id: 'plan:tx-1' },
      { result: false, receipts: true },
    ]);
  });

  it('the operator listing requires aip:operator; the tenant is optional for multi-tenant operators', async () => {
    const rt = stubRuntime({ listOperator: async () => ({ items: [] }) });
    const h = createListOperatorHandler(deps(rt));
    await h(
      proxyEvent({ path: '/v1/operator/transactions', caller: OPERATOR, query: { view: 'stalled_committing', limit: '10', cursor: 'abc' } }),
      lambdaContext(),
    );
    await h(
      proxyEvent({ path: '/v1/operator/transactions', caller: OPERATOR, query: { view: 'outcome_unknown' }, headers: { 'X-AIP-Tenant': 'globex' } }),
      lambdaContext(),
    );
    expect(rt.calls.map((c) => c.args[1])).toEqual([
      { view: 'stalled_committing', cursor: 'abc', limit: 10 },
      { view: 'outcome_unknown', tenant_id: 'globex' },
    ]);
    expectProblem(
      await h(proxyEvent({ path: '/v1/operator/transactions', query: { view: 'outcome_unknown' } }), lambdaContext()),
      403,
      'auth.insufficient_scope',
    );
  });
});

describe('approvals', () => {
  it('lists with paging and decides with a validated body', async () => {
    const rt = stubRuntime({ listApprovals: async () => ({ items: [] }), decideApproval: async () => ({ status: 'approved' }) });
    await createListApprovalsHandler(deps(rt))(proxyEvent({ path: '/v1/approvals', query: { limit: '5' } }), lambdaContext());
    const decide = createDecideApprovalHandler(deps(rt));
    const base = { resource: '/v1/approvals/{id}/decision', path: '/v1/approvals/ap-1/decision', pathParameters: { id: 'ap-1' } };
    expect((await decide(jsonEvent({ ...base, json: { decision: 'deny', reason: 'too large' } }), lambdaContext())).statusCode).toBe(200);
    expect(rt.calls.map((c) => c.args.slice(1))).toEqual([
      ['acme', { limit: 5 }],
      ['acme', 'ap-1', { decision: 'deny', reason: 'too large' }],
    ]);
    expectProblem(await decide(jsonEvent({ ...base, json: { decision: 'maybe' } }), lambdaContext()), 400, 'request.invalid');
    expectProblem(await decide(jsonEvent({ ...base, json: { decision: 'approve', approver: 'bob' } }), lambdaContext()), 400, 'request.invalid');
    expectProblem(await decide(proxyEvent({ ...base, method: 'POST' }), lambdaContext()), 400, 'request.invalid');
  });

  it('gets one approval with its facts by ID, in the selected tenant', async () => {
    const rt = stubRuntime({ getApproval: async () => ({ approval_id: 'ap-1', status: 'pending', facts: { mode: 'commit' } }) });
    const get = createGetApprovalHandler(deps(rt));
    const out = await get(proxyEvent({ resource: '/v1/approvals/{id}', path: '/v1/approvals/ap-1', pathParameters: { id: 'ap-1' } }), lambdaContext());
    expect(out.statusCode).toBe(200);
    expect(JSON.parse(out.body as string)).toMatchObject({ approval_id: 'ap-1', facts: { mode: 'commit' } });
    expect(rt.calls.map((c) => [c.method, ...c.args.slice(1)])).toEqual([['getApproval', 'acme', 'ap-1']]);
  });
});

describe('meta', () => {
  /** The response schema the route table documents (and the OpenAPI document publishes) for a status. */
  function responseSchema(route: RouteDefinition, status: number) {
    const schema = route.responses[status]?.schema;
    if (schema === undefined) throw new Error(`${route.id} documents no ${status} body schema`);
    return schema;
  }

  const CAPABILITIES = {
    tenant_id: 'acme',
    items: [
      {
        id: 'payments.refund',
        kind: 'tool',
        connector_id: 'payments',
        connector_version: '1.0.0',
        input_schema: { type: 'object' },
        transaction: { modes: ['execute'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: false },
        approval: { required: false },
        tenant_approval_policies: [{ policy_id: 'big', modes: ['execute'], approver_scopes: ['aip:approve'], allow_self_approval: false }],
      },
    ],
  };

  it('GET /v1/capabilities passes the caller and the selected tenant (none for a multi-tenant caller without the header)', async () => {
    const rt = stubRuntime({ capabilities: async () => CAPABILITIES });
    const h = createListCapabilitiesHandler(deps(rt));
    const res = await h(proxyEvent({ path: '/v1/capabilities' }), lambdaContext());
    expect(res.statusCode).toBe(200);
    expect(body(res)).toEqual(CAPABILITIES);
    expect(responseSchema(ROUTES.listCapabilities, 200).parse(body(res))).toEqual(CAPABILITIES);
    const multi = { ...ALICE, tenants: ['acme', 'globex'] };
    await h(proxyEvent({ path: '/v1/capabilities', caller: multi }), lambdaContext());
    await h(proxyEvent({ path: '/v1/capabilities', caller: multi, headers: { 'X-AIP-Tenant': 'globex' } }), lambdaContext());
    expect(rt.calls).toEqual([
      { method: 'capabilities', args: [ALICE, 'acme'] },
      { method: 'capabilities', args: [multi, undefined] },
      { method: 'capabilities', args: [multi, 'globex'] },
    ]);
    expectProblem(await h(proxyEvent({ path: '/v1/capabilities', headers: { 'X-AIP-Tenant': 'globex' } }), lambdaContext()), 403, 'auth.tenant_forbidden');
  });

  it('GET /v1/capabilities maps the runtime’s refusals to problems', async () => {
    const rt = stubRuntime({
      capabilities: async () => {
        throw new AipError('runtime.caller_expired');
      },
    });
    expectProblem(await createListCapabilitiesHandler(deps(rt))(proxyEvent({ path: '/v1/capabilities' }), lambdaContext()), 401, 'runtime.caller_expired');
  });

  it('GET /v1/health answers 200 with the runtime’s readiness report, ok or degraded', async () => {
    const reports = [
      { status: 'ok' as const, connectors: [{ id: 'payments', ready: true }] },
      { status: 'degraded' as const, connectors: [{ id: 'payments', ready: false, detail: 'provider health endpoint answered 503' }] },
    ];
    let next = 0;
    const rt = stubRuntime({ health: async () => reports[next++] as (typeof reports)[number] });
    const health = createGetHealthHandler(deps(rt));
    for (const report of reports) {
      const res = await health(proxyEvent({ path: '/v1/health' }), lambdaContext());
      expect(res.statusCode).toBe(200);
      expect(body(res)).toEqual(report);
      expect(responseSchema(ROUTES.getHealth, 200).parse(body(res))).toEqual(report);
    }
    expect(rt.calls).toEqual([
      { method: 'health', args: [ALICE] },
      { method: 'health', args: [ALICE] },
    ]);
    expect(Object.keys(ROUTES.getHealth.responses)).toEqual(['200']);
  });

  it('serves the OpenAPI document without a caller and without the runtime', async () => {
    const rt = stubRuntime();
    const res = await createGetOpenApiHandler(deps(rt))(proxyEvent({ path: '/v1/openapi.json', caller: null }), lambdaContext());
    expect(res.statusCode).toBe(200);
    expect(body(res)).toMatchObject({ openapi: '3.1.0' });
    expect(rt.calls).toEqual([]);
  });
});
