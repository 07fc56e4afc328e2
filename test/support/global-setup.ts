/**
 * Starts DynamoDB Local (Java 17) and fauxqs once per test run and stops both
 * at the end. Endpoints reach test files through vitest's `provide`/`inject`.
 */
import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal, type DynamoDbLocal } from '../../dev/emulators/dynamodb-local.js';
import { startSqsEmulator, type FauxqsHandle } from '../../dev/emulators/fauxqs.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
    sqsEndpoint: string;
  }
}

let ddb: DynamoDbLocal | undefined;
let sqs: FauxqsHandle | undefined;

export async function setup(project: TestProject): Promise<void> {
  [ddb, sqs] = await Promise.all([startDynamoDbLocal(), startSqsEmulator()]);
  project.provide('dynamoEndpoint', ddb.endpoint);
  project.provide('sqsEndpoint', sqs.endpoint);
}

export async function teardown(): Promise<void> {
  await Promise.all([ddb?.stop(), sqs?.stop()]);
}
