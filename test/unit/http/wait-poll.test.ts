/**
 * The `Prefer: wait` poll schedule is configurable per deployment of the
 * handlers (HttpDeps.waitPoll); the default is the deployed one (200 ms, ×1.5,
 * up to 1 s). The benchmark's local stack tunes it (bench/sections/latency.ts).
 */
import { describe, expect, it } from 'vitest';
import { createGetActionHandler, createSubmitActionHandler } from '../../../functions/http/actions.js';
import { deps, fakeClock, jsonEvent, lambdaContext, proxyEvent, stubRuntime, ALICE } from './support.js';

const ACTION = { id: 'act-1', capability_id: 'payments.refund', input: { amount: 10 } };

function runtimeSettlingAfter(ms: number, clock: { now(): number }) {
  const start = clock.now();
  const done = () => clock.now() - start >= ms;
  return stubRuntime({
    submit: async () =>
      ({
        action_id: 'act-1',
        tenant_id: 'acme',
        disposition: 'accepted',
        http_status: 202,
        action_result: { action_id: 'act-1', status: 'accepted' },
      }) as never,
    getActionResult: async () => ({ action_id: 'act-1', status: done() ? 'completed' : 'running' }),
    getAction: async () => ({ action_result: { action_id: 'act-1', status: done() ? 'completed' : 'running' } }) as never,
  });
}

describe('Prefer: wait poll schedule (HttpDeps.waitPoll)', () => {
  it('defaults to 200 ms growing ×1.5 up to 1 s', async () => {
    const clock = fakeClock();
    const rt = runtimeSettlingAfter(2_500, clock);
    const res = await createSubmitActionHandler(deps(rt, { clock }))(jsonEvent({ json: ACTION, headers: { Prefer: 'wait=10' } }), lambdaContext());
    expect(res.statusCode).toBe(200);
    expect(clock.sleeps).toEqual([200, 300, 450, 675, 1_000]);
  });

  it('uses the configured first interval and cap on POST with Prefer: wait', async () => {
    const clock = fakeClock();
    const rt = runtimeSettlingAfter(300, clock);
    const res = await createSubmitActionHandler(deps(rt, { clock, waitPoll: { initialIntervalMs: 25, maxIntervalMs: 100 } }))(
      jsonEvent({ json: ACTION, headers: { Prefer: 'wait=10' } }),
      lambdaContext(),
    );
    expect(res.statusCode).toBe(200);
    // 25, ceil(37.5) = 38, ceil(57) = 57, ceil(85.5) = 86, then capped at 100: 25 + 38 + 57 + 86 + 100 = 306 ≥ 300.
    expect(clock.sleeps).toEqual([25, 38, 57, 86, 100]);
  });

  it('uses it on GET /v1/actions/{id}?wait= too', async () => {
    const clock = fakeClock();
    const rt = runtimeSettlingAfter(60, clock);
    const event = proxyEvent({
      method: 'GET',
      path: '/v1/actions/act-1',
      resource: '/v1/actions/{id}',
      pathParameters: { id: 'act-1' },
      query: { wait: '5' },
      caller: ALICE,
    });
    const res = await createGetActionHandler(deps(rt, { clock, waitPoll: { initialIntervalMs: 20, maxIntervalMs: 20 } }))(event, lambdaContext());
    expect(res.statusCode).toBe(200);
    expect(clock.sleeps).toEqual([20, 20, 20]);
  });
});
