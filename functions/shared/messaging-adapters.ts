/**
 * The SQS queues' and the EventBridge Scheduler's adapters with their SDK
 * clients: one module, imported on the first send or schedule by
 * ./compose-runtime.ts `lazyAdapters` (one chunk in the bundles, rather than
 * one per adapter and client).
 */
export { createSqsClient } from '../../lib/aws/clients/sqs.js';
export { createSchedulerClient } from '../../lib/aws/clients/scheduler.js';
export { SqsMessageQueue } from '../../lib/aws/sqs/queue.js';
export { EventBridgeReconcileScheduler } from '../../lib/aws/scheduler/scheduler.js';
