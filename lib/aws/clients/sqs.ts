/** The SQSClient factory of lib/aws/clients.ts, in a module of its own (see ../client-config.ts). */
import { SQSClient } from '@aws-sdk/client-sqs';
import { clientConfig, type AwsClientOptions } from '../client-config.js';

export function createSqsClient(options: AwsClientOptions = {}): SQSClient {
  return new SQSClient(clientConfig('sqs', options));
}
