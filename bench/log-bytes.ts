/**
 * Bytes of CloudWatch Logs one execute produces: runs `payments.charge`
 * executes (`Prefer: wait`) on the local stack, whose route handlers, worker
 * and runtime are the deployed code, with the Powertools settings the stack
 * sets in Lambda (INFO, EMF metrics on: AWS_LAMBDA_FUNCTION_NAME set;
 * tracing off, there is no X-Ray daemon), and counts every byte the process
 * writes to stdout and stderr while they run: the Powertools Logger's JSON
 * lines and the EMF metric documents, which is what Lambda ships to
 * CloudWatch Logs (every line with the invocation's X-Ray trace ID, as in
 * Lambda). Lambda's own platform records (start, report) are not written by
 * the code; bench/lib/log-records.ts counts them, and the access log line.
 *
 * Run by the awscost section in a child process (so the environment above
 * stays out of the bench's own process): prints one JSON line
 * `{"log_bytes_per_execute": …, "log_lines_per_execute": …, "emf_bytes_per_execute": …, "executes": …}`
 * last (EMF: the submit route's metric document, and with BENCH_LOG_BYTES_ATTEMPT=queue the worker's, one each per execute).
 */
import { randomUUID } from 'node:crypto';

process.env.AWS_LAMBDA_FUNCTION_NAME ??= 'aip-bench-log-bytes';
process.env.POWERTOOLS_LOG_LEVEL = 'INFO';
process.env.POWERTOOLS_TRACE_ENABLED = 'false';
process.env.POWERTOOLS_SERVICE_NAME = 'aip-runtime';
process.env.POWERTOOLS_METRICS_NAMESPACE = 'AIP/bench';
// Lambda sets the invocation's trace header whatever the tracing mode; Powertools puts its root on every line (`xray_trace_id`).
process.env._X_AMZN_TRACE_ID ??= 'Root=1-6750e1a0-8f3c2d1e9b7a6c5d4e3f2a1b;Parent=53995c3f42cd8ad8;Sampled=0';

const RUNS = Number(process.env.BENCH_LOG_BYTES_RUNS ?? 20);
/**
 * Where the waited execute's attempt runs (`attempt_when_waited`): `inline` (the deployed default) in the submit, so
 * the execute's logs are the submit's; `queue`, through the invoke queue and the worker, whose logs count too.
 */
const ATTEMPT = process.env.BENCH_LOG_BYTES_ATTEMPT === 'queue' ? 'queue' : 'inline';

const { startLocalStack } = await import('../dev/local/start.js');
const { AipClient } = await import('../lib/client/client.js');

const stack = await startLocalStack({
  inMemory: true,
  ports: { api: 0, dynamodb: 0, sqs: 0, scheduler: 0, payments: 0 },
  approvalPolicies: [],
  sweepIntervalMs: 0,
  runtimeSettings: { attempt_when_waited: ATTEMPT },
});
let bytes = 0;
let lines = 0;
let logBytes = 0;
let logLines = 0;
let emfBytes = 0;
const out = process.stdout.write.bind(process.stdout);
const err = process.stderr.write.bind(process.stderr);
let counting = false;
const counter =
  (write: typeof out) =>
  (chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
    if (counting) {
      const b = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
      bytes += b;
      lines += (typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8')).split('\n').filter((l) => l.trim() !== '').length;
      return true;
    }
    return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
  };
process.stdout.write = counter(out) as typeof process.stdout.write;
process.stderr.write = counter(err) as typeof process.stderr.write;
try {
  const token = await stack.mintToken({ ttl: '1h' });
  const client = new AipClient({ baseUrl: stack.url, token, tenant: stack.tenant });
  const execute = async () => {
    const id = `logs-${randomUUID().slice(0, 12)}`;
    // Inline, the submit ran the attempt and no invoke message is sent: nothing else runs for this execute.
    const workerDone = ATTEMPT === 'queue' ? stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === id) : Promise.resolve();
    const sub = await client.submitAction(
      {
        id,
        capability_id: 'payments.charge',
        input: { amount: 1250, currency: 'eur', customer: 'cus_logs' },
        idempotency_key: id,
        transaction: { mode: 'execute' },
      } as never,
      { wait: 20 },
    );
    await workerDone;
    if (sub.action_result.status !== 'completed') throw new Error(`execute ended ${sub.action_result.status}`);
  };
  // Warm-up: the first invocation's composition logs once per environment, not per execute.
  for (let i = 0; i < 3; i++) await execute();
  counting = true;
  for (let i = 0; i < RUNS; i++) await execute();
  counting = false;
  logBytes = bytes;
  logLines = lines;
  // The local stack's handlers publish no metrics (no receiver); in Lambda each invocation flushes one EMF document
  // (functions/shared/http-observability.ts, queue-consumer.ts). Measured with the same Powertools Metrics settings.
  const { Metrics, MetricUnit } = await import('@aws-lambda-powertools/metrics');
  const emf = (fill: (m: InstanceType<typeof Metrics>) => void) => {
    const m = new Metrics({ namespace: process.env.POWERTOOLS_METRICS_NAMESPACE, serviceName: process.env.POWERTOOLS_SERVICE_NAME });
    fill(m);
    bytes = 0;
    counting = true;
    m.publishStoredMetrics();
    counting = false;
    return bytes;
  };
  emfBytes =
    emf((m) => {
      m.addDimension('route', 'submitAction');
      m.addMetric('HttpRequests', MetricUnit.Count, 1);
    }) + (ATTEMPT === 'queue' ? emf((m) => m.addMetric('InvokeMessagesProcessed', MetricUnit.Count, 1)) : 0);
} finally {
  counting = false;
  process.stdout.write = out;
  process.stderr.write = err;
  await stack.stop();
}
process.stdout.write(
  `${JSON.stringify({ log_bytes_per_execute: logBytes / RUNS, log_lines_per_execute: logLines / RUNS, emf_bytes_per_execute: emfBytes, executes: RUNS })}\n`,
);
