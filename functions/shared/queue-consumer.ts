/**
 * The shared body of the two SQS consumers (functions/worker/invoke.ts and
 * functions/worker/reconcile.ts): decode each record with the strict message
 * schema, hand it to one Runtime method, and answer with a partial batch
 * response so only the failed records are redelivered.
 *
 * Per record:
 * - the Runtime method resolves: the record succeeded (SQS deletes it),
 *   unless the outcome says `retry: true` (e.g. another attempt holds a
 *   live lease): then it is reported failed, so SQS redelivers it;
 * - it throws: the record failed and is redelivered after its visibility
 *   timeout; after the queue's maxReceiveCount it moves to the DLQ;
 * - the body is not a valid message, or a message of the other kind: the
 *   record failed (it is never acknowledged, so it ends in the DLQ, where
 *   the DLQ-depth alarm surfaces it).
 * Whether an outcome is success (including "superseded, nothing to do") or
 * worth a redelivery is the Runtime's decision (`retry`), not this module's.
 * A redelivery's `retry_after_ms` (a deferred attempt's backoff, with jitter,
 * never before the remote host's Retry-After) becomes the record's visibility
 * timeout through the consumer's `redeliverAfter` (ChangeMessageVisibility by
 * its receipt handle) before the record is reported failed; without it, or if
 * the change fails, the record comes back after the queue's visibility timeout.
 *
 * If the Runtime cannot be built at all (bad configuration), the handler
 * logs it (a configuration error with its message, which names the variable)
 * and throws: Lambda then retries the whole batch.
 *
 * Each record's Runtime call gets the invocation's remaining time
 * (`context.getRemainingTimeInMillis`), which caps the connector attempt's
 * deadline (lib/runtime/attempt-budget.ts): the attempt times out, asks the
 * connector to cancel and settles before Lambda would stop the function.
 *
 * Logs carry the SQS message ID, the receive count and the message's
 * identifiers only. Errors are logged by code (AipError) or by name: a
 * foreign error's message could carry input or secrets, so it is not logged.
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { handleSqsBatch } from '../../lib/aws/sqs/queue.js';
import { AipError, isAipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { QueueMessage, QueueMessageKind } from '../../lib/ports/messages.js';
import { MetricUnit, withConsumerObservability } from './consumer-middleware.js';
import { lazyHandler } from './lazy.js';
import { defaultObservability, type Observability } from './observability.js';
import { errorFacts } from './logger.js';
import { redeliveryDelayMs, requestsRedelivery, summarizeOutcome, type AttemptBudget, type RuntimeProvider } from './runtime-contract.js';

/** Records handled at once within a batch. Each is an independent action; fences keep duplicates apart. */
export const DEFAULT_RECORD_CONCURRENCY = 10;

export interface QueueConsumerDeps<R> {
  readonly runtime: RuntimeProvider<R>;
  /** Default: the container-wide instance. */
  readonly observability?: Observability;
  /** Default {@link DEFAULT_RECORD_CONCURRENCY}. */
  readonly concurrency?: number;
}

export type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

/** Thrown internally for an outcome with `retry: true`, so handleSqsBatch reports the record failed. */
export class RedeliveryRequested extends Error {
  constructor(readonly outcome: Record<string, string | number>) {
    super('the runtime asked for a redelivery');
    this.name = 'RedeliveryRequested';
  }
}

/** Safe error fields for logs: the catalogued code, or the error's name. */
export function errorFields(err: unknown): Record<string, string | boolean> {
  if (isAipError(err)) return { error_code: err.code, retryable: err.retryable };
  return { error_name: err instanceof Error ? err.name : typeof err };
}

function messageFields(message: QueueMessage): Record<string, string | number> {
  const out: Record<string, string | number> = { kind: message.kind, tenant_id: message.tenant_id };
  if (message.kind === 'invoke') {
    out.action_id = message.action_id;
    out.fence = message.fence;
    out.attempt = message.attempt;
    if (message.transaction_id !== undefined) out.transaction_id = message.transaction_id;
  } else {
    out.transaction_id = message.transaction_id;
    out.reason = message.reason;
  }
  return out;
}

/**
 * Builds an SQS handler for one message kind. The middy chain is built on the
 * first invocation, so a process can set POWERTOOLS_* variables after
 * importing the module (the local stack does).
 */
