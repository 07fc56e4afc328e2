/**
 * CLI entry of the payments provider simulator:
 *
 *   PAYMENTS_SIM_API_KEY=sk_test_local PORT=4010 npx tsx dev/payments-simulator/main.ts
 *
 * Environment:
 *   PAYMENTS_SIM_API_KEY  required; accepted bearer key(s), comma-separated
 *   PORT                  listen port (default 4010; 0 picks a free one)
 *   HOST                  listen address (default 127.0.0.1; keep it on loopback)
 *   PAYMENTS_SIM_SEED     seed of the fault RNG (default 1)
 *   PAYMENTS_SIM_FAULTS   optional JSON list of fault rules installed at start
 *   PAYMENTS_SIM_LOG      `off` silences the per-request JSON log lines
 *
 * The API key is never printed. SIGINT/SIGTERM stop the server cleanly.
 */
import { pathToFileURL } from 'node:url';
import { startPaymentsSimulator, type FaultRuleInput, type PaymentsSimulator } from './server.js';

export class ConfigError extends Error {}

function intFrom(env: NodeJS.ProcessEnv, name: string, fallback: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a non-negative integer`);
  const n = Number(raw.trim());
  if (n > max) throw new ConfigError(`${name} must be at most ${max}`);
  return n;
}

/** Starts the simulator from environment variables (exported for tests and scripts). */
export async function startFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  write: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Promise<PaymentsSimulator> {
  const apiKeys = (env.PAYMENTS_SIM_API_KEY ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k.length > 0);
  if (apiKeys.length === 0) throw new ConfigError('PAYMENTS_SIM_API_KEY is required (comma-separate several keys)');
  let faults: FaultRuleInput[] | undefined;
  const rawFaults = env.PAYMENTS_SIM_FAULTS;
  if (rawFaults !== undefined && rawFaults.trim() !== '') {
    try {
      faults = JSON.parse(rawFaults) as FaultRuleInput[];
    } catch {
      throw new ConfigError('PAYMENTS_SIM_FAULTS must be a JSON list of fault rules');
    }
  }
  const quiet = env.PAYMENTS_SIM_LOG === 'off';
  const sim = await startPaymentsSimulator({
    port: intFrom(env, 'PORT', 4010, 65_535),
    host: env.HOST?.trim() || '127.0.0.1',
    apiKeys,
    seed: intFrom(env, 'PAYMENTS_SIM_SEED', 1, 0xffff_ffff),
    ...(faults ? { faults } : {}),
    ...(quiet ? {} : { logger: (line) => write(JSON.stringify({ component: 'payments-simulator', ...line })) }),
  });
  write(
    JSON.stringify({
      component: 'payments-simulator',
      msg: 'listening',
      url: sim.url,
      api_keys: apiKeys.length,
      note: 'the /_sim/* routes are dev-only test hooks',
    }),
  );
  return sim;
}

async function main(): Promise<void> {
  let sim: PaymentsSimulator;
  try {
    sim = await startFromEnv();
  } catch (err) {
    // ZodError text names fields only; ConfigError text is ours. Neither holds the key.
    process.stderr.write(`payments-simulator: ${err instanceof Error ? err.message : 'failed to start'}\n`);
    process.exitCode = 2;
    return;
  }
  // `on`, not `once`: a second signal (e.g. relayed by a wrapper) must not kill a clean stop.
  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    void sim.stop().then(() => {
      process.stdout.write(`${JSON.stringify({ component: 'payments-simulator', msg: 'stopped' })}\n`);
    });
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void main();
}
