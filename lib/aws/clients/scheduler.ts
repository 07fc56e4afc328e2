/** The SchedulerClient factory of lib/aws/clients.ts, in a module of its own (see ../client-config.ts). */
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { clientConfig, type AwsClientOptions } from '../client-config.js';

export function createSchedulerClient(options: AwsClientOptions = {}): SchedulerClient {
  return new SchedulerClient(clientConfig('scheduler', options));
}
