/**
 * Section `credentials`: Secrets Manager requests per 1,000 executes in ONE
 * execution environment (one Runtime, one connector, one credential provider),
 * counted by the meter on the real SecretsManagerClient
 * (bench/lib/meter.ts `instrumentCalls`).
 *
 * There is no Secrets Manager emulator: the client's endpoint is a loopback
 * stub that answers GetSecretValue (AWS JSON 1.1) with the current value.
 * Everything else is the cost section's harness: the real Runtime on
 * DynamoDB Local and fauxqs, the payments connector against the simulator.
 * Each execute is `submit` then `runAttempt` on the queued message.
 *
 * Variants, in one process:
 * - `cached`: the deployed provider (age DEFAULT_CREDENTIAL_CACHE_SECONDS),
 *   with one rotation half-way: the stub returns a new key and the simulator
 *   accepts only the new one, so the next provider call gets 401, the
 *   provider refreshes and the connector sends the request once more;
 * - `uncached`: age 0, what every provider call cost before the cache.
 *
 * The run is shorter than the age, so it shows the per-age fetch; per hour an
 * environment adds 3600 / age fetches (printed).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSecretsManagerClient } from '../../lib/aws/clients/secrets-manager.js';
import { DEFAULT_CREDENTIAL_CACHE_SECONDS, SecretValueCache } from '../../lib/aws/secrets/secret-cache.js';
import { SecretsManagerCredentialProvider } from '../../lib/aws/secrets/secrets-manager-provider.js';
import { DEFAULT_PAYMENTS_CREDENTIAL_HANDLE } from '../../lib/connectors/reference/payments.js';
import { createHarness, TENANT, uid, type Emulators } from '../lib/harness.js';
import { instrumentCalls } from '../lib/meter.js';

export interface CredentialsVariant {
  readonly id: 'cached' | 'uncached';
  readonly max_age_seconds: number;
  readonly executes: number;
  readonly completed: number;
  readonly rotations: number;
  /** GetSecretValue requests the provider sent during the run. */
  readonly get_secret_value: number;
  /** Provider requests answered 401 (a refused, rotated-away key). */
  readonly provider_401: number;
  readonly per_1000_executes: number;
}

export interface CredentialsFigures {
  readonly note: string;
  readonly variants: CredentialsVariant[];
  /** Fetches one environment makes per hour at the default age, plus one per rotation it sees. */
  readonly per_environment_per_hour: number;
}

const SECRET_ID = 'aip/bench/payments';

