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

/**
 * One set of emulators for the whole run. vitest loads this module once per project, in the same
 * process, so the state lives on `globalThis` rather than in module variables.
 */
interface Shared {
  emulators?: Promise<readonly [DynamoDbLocal, FauxqsHandle]>;
  users: number;
}
const KEY = Symbol.for('aip.test.emulators');
const state = ((globalThis as { [KEY]?: Shared })[KEY] ??= { users: 0 });

export async function setup(project: TestProject): Promise<void> {
  state.users += 1;
  state.emulators ??= Promise.all([startDynamoDbLocal(), startSqsEmulator()]);
  const [ddb, sqs] = await state.emulators;
  project.provide('dynamoEndpoint', ddb.endpoint);
  project.provide('sqsEndpoint', sqs.endpoint);
}

export async function teardown(): Promise<void> {
  state.users -= 1;
  if (state.users > 0 || state.emulators === undefined) return;
  const started = state.emulators;
  delete state.emulators;
  const running = await started.catch(() => undefined); // a failed start has failed the run already
  if (running !== undefined) await Promise.all([running[0].stop(), running[1].stop()]);
}
