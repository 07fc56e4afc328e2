/**
 * The Runtime's queues and Scheduler adapter in the deployed composition
 * (functions/shared/compose-runtime.ts `lazyAdapters`): imported and built on
 * their first call, then the lib/aws adapters unchanged. Nothing here reaches
 * the network: each call below fails validation before any I/O.
 */
import { describe, expect, it } from 'vitest';
import { lazyAdapters } from '../../../functions/shared/compose-runtime.js';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { QueueMessage } from '../../../lib/ports/queue.js';

const LOOPBACK = { endpoint: 'http://127.0.0.1:9', maxAttempts: 1 };

describe('lazyAdapters', () => {
  it('builds nothing until a call; close() before any call destroys nothing', () => {
    const lazy = lazyAdapters(LOOPBACK, LOOPBACK);
    const queue = lazy.queue({ queueUrl: 'http://127.0.0.1:9/000000000000/q', accepts: ['invoke'] });
    expect(typeof queue.send).toBe('function');
    expect(typeof queue.sendBatch).toBe('function');
    expect(() => lazy.close()).not.toThrow();
  });

  it('a queue delegates to the SQS adapter, with its validation and its `accepts`', async () => {
    const lazy = lazyAdapters(LOOPBACK, LOOPBACK);
    const queue = lazy.queue({ queueUrl: 'http://127.0.0.1:9/000000000000/q', accepts: ['invoke'] });
    try {
      const invalid = await queue.send({ kind: 'nonsense' } as unknown as QueueMessage).catch((err: unknown) => err);
      expect(isAipError(invalid) && invalid.code).toBe('queue.message_invalid');
      const notAccepted = await queue.send({ kind: 'reconcile', tenant_id: 'acme', transaction_id: 'txn-1' } as QueueMessage).catch((err: unknown) => err);
      expect(isAipError(notAccepted) && notAccepted.code).toBe('queue.message_invalid');
    } finally {
      lazy.close();
    }
  });

  it('the scheduler delegates to the EventBridge adapter', async () => {
    const lazy = lazyAdapters(LOOPBACK, LOOPBACK);
    const scheduler = lazy.scheduler({
      groupName: 'bad group name!',
      targetQueueArn: 'arn:aws:sqs:us-east-1:000000000000:q',
      roleArn: 'arn:aws:iam::000000000000:role/r',
      clock: { now: () => new Date(0) },
    });
    try {
      // The adapter's own check of the group name, now on the first call.
      await expect(scheduler.cancelReconcile({ tenant_id: 'acme', transaction_id: 'txn-1' })).rejects.toThrow(/schedule group name/);
    } finally {
      lazy.close();
    }
  });
});
