/**
 * Starts DynamoDB Local (Java 17) and fauxqs once per test run and stops both
 * at the end. Endpoints reach test files through vitest's `provide`/`inject`.
 * Two projects use it (`integration` and `integration:isolated`): the
 * emulators are started by the first setup and stopped by the last teardown.
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

let emulators: Promise<readonly [DynamoDbLocal, FauxqsHandle]> | undefined;
let users = 0;

export async function setup(project: TestProject): Promise<void> {
  users += 1;
  emulators ??= Promise.all([startDynamoDbLocal(), startSqsEmulator()]);
  const [ddb, sqs] = await emulators;
  project.provide('dynamoEndpoint', ddb.endpoint);
  project.provide('sqsEndpoint', sqs.endpoint);
}

export async function teardown(): Promise<void> {
  users -= 1;
  if (users > 0 || emulators === undefined) return;
  const started = emulators;
  emulators = undefined;
  const running = await started.catch(() => undefined); // a failed start has failed the run already
  if (running !== undefined) await Promise.all([running[0].stop(), running[1].stop()]);
}
