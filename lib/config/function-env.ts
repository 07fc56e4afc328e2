/**
 * Names shared by the stack and the function code: the environment variables
 * the stateless stack sets, and the CloudWatch metrics its alarms watch.
 * Plain constants with no aws-cdk-lib import, so function code can import them
 * without pulling CDK into a bundle.
 */
export const FUNCTION_ENV = {
  /** The configuration's `envName`. */
  envName: 'AIP_ENV',
  tableName: 'AIP_TABLE_NAME',
  invokeQueueUrl: 'AIP_INVOKE_QUEUE_URL',
  /**
   * The invoke queue's redrive maxReceiveCount (an integer, 1-1000): the
   * Runtime never spends the queue's last delivery on a capacity deferral
   * (`capacity_deferral` in lib/runtime/config.ts, capacityDeferralBound).
   */
  invokeQueueMaxReceiveCount: 'AIP_INVOKE_QUEUE_MAX_RECEIVE_COUNT',
  reconcileQueueUrl: 'AIP_RECONCILE_QUEUE_URL',
  /** Target ARN for reconciliation schedules. */
  reconcileQueueArn: 'AIP_RECONCILE_QUEUE_ARN',
  /** EventBridge Scheduler group that holds the one-time reconciliation schedules. */
  scheduleGroupName: 'AIP_SCHEDULE_GROUP',
  /** Role the schedules run as (the function passes it to CreateSchedule). */
  schedulerRoleArn: 'AIP_SCHEDULER_ROLE_ARN',
  /**
   * JSON of the run-time part of the configuration (`DeploymentRuntimeConfig`
   * in lib/config/deployment.ts; read it with `parseDeploymentRuntimeConfig`): envName, auth,
   * connectors with credential references, approval policies. References
   * only; no secret value is ever in it.
   */
  runtimeConfig: 'AIP_RUNTIME_CONFIG',
  /**
   * ARN of the Secrets Manager secret holding the key material that seals
   * pagination cursors (lib/runtime/cursor.ts). Set on every function; only
   * the functions that list may read the secret (`cursorKey` access). The
   * composition requires it outside the `local` and `test` environments.
   */
  cursorKeySecretArn: 'AIP_CURSOR_KEY_SECRET_ARN',
} as const;

/**
 * Variables the stack sets only when the configuration asks for them. The
 * composition root (functions/shared/settings.ts, `OPTIONAL_ENV`) reads them
 * under the same names.
 */
export const OPTIONAL_FUNCTION_ENV = {
  /** JSON object, connector ID → provider base URL (`connectorEndpoints` in the configuration). */
  connectorEndpoints: 'AIP_CONNECTOR_ENDPOINTS',
} as const;

/** Powertools and logging variables the stack sets on every function (values: infra/functions.ts). */
export const POWERTOOLS_ENV = {
  serviceName: 'POWERTOOLS_SERVICE_NAME',
  metricsNamespace: 'POWERTOOLS_METRICS_NAMESPACE',
  /** Powertools Logger reads POWERTOOLS_LOG_LEVEL first, then LOG_LEVEL; both are set to the same value. */
  logLevel: 'POWERTOOLS_LOG_LEVEL',
  logLevelAlias: 'LOG_LEVEL',
} as const;

/**
 * The runtime's CloudWatch metrics that the stack alarms on. Functions emit
 * them with Powertools Metrics (EMF), whose namespace comes from
 * POWERTOOLS_METRICS_NAMESPACE and whose default dimension is
 * `service` = POWERTOOLS_SERVICE_NAME.
 */
export const AIP_METRICS = {
  /** POWERTOOLS_SERVICE_NAME of every function, hence the `service` dimension of every metric. */
  serviceName: 'aip-runtime',
  /**
   * Age in seconds (unit `Seconds`) of the oldest transaction in
   * `outcome_unknown`, escalated ones included. The sweeper publishes it on
   * every run (0 when there is none); the stack alarms when its maximum passes
   * `outcomeUnknownAlarmAgeSeconds`.
   */
  oldestOutcomeUnknownAge: 'OldestOutcomeUnknownAgeSeconds',
} as const;

/**
 * Metrics namespace of an environment: `AIP/<envName>`, so that two
 * environments in one account and region never feed each other's alarms.
 */
export function metricsNamespace(envName: string): string {
  return `AIP/${envName}`;
}
