/**
 * The thin mapping of the queue and scheduled entrypoints, with a stub of the
 * Runtime's method signatures: which records a batch reports as failed, and
 * what reaches the Runtime and the logs.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, ScheduledEvent, SQSEvent, SQSRecord } from 'aws-lambda';
import { encodeQueueMessage, type InvokeMessage, type QueueMessage, type ReconcileMessage } from '../../../lib/ports/messages.js';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { localLambdaContext } from '../../../lib/aws/sqs/poller.js';
import { createInvokeHandler, handler as deployedInvokeHandler } from '../../../functions/worker/invoke.js';
import { createReconcileHandler } from '../../../functions/worker/reconcile.js';
import { createSweeperHandler } from '../../../functions/scheduled/sweeper.js';
import { installRuntime, uninstallRuntime } from '../../../functions/shared/bootstrap.js';
import { summarizeOutcome } from '../../../functions/shared/runtime-contract.js';
import type { Observability } from '../../../functions/shared/observability.js';
import { AIP_METRICS, metricsNamespace } from '../../../lib/config/function-env.js';

/** The parts of an EMF document these tests read. */
interface EmfDocument {
  readonly _aws: {
    readonly CloudWatchMetrics: readonly {
      readonly Namespace: string;
      readonly Dimensions: readonly string[][];
      readonly Metrics: readonly { Name: string; Unit?: string }[];
    }[];
  };
  readonly [key: string]: unknown;
}

interface LogLine {
  level: string;
  message: string;
  fields: Record<string, unknown>;
}

