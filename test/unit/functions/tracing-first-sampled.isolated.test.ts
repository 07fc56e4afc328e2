/**
 * When the environment's first invocation is sampled, the tracer loads on it,
 * as it did when the tracer was loaded on every first invocation: its handler
 * subsegment is recorded with `ColdStart: true`. The later, unsampled, case is
 * test/unit/functions/tracing-on-demand.isolated.test.ts. Isolated: a fresh
 * process, whose first invocation this is (see test/support/lambda-tracing.ts).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSweeperHandler } from '../../../functions/scheduled/sweeper.js';
import { LAMBDA_CONTEXT, startXrayDaemon, stubLambdaTracingEnv, stubTraceHeader, type XrayDaemon, xraySdkLoaded } from '../../support/lambda-tracing.js';
import { eventually } from '../../support/wait.js';

let daemon: XrayDaemon;

beforeAll(async () => {
  daemon = await startXrayDaemon();
  stubLambdaTracingEnv(daemon);
});

afterAll(() => {
  vi.unstubAllEnvs();
  daemon.close();
});

describe('a sampled first invocation', () => {
  it('loads the tracer and is recorded as the cold start', async () => {
    const handler = createSweeperHandler({ runtime: async () => ({ sweep: async () => ({ enqueued: 0, oldest_outcome_unknown_age_seconds: 0 }) }) });
    expect(xraySdkLoaded()).toBe(false);
    const root = stubTraceHeader(true);
    await handler({} as never, LAMBDA_CONTEXT);
    expect(xraySdkLoaded()).toBe(true);
    const segment = await eventually(() => daemon.documents.find((d) => d.trace_id === root && d.name === '## index.handler'), {
      what: 'the handler subsegment at the daemon',
    });
    expect(segment.annotations).toEqual({ ColdStart: true, Service: 'aip-test' });
    const next = stubTraceHeader(true);
    await handler({} as never, LAMBDA_CONTEXT);
    const again = await eventually(() => daemon.documents.find((d) => d.trace_id === next && d.name === '## index.handler'), {
      what: 'the second invocation’s handler subsegment',
    });
    expect(again.annotations).toEqual({ ColdStart: false, Service: 'aip-test' });
  });
});
