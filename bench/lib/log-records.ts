/**
 * Bytes of the log records an execute produces beside the code's own lines
 * (those bench/log-bytes.ts measures): Lambda's platform records and the API
 * stage's access log line, each built as CloudWatch Logs receives it, with
 * typical values, and counted (UTF-8 bytes, one event per line). The awscost
 * section prices them; the figures are these functions' results, not typed-in
 * assumptions.
 *
 * - Lambda's records, JSON log format (the stack's): `platform.start` and
 *   `platform.report` of every invocation at system log level INFO, plus
 *   `platform.initStart` and `platform.initReport` on a cold start, plus
 *   `platform.runtimeDone` at DEBUG; at WARN only a failed invocation's
 *   (none for an execute that succeeds). With active tracing the start,
 *   runtimeDone and report records carry the invocation's trace context.
 *   Shapes: the Lambda Telemetry API's event schema (the records CloudWatch
 *   Logs receives in the JSON format), e.g. a report
 *   `{"time":…,"type":"platform.report","record":{"requestId":…,"metrics":{"durationMs":…,"billedDurationMs":…,"memorySizeMB":…,"maxMemoryUsedMB":…},"status":"success"}}`.
 * - The access log line: the stage's format (infra/access-log-formats.ts),
 *   every `$context` variable replaced by a typical value of its kind.
 */

/** Lambda's system log level (lib/config/deployment.ts LAMBDA_SYSTEM_LOG_LEVELS). */
export type SystemLogLevel = 'DEBUG' | 'INFO' | 'WARN';

const TIME = '2026-12-03T11:24:48.123Z';
const REQUEST_ID = '8f7180c3-9cb0-4d37-82f7-21ef822147e3';
const TRACE_ROOT = '1-6750e1a0-8f3c2d1e9b7a6c5d4e3f2a1b';
const TRACING = { spanId: '53995c3f42cd8ad8', type: 'X-Amzn-Trace-Id', value: `Root=${TRACE_ROOT};Parent=53995c3f42cd8ad8;Sampled=0` };

const bytesOf = (record: unknown): number => Buffer.byteLength(`${JSON.stringify(record)}\n`);

/** The JSON records Lambda writes for one successful invocation at `level` (the list, for tests and the report). */
export function platformRecords(o: { level: SystemLogLevel; tracing: boolean; cold: boolean; memoryMb?: number }): object[] {
  if (o.level === 'WARN') return [];
  const tracing = o.tracing ? { tracing: TRACING } : {};
  const memorySizeMB = o.memoryMb ?? 512;
  const out: object[] = [];
  if (o.cold) {
    out.push({
      time: TIME,
      type: 'platform.initStart',
      record: {
        initializationType: 'on-demand',
        phase: 'init',
        runtimeVersion: 'nodejs:22.v48',
        runtimeVersionArn: 'arn:aws:lambda:us-east-1::runtime:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0',
        functionName: 'aip-prod-stateless-HttpSubmitAction1A2B3C4D-AbCdEfGhIjKl',
        functionVersion: '$LATEST',
      },
    });
    out.push({
      time: TIME,
      type: 'platform.initReport',
      record: { initializationType: 'on-demand', phase: 'init', status: 'success', metrics: { durationMs: 412.35 } },
    });
  }
  out.push({ time: TIME, type: 'platform.start', record: { requestId: REQUEST_ID, version: '$LATEST', ...tracing } });
  if (o.level === 'DEBUG') {
    out.push({
      time: TIME,
      type: 'platform.runtimeDone',
      record: {
        requestId: REQUEST_ID,
        status: 'success',
        ...tracing,
        spans: [
          { name: 'responseLatency', start: TIME, durationMs: 31.584 },
          { name: 'responseDuration', start: TIME, durationMs: 0.092 },
          { name: 'runtimeOverhead', start: TIME, durationMs: 1.211 },
        ],
        metrics: { durationMs: 33.207, producedBytes: 1480 },
      },
    });
  }
  out.push({
    time: TIME,
    type: 'platform.report',
    record: {
      requestId: REQUEST_ID,
      metrics: {
        durationMs: 33.207,
        billedDurationMs: 34,
        memorySizeMB,
        maxMemoryUsedMB: 118,
        ...(o.cold ? { initDurationMs: 412.35 } : {}),
      },
      ...tracing,
      status: 'success',
    },
  });
  return out;
}

/**
 * Bytes of Lambda's own records per invocation at `level`: a warm
 * invocation's, plus a cold start's extra records on `coldShare` of them.
 */
export function platformLogBytesPerInvocation(level: SystemLogLevel, tracing: boolean, coldShare: number): number {
  const sum = (cold: boolean) => platformRecords({ level, tracing, cold }).reduce((s: number, r) => s + bytesOf(r), 0);
  return (1 - coldShare) * sum(false) + coldShare * sum(true);
}

/** Typical values of the access log's `$context` variables, for an execute (POST /v1/actions, `Prefer: wait`, settled in time). */
export const TYPICAL_CONTEXT_VALUES: Readonly<Record<string, string>> = {
  '$context.requestId': '2ebdbe10-d528-4e77-9af9-8b9dcba3bd43',
  '$context.extendedRequestId': 'Kx3mYFpAoAMEbcw=',
  '$context.requestTime': '03/Dec/2026:11:24:48 +0000',
  '$context.requestTimeEpoch': '1796297088123',
  '$context.identity.sourceIp': '203.0.113.45',
  '$context.identity.userAgent': 'aip-client/0.1.0 (node 22.12.0; linux arm64)',
  '$context.httpMethod': 'POST',
  '$context.resourcePath': '/v1/actions',
  '$context.routeKey': 'POST /v1/actions',
  '$context.path': '/api/v1/actions',
  '$context.protocol': 'HTTP/1.1',
  '$context.status': '200',
  '$context.responseLength': '1480',
  '$context.responseLatency': '187',
  '$context.integrationStatus': '200',
  '$context.integrationLatency': '176',
  '$context.integrationErrorMessage': '-',
  '$context.authorizer.principalId': 'user:0d5c5a4e-7b1f-4c1e-9a57-3f0f2b6c8e91',
  '$context.authorizer.status': '200',
  '$context.authorizer.latency': '-',
  '$context.authorizer.error': '-',
  '$context.error.responseType': '-',
  '$context.xrayTraceId': `Root=${TRACE_ROOT}`,
};

/** Bytes of one access log line of `format` (the stage's JSON format string), every `$context` variable given its typical value. */
export function accessLogLineBytes(format: string, values: Readonly<Record<string, string>> = TYPICAL_CONTEXT_VALUES): number {
  const line = format.replace(/\$context\.[A-Za-z.]+/g, (name) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no typical value for ${name} (bench/lib/log-records.ts TYPICAL_CONTEXT_VALUES)`);
    return value;
  });
  return Buffer.byteLength(`${line}\n`);
}
