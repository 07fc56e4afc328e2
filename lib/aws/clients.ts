/**
 * Factories for the AWS SDK v3 clients the runtime uses.
 *
 * Endpoints. AWS SDK for JavaScript v3 (3.1169, via @smithy/core's endpoint
 * middleware) natively reads, in this order, unless the client gets an explicit
 * `endpoint`:
 *   1. `AWS_ENDPOINT_URL_<SERVICE>`: the service ID upper-cased with spaces as
 *      underscores: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS,
 *      AWS_ENDPOINT_URL_SCHEDULER, AWS_ENDPOINT_URL_SECRETS_MANAGER;
 *   2. `AWS_ENDPOINT_URL` (all services);
 *   3. `endpoint_url` in the shared config file profile (or its `services` section);
 * and ignores 1-3 when `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true`.
 * So these factories do not re-implement that: they pass `endpoint` only when
 * the caller gives one explicitly (tests, the local stack), which wins over the
 * environment. See docs/queue-and-scheduler.md.
 *
 * Local credentials. When the effective endpoint is a loopback or LocalStack
 * host and no credentials are configured in the environment, the factories use
 * static dummy credentials and default the region to us-east-1. Without this,
 * the SDK's default chain would end at the EC2 instance metadata service (a
 * network call) and fail. Real AWS endpoints always use the default chain.
 */
export * from './client-config.js';
export { createDynamoDbClient } from './clients/dynamodb.js';
export { createSqsClient } from './clients/sqs.js';
export { createSchedulerClient } from './clients/scheduler.js';
export { createSecretsManagerClient } from './clients/secrets-manager.js';
