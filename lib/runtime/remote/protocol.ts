/**
 * The wire protocol between the runtime (the remote proxy) and a remote
 * connector host, and between a host and the runtime's checkpoint receiver.
 * Every message is a compact JWS (./jws.ts) whose payload is one of the
 * schemas below. See README.md next to this file for the full design.
 */
import * as z from '../../../packages/connector-sdk/src/common/zod.js';
import {
  ActionResultSchema,
  ActionSchema,
  IdSchema,
  JsonObjectSchema,
  PrincipalSchema,
  ProtocolErrorSchema,
  ProviderOperationRefSchema,
  ReconciliationCursorSchema,
  Rfc3339Schema,
  Sha256HexSchema,
  TransactionModeSchema,
} from '../../../packages/connector-sdk/src/protocol/index.js';
import { ConnectorFailureRecordSchema } from '../../../packages/connector-sdk/src/failure.js';
import { CancelOutcomeSchema } from '../../../packages/connector-sdk/src/interfaces.js';
import { ConnectorManifestSchema } from '../../../packages/connector-sdk/src/manifest.js';
import { ProblemSchema } from '../../../packages/connector-sdk/src/protocol/problem.js';
import { StreamChunkSchema } from '../../../packages/connector-sdk/src/protocol/stream-chunk.js';

/** The JWS `typ` of each message kind (a message of one kind never verifies as another). */
export const REMOTE_TYP = {
  request: 'aip-remote-request+jws',
  answer: 'aip-remote-answer+jws',
  manifest: 'aip-remote-manifest+jws',
  health: 'aip-remote-health+jws',
  checkpoint: 'aip-remote-checkpoint+jws',
  checkpoint_ack: 'aip-remote-checkpoint-ack+jws',
} as const;

export const REMOTE_PATHS = { attempt: '/v1/attempts', manifest: '/v1/manifest', health: '/v1/health' } as const;
/** The media type of every request and answer body (a compact JWS, RFC 7515 §9.2.1). */
export const REMOTE_CONTENT_TYPE = 'application/jose';
/** Mirrors the signed `deadline` for intermediaries; a host refuses a request whose header differs from it. */
export const DEADLINE_HEADER = 'aip-deadline';
/** `iat` must be within this window of the receiver's clock; nonces are remembered this long after `iat`. */
export const FRESHNESS_WINDOW_MS = 300_000;
/** Nonces: 128 to 768 bits, base64url. */
export const NonceSchema = z.string().check(z.regex(/^[A-Za-z0-9_-]{22,128}$/));

/** The typed operations a remote request can carry (emit_typed / ingest_typed are not placed remotely). */
export const REMOTE_OPERATIONS = ['invoke_typed', 'plan_typed', 'commit_typed', 'compensate_typed', 'reconcile_typed', 'cancel_typed'] as const;
export type RemoteOperation = (typeof REMOTE_OPERATIONS)[number];
export const RemoteOperationSchema = z.enum(REMOTE_OPERATIONS);

const Text = (max: number) => z.string().check(z.minLength(1), z.maxLength(max));

/** The route assignment exactly as the runtime stored it (lib/ports/route-store.ts), with the peer pinned. */
export const PinnedRouteSchema = z.strictObject({
  tenant_id: IdSchema,
  action_id: IdSchema,
  capability_id: IdSchema,
  verified_tenant: IdSchema,
  connector_id: IdSchema,
  connector_instance: IdSchema,
  replica: IdSchema,
  endpoint: Text(2048),
  peer_identity: Text(1024),
  peer_did: z.optional(Text(1024)),
  version: Text(64),
  manifest_hash: Sha256HexSchema,
  policy_revision: Text(256),
  credential_revision: Text(256),
  health_revision: Text(256),
  admission_reservation: Text(256),
  fence_token: z.number().check(z.int(), z.gte(0)),
  created_at: Rfc3339Schema,
});
export type PinnedRoute = z.infer<typeof PinnedRouteSchema>;

