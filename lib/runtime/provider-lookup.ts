/**
 * Before an operator's resolution is recorded, the runtime asks the provider
 * itself (docs/runtime.md, "Resolving with the provider's answer"):
 *
 * - `lookupProvider` runs the connector's reconcile for the escalated
 *   record, once, inline and read-only: the connector-facing reconcile
 *   action and its execution context are built as the reconcile consumer's
 *   attempt builds them (lib/runtime/attempts/worker.ts: the capability that
 *   ran, the original input and identity, the checkpointed provider
 *   operation and cursor, the original request's reservation identity for a
 *   lookup by idempotency key; the runtime's service principal on behalf of
 *   the record's principal). Nothing is written: no action, no lease, no
 *   route (a remote connector gets the route it would pin, unwritten), no
 *   checkpoint (a reference the connector publishes is held for the answer). The attempt is bounded by `resolution.provider_lookup_timeout_ms`.
 *   Every way of not getting an answer is an answer too (`obtained: false`
 *   with why), never an error;
 * - `providerVerdict` (pure) judges the resolution against that answer: the
 *   provider agrees, or it was not asked / could not answer, or it
 *   contradicts the operator, which is refused with
 *   `operator.resolution_contradicts_provider` unless the resolution carries
 *   `provider_override` (a reason of its own).
 *
 * The answer and the verdict go into the resolution's receipt evidence
 * (lib/runtime/operator.ts `applyResolution`).
 */
