/**
 * The configuration part of lib/aws/clients.ts, without any AWS SDK import:
 * endpoint resolution and the local-credentials rule (documented there).
 * Importing it costs nothing at cold start; the SDK clients themselves live in
 * ./clients/*.ts, one module per service, so a function loads only the
 * clients it uses.
 */
import type { DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';

export type AwsCredentials = NonNullable<DynamoDBClientConfig['credentials']>;

export interface AwsClientOptions {
  /** Explicit endpoint (e.g. `http://127.0.0.1:4566`). Wins over AWS_ENDPOINT_URL*. */
  readonly endpoint?: string;
  readonly region?: string;
  readonly credentials?: AwsCredentials;
  /** SDK attempts per call, including the first (SDK default 3). */
  readonly maxAttempts?: number;
  /** Socket-level timeouts for the Node HTTP handler. */
  readonly requestTimeoutMs?: number;
  readonly connectionTimeoutMs?: number;
}

/** The SDK service IDs, as used in `AWS_ENDPOINT_URL_<SERVICE>`. */
export const AWS_SERVICE_IDS = {
  dynamodb: 'DynamoDB',
  sqs: 'SQS',
  scheduler: 'Scheduler',
  secretsManager: 'Secrets Manager',
} as const;
export type AwsService = keyof typeof AWS_SERVICE_IDS;

/** `AWS_ENDPOINT_URL_<SERVICE>` for a service, the way the SDK derives it. */
export function serviceEndpointEnvVar(service: AwsService): string {
  return ['AWS_ENDPOINT_URL', ...AWS_SERVICE_IDS[service].split(' ').map((w) => w.toUpperCase())].join('_');
}

/**
 * The endpoint a client for `service` will use, as far as the environment
 * decides it: the explicit one, else the service-specific variable, else
 * AWS_ENDPOINT_URL; undefined means the SDK's regional AWS endpoint (or a
 * shared-config `endpoint_url`, which this helper does not read).
 */
export function configuredEndpoint(service: AwsService, explicit?: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (explicit) return explicit;
  if ((env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS ?? '').toLowerCase() === 'true') return undefined;
  return env[serviceEndpointEnvVar(service)] || env.AWS_ENDPOINT_URL || undefined;
}

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]', '::1', 'localhost.localstack.cloud']);

/** True for loopback and LocalStack endpoints. */
export function isLocalEndpoint(endpoint: string | undefined): boolean {
  if (!endpoint) return false;
  try {
    const host = new URL(endpoint).hostname;
    return LOCAL_HOSTS.has(host) || host.endsWith('.localhost.localstack.cloud');
  } catch {
    return false;
  }
}

/**
 * Dummy credentials for emulators; never valid against AWS. A fresh object per
 * client: the SDK annotates the credentials object it is given.
 */
export function localCredentials(): { accessKeyId: string; secretAccessKey: string } {
  return { accessKeyId: 'local', secretAccessKey: 'local' };
}
export const LOCAL_DEFAULT_REGION = 'us-east-1';

interface BaseConfig {
  endpoint?: string;
  region?: string;
  credentials?: AwsCredentials;
  maxAttempts?: number;
  requestHandler?: { requestTimeout?: number; connectionTimeout?: number };
}

/** The client config shared by every factory. Exported for tests. */
export function clientConfig(service: AwsService, options: AwsClientOptions = {}, env: NodeJS.ProcessEnv = process.env): BaseConfig {
  const config: BaseConfig = {};
  if (options.endpoint) config.endpoint = options.endpoint;
  const local = isLocalEndpoint(configuredEndpoint(service, options.endpoint, env));
  const region = options.region ?? (local ? env.AWS_REGION || env.AWS_DEFAULT_REGION || LOCAL_DEFAULT_REGION : undefined);
  if (region) config.region = region;
  if (options.credentials) {
    config.credentials = options.credentials;
  } else if (local && !env.AWS_ACCESS_KEY_ID && !env.AWS_PROFILE) {
    config.credentials = localCredentials();
  }
  if (options.maxAttempts !== undefined) config.maxAttempts = options.maxAttempts;
  if (options.requestTimeoutMs !== undefined || options.connectionTimeoutMs !== undefined) {
    config.requestHandler = {
      ...(options.requestTimeoutMs !== undefined ? { requestTimeout: options.requestTimeoutMs } : {}),
      ...(options.connectionTimeoutMs !== undefined ? { connectionTimeout: options.connectionTimeoutMs } : {}),
    };
  }
  return config;
}
