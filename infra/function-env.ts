/**
 * Names of the environment variables the stateless stack sets on every Lambda
 * function. Plain constants with no aws-cdk-lib import, so function code can
 * import them without pulling CDK into a bundle.
 */
export const FUNCTION_ENV = {
  /** The configuration's `envName`. */
  envName: 'AIP_ENV',
  tableName: 'AIP_TABLE_NAME',
  invokeQueueUrl: 'AIP_INVOKE_QUEUE_URL',
  reconcileQueueUrl: 'AIP_RECONCILE_QUEUE_URL',
  /** Target ARN for reconciliation schedules. */
  reconcileQueueArn: 'AIP_RECONCILE_QUEUE_ARN',
  /** EventBridge Scheduler group that holds the one-time reconciliation schedules. */
  scheduleGroupName: 'AIP_SCHEDULE_GROUP',
  /** Role the schedules run as (the function passes it to CreateSchedule). */
  schedulerRoleArn: 'AIP_SCHEDULER_ROLE_ARN',
  /**
   * JSON of the runtime part of the configuration (`RuntimeConfig` in
   * infra/config.ts; read it with `parseRuntimeConfig`): envName, auth,
   * connectors with credential references, approval policies. References
   * only; no secret value is ever in it.
   */
  runtimeConfig: 'AIP_RUNTIME_CONFIG',
} as const;

export type FunctionEnvName = (typeof FUNCTION_ENV)[keyof typeof FUNCTION_ENV];