import { AipError, isAipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { TransactionCheckpointWriter } from '../../packages/connector-sdk/src/context.js';
import { reconcileLookupOf } from '../../packages/connector-sdk/src/interfaces.js';
import type { Action, JsonObject, ProviderOperationRef } from '../../packages/connector-sdk/src/protocol/index.js';
import type { Resolution } from '../ports/approval-store.js';
import type { TransactionRecord } from '../ports/transaction-store.js';
import { invokeConnector, routeAssignment, type InvocationSubject } from './attempts/invoke.js';
import { originalRequestOf } from './attempts/worker.js';
import { loadConnector } from './deps.js';
import type { Kernel } from './kernel.js';
import { ranCapabilityId } from './modes/reconcile.js';

/** Why no answer was obtained from the provider. */
export const NO_PROVIDER_ANSWER_REASONS = [
  /** Neither a checkpointed provider operation nor a connector that can look the operation up by idempotency key. */
  'no_provider_operation',
  /** The connector does not reconcile this capability (or the capability is no longer registered). */
  'reconcile_unsupported',
  /** No connector instance serves the capability here. */
  'connector_unavailable',
  /** The original action's input is gone (redacted after retention): the lookup cannot be built. */
  'original_input_unavailable',
  /** The provider answered, but not terminally (the operation is still pending). */
  'provider_pending',
  /** The lookup failed or timed out (the provider's or the connector's error; its code is kept). */
  'provider_unavailable',
] as const;
export type NoProviderAnswerReason = (typeof NO_PROVIDER_ANSWER_REASONS)[number];

export type ProviderEffect = 'committed' | 'not_committed';

/** What the provider said about the record's operation, as recorded in the resolution's evidence. */
export type ProviderAnswer =
  | {
      readonly obtained: true;
      /** RFC 3339, the runtime's clock. */
      readonly looked_up_at: string;
      /** The capability whose effect was looked up (a compensation's alternate capability, for one). */
      readonly capability_id: string;
      readonly effect: ProviderEffect;
      /** The operation the provider answered about (the checkpointed one, or the one found by idempotency key). */
      readonly provider_operation?: ProviderOperationRef;
      /** The connector's redacted evidence. */
      readonly evidence?: JsonObject;
    }
  | {
      readonly obtained: false;
      readonly looked_up_at: string;
      readonly capability_id: string;
      readonly reason: NoProviderAnswerReason;
      /** The error code of a failed lookup. */
      readonly code?: string;
    };

/**
 * How the resolution stands against the provider's answer:
 * - `agrees`: the provider answered, and says what the operator says;
 * - `overridden`: the provider contradicts the operator, who overrode it with a reason;
 * - `no_answer`: the provider could not be asked or did not answer; the operator's word (and reason) stands alone.
 */
export type ProviderVerdict = 'agrees' | 'overridden' | 'no_answer';

function sameOperation(a: ProviderOperationRef, b: ProviderOperationRef): boolean {
  return a.provider === b.provider && a.operation_id === b.operation_id;
}

/**
 * The fields of `resolution` the provider's answer contradicts: its effect,
 * and its provider operation when the provider answered about another one.
 */
export function contradictions(resolution: Resolution, answer: ProviderAnswer): ('effect' | 'provider_operation')[] {
  if (!answer.obtained) return [];
  const out: ('effect' | 'provider_operation')[] = [];
  if (answer.effect !== resolution.effect) out.push('effect');
  if (
    resolution.provider_operation !== undefined &&
    answer.provider_operation !== undefined &&
    !sameOperation(resolution.provider_operation, answer.provider_operation)
  )
    out.push('provider_operation');
  return out;
}

/**
 * The verdict on a resolution, or the refusal of one the provider
 * contradicts without an override: `operator.resolution_contradicts_provider`
 * (409), naming the operator's claim and the provider's answer.
 */
export function providerVerdict(transaction_id: string, resolution: Resolution, answer: ProviderAnswer): ProviderVerdict {
  if (!answer.obtained) return 'no_answer';
  const contradicted = contradictions(resolution, answer);
  if (contradicted.length === 0) return 'agrees';
  if (resolution.provider_override !== undefined) return 'overridden';
  throw new AipError('operator.resolution_contradicts_provider', undefined, {
    details: {
      transaction_id,
      contradicted,
      resolution: {
        effect: resolution.effect,
        ...(resolution.provider_operation !== undefined ? { provider_operation: { ...resolution.provider_operation } } : {}),
      },
      provider_answer: {
        effect: answer.effect,
        ...(answer.provider_operation !== undefined ? { provider_operation: { ...answer.provider_operation } } : {}),
      },
      override: 'resend with provider_override: { reason } to record the resolution against the provider answer',
    },
  });
}

/** The answer as a JSON object for a receipt's evidence. */
export function answerEvidence(answer: ProviderAnswer): JsonObject {
  return JSON.parse(JSON.stringify(answer)) as JsonObject;
}

/**
 * The checkpoint writer of a lookup: it keeps nothing durable. A lookup only
 * reads, so a reference the connector publishes on the way is not a fact to
 * protect from a crash; it comes back with the attempt's outcome and is
 * recorded in the answer (and so in the resolution's receipt).
 */
const HELD_ONLY: TransactionCheckpointWriter = {
  checkpoint: () => Promise.resolve(),
  hold: () => Promise.resolve(),
};

/** Asks the provider about `record`'s operation (see the module comment). Never throws for the provider's or connector's behaviour. */
export async function lookupProvider(k: Kernel, record: TransactionRecord): Promise<ProviderAnswer> {
  const looked_up_at = k.iso();
  const capability_id = ranCapabilityId(record);
  const none = (reason: NoProviderAnswerReason, code?: string): ProviderAnswer => ({
    obtained: false,
    looked_up_at,
    capability_id,
    reason,
    ...(code !== undefined ? { code } : {}),
  });

  const reg = k.deps.registry.find(capability_id);
  if (reg === undefined) return none('reconcile_unsupported', 'capability.not_found');
  const hosted = await loadConnector(k.deps.connectors, reg.connector_id);
  if (hosted === undefined) return none('connector_unavailable', 'runtime.connector_unavailable');
  const lookups = reconcileLookupOf(hosted.connector, capability_id);
  if (lookups.length === 0 || reg.capability.transaction?.modes.includes('reconcile') !== true) return none('reconcile_unsupported');
  if (record.provider_operation === undefined && !lookups.includes('idempotency_key')) return none('no_provider_operation');
  const original = await k.deps.actions.get({ tenant_id: record.tenant_id, action_id: record.action_id });
  if (original === undefined || original.input_redacted === true) return none('original_input_unavailable');

  const action: Action = {
    id: `opl-${k.ids()}`,
    capability_id,
    input: original.action.input,
    ...(original.action.identity !== undefined ? { identity: original.action.identity } : {}),
    transaction: { mode: 'reconcile', transaction_id: record.transaction_id },
  };
  const attempt_id = `att-${k.ids()}`;
  const subject: InvocationSubject = {
    tenant_id: record.tenant_id,
    action,
    reg,
    principal: k.config.service_principal,
    attempt_id,
    fence: 0,
    issued_at: k.now(),
    lease_ms: k.config.resolution.provider_lookup_timeout_ms,
    timeout_ms: k.config.resolution.provider_lookup_timeout_ms,
    on_behalf_of: record.principal,
    transaction: {
      transaction_id: record.transaction_id,
      mode: 'reconcile',
      ...(record.provider_operation !== undefined ? { provider_operation: record.provider_operation } : {}),
      ...(record.reconciliation_cursor !== undefined ? { cursor: record.reconciliation_cursor } : {}),
      ...(await originalRequestOf(k, record, original)),
    },
  };
  let outcome: Awaited<ReturnType<typeof invokeConnector>>;
  try {
    // The route this lookup would pin, not written: a remote connector host checks it; no later attempt reuses it.
    outcome = await invokeConnector(k, { ...subject, route: routeAssignment(k, subject, hosted) }, hosted, { transaction_checkpoints: HELD_ONLY });
  } catch (err) {
    k.log.warn('provider lookup failed', { transaction_id: record.transaction_id, code: isAipError(err) ? err.code : 'internal.unexpected' });
    return none('provider_unavailable', isAipError(err) ? err.code : 'internal.unexpected');
  }
  const r = outcome.reconciliation;
  if (outcome.ok && r?.terminal === true) {
    const operation = r.provider_operation ?? outcome.provider_operation ?? record.provider_operation;
    return {
      obtained: true,
      looked_up_at,
      capability_id,
      effect: r.original_commit_completed ? 'committed' : 'not_committed',
      ...(operation !== undefined ? { provider_operation: { provider: operation.provider, operation_id: operation.operation_id } } : {}),
      ...(r.evidence !== undefined ? { evidence: r.evidence } : {}),
    };
  }
  if (r !== undefined && !r.terminal) return none('provider_pending', 'transaction.reconciliation_pending');
  const code = outcome.ok ? 'connector.output_invalid' : outcome.error.code;
  if (code === 'connector.operation_unsupported') return none('reconcile_unsupported', code);
  if (code === 'connector.reconcile_requires_provider_operation') return none('no_provider_operation', code);
  return none('provider_unavailable', code);
}
