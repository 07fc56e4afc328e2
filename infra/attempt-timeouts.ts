/**
 * Synth-time check: no connector attempt may outlive the worker Lambda that
 * runs it.
 *
 * An attempt runs for its capability's `execution.timeout_ms`, else the
 * Runtime's `default_attempt_timeout_ms` (the stack sets no
 * AIP_RUNTIME_SETTINGS, so that is the schema default). After its deadline
 * the Runtime still has to cancel (`cancel_typed`) and settle
 * (`sla.timeout_exceeded`, `outcome_unknown`, the reconciliation schedule):
 * {@link ATTEMPT_SETTLEMENT_MARGIN_MS}. If Lambda stopped the function first,
 * the attempt would end with no settlement at all, leaving the record to the
 * lease expiry and the sweeper. So the synth fails, naming the capability,
 * its attempt timeout and the Lambda timeout, when
 * timeout + margin > the timeout of a function consuming the queue that
 * runs it:
 *
 * - the invoke queue's consumer (InvokeWorker, `workerTimeoutSeconds`) runs
 *   every capability of the enabled connectors;
 * - the reconcile queue's consumer (ReconcileConsumer,
 *   `reconcilerTimeoutSeconds`) runs the reconcile attempts, so the
 *   capabilities whose transaction contract has the `reconcile` mode.
 *
 * At run time the Runtime caps each attempt's deadline by the invocation's
 * remaining time minus the same margin (lib/runtime/attempt-budget.ts), which
 * covers time spent before the attempt starts.
 *
 * The capabilities come from the enabled connectors' own manifests, built at
 * synth by the same factories the functions use
 * (functions/shared/connector-factories.ts: no credentials, no network).
 */
import { connectorManifest } from '../functions/shared/connector-factories.js';
import type { ConnectorManifest } from '../lib/connectors/manifest.js';
import type { Capability } from '../lib/protocol/index.js';
import { ATTEMPT_SETTLEMENT_MARGIN_MS, requiredFunctionTimeoutMs } from '../lib/runtime/attempt-budget.js';
import { RuntimeSettingsSchema } from '../lib/runtime/config.js';
import { InfraConfigError, type InfraConfig, type InfraConfigIssue } from './config.js';
import type { FunctionDefinition } from './functions.js';
import type { QueueName } from './stateful-stack.js';

/** The attempt timeout of a capability that declares none, as deployed (the Runtime's default). */
export const DEPLOYED_DEFAULT_ATTEMPT_TIMEOUT_MS: number = RuntimeSettingsSchema.shape.default_attempt_timeout_ms.parse(undefined);

/** The configuration field behind each queue consumer's timeout. */
const TIMEOUT_FIELD: Record<QueueName, 'workerTimeoutSeconds' | 'reconcilerTimeoutSeconds'> = {
  invoke: 'workerTimeoutSeconds',
  reconcile: 'reconcilerTimeoutSeconds',
};

export interface CapabilityAttemptTimeout {
  readonly connector_id: string;
  readonly capability_id: string;
  readonly attempt_timeout_ms: number;
  /** `execution.timeout_ms` of the capability, or the Runtime's default. */
  readonly source: 'capability' | 'runtime_default';
  /** The capability's transaction contract has the `reconcile` mode (the reconcile consumer runs it). */
  readonly reconciles: boolean;
}

/**
 * The attempt timeout of every capability of the enabled connectors. The
 * deployment's own connectors' manifests come from their synth-time check
 * (infra/deployment-connectors.ts, `manifests`).
 */
export function capabilityAttemptTimeouts(
  config: Pick<InfraConfig, 'connectors' | 'connectorEndpoints'>,
  manifests: ReadonlyMap<string, ConnectorManifest> = new Map(),
): CapabilityAttemptTimeout[] {
  return config.connectors.flatMap(({ id }) => {
    const baseUrl = config.connectorEndpoints[id];
    const manifest = manifests.get(id) ?? connectorManifest(id, baseUrl !== undefined ? { baseUrl } : {});
    return manifest.capabilities.map((capability: Capability) => {
      const declared = capability.execution?.timeout_ms;
      return {
        connector_id: id,
        capability_id: capability.id,
        attempt_timeout_ms: declared ?? DEPLOYED_DEFAULT_ATTEMPT_TIMEOUT_MS,
        source: declared !== undefined ? ('capability' as const) : ('runtime_default' as const),
        reconciles: capability.transaction?.modes.includes('reconcile') === true,
      };
    });
  });
}

/**
 * Throws {@link InfraConfigError} listing every capability whose attempt
 * (timeout plus the settlement margin) could outlive the function that
 * consumes its queue.
 */
export function checkAttemptTimeouts(
  config: InfraConfig,
  definitions: readonly FunctionDefinition[],
  manifests: ReadonlyMap<string, ConnectorManifest> = new Map(),
): void {
  const consumers = definitions.filter((d) => d.consumes !== undefined);
  if (consumers.length === 0 || config.connectors.length === 0) return;
  const capabilities = capabilityAttemptTimeouts(config, manifests);
  const issues: InfraConfigIssue[] = [];
  for (const fn of consumers) {
    const queue = fn.consumes!.queue;
    const field = TIMEOUT_FIELD[queue];
    const lambdaMs = fn.timeout.toMilliseconds();
    for (const cap of capabilities) {
      if (queue === 'reconcile' && !cap.reconciles) continue;
      const needed = requiredFunctionTimeoutMs(cap.attempt_timeout_ms);
      if (needed <= lambdaMs) continue;
      const origin = cap.source === 'capability' ? 'its execution.timeout_ms' : "the Runtime's default_attempt_timeout_ms; the capability declares none";
      issues.push({
        path: field,
        message:
          `capability "${cap.capability_id}" (connector "${cap.connector_id}") has a ${cap.attempt_timeout_ms} ms attempt timeout (${origin}); ` +
          `with the ${ATTEMPT_SETTLEMENT_MARGIN_MS} ms cancellation and settlement margin an attempt may take ${needed / 1000} s, ` +
          `longer than the ${lambdaMs / 1000} s timeout of the ${fn.id} Lambda (${queue} queue): ` +
          `raise ${field} to at least ${Math.ceil(needed / 1000)} (Lambda allows 900), or lower the capability's timeout`,
      });
    }
  }
  if (issues.length > 0) throw new InfraConfigError('worker Lambda timeouts vs connector attempt timeouts', issues);
}
