/**
 * The `Prefer: wait` poll schedule of the handlers (functions/shared/wait.ts;
 * HttpDeps.waitPoll changes it): 25 ms for 250 ms, then ×1.5 up to 1 s; a POST
 * wait's first poll is timed to the settle time the environment measured for
 * the capability (HttpDeps.settleTimes), a GET wait polls at once.
 */
import { describe, expect, it } from 'vitest';
import { createGetActionHandler, createSubmitActionHandler } from '../../../functions/http/actions.js';
import { SettleTimes } from '../../../functions/shared/wait.js';
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
  it('defaults: the first poll after one interval, 25 ms for 250 ms, then ×1.5', async () => {
    const clock = fakeClock();
    const rt = runtimeSettlingAfter(400, clock);
    const res = await createSubmitActionHandler(deps(rt, { clock, settleTimes: new SettleTimes() }))(
      jsonEvent({ json: ACTION, headers: { Prefer: 'wait=10' } }),
      lambdaContext(),
    );
    expect(res.statusCode).toBe(200);
    // 25 (first), ten of 25 (the fast window), then 25, 38, 57: 25 + 250 + 25 + 38 + 57 = 395, then 86 → 481 ≥ 400.
    expect(clock.sleeps).toEqual([25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 38, 57, 86]);
  });

  it('times the first POST poll to the settle time learnt for the capability and mode', async () => {
    const settleTimes = new SettleTimes();
    let clock = fakeClock();
    let handler = createSubmitActionHandler(deps(runtimeSettlingAfter(140, clock), { clock, settleTimes }));
    await handler(jsonEvent({ json: ACTION, headers: { Prefer: 'wait=10' } }), lambdaContext());
    const learnt = settleTimes.expected('payments.refund invoke');
    // Seen between the polls at 125 and 150 ms: learnt as their middle.
    expect(learnt).toBe(137.5);
    clock = fakeClock();
    handler = createSubmitActionHandler(deps(runtimeSettlingAfter(140, clock), { clock, settleTimes }));
    const res = await handler(jsonEvent({ json: ACTION, headers: { Prefer: 'wait=10' } }), lambdaContext());
    expect(res.statusCode).toBe(200);
    // First poll one interval before the expected settlement, the second sees it.
    expect(clock.sleeps).toEqual([113, 25, 25]);
  });

  it('uses a configured fixed schedule', async () => {
    const clock = fakeClock();
    const rt = runtimeSettlingAfter(300, clock);
    const res = await createSubmitActionHandler(
      deps(rt, { clock, waitPoll: { intervalMs: 25, fastWindowMs: 0, maxIntervalMs: 100, adaptive: false, firstMs: 0 }, settleTimes: new SettleTimes() }),
    )(jsonEvent({ json: ACTION, headers: { Prefer: 'wait=10' } }), lambdaContext());
    expect(res.statusCode).toBe(200);
    // 25, ceil(37.5) = 38, ceil(57) = 57, ceil(85.5) = 86, then capped at 100: 25 + 38 + 57 + 86 + 100 = 306 ≥ 300.
    expect(clock.sleeps).toEqual([25, 38, 57, 86, 100]);
  });

  it('polls at once on GET /v1/actions/{id}?wait=, then on the schedule', async () => {
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
    const res = await createGetActionHandler(deps(rt, { clock, waitPoll: { intervalMs: 20 } }))(event, lambdaContext());
    expect(res.statusCode).toBe(200);
    expect(clock.sleeps).toEqual([20, 20, 20]);
  });
});
