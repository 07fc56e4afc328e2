/**
 * The connector SDK (issue 3): the connector page's contract as TypeScript.
 * See docs/connector-authoring.md (authors) and lib/connectors/README.md
 * (design notes).
 */
export * from './operations.js';
export * from './support.js';
export * from './failure.js';
export * from './manifest.js';
export * from './interfaces.js';
export * from './base.js';
export * from './admission.js';
export * from './stream-chunk.js';
export * from './stream.js';
export {
  ActionExecutionContext,
  CONTEXT_REDACTED,
  TRANSACTION_CHECKPOINT_MODES,
  createExecutionContext,
  contextAttemptIdentity,
  type ActorContext,
  type ApprovalEvidence,
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
export * from './dispatch.js';
export * from './deadline.js';
export * from './define.js';
export * from './credentials/handle.js';
export * from './credentials/secret.js';
export * from './credentials/references.js';
export * from './credentials/resolve.js';
export * from './credentials/env-provider.js';
export { downstreamIdempotencyKey, originalIdempotencyKey, type IdempotencyPurpose } from './http/idempotency.js';
export type { CredentialProvider, CredentialResolutionScope } from '../ports/credentials.js';
export type { StreamSink } from '../ports/stream-sink.js';
export type { Clock } from '../ports/clock.js';