/** A loopback Secrets Manager answering GetSecretValue with `value()`. */
async function secretsStub(value: () => string): Promise<{ server: Server; endpoint: string }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const target = String(req.headers['x-amz-target'] ?? '');
      if (!target.endsWith('.GetSecretValue')) {
        res.writeHead(400, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify({ __type: 'InvalidRequestException', message: 'stub' }));
        return;
      }
      res
        .writeHead(200, { 'content-type': 'application/x-amz-json-1.1' })
        .end(JSON.stringify({ ARN: `arn:aws:secretsmanager:us-east-1:000000000000:secret:${SECRET_ID}-AbCdEf`, Name: SECRET_ID, SecretString: value() }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export async function runCredentialsSection(
  emulators: Emulators,
  options: { readonly executes: number; readonly uncachedExecutes: number },
  log: (line: string) => void,
): Promise<CredentialsFigures> {
  let current = emulators.paymentsKey;
  const stub = await secretsStub(() => current);
  const variants: CredentialsVariant[] = [];
  try {
    for (const [id, age, executes] of [
      ['cached', DEFAULT_CREDENTIAL_CACHE_SECONDS, options.executes],
      ['uncached', 0, options.uncachedExecutes],
    ] as const) {
      current = emulators.paymentsKey;
      emulators.simulator.setApiKeys([current]);
      const client = createSecretsManagerClient({ endpoint: stub.endpoint, maxAttempts: 1 });
      const credentials = new SecretsManagerCredentialProvider({
        cache: new SecretValueCache({ client }),
        connector_id: 'payments',
        references: [{ connector_id: 'payments', handle: DEFAULT_PAYMENTS_CREDENTIAL_HANDLE, tenant_id: TENANT, secret_id: SECRET_ID }],
        max_age_seconds: age,
      });
      const h = await createHarness(emulators, { credentials });
      instrumentCalls(client, 'secretsmanager', h.meter);
      let refused = 0;
      const off = emulators.simulator.onEvent((e) => {
        if (e.type === 'response' && e.status === 401) refused++;
      });
      let completed = 0;
      let rotations = 0;
      try {
        h.meter.clear();
        for (let i = 0; i < executes; i++) {
          if (id === 'cached' && i === Math.floor(executes / 2)) {
            // Rotation: the secret changes and the provider refuses the old key from now on.
            current = `sk_bench_rot_${randomBytes(12).toString('base64url')}`;
            emulators.simulator.setApiKeys([current]);
            rotations++;
          }
          const key = uid('cred');
          await h.runtime.submit(h.caller, {
            id: key,
            capability_id: 'payments.charge',
            input: { amount: 1250, currency: 'eur', customer: 'cus_bench' },
            idempotency_key: key,
            transaction: { mode: 'execute' },
          });
          for (const outcome of await h.drain()) if (outcome.action_result?.status === 'completed') completed++;
        }
      } finally {
        off();
        await h.destroy();
        client.destroy();
      }
      const get = h.meter.calls.filter((c) => c.service === 'secretsmanager' && c.op === 'GetSecretValue').length;
      variants.push({
        id,
        max_age_seconds: age,
        executes,
        completed,
        rotations,
        get_secret_value: get,
        provider_401: refused,
        per_1000_executes: Math.round((get / Math.max(1, executes)) * 1000 * 10) / 10,
      });
      log(`  ${id}: ${get} GetSecretValue over ${executes} executes (${completed} completed, ${rotations} rotation(s))`);
    }
  } finally {
    emulators.simulator.setApiKeys([emulators.paymentsKey]);
    await new Promise<void>((resolve) => stub.server.close(() => resolve()));
  }
  return {
    note: 'one execution environment: one Runtime (cost-section harness) with the Secrets Manager credential provider on a real SecretsManagerClient, its endpoint a loopback GetSecretValue stub; requests counted by the meter',
    variants,
    per_environment_per_hour: 3600 / DEFAULT_CREDENTIAL_CACHE_SECONDS,
  };
}

const f = (x: number, d = 1) => (Number.isFinite(x) ? (Math.round(x * 10 ** d) / 10 ** d).toString() : '–');

export function renderCredentialsMarkdown(c: CredentialsFigures, heading = '## Credentials: Secrets Manager requests per execute'): string[] {
  const lines = [
    heading,
    '',
    `${c.note}. A rotation half-way through the cached run: the secret changes and the provider refuses the old key (401), which refreshes the value at once and sends the refused request once more.`,
    '',
    '| variant | cache age (s) | executes | completed | rotations | provider 401s | GetSecretValue | per 1,000 executes |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const v of c.variants) {
    lines.push(
      `| ${v.id} | ${v.max_age_seconds} | ${v.executes} | ${v.completed} | ${v.rotations} | ${v.provider_401} | ${v.get_secret_value} | ${f(v.per_1000_executes)} |`,
    );
  }
  lines.push(
    '',
    `For the cost model: one GetSecretValue per secret per execution environment per ${DEFAULT_CREDENTIAL_CACHE_SECONDS} s (${f(c.per_environment_per_hour, 0)} per environment-hour while it is warm), plus one per rotation it sees; independent of the number of executes.`,
    '',
  );
  return lines;
}

export function credentialsHeadline(c: CredentialsFigures): string | undefined {
  const cached = c.variants.find((v) => v.id === 'cached');
  const uncached = c.variants.find((v) => v.id === 'uncached');
  if (!cached) return undefined;
  return (
    `- **Secrets Manager**: ${cached.get_secret_value} GetSecretValue over ${cached.executes} executes in one environment (${f(cached.per_1000_executes)} per 1,000), ${cached.rotations} of them after a rotation` +
    (uncached ? `; ${f(uncached.per_1000_executes, 0)} per 1,000 without the cache.` : '.')
  );
}