/** The trusted execution context's serializable facts (never the context itself). */
export const ContextFactsSchema = z.strictObject({
  attempt_id: Text(256),
  actor: z.strictObject({
    principal: PrincipalSchema,
    issuer: Text(2048),
    scheme: Text(128),
    scopes: z.array(Text(200)).check(z.maxLength(100)),
    lifetime: z.strictObject({ issued_at: Rfc3339Schema, expires_at: Rfc3339Schema }),
    delegation: z.optional(
      z.strictObject({ reason: z.enum(['token_expired_before_attempt', 'runtime_reconciliation']), on_behalf_of: z.optional(PrincipalSchema) }),
    ),
  }),
  tenant: z.optional(z.strictObject({ tenant_id: IdSchema, external_account_id: z.optional(IdSchema) })),
  credential_handle: z.optional(Text(256)),
  idempotency: z.optional(z.strictObject({ key: Text(256), reservation_id: Text(256), attempt_id: Text(256) })),
  approval: z.optional(
    z.strictObject({
      approval_ids: z.array(Text(256)).check(z.maxLength(20)),
      decision_ids: z.array(Text(256)).check(z.maxLength(50)),
      policy_hashes: z.array(Text(256)).check(z.maxLength(20)),
      authorization: z.strictObject({ decision: z.literal('allow'), scopes: z.array(Text(200)).check(z.maxLength(100)), policy_id: z.optional(Text(256)) }),
    }),
  ),
  transaction: z.optional(
    z.strictObject({
      transaction_id: Text(256),
      mode: TransactionModeSchema,
      plan_id: z.optional(Text(256)),
      provider_operation_id: z.optional(Text(512)),
      provider_operation: z.optional(ProviderOperationRefSchema),
      cursor: z.optional(ReconciliationCursorSchema),
      original_request: z.optional(
        z.strictObject({ action_id: Text(256), capability_id: Text(256), transaction_id: Text(256), reservation_id: z.optional(Text(256)) }),
      ),
    }),
  ),
  trace: z.strictObject({ trace_id: Text(256), span_id: Text(256), parent_span_id: z.optional(Text(256)) }),
  redaction: z.strictObject({
    redaction_required: z.boolean(),
    input_pointers: z.array(z.string().check(z.maxLength(1024))).check(z.maxLength(200)),
    output_pointers: z.array(z.string().check(z.maxLength(1024))).check(z.maxLength(200)),
  }),
  streaming: z.boolean(),
});
export type ContextFacts = z.infer<typeof ContextFactsSchema>;

/** Runtime → host: one typed operation of one attempt. */
export const RemoteRequestSchema = z.strictObject({
  v: z.literal(1),
  kind: z.literal('request'),
  op: RemoteOperationSchema,
  /** The runtime key that signed it. */
  iss: Text(128),
  /** The pinned endpoint (the host's public base URL). */
  aud: Text(2048),
  /** Issued at, epoch milliseconds. */
  iat: z.number().check(z.int(), z.gte(0)),
  nonce: NonceSchema,
  /** Absolute deadline of the attempt (also in the `AIP-Deadline` header). */
  deadline: Rfc3339Schema,
  route: PinnedRouteSchema,
  /** The attempt's lease: the host serves only the attempt holding it. */
  lease: z.strictObject({ attempt_id: Text(256), fence: z.number().check(z.int(), z.gte(0)), expires_at: Rfc3339Schema }),
  action: ActionSchema,
  context: ContextFactsSchema,
  /** Where the host publishes transaction checkpoints (the runtime's signed receiver). */
  callback: z.optional(z.strictObject({ url: z.url({ protocol: /^https?$/ }) })),
});
export type RemoteRequest = z.infer<typeof RemoteRequestSchema>;

const ReconciliationRecordSchema = z.strictObject({
  terminal: z.boolean(),
  original_commit_completed: z.optional(z.boolean()),
  cursor: z.optional(ReconciliationCursorSchema),
  evidence: z.optional(JsonObjectSchema),
  provider_operation: z.optional(ProviderOperationRefSchema),
});

/** What the host's SDK attempt produced. */
export const RemoteOutcomeSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('result'), result: ActionResultSchema, reconciliation: z.optional(ReconciliationRecordSchema) }),
  z.strictObject({
    type: z.literal('error'),
    error: ProtocolErrorSchema,
    failure: z.optional(ConnectorFailureRecordSchema),
    result: z.optional(ActionResultSchema),
    reconciliation: z.optional(ReconciliationRecordSchema),
  }),
  z.strictObject({ type: z.literal('cancel'), cancel: CancelOutcomeSchema }),
  z.strictObject({ type: z.literal('cancel_failure'), failure: ConnectorFailureRecordSchema }),
]);
export type RemoteOutcome = z.infer<typeof RemoteOutcomeSchema>;

export const RemoteCheckpointSchema = z.strictObject({ provider_operation: ProviderOperationRefSchema, cursor: z.optional(ReconciliationCursorSchema) });