export function createQueueConsumer<K extends QueueMessageKind, R>(
  options: {
    readonly name: string;
    readonly kind: K;
    /** Metric name prefix, e.g. `Invoke`. */
    readonly metricPrefix: string;
    /** `budget` carries the invocation's remaining time (Lambda's `getRemainingTimeInMillis`) and the record's receive count to the Runtime. */
    readonly run: (runtime: R, message: Extract<QueueMessage, { kind: K }>, budget: AttemptBudget) => Promise<unknown>;
    /** Makes a received record visible again after `delayMs` (a redelivery with a delay); absent: the queue's visibility timeout. */
    readonly redeliverAfter?: (runtime: R, receiptHandle: string, delayMs: number) => Promise<void>;
  },
  deps: QueueConsumerDeps<R>,
): SqsHandler {
  const concurrency = Math.max(1, Math.floor(deps.concurrency ?? DEFAULT_RECORD_CONCURRENCY));

  const build = async (): Promise<SqsHandler> => {
    const obs = deps.observability ?? defaultObservability();
    const { logger, metrics } = obs;
    const body = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
      let runtime: R;
      try {
        runtime = await deps.runtime();
      } catch (err) {
        // A bad environment: the message of a configuration error names the variable (never a value).
        logger.error(`${options.name}: the runtime could not be built; the batch will be retried`, errorFacts(err));
        throw err;
      }
      // Every record's attempt ends, timeout path included, before Lambda stops the function.
      const remaining = typeof context?.getRemainingTimeInMillis === 'function' ? () => context.getRemainingTimeInMillis() : undefined;
      const budget: AttemptBudget = remaining !== undefined ? { remaining_ms: remaining } : {};
      const response = await handleSqsBatch(
        event,
        async (received) => {
          const { message } = received;
          if (message.kind !== options.kind) {
            throw new AipError('queue.message_invalid', undefined, { details: { reason: `kind_not_accepted:${message.kind}` } });
          }
          const outcome = await options.run(runtime, message as Extract<QueueMessage, { kind: K }>, { ...budget, receive_count: received.receiveCount });
          if (requestsRedelivery(outcome)) {
            const delayMs = redeliveryDelayMs(outcome);
            if (delayMs !== undefined && options.redeliverAfter !== undefined && received.receiptHandle !== undefined) {
              try {
                await options.redeliverAfter(runtime, received.receiptHandle, delayMs);
              } catch (err) {
                // The record still fails: it comes back after the queue's visibility timeout instead.
                logger.warn(`${options.name}: redelivery delay not applied; the queue's visibility timeout applies`, {
                  message_id: received.messageId,
                  ...errorFields(err),
                });
              }
            }
            throw new RedeliveryRequested(summarizeOutcome(outcome));
          }
          metrics?.addMetric(`${options.metricPrefix}Processed`, MetricUnit.Count, 1);
          logger.info(`${options.name}: message processed`, {
            message_id: received.messageId,
            receive_count: received.receiveCount,
            ...messageFields(message),
            ...summarizeOutcome(outcome),
          });
        },
        {
          concurrency,
          onInvalid: (record, error) => {
            metrics?.addMetric(`${options.metricPrefix}Invalid`, MetricUnit.Count, 1);
            logger.error(`${options.name}: invalid message left for the DLQ`, {
              message_id: record.messageId,
              receive_count: record.attributes?.ApproximateReceiveCount,
              error_code: error.code,
              details: error.details,
            });
          },
          onError: (received, error) => {
            if (error instanceof RedeliveryRequested) {
              metrics?.addMetric(`${options.metricPrefix}Redelivered`, MetricUnit.Count, 1);
              logger.info(`${options.name}: redelivery requested by the runtime`, {
                message_id: received.messageId,
                receive_count: received.receiveCount,
                ...messageFields(received.message),
                ...error.outcome,
              });
              return;
            }
            const invalid = isAipError(error, 'queue.message_invalid');
            metrics?.addMetric(`${options.metricPrefix}${invalid ? 'Invalid' : 'Failed'}`, MetricUnit.Count, 1);
            logger.error(`${options.name}: ${invalid ? 'message of the wrong kind left for the DLQ' : 'message failed; it will be redelivered'}`, {
              message_id: received.messageId,
              receive_count: received.receiveCount,
              ...messageFields(received.message),
              ...errorFields(error),
            });
          },
        },
      );
      if (response.batchItemFailures.length > 0) {
        logger.warn(`${options.name}: partial batch failure`, {
          records: event.Records?.length ?? 0,
          failed: response.batchItemFailures.length,
        });
      }
      return response;
    };
    return withConsumerObservability(body, obs);
  };

  return lazyHandler(build);
}
