/** The SecretsManagerClient factory of lib/aws/clients.ts, in a module of its own (see ../client-config.ts). */
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { clientConfig, type AwsClientOptions } from '../client-config.js';

export function createSecretsManagerClient(options: AwsClientOptions = {}): SecretsManagerClient {
  return new SecretsManagerClient(clientConfig('secretsManager', options));
}
