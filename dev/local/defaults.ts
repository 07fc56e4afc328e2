/**
 * Defaults of the local stack (`npm start`), shared with the `aip` CLI.
 * Development only: nothing here is used by a deployment.
 */

/** Ports of `npm start`, each overridable by its environment variable (0 picks a free port). */
export const LOCAL_PORTS = {
  api: { env: 'AIP_PORT', default: 3000 },
  dynamodb: { env: 'AIP_DYNAMODB_PORT', default: 8000 },
  sqs: { env: 'AIP_SQS_PORT', default: 9324 },
  scheduler: { env: 'AIP_SCHEDULER_PORT', default: 9330 },
  payments: { env: 'AIP_PAYMENTS_PORT', default: 4010 },
} as const;
export type LocalService = keyof typeof LOCAL_PORTS;

/** The demo tenant the local configuration knows (payments credentials, approval policy). */
export const LOCAL_TENANT = 'demo';

/** What `aip token` and the printed token carry unless told otherwise. */
export const LOCAL_TOKEN_DEFAULTS = {
  sub: 'dev-user',
  tenants: [LOCAL_TENANT],
  scopes: ['aip:actions:read', 'aip:actions:write', 'aip:operator'],
} as const;

/** An approver token for the demo tenant (approvals are never self-approved). */
export const LOCAL_APPROVER = {
  sub: 'dev-approver',
  tenants: [LOCAL_TENANT],
  scopes: ['aip:actions:read', 'aip:approve', 'aip:operator'],
} as const;
