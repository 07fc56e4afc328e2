/**
 * Runs the Scheduler emulator on its own:
 *   node --import tsx dev/scheduler-emulator/cli.ts --sqs-endpoint http://127.0.0.1:4566 [--port 4599]
 * Prints the endpoint; Ctrl-C stops it.
 */
import { parseArgs } from 'node:util';
import { startSchedulerEmulator } from './emulator.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    'sqs-endpoint': { type: 'string' },
  },
});
const sqsEndpoint = values['sqs-endpoint'] ?? process.env.AWS_ENDPOINT_URL_SQS ?? process.env.AWS_ENDPOINT_URL;
if (!sqsEndpoint) {
  console.error('usage: cli.ts --sqs-endpoint <url> [--port <n>]');
  process.exit(2);
}
const emulator = await startSchedulerEmulator({
  port: Number(values.port),
  sqsEndpoint,
  onError: (err, schedule) => console.error(`scheduler-emulator: ${schedule ? `${schedule.groupName}/${schedule.name}: ` : ''}${String(err)}`),
});
console.log(`scheduler emulator: ${emulator.endpoint} (targets on ${sqsEndpoint})`);
const shutdown = () => {
  emulator.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
