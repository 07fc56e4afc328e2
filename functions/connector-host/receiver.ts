/**
 * The runtime's checkpoint receiver as a Lambda function behind a Function
 * URL (auth type NONE: a callback is accepted only when signed by a pinned
 * host key and carrying the runtime's own signed request). It writes the
 * checkpoint inbox item in the runtime table (lib/aws/dynamo/
 * remote-checkpoint-inbox.ts) and answers a signed acknowledgement.
 *
 * Environment (set by the stack): AIP_TABLE_NAME, AIP_ENV (inline keys only
 * for local/test) and AIP_REMOTE_CONNECTORS (the workers' value, without the
 * callback URL: the receiver's URL is the Function URL it is served on).
 */
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { LambdaFunctionURLEvent, LambdaFunctionURLResult } from 'aws-lambda';
import { createDynamoDbClient } from '../../lib/aws/clients.js';
import { FUNCTION_ENV } from '../../lib/config/function-env.js';
import type { CheckpointReceiver } from '../../lib/runtime/remote/callback.js';
import { REMOTE_ENV } from '../../lib/runtime/remote/config.js';
import { composeCheckpointReceiver, parsePlacement } from './compose.js';
import { once } from '../shared/lazy.js';
import { toFunctionUrlResult, toHostRequest } from './handler.js';

export const RECEIVER_ENV = { tableName: FUNCTION_ENV.tableName, envName: FUNCTION_ENV.envName } as const;

/** Built on the first request: its URL is the Function URL the receiver is served on. */
const receiver = once(async (domainName: string): Promise<CheckpointReceiver> => {
  const tableName = process.env[RECEIVER_ENV.tableName];
  if (tableName === undefined) throw new Error(`${RECEIVER_ENV.tableName} is required`);
  return composeCheckpointReceiver(parsePlacement(process.env[REMOTE_ENV.placement]), {
    envName: process.env[RECEIVER_ENV.envName] ?? 'prod',
    documents: DynamoDBDocumentClient.from(createDynamoDbClient(), { marshallOptions: { removeUndefinedValues: true } }),
    tableName,
    url: `https://${domainName}`,
  });
});

export async function handler(event: LambdaFunctionURLEvent): Promise<LambdaFunctionURLResult> {
  return toFunctionUrlResult(await (await receiver(event.requestContext.domainName)).handle(toHostRequest(event)));
}
