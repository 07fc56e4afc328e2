/** The DynamoDBClient factory of lib/aws/clients.ts, in a module of its own (see ../client-config.ts). */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { clientConfig, type AwsClientOptions } from '../client-config.js';

export function createDynamoDbClient(options: AwsClientOptions = {}): DynamoDBClient {
  return new DynamoDBClient(clientConfig('dynamodb', options));
}
