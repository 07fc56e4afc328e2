/**
 * Synth refuses a worker or reconcile consumer Lambda that an attempt (its
 * capability's timeout plus the cancellation and settlement margin) could
 * outlive (infra/attempt-timeouts.ts). The capabilities are read from the
 * enabled connectors' manifests, built by the functions' own factories.
 */
import { Duration } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { RECONCILE_CONSUMER_FUNCTION_ID, INVOKE_WORKER_FUNCTION_ID } from '../../infra/aip-functions.js';
import { capabilityAttemptTimeouts, DEPLOYED_DEFAULT_ATTEMPT_TIMEOUT_MS } from '../../infra/attempt-timeouts.js';
import { InfraConfigError, parseInfraConfig, type InfraConfigInput } from '../../infra/config.js';
import type { FunctionDefinition } from '../../infra/functions.js';
import { createPaymentsConnector } from '../../lib/connectors/reference/payments.js';
import { ATTEMPT_SETTLEMENT_MARGIN_MS } from '../../lib/runtime/attempt-budget.js';
import { parseRuntimeSettingsInput } from '../../lib/runtime/config.js';
import { BASE_CONFIG, buildAip } from './support.js';

/** The payments connector's capabilities and their declared timeouts, from the connector itself. */
const PAYMENTS_CAPABILITIES = createPaymentsConnector({ credentials: { resolve: () => Promise.reject(new Error('not resolved here')) } })
  .manifest()
  .capabilities.map((c) => ({ id: c.id, timeout_ms: c.execution?.timeout_ms, reconciles: c.transaction?.modes.includes('reconcile') === true }));
const CHARGE_TIMEOUT_MS = PAYMENTS_CAPABILITIES.find((c) => c.id === 'payments.charge')!.timeout_ms!;

function synthError(config: InfraConfigInput, functions?: readonly FunctionDefinition[]): InfraConfigError {
  try {
    buildAip(config, functions !== undefined ? { functions } : {});
  } catch (error) {
    expect(error).toBeInstanceOf(InfraConfigError);
    return error as InfraConfigError;
  }
  throw new Error('expected the synth to fail');
}

describe('worker Lambda timeouts against connector attempt timeouts', () => {
  it('reads every capability of the enabled connectors, with its own timeout or the deployed default', () => {
    const timeouts = capabilityAttemptTimeouts(parseInfraConfig(BASE_CONFIG));
    expect(timeouts.map((t) => t.capability_id).sort()).toEqual(PAYMENTS_CAPABILITIES.map((c) => c.id).sort());
    for (const t of timeouts) {
      const declared = PAYMENTS_CAPABILITIES.find((c) => c.id === t.capability_id)!;
      expect(t).toMatchObject({
        connector_id: 'payments',
        attempt_timeout_ms: declared.timeout_ms ?? DEPLOYED_DEFAULT_ATTEMPT_TIMEOUT_MS,
        reconciles: declared.reconciles,
      });
    }
    // The stack sets no AIP_RUNTIME_SETTINGS: a capability without a timeout gets the Runtime's schema default.
    expect(DEPLOYED_DEFAULT_ATTEMPT_TIMEOUT_MS).toBe(parseRuntimeSettingsInput({}).default_attempt_timeout_ms);
    expect(capabilityAttemptTimeouts(parseInfraConfig({ ...BASE_CONFIG, connectors: [], approvalPolicies: [] }))).toEqual([]);
  });

  it('fails the synth when an attempt could outlive the invoke worker, naming the capability, the attempt timeout and the Lambda timeout', () => {
    const lambdaSeconds = (CHARGE_TIMEOUT_MS + ATTEMPT_SETTLEMENT_MARGIN_MS) / 1000 - 5;
    const error = synthError({ ...BASE_CONFIG, workerTimeoutSeconds: lambdaSeconds });
    const charge = error.issues.find((issue) => issue.message.includes('"payments.charge"'));
    expect(charge?.path).toBe('workerTimeoutSeconds');
    expect(charge?.message).toContain(`has a ${CHARGE_TIMEOUT_MS} ms attempt timeout (its execution.timeout_ms)`);
    expect(charge?.message).toContain(`${ATTEMPT_SETTLEMENT_MARGIN_MS} ms cancellation and settlement margin`);
    expect(charge?.message).toContain(`the ${lambdaSeconds} s timeout of the ${INVOKE_WORKER_FUNCTION_ID} Lambda`);
    expect(charge?.message).toContain(`raise workerTimeoutSeconds to at least ${(CHARGE_TIMEOUT_MS + ATTEMPT_SETTLEMENT_MARGIN_MS) / 1000}`);
    // Every capability of the connector runs in the invoke worker; the reconcile consumer (60 s) is fine.
    expect(error.issues.every((issue) => issue.path === 'workerTimeoutSeconds')).toBe(true);
    expect(error.issues).toHaveLength(PAYMENTS_CAPABILITIES.length);
    expect(error.message).toMatch(
      /^Invalid AIP infrastructure configuration \(worker Lambda timeouts vs connector attempt timeouts\):\n {2}- workerTimeoutSeconds: capability "payments\./,
    );
  });

  it('fails the synth for the reconcile consumer too, for the capabilities it reconciles', () => {
    const lambdaSeconds = (CHARGE_TIMEOUT_MS + ATTEMPT_SETTLEMENT_MARGIN_MS) / 1000 - 1;
    const error = synthError({ ...BASE_CONFIG, reconcilerTimeoutSeconds: lambdaSeconds });
    expect(error.issues.every((issue) => issue.path === 'reconcilerTimeoutSeconds')).toBe(true);
    expect(error.issues.map((issue) => /capability "([^"]+)"/.exec(issue.message)?.[1]).sort()).toEqual(
      PAYMENTS_CAPABILITIES.filter((c) => c.reconciles)
        .map((c) => c.id)
        .sort(),
    );
    expect(error.issues[0]?.message).toContain(`the ${lambdaSeconds} s timeout of the ${RECONCILE_CONSUMER_FUNCTION_ID} Lambda (reconcile queue)`);
  });

  it('accepts a Lambda timeout exactly as long as the attempt timeout plus the margin', () => {
    const seconds = (CHARGE_TIMEOUT_MS + ATTEMPT_SETTLEMENT_MARGIN_MS) / 1000;
    const { aip } = buildAip({ ...BASE_CONFIG, workerTimeoutSeconds: seconds, reconcilerTimeoutSeconds: seconds });
    expect(aip.stateless.functions[INVOKE_WORKER_FUNCTION_ID]).toBeDefined();
  });

  it('checks whatever function consumes a queue, by its own timeout', () => {
    const worker: FunctionDefinition = {
      id: 'ShortWorker',
      entry: 'test/infra/fixtures/queue-consumer.ts',
      description: 'Test fixture consuming the invoke queue',
      timeout: Duration.seconds(12),
      consumes: { queue: 'invoke', batchSize: 5 },
      access: { table: 'readWrite', connectorSecrets: true },
    };
    const error = synthError(BASE_CONFIG, [worker]);
    expect(error.issues[0]?.message).toContain('the 12 s timeout of the ShortWorker Lambda (invoke queue)');
    // Without enabled connectors there is nothing to run, so nothing to check.
    expect(() => buildAip({ ...BASE_CONFIG, connectors: [], approvalPolicies: [] }, { functions: [worker] })).not.toThrow();
  });
});
