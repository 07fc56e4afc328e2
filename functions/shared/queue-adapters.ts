/**
 * The SQS queues' adapter with its SDK client: one module, imported on the
 * first send by ./compose-runtime.ts `lazyAdapters`. The EventBridge
 * Scheduler's is ./scheduler-adapters.ts, apart: a submit sends its invoke
 * message and never schedules, so it never loads the Scheduler's client
 * (docs/bench/analysis.md, "Issue 22: the submit's first execute").
 */
export { createSqsClient } from '../../lib/aws/clients/sqs.js';
export { SqsMessageQueue } from '../../lib/aws/sqs/queue.js';
