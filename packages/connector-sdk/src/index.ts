/**
 * The connector SDK (`@aip-runtime/connector-sdk`): the connector page's
 * contract as TypeScript. See docs/connector-authoring.md (authors) and
 * lib/connectors/README.md (design notes). The runtime's attempt machinery
 * (dispatch, runAttempt) is not here: it is lib/runtime/attempts.
 */
export * from './operations.js';
export * from './support.js';
export * from './failure.js';
export * from './manifest.js';
export * from './interfaces.js';
export * from './base.js';
export * from './admission.js';
export * from './protocol/stream-chunk.js';
export * from './stream.js';
// createExecutionContext is the host's side (src/host.ts), exported by no entry: connectors never build a context.
export {
  ActionExecutionContext,
  CANCELLATION_KINDS,
  CONTEXT_REDACTED,
  TRANSACTION_CHECKPOINT_MODES,
  contextAttemptIdentity,
  type ActorContext,
  type ApprovalEvidence,
  type CancellationKind,
  type CancellationReason,
  type ExecutionAttempt,
  type ExecutionCheckpointPublisher,
  type ExecutionDeadline,
  type ExecutionFacilities,
  type IdempotencyReservation,
  type OriginalRequestIdentity,
  type ProviderEffectCommittedEvent,
  type ProviderEffectObserver,
  type RedactionPolicy,
  type TenantContext,
  type TraceContext,
  type TransactionCheckpointPublisher,
  type TransactionCheckpointWriter,
  type TransactionExecutionContext,
  type TrustedAttemptState,
} from './context.js';
export * from './define.js';
export * from './within-deadline.js';
// The protocol types a handler works with.
export type { Action, ActionResult, ProtocolError, ProviderOperationRef } from './protocol/index.js';
// What the runtime hands a handler beside the action (e.g. a compensation's target): docs/connector-authoring.md.
export { runtimeMemory, type RuntimeMemory, type CompensationMemory } from './memory.js';
export * from './credentials/handle.js';
export * from './credentials/secret.js';
export * from './credentials/references.js';
export * from './credentials/resolve.js';
export * from './credentials/env-provider.js';
export * from './idempotency.js';
export type { CredentialProvider, CredentialResolutionScope } from './ports/credentials.js';
export type { StreamSink } from './ports/stream-sink.js';
export type { Clock } from './ports/clock.js';