function recordingObservability(): { obs: Observability; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const log =
    (level: string) =>
    (message: string, ...extra: object[]) => {
      lines.push({ level, message, fields: Object.assign({}, ...extra) as Record<string, unknown> });
    };
  return { obs: { logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') } }, lines };
}

const context = (): Context => localLambdaContext('unit', 30_000, 'us-east-1');

function record(id: string, body: string, receiveCount = 1): SQSRecord {
  return {
    messageId: id,
    receiptHandle: `rh-${id}`,
    body,
    attributes: {
      ApproximateReceiveCount: String(receiveCount),
      SentTimestamp: '1700000000000',
      SenderId: 'x',
      ApproximateFirstReceiveTimestamp: '1700000000000',
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:q',
    awsRegion: 'us-east-1',
  };
}

const invoke = (action_id: string, extra: Partial<InvokeMessage> = {}): InvokeMessage => ({
  kind: 'invoke',
  tenant_id: 'tenant-a',
  action_id,
  transaction_id: `txn-${action_id}`,
  fence: 3,
  attempt: 1,
  ...extra,
});
const reconcile = (transaction_id: string): ReconcileMessage => ({ kind: 'reconcile', tenant_id: 'tenant-a', transaction_id, reason: 'schedule' });
const event = (...records: SQSRecord[]): SQSEvent => ({ Records: records });
const msg = (id: string, m: QueueMessage, receiveCount = 1) => record(id, encodeQueueMessage(m), receiveCount);

describe('invoke worker', () => {
  it('hands every decoded invoke message to runAttempt, identifiers and fence only', async () => {
    const seen: InvokeMessage[] = [];
    const { obs } = recordingObservability();
    const handler = createInvokeHandler({
      runtime: async () => ({ runAttempt: async (m: InvokeMessage) => (seen.push(m), { disposition: 'settled', retry: false }) }),
      observability: obs,
    });
    const res = await handler(event(msg('m1', invoke('a1')), msg('m2', invoke('a2', { attempt: 2, fence: 9 }))), context());
    expect(res).toEqual({ batchItemFailures: [] });
    expect(seen.map((m) => m.action_id).sort()).toEqual(['a1', 'a2']);
    expect(seen.find((m) => m.action_id === 'a2')).toEqual(invoke('a2', { attempt: 2, fence: 9 }));
  });

  it('reports exactly the records whose attempt threw, in event order', async () => {
    const { obs, lines } = recordingObservability();
    const handler = createInvokeHandler({
      runtime: async () => ({
        runAttempt: async (m: InvokeMessage) => {
          if (m.action_id === 'bad-1') throw new AipError('transaction.store_unavailable');
          if (m.action_id === 'bad-2') throw new Error('socket hang up with sk_live_secret in it');
          return { disposition: 'settled', retry: false };
        },
      }),
      observability: obs,
    });
    const res = await handler(event(msg('m1', invoke('ok-1')), msg('m2', invoke('bad-1')), msg('m3', invoke('ok-2')), msg('m4', invoke('bad-2'))), context());
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'm2' }, { itemIdentifier: 'm4' }]);
    const errors = lines.filter((l) => l.level === 'error');
    expect(errors.map((l) => l.fields.message_id).sort()).toEqual(['m2', 'm4']);
    expect(errors.find((l) => l.fields.message_id === 'm2')?.fields).toMatchObject({
      error_code: 'transaction.store_unavailable',
      retryable: true,
      action_id: 'bad-1',
      fence: 3,
    });
    // A foreign error is logged by name only: its message could carry secrets.
    expect(JSON.stringify(lines)).not.toContain('sk_live_secret');
    expect(errors.find((l) => l.fields.message_id === 'm4')?.fields).toMatchObject({ error_name: 'Error' });
  });

  it('reports a record failed when the outcome asks for a redelivery (retry: true), without logging an error', async () => {
    const { obs, lines } = recordingObservability();
    const handler = createInvokeHandler({
      runtime: async () => ({
        runAttempt: async (m: InvokeMessage) =>
          m.action_id === 'leased' ? { disposition: 'deferred', retry: true, retry_after_ms: 1500 } : { disposition: 'superseded', retry: false },
      }),
      observability: obs,
    });
    const res = await handler(event(msg('m1', invoke('leased')), msg('m2', invoke('zombie'))), context());
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'm1' }]);
    expect(lines.filter((l) => l.level === 'error')).toEqual([]);
    expect(lines.find((l) => l.fields.message_id === 'm1')?.fields).toMatchObject({ disposition: 'deferred', retry_after_ms: 1500 });
  });

  it('makes a deferred record visible again after its retry_after_ms (by its receipt handle) before reporting it failed', async () => {
    const { obs, lines } = recordingObservability();
    const redelivered: { handle: string; delayMs: number }[] = [];
    const receives: Record<string, number | undefined> = {};
    const handler = createInvokeHandler({
      runtime: async () => ({
        runAttempt: async (m: InvokeMessage, budget?: { receive_count?: number }) => {
          receives[m.action_id] = budget?.receive_count;
          if (m.action_id === 'busy') return { disposition: 'deferred', retry: true, retry_after_ms: 2_345, reason: 'connector.remote_capacity_exhausted' };
          return m.action_id === 'held' ? { disposition: 'deferred', retry: true } : { disposition: 'settled', retry: false };
        },
        redeliverInvokeAfter: async (handle: string, delayMs: number) => {
          redelivered.push({ handle, delayMs });
        },
      }),
      observability: obs,
    });
    const res = await handler(event(msg('m1', invoke('busy'), 3), msg('m2', invoke('held')), msg('m3', invoke('ok'))), context());
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'm1' }, { itemIdentifier: 'm2' }]);
    // Each record's receive count reaches the Runtime (it bounds the deferrals).
    expect(receives).toEqual({ busy: 3, held: 1, ok: 1 });
    // Only the outcome that names a delay changes the visibility; the other keeps the queue's visibility timeout.
    expect(redelivered).toEqual([{ handle: 'rh-m1', delayMs: 2_345 }]);
    expect(lines.find((l) => l.fields.message_id === 'm1')?.fields).toMatchObject({ reason: 'connector.remote_capacity_exhausted', retry_after_ms: 2_345 });
  });

  it('still reports a deferred record failed when its visibility change fails (the visibility timeout applies)', async () => {
    const { obs, lines } = recordingObservability();
    const handler = createInvokeHandler({
      runtime: async () => ({
        runAttempt: async () => ({ disposition: 'deferred', retry: true, retry_after_ms: 1_000 }),
        redeliverInvokeAfter: async () => {
          throw new AipError('queue.send_failed');
        },
      }),
      observability: obs,
    });
    const res = await handler(event(msg('m1', invoke('busy'))), context());
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'm1' }]);
    expect(lines.find((l) => l.level === 'warn' && l.fields.message_id === 'm1')?.fields).toMatchObject({ error_code: 'queue.send_failed' });
  });

  it('fails invalid bodies and messages of the other kind without calling the runtime', async () => {
    let calls = 0;
    const { obs, lines } = recordingObservability();
    const handler = createInvokeHandler({
      runtime: async () => ({ runAttempt: async () => (calls++, { disposition: 'settled', retry: false }) }),
      observability: obs,
    });
    const res = await handler(
      event(
        record('m1', '{not json'),
        record('m2', JSON.stringify({ ...invoke('x'), input: { card: '4242' } })),
        msg('m3', reconcile('txn-1')),
        msg('m4', invoke('fine')),
      ),
      context(),
    );
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'm1' }, { itemIdentifier: 'm2' }, { itemIdentifier: 'm3' }]);
    expect(calls).toBe(1);
    expect(JSON.stringify(lines)).not.toContain('4242');
    expect(lines.find((l) => l.fields.message_id === 'm3')?.message).toMatch(/wrong kind/);
  });

  it('throws (whole batch retried) when the runtime cannot be built', async () => {
    const handler = createInvokeHandler({
      runtime: async () => {
        throw new Error('bad configuration');
      },
      observability: recordingObservability().obs,
    });
    await expect(handler(event(msg('m1', invoke('a'))), context())).rejects.toThrow('bad configuration');
  });

  it('answers an empty batch with no failures', async () => {
    const handler = createInvokeHandler({ runtime: async () => ({ runAttempt: async () => ({}) }), observability: recordingObservability().obs });
    expect(await handler({ Records: [] }, context())).toEqual({ batchItemFailures: [] });
  });

  it('the deployed handler uses the runtime installed through the composition root', async () => {
    const seen: string[] = [];
    installRuntime({ runAttempt: async (m: InvokeMessage) => (seen.push(m.action_id), { disposition: 'settled', retry: false }) } as unknown as Parameters<
      typeof installRuntime
    >[0]);
    try {
      const res = await deployedInvokeHandler(event(msg('m1', invoke('via-bootstrap'))), context());
      expect(res).toEqual({ batchItemFailures: [] });
      expect(seen).toEqual(['via-bootstrap']);
    } finally {
      uninstallRuntime();
    }
  });
});

