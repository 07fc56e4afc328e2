/**
 * The Powertools Tracer is loaded on the first invocation that X-Ray samples
 * (functions/shared/observability-base.ts `tracingMiddleware`), not on the
 * first invocation, and never with tracing off; once loaded it stays and
 * traces every invocation as before.
 *
 * Isolated: one fresh process for this file (loading the tracer patches
 * node:http and node:https for the whole process, and the process-wide
 * Observability is made once). The tests run in order, as one execution
 * environment's life.
 *
 * Observed with the real tracer and X-Ray SDK (test/support/lambda-tracing.ts):
 * the import, in Node's CommonJS module registry; what X-Ray records, at a
 * loopback UDP socket standing in for the daemon; outgoing HTTP, at a
 * loopback server: a traced request carries the `X-Amzn-Trace-Id` header
 * (fetch through Powertools' diagnostics channel subscription, node:http
 * through the X-Ray SDK's patch).
 */
import http, { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import middy from '@middy/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSweeperHandler } from '../../../functions/scheduled/sweeper.js';
import { loggingMiddlewares, loggingObservability } from '../../../functions/shared/observability-base.js';
import { LAMBDA_CONTEXT, startXrayDaemon, stubLambdaTracingEnv, stubTraceHeader, type XrayDaemon, xraySdkLoaded } from '../../support/lambda-tracing.js';
import { eventually } from '../../support/wait.js';

let daemon: XrayDaemon;
let server: Server;
let serverUrl: string;
/** The `X-Amzn-Trace-Id` header of every request the loopback server answered, by the path the test chose. */
const traceHeaders = new Map<string, string | undefined>();
let tag = '';

/** One request through fetch and one through node:http to the loopback server, under the current tag. */
async function callOut(): Promise<void> {
  await (await fetch(`${serverUrl}/${tag}-fetch`)).text();
  await new Promise<void>((resolve, reject) => {
    http
      .get(`${serverUrl}/${tag}-http`, (res) => {
        res.resume();
        res.on('end', resolve);
      })
      .on('error', reject);
  });
}

/** The chain of the queue consumers and the sweeper (functions/shared/consumer-middleware.ts), through the sweeper. */
const consumerChain = () =>
  createSweeperHandler({
    runtime: async () => ({
      sweep: async () => {
        await callOut();
        return { enqueued: 0, oldest_outcome_unknown_age_seconds: 0 };
      },
    }),
  });

/** A chain built from `loggingMiddlewares`, as the HTTP routes and the authorizer build theirs. */
const edgeChain = () =>
  middy(async () => {
    await callOut();
    return { ok: true };
  }).use(loggingMiddlewares(loggingObservability()));

/** Invokes `handler` under a new trace header; returns the trace's root. */
async function invoke(handler: (event: never, context: typeof LAMBDA_CONTEXT) => Promise<unknown>, name: string, sampled: boolean): Promise<string> {
  const root = stubTraceHeader(sampled);
  tag = name;
  await handler({} as never, LAMBDA_CONTEXT);
  return root;
}

const traced = (root: string, sampled: boolean) => new RegExp(`^Root=${root};Parent=[0-9a-f]{16};Sampled=${sampled ? 1 : 0}$`);
const recorded = (root: string, name: string, what: string) => eventually(() => daemon.documents.find((d) => d.trace_id === root && d.name === name), { what });

beforeAll(async () => {
  daemon = await startXrayDaemon();
  server = createServer((req, res) => {
    traceHeaders.set((req.url ?? '').slice(1), req.headers['x-amzn-trace-id'] as string | undefined);
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  stubLambdaTracingEnv(daemon);
});

afterAll(async () => {
  vi.unstubAllEnvs();
  daemon.close();
  await new Promise((resolve) => server.close(resolve));
});

describe('the tracer, loaded on the first sampled invocation', () => {
  it('is never imported with tracing off, sampled or not', async () => {
    expect(xraySdkLoaded()).toBe(false);
    vi.stubEnv('POWERTOOLS_TRACE_ENABLED', 'false');
    const consumer = consumerChain();
    await invoke(consumer, 'off-1', true);
    await invoke(consumer, 'off-2', false);
    await invoke(consumer, 'off-3', true);
    expect(xraySdkLoaded()).toBe(false);
    expect(traceHeaders.size).toBe(6);
    expect([...traceHeaders.values()]).toEqual(Array(6).fill(undefined));
    vi.stubEnv('POWERTOOLS_TRACE_ENABLED', 'true');
  });

  it('is not imported by unsampled invocations, then loads on the first sampled one and traces from there on', async () => {
    const consumer = consumerChain();
    const edge = edgeChain();

    // Unsampled: X-Ray records nothing, and nothing loads the tracer.
    await invoke(consumer, 'unsampled-consumer', false);
    await invoke(edge, 'unsampled-edge', false);
    expect(xraySdkLoaded()).toBe(false);
    expect(traceHeaders.get('unsampled-consumer-fetch')).toBeUndefined();
    expect(traceHeaders.get('unsampled-edge-http')).toBeUndefined();

    // The first sampled invocation loads it: its handler subsegment and its outgoing calls are traced.
    const root = await invoke(consumer, 'first-sampled', true);
    expect(xraySdkLoaded()).toBe(true);
    expect(traceHeaders.get('first-sampled-fetch')).toMatch(traced(root, true));
    expect(traceHeaders.get('first-sampled-http')).toMatch(traced(root, true));
    const handlerSegment = await recorded(root, '## index.handler', 'the sampled invocation’s handler subsegment at the daemon');
    // Not the environment's first invocation: the annotation says so, although the tracer is new.
    expect(handlerSegment.annotations).toEqual({ ColdStart: false, Service: 'aip-test' });
    await recorded(root, '127.0.0.1', 'the outgoing request’s subsegment at the daemon');

    // The other chain, built before the tracer loaded, traces too now.
    const edgeRoot = await invoke(edge, 'sampled-edge', true);
    expect(traceHeaders.get('sampled-edge-fetch')).toMatch(traced(edgeRoot, true));
    await recorded(edgeRoot, '## index.handler', 'the edge chain’s handler subsegment at the daemon');

    // Once loaded it stays, as when it loaded on the first invocation: an unsampled invocation passes its decision
    // downstream and X-Ray records nothing of it; the next sampled one is recorded.
    const unsampledRoot = await invoke(consumer, 'unsampled-after', false);
    expect(traceHeaders.get('unsampled-after-fetch')).toMatch(traced(unsampledRoot, false));
    const laterRoot = await invoke(consumer, 'sampled-after', true);
    await recorded(laterRoot, '## index.handler', 'a later sampled invocation’s handler subsegment');
    expect(daemon.documents.filter((d) => d.trace_id === unsampledRoot)).toEqual([]);
  });
});
