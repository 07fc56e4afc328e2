/**
 * The environment the stack gives every function (infra/functions.ts), with local values, for tests that read the
 * bootstrap settings: the table, the queues, the Scheduler's group and role, and the runtime configuration.
 */
import { FUNCTION_ENV } from '../../lib/config/function-env.js';

export function functionEnv(runtimeConfig: unknown, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    [FUNCTION_ENV.tableName]: 'aip-local',
    [FUNCTION_ENV.invokeQueueUrl]: 'http://127.0.0.1:9324/000000000000/aip-local-invoke',
    [FUNCTION_ENV.reconcileQueueUrl]: 'http://127.0.0.1:9324/000000000000/aip-local-reconcile',
    [FUNCTION_ENV.reconcileQueueArn]: 'arn:aws:sqs:us-east-1:000000000000:aip-local-reconcile',
    [FUNCTION_ENV.scheduleGroupName]: 'aip-local-reconcile',
    [FUNCTION_ENV.schedulerRoleArn]: 'arn:aws:iam::000000000000:role/aip-local-scheduler',
    [FUNCTION_ENV.runtimeConfig]: typeof runtimeConfig === 'string' ? runtimeConfig : JSON.stringify(runtimeConfig),
    ...extra,
  };
}