export const RemoteAnswerBodySchema = z.discriminatedUnion('status', [
  /**
   * The host did no work: nothing reached the connector. `problem` is the
   * same refusal as an RFC 9457 problem document (signed with the rest).
   */
  z.strictObject({ status: z.literal('refused'), failure: ConnectorFailureRecordSchema, problem: z.optional(ProblemSchema) }),
  z.strictObject({
    status: z.literal('answered'),
    outcome: RemoteOutcomeSchema,
    /** Checkpoints made durable through the callback during the attempt, in order. */
    checkpoints: z.array(RemoteCheckpointSchema).check(z.maxLength(100)),
    /** Stream chunks, in emission order. */
    chunks: z.array(StreamChunkSchema).check(z.maxLength(10_000)),
    provider_effect_committed: z.boolean(),
    timed_out: z.boolean(),
  }),
]);
export type RemoteAnswerBody = z.infer<typeof RemoteAnswerBodySchema>;

/** Host → runtime: the answer, bound to the request. */
export const RemoteAnswerSchema = z.strictObject({
  v: z.literal(1),
  kind: z.literal('answer'),
  iss: Text(128),
  /** The runtime key that signed the request. */
  aud: Text(128),
  iat: z.number().check(z.int(), z.gte(0)),
  /** The request's nonce and digest. */
  nonce: NonceSchema,
  request_digest: Text(128),
  /** The route the host served (must equal the request's). */
  route: z.optional(PinnedRouteSchema),
  body: RemoteAnswerBodySchema,
});
export type RemoteAnswer = z.infer<typeof RemoteAnswerSchema>;

/** One hosted connector as the host publishes it. */
export const PublishedConnectorSchema = z.strictObject({
  connector_id: IdSchema,
  version: Text(64),
  manifest: ConnectorManifestSchema,
  manifest_hash: Sha256HexSchema,
  reconcile_lookup: z.record(z.string(), z.array(z.enum(['provider_operation', 'idempotency_key']))),
  credential_handles: z.record(z.string(), Text(256)),
  credential_revision: Text(256),
});
export type PublishedConnector = z.infer<typeof PublishedConnectorSchema>;

/** Host → runtime: GET /v1/manifest?connector_id=…&nonce=… */
export const RemoteManifestSchema = z.strictObject({
  v: z.literal(1),
  kind: z.literal('manifest'),
  iss: Text(128),
  iat: z.number().check(z.int(), z.gte(0)),
  nonce: NonceSchema,
  endpoint: Text(2048),
  instance_id: IdSchema,
  replica: IdSchema,
  connector: PublishedConnectorSchema,
});
/** @public */
export type RemoteManifest = z.infer<typeof RemoteManifestSchema>;

/** Host → runtime: GET /v1/health?connector_id=…&nonce=… */
export const RemoteHealthSchema = z.strictObject({
  v: z.literal(1),
  kind: z.literal('health'),
  iss: Text(128),
  iat: z.number().check(z.int(), z.gte(0)),
  nonce: NonceSchema,
  connector_id: IdSchema,
  ready: z.boolean(),
  detail: z.optional(z.string().check(z.maxLength(256))),
});

/** Host → runtime receiver: a provider-operation checkpoint of the attempt `request` names. */
export const RemoteCheckpointCallbackSchema = z.strictObject({
  v: z.literal(1),
  kind: z.literal('checkpoint'),
  iss: Text(128),
  aud: Text(2048),
  iat: z.number().check(z.int(), z.gte(0)),
  nonce: NonceSchema,
  /** The runtime's signed request (compact JWS) of the attempt. */
  request: z.string().check(z.minLength(1), z.maxLength(1_000_000)),
  seq: z.number().check(z.int(), z.gte(0), z.lte(1000)),
  provider_operation: ProviderOperationRefSchema,
  cursor: z.optional(ReconciliationCursorSchema),
});
export type RemoteCheckpointCallback = z.infer<typeof RemoteCheckpointCallbackSchema>;

/** Runtime receiver → host: the checkpoint is durable (or refused). */
export const RemoteCheckpointAckSchema = z.strictObject({
  v: z.literal(1),
  kind: z.literal('checkpoint_ack'),
  iss: Text(128),
  aud: Text(128),
  iat: z.number().check(z.int(), z.gte(0)),
  nonce: NonceSchema,
  request_digest: Text(128),
  seq: z.number().check(z.int(), z.gte(0)),
  status: z.enum(['durable', 'refused']),
  failure: z.optional(ConnectorFailureRecordSchema),
});
export type RemoteCheckpointAck = z.infer<typeof RemoteCheckpointAckSchema>;

/** `iat` within the window of `now` (either side: clocks drift both ways). */
export function isFresh(iat: number, now: number, windowMs = FRESHNESS_WINDOW_MS): boolean {
  return Math.abs(now - iat) <= windowMs;
}
