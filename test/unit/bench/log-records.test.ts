/**
 * The log records the cost model prices beside the code's own lines
 * (bench/lib/log-records.ts): Lambda's platform records per system log level
 * and the stages' access log lines, built from the deployed formats.
 */
import { describe, expect, it } from 'vitest';
import { accessLogLineBytes, platformLogBytesPerInvocation, platformRecords } from '../../../bench/lib/log-records.js';
import { accessLogFormatString, HTTP_ACCESS_LOG_FIELDS, REST_ACCESS_LOG_FIELDS } from '../../../infra/access-log-formats.js';

const types = (records: object[]) => records.map((r) => (r as { type: string }).type);
const lineBytes = (records: object[]) => records.reduce((s, r) => s + Buffer.byteLength(`${JSON.stringify(r)}\n`), 0);

describe("Lambda's platform records", () => {
  it('WARN: nothing for an invocation that succeeds, cold or warm', () => {
    expect(platformRecords({ level: 'WARN', tracing: true, cold: true })).toEqual([]);
    expect(platformLogBytesPerInvocation('WARN', true, 1)).toBe(0);
  });

  it('INFO: start and report, plus the init records on a cold start; DEBUG adds runtimeDone', () => {
    expect(types(platformRecords({ level: 'INFO', tracing: false, cold: false }))).toEqual(['platform.start', 'platform.report']);
    expect(types(platformRecords({ level: 'INFO', tracing: false, cold: true }))).toEqual([
      'platform.initStart',
      'platform.initReport',
      'platform.start',
      'platform.report',
    ]);
    expect(types(platformRecords({ level: 'DEBUG', tracing: false, cold: false }))).toEqual(['platform.start', 'platform.runtimeDone', 'platform.report']);
  });

  it("a report carries the invocation's duration, billed duration, memory and, cold, its init duration; tracing adds the trace context", () => {
    const [, report] = platformRecords({ level: 'INFO', tracing: true, cold: false, memoryMb: 1024 }) as { record: Record<string, unknown> }[];
    expect(report!.record).toMatchObject({
      metrics: { durationMs: expect.any(Number), billedDurationMs: expect.any(Number), memorySizeMB: 1024, maxMemoryUsedMB: expect.any(Number) },
      tracing: { type: 'X-Amzn-Trace-Id' },
      status: 'success',
    });
    const cold = platformRecords({ level: 'INFO', tracing: false, cold: true }).at(-1) as { record: { metrics: Record<string, unknown> } };
    expect(cold.record.metrics.initDurationMs).toEqual(expect.any(Number));
  });

  it('per invocation: the warm records, plus the cold ones on the cold share', () => {
    const warm = lineBytes(platformRecords({ level: 'INFO', tracing: true, cold: false }));
    const cold = lineBytes(platformRecords({ level: 'INFO', tracing: true, cold: true }));
    expect(platformLogBytesPerInvocation('INFO', true, 0)).toBe(warm);
    expect(platformLogBytesPerInvocation('INFO', true, 0.25)).toBeCloseTo(0.75 * warm + 0.25 * cold, 9);
    expect(platformLogBytesPerInvocation('INFO', false, 0)).toBeLessThan(warm);
  });
});

describe('access log lines', () => {
  it('fills every variable of the deployed formats and counts the line', () => {
    for (const fields of [REST_ACCESS_LOG_FIELDS, HTTP_ACCESS_LOG_FIELDS]) {
      const format = accessLogFormatString(fields);
      const bytes = accessLogLineBytes(format);
      // At least the JSON without its variables, plus one byte per value and the newline.
      expect(bytes).toBeGreaterThan(Buffer.byteLength(format.replace(/\$context\.[A-Za-z.]+/g, '')) + Object.keys(fields).length);
    }
    expect(accessLogLineBytes('{"a":"$context.status","b":"$context.httpMethod"}')).toBe(Buffer.byteLength('{"a":"200","b":"POST"}\n'));
  });

  it('refuses a variable it has no typical value for', () => {
    expect(() => accessLogLineBytes('{"x":"$context.identity.caller"}')).toThrow(/no typical value for \$context\.identity\.caller/);
  });
});