describe('reconcile consumer', () => {
  it('hands reconcile messages to reconcile and reports failures and redelivery requests', async () => {
    const seen: ReconcileMessage[] = [];
    const handler = createReconcileHandler({
      runtime: async () => ({
        reconcile: async (m: ReconcileMessage) => {
          seen.push(m);
          if (m.transaction_id === 'txn-boom') throw new AipError('scheduler.request_failed');
          if (m.transaction_id === 'txn-busy') return { disposition: 'in_progress', retry: true };
          return { disposition: 'reconciled', retry: false, transaction_status: 'reconciled' };
        },
      }),
      observability: recordingObservability().obs,
    });
    const res = await handler(
      event(msg('r1', reconcile('txn-ok')), msg('r2', reconcile('txn-boom')), msg('r3', reconcile('txn-busy')), msg('r4', invoke('wrong-queue'))),
      context(),
    );
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: 'r2' }, { itemIdentifier: 'r3' }, { itemIdentifier: 'r4' }]);
    expect(seen.map((m) => m.transaction_id)).toEqual(['txn-ok', 'txn-boom', 'txn-busy']);
    expect(seen[0]).toEqual(reconcile('txn-ok'));
  });
});

describe('sweeper', () => {
  const scheduled: ScheduledEvent = {
    version: '0',
    id: 'e1',
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '000000000000',
    time: '2030-01-01T00:00:00Z',
    region: 'us-east-1',
    resources: [],
    detail: {},
  };

  it('runs one sweep per invocation and returns what was enqueued', async () => {
    const calls: Array<Date | undefined> = [];
    const { obs, lines } = recordingObservability();
    const handler = createSweeperHandler({
      runtime: async () => ({ sweep: async (now?: Date) => (calls.push(now), { enqueued: 3, oldest_outcome_unknown_age_seconds: 42 }) }),
      observability: obs,
    });
    expect(await handler(scheduled, context())).toEqual({ enqueued: 3, oldest_outcome_unknown_age_seconds: 42 });
    expect(calls).toEqual([undefined]);
    expect(lines.find((l) => l.level === 'info')?.fields).toEqual({ enqueued: 3, oldest_outcome_unknown_age_seconds: 42 });
  });

  describe('metrics (Powertools EMF, as in Lambda)', () => {
    /** A real Powertools Metrics instance (output disabled) whose flushed EMF documents are recorded. */
    function recordingMetrics(): { metrics: Metrics; flushed: EmfDocument[] } {
      vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'true');
      const quiet = () => undefined;
      const metrics = new Metrics({
        namespace: metricsNamespace('test'),
        serviceName: AIP_METRICS.serviceName,
        logger: { debug: quiet, info: quiet, warn: quiet, error: quiet },
      });
      const flushed: EmfDocument[] = [];
      const publish = metrics.publishStoredMetrics.bind(metrics);
      vi.spyOn(metrics, 'publishStoredMetrics').mockImplementation(() => {
        if (metrics.hasStoredMetrics()) flushed.push(metrics.serializeMetrics() as unknown as EmfDocument);
        return publish();
      });
      return { metrics, flushed };
    }
    afterEach(() => {
      vi.unstubAllEnvs();
      vi.restoreAllMocks();
    });

    function definition(doc: EmfDocument, name: string) {
      const directive = doc._aws.CloudWatchMetrics.find((d) => d.Metrics.some((m) => m.Name === name));
      return directive === undefined
        ? undefined
        : { namespace: directive.Namespace, dimensions: directive.Dimensions, unit: directive.Metrics.find((m) => m.Name === name)?.Unit, value: doc[name] };
    }

    it('publishes the oldest outcome_unknown age the alarm watches: its name, unit Seconds, only the service dimension', async () => {
      const { metrics, flushed } = recordingMetrics();
      const ages = [125, 0];
      const handler = createSweeperHandler({
        runtime: async () => ({ sweep: async () => ({ enqueued: 0, oldest_outcome_unknown_age_seconds: ages.shift() as number }) }),
        observability: { ...recordingObservability().obs, metrics },
      });
      await handler(scheduled, context());
      await handler(scheduled, context());
      const published = flushed.map((doc) => definition(doc, AIP_METRICS.oldestOutcomeUnknownAge));
      expect(published).toEqual([
        { namespace: 'AIP/test', dimensions: [['service']], unit: 'Seconds', value: 125 },
        // 0 is published too: "nothing is outcome_unknown" is a datapoint, not missing data.
        { namespace: 'AIP/test', dimensions: [['service']], unit: 'Seconds', value: 0 },
      ]);
      expect(flushed.map((doc) => doc.service)).toEqual([AIP_METRICS.serviceName, AIP_METRICS.serviceName]);
    });

    it('publishes nothing when the sweep fails', async () => {
      const { metrics, flushed } = recordingMetrics();
      const handler = createSweeperHandler({
        runtime: async () => ({
          sweep: async () => {
            throw new AipError('transaction.store_unavailable');
          },
        }),
        observability: { ...recordingObservability().obs, metrics },
      });
      await expect(handler(scheduled, context())).rejects.toMatchObject({ code: 'transaction.store_unavailable' });
      expect(flushed.map((doc) => definition(doc, AIP_METRICS.oldestOutcomeUnknownAge))).toEqual([]);
    });
  });

  it('fails the invocation when the sweep fails', async () => {
    const handler = createSweeperHandler({
      runtime: async () => ({
        sweep: async () => {
          throw new AipError('transaction.store_unavailable');
        },
      }),
      observability: recordingObservability().obs,
    });
    await expect(handler(scheduled, context())).rejects.toMatchObject({ code: 'transaction.store_unavailable' });
  });
});

describe('summarizeOutcome', () => {
  it('keeps short enumerated fields and drops everything else', () => {
    expect(
      summarizeOutcome({
        disposition: 'settled',
        transaction_status: 'committed',
        retry_after_ms: 10,
        action_result: { output: { card: '4242' } },
        reason: 'Free text with spaces',
      }),
    ).toEqual({ disposition: 'settled', transaction_status: 'committed', retry_after_ms: 10 });
    expect(summarizeOutcome(undefined)).toEqual({});
  });
});
