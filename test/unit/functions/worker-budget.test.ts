/**
 * The worker and the reconcile consumer hand the Runtime the invocation's
 * remaining time (Lambda's `context.getRemainingTimeInMillis`), which caps
 * each connector attempt's deadline (lib/runtime/attempt-budget.ts; the
 * capping itself is tested in test/integration/runtime/attempt-budget.test.ts).
 */
import type { Context, SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { createInvokeHandler } from '../../../functions/worker/invoke.js';
import { createReconcileHandler } from '../../../functions/worker/reconcile.js';
import type { AttemptBudget } from '../../../functions/shared/runtime-contract.js';
import { SILENT_LOGGER } from '../../../functions/shared/logger.js';
import { localLambdaContext } from '../../../lib/aws/sqs/poller.js';
import { encodeQueueMessage, type QueueMessage } from '../../../lib/ports/messages.js';

/** A Lambda context whose remaining time the test sets. */
function contextWithRemaining(remaining: { ms: number }): Context {
  return { ...localLambdaContext('unit', 60_000, 'us-east-1'), getRemainingTimeInMillis: () => remaining.ms };
}

const event = (...messages: QueueMessage[]): SQSEvent =>
  ({
    Records: messages.map((m, i) => ({
      messageId: `m${i}`,
      receiptHandle: `r${i}`,
      body: encodeQueueMessage(m),
      attributes: { ApproximateReceiveCount: '1' },
    })),
  }) as unknown as SQSEvent;

describe('the invocation budget reaches the Runtime', () => {
  it('the invoke worker passes every record a budget that reads the remaining time when the attempt asks', async () => {
    const budgets: AttemptBudget[] = [];
    const handler = createInvokeHandler({
      runtime: async () => ({ runAttempt: async (_m, budget) => (budgets.push(budget ?? {}), { disposition: 'settled', retry: false }) }),
      observability: { logger: SILENT_LOGGER },
    });
    const remaining = { ms: 42_000 };
    const res = await handler(
      event(
        { kind: 'invoke', tenant_id: 't1', action_id: 'a1', fence: 1, attempt: 1 },
        { kind: 'invoke', tenant_id: 't1', action_id: 'a2', fence: 1, attempt: 1 },
      ),
      contextWithRemaining(remaining),
    );
    expect(res.batchItemFailures).toEqual([]);
    expect(budgets).toHaveLength(2);
    expect(budgets.map((b) => b.remaining_ms?.())).toEqual([42_000, 42_000]);
    // Read live, not copied at batch start: an attempt starting later sees less time.
    remaining.ms = 7_000;
    expect(budgets[0]?.remaining_ms?.()).toBe(7_000);
  });

  it('the reconcile consumer passes the budget to reconcile', async () => {
    const seen: (number | undefined)[] = [];
    const handler = createReconcileHandler({
      runtime: async () => ({ reconcile: async (_m, budget) => (seen.push(budget?.remaining_ms?.()), { disposition: 'still_unknown', retry: false }) }),
      observability: { logger: SILENT_LOGGER },
    });
    await handler(event({ kind: 'reconcile', tenant_id: 't1', transaction_id: 'tx1', reason: 'schedule' }), contextWithRemaining({ ms: 31_500 }));
    expect(seen).toEqual([31_500]);
  });
});
