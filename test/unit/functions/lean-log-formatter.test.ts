/**
 * The functions' Powertools lines without what the log group already says
 * (functions/shared/observability-base.ts `LeanLogFormatter`): no function
 * name, ARN, memory size or log sampling rate; the invocation's request ID,
 * cold start and X-Ray trace ID stay, and so do the line's own keys.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LeanLogFormatter } from '../../../functions/shared/observability-base.js';

const CONTEXT = {
  functionName: 'aip-prod-HttpSubmitAction',
  functionVersion: '$LATEST',
  memoryLimitInMB: '512',
  awsRequestId: '8f7180c3-9cb0-4d37-82f7-21ef822147e3',
  invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:aip-prod-HttpSubmitAction',
  getRemainingTimeInMillis: () => 30_000,
} as unknown as Context;

/** The JSON lines `log` writes to stdout and stderr. */
function linesOf(log: (logger: Logger) => void): Record<string, unknown>[] {
  const written: string[] = [];
  const capture = (chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  };
  const spies = [vi.spyOn(process.stdout, 'write').mockImplementation(capture), vi.spyOn(process.stderr, 'write').mockImplementation(capture)];
  try {
    const logger = new Logger({ serviceName: 'aip-runtime', logLevel: 'INFO', logFormatter: new LeanLogFormatter() });
    logger.addContext(CONTEXT);
    log(logger);
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
  return written
    .join('')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('LeanLogFormatter', () => {
  afterEach(() => vi.unstubAllEnvs());

  it("keeps level, message, time, service, cold start, the request ID, the trace ID and the line's keys; drops the function's name, ARN, memory and the sampling rate", () => {
    vi.stubEnv('_X_AMZN_TRACE_ID', 'Root=1-6750e1a0-8f3c2d1e9b7a6c5d4e3f2a1b;Parent=53995c3f42cd8ad8;Sampled=0');
    const [line] = linesOf((logger) => logger.info('request', { route: 'submitAction', status: 200 }));
    expect(line).toEqual({
      level: 'INFO',
      message: 'request',
      timestamp: expect.any(String),
      service: 'aip-runtime',
      cold_start: expect.any(Boolean),
      function_request_id: CONTEXT.awsRequestId,
      xray_trace_id: '1-6750e1a0-8f3c2d1e9b7a6c5d4e3f2a1b',
      route: 'submitAction',
      status: 200,
    });
  });

  it('still formats an error with its name and stack', () => {
    const [line] = linesOf((logger) => logger.error('failed', new TypeError('boom')));
    expect(line).toMatchObject({ level: 'ERROR', message: 'failed', error: { name: 'TypeError', message: 'boom' } });
    expect(line).not.toHaveProperty('function_arn');
  });
});
