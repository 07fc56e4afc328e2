/**
 * The EventBridge Scheduler's adapter with its SDK client, imported on the
 * first schedule or cancellation by ./compose-runtime.ts `lazyAdapters`
 * (the queues' are ./queue-adapters.ts).
 */
export { createSchedulerClient } from '../../lib/aws/clients/scheduler.js';
export { EventBridgeReconcileScheduler } from '../../lib/aws/scheduler/scheduler.js';
