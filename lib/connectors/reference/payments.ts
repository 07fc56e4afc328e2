/**
 * Reference connector 1: the declarative HTTP connector configured for the
 * payments provider (dev/payments-simulator, a Stripe-like API). It is pure
 * configuration: everything below is JSON and could live in a deployment
 * config file; this module only fills in the base URL, the credential handle
 * and a few tunables. See README.md next to this file.
 *
 * Capabilities
 * - `payments.charge`: invoke (execute), plan (local preview), commit,
 *   compensate (a refund; contract names `payments.refund` as the
 *   compensation capability), cancel (of a pending charge) and reconcile (by
 *   provider operation ID, or, when none was checkpointed, by the original
 *   request's idempotency key). Retry with downstream idempotency.
 * - `payments.refund`: the same set for refunds (it also serves the
 *   compensating action the runtime routes to it).
 * - resource `payments.operations`: operation lookup by ID.
 *
 * Provider facts the configuration encodes
 * - `Idempotency-Key` carries the derived key (stable across retries).
 * - The provider operation ID is `/operation_id` of a 201/202 body (and
 *   `/error/operation_id` of a 402 decline); it is checkpointed at once.
 * - A `202` with `status: "pending"` is polled with the operation lookup.
 * - A lost response, a 5xx or `409 idempotency_key_in_use` is uncertain;
 *   the connector then probes `GET /v1/operations?idempotency_key=…`:
 *   `404` proves nothing was created (the failure becomes certain), `200`
 *   yields the operation ID to checkpoint.
 * - Reconciliation without an operation ID (the probe failed too) asks the
 *   same endpoint for the ORIGINAL request's key
 *   (`{$original_idempotency_key}`): `200` is the operation (mapped like the
 *   lookup by ID), `404` and `409 idempotency_key_in_use` are non-terminal.
 */
import type {
  CancelSpecConfig,
  EffectOperationConfig,
  ErrorRuleConfig,
  HttpConnectorConfig,
  KeyLookupConfig,
  Mapping,
  ProbeSpecConfig,
  RequestSpecConfig,
  StatusLookupConfig,
} from '../http/config.js';
import type { TransactionContract } from '@aip-runtime/connector-sdk/protocol';
import { HttpConnector, type HttpConnectorDeps } from '../http/connector.js';

export interface PaymentsConnectorOptions {
  /** The provider's base URL (default `http://127.0.0.1:4010`, the simulator's default port). */
  readonly baseUrl?: string;
  /** The credential handle the deployment's CredentialProvider resolves (default `payments/api_key`). */
  readonly credentialHandle?: string;
  /** Connector ID (default `payments`). */
  readonly connectorId?: string;
  /** Interval between polls of a pending operation (default 250 ms). */
  readonly pollIntervalMs?: number;
  /** The capabilities' execution.timeout_ms (default 10 000 ms). */
  readonly timeoutMs?: number;
  /** `window_ms` of payments.charge's compensation contract: how long after the charge a refund may compensate it. Default: no window. */
  readonly compensationWindowMs?: number;
}

export const PAYMENTS_PROVIDER = 'payments-simulator';
export const DEFAULT_PAYMENTS_BASE_URL = 'http://127.0.0.1:4010';
export const DEFAULT_PAYMENTS_CREDENTIAL_HANDLE = 'payments/api_key';

const metadataSchema = { type: 'object', maxProperties: 50, additionalProperties: { type: 'string', maxLength: 500 } };
const statusSchema = { type: 'string', enum: ['pending', 'succeeded', 'failed', 'canceled'] };

const chargeInput = {
  type: 'object',
  additionalProperties: false,
  required: ['amount', 'currency'],
  properties: {
    amount: { type: 'integer', minimum: 1, maximum: 99_999_999, description: 'Minor units' },
    currency: { type: 'string', pattern: '^[A-Za-z]{3}$' },
    customer: { type: 'string', minLength: 1, maxLength: 255 },
    description: { type: 'string', maxLength: 1000 },
    metadata: metadataSchema,
  },
};

const chargeOutput = {
  type: 'object',
  additionalProperties: false,
  required: ['charge_id', 'operation_id', 'status', 'amount', 'currency'],
  properties: {
    charge_id: { type: 'string' },
    operation_id: { type: 'string' },
    status: statusSchema,
    amount: { type: 'integer' },
    amount_refunded: { type: 'integer' },
    currency: { type: 'string' },
  },
};

const refundInput = {
  type: 'object',
  additionalProperties: false,
  required: ['charge_id'],
  properties: {
    charge_id: { type: 'string', minLength: 1, maxLength: 64 },
    amount: { type: 'integer', minimum: 1, maximum: 99_999_999, description: 'Minor units; absent refunds the whole rest' },
    metadata: metadataSchema,
  },
};

const refundOutput = {
  type: 'object',
  additionalProperties: false,
  required: ['refund_id', 'operation_id', 'charge_id', 'status', 'amount', 'currency'],
  properties: {
    refund_id: { type: 'string' },
    operation_id: { type: 'string' },
    charge_id: { type: 'string' },
    status: statusSchema,
    amount: { type: 'integer' },
    currency: { type: 'string' },
  },
};

/** Charge view (`POST /v1/charges`, `GET /v1/charges/{id}`) → charge output. */
const chargeFromChargeView: Mapping = {
  '/charge_id': { from: '/id' },
  '/operation_id': { from: '/operation_id' },
  '/status': { from: '/status' },
  '/amount': { from: '/amount' },
  '/amount_refunded': { from: '/amount_refunded', optional: true },
  '/currency': { from: '/currency' },
};

/** Operation view (`GET /v1/operations/{id}`) → charge output. */
const chargeFromOperationView: Mapping = {
  '/charge_id': { from: '/resource_id' },
  '/operation_id': { from: '/operation_id' },
  '/status': { from: '/status' },
  '/amount': { from: '/amount' },
  '/currency': { from: '/currency' },
};

/** Refund view (`POST /v1/refunds`) → refund output. */
const refundFromRefundView: Mapping = {
  '/refund_id': { from: '/id' },
  '/operation_id': { from: '/operation_id' },
  '/charge_id': { from: '/charge_id' },
  '/status': { from: '/status' },
  '/amount': { from: '/amount' },
  '/currency': { from: '/currency' },
};

/** Operation view → refund output. */
const refundFromOperationView: Mapping = {
  '/refund_id': { from: '/resource_id' },
  '/operation_id': { from: '/operation_id' },
  '/charge_id': { from: '/charge_id' },
  '/status': { from: '/status' },
  '/amount': { from: '/amount' },
  '/currency': { from: '/currency' },
};

/** Did an uncertain mutation create an operation? Lookup by the derived idempotency key. */
const probeByKey: ProbeSpecConfig = {
  request: { method: 'GET', path: '/v1/operations', query: { idempotency_key: { context: 'idempotency_key' } } },
  found_statuses: [200],
  absent_statuses: [404],
  provider_operation: { pointer: '/operation_id' },
  status_pointer: '/status',
};

const refundRequest: RequestSpecConfig = {
  method: 'POST',
  path: '/v1/refunds',
  body: {
    '/charge_id': { from: '/charge_id' },
    '/amount': { from: '/amount', optional: true },
    '/metadata': { from: '/metadata', optional: true },
  },
};

const refundEffect: EffectOperationConfig = {
  request: refundRequest,
  provider_operation: { pointer: '/operation_id' },
  pending: { pointer: '/status', values: ['pending'] },
  output: refundFromRefundView,
  completed_output: refundFromOperationView,
  probe: probeByKey,
};

const cancelOperation: CancelSpecConfig = {
  request: { method: 'POST', path: '/v1/operations/{$provider_operation_id}/cancel', body: {} },
  accepted_statuses: [200],
  rejected_statuses: [409],
  status_pointer: '/status',
};

/**
 * Reconcile without an operation ID: the operation of the ORIGINAL request's
 * key (same operation view as the lookup by ID, so status, output and cursor
 * mappings are the lookup's). 404 is not proof the original request will not
 * land: non-terminal. 409 `idempotency_key_in_use`: the original request is
 * still held, non-terminal.
 */
const reconcileByKey: KeyLookupConfig = {
  request: { method: 'GET', path: '/v1/operations', query: { idempotency_key: { context: 'original_idempotency_key' } } },
  found_statuses: [200],
  absent_statuses: [404],
  pending_statuses: [409],
  provider_operation: { pointer: '/operation_id' },
};

function operationLookup(output: Mapping): StatusLookupConfig {
  return {
    request: { method: 'GET', path: '/v1/operations/{$provider_operation_id}' },
    status_pointer: '/status',
    succeeded: ['succeeded'],
    failed: ['failed', 'canceled'],
    output,
    cursor_pointer: '/updated_at',
    by_idempotency_key: reconcileByKey,
  };
}

/** Provider error vocabulary → typed failures (first match wins). */
const paymentsErrors: ErrorRuleConfig[] = [
  {
    status: 402,
    match: { pointer: '/error/type', equals: ['card_declined'] },
    code: 'payments.card_declined',
    category: 'permanent',
    retryable: false,
    message: 'The card was declined',
    provider_operation: { pointer: '/error/operation_id' },
    details: { decline_code: '/error/code', provider_error_type: '/error/type' },
  },
  {
    status: 402,
    code: 'payments.refund_declined',
    category: 'permanent',
    retryable: false,
    message: 'The refund was declined',
    provider_operation: { pointer: '/error/operation_id' },
    details: { decline_code: '/error/code', provider_error_type: '/error/type' },
  },
  {
    status: 401,
    code: 'payments.authentication_failed',
    category: 'permanent',
    retryable: false,
    message: 'The payments provider rejected the connector credential',
  },
  {
    status: 404,
    code: 'payments.resource_missing',
    category: 'not_found',
    retryable: false,
    message: 'The payments provider has no such resource',
    details: { param: '/error/param' },
  },
  {
    status: 409,
    match: { pointer: '/error/type', equals: ['idempotency_key_in_use'] },
    code: 'payments.request_in_progress',
    category: 'temporary',
    retryable: true,
    uncertain_outcome: true,
    message: 'A request with the same idempotency identity is still being processed',
  },
  {
    status: 409,
    match: { pointer: '/error/type', equals: ['idempotency_key_reuse'] },
    code: 'payments.idempotency_key_reuse',
    category: 'conflict',
    retryable: false,
    message: 'The idempotency identity was used for a different request',
  },
  {
    status: 409,
    code: 'payments.charge_not_refundable',
    category: 'conflict',
    retryable: false,
    message: 'The charge cannot be refunded',
    details: { provider_error_type: '/error/type' },
  },
  {
    status: 422,
    code: 'payments.refund_exceeds_charge',
    category: 'validation',
    retryable: false,
    message: 'The refund exceeds the refundable amount',
    details: { refundable_amount: '/error/refundable_amount' },
  },
  {
    status: [400, 413, 415],
    code: 'payments.request_invalid',
    category: 'validation',
    retryable: false,
    message: 'The payments provider rejected the request',
    details: { provider_error_type: '/error/type', param: '/error/param' },
  },
  { status: 429, code: 'payments.rate_limited', category: 'rate_limited', retryable: true },
  // error_after_commit answers like error_before_commit: only the probe can tell them apart.
  {
    status: '5xx',
    code: 'payments.provider_unavailable',
    category: 'temporary',
    retryable: true,
    uncertain_outcome: true,
    message: 'The payments provider failed; retry with the same idempotency identity',
  },
];

/**
 * The payments connector configuration (plain JSON). `baseUrl` and
 * `credentialHandle` are the only deployment-specific values.
 */
export function paymentsConnectorConfig(options: PaymentsConnectorOptions = {}): HttpConnectorConfig {
  const timeout_ms = options.timeoutMs ?? 10_000;
  const execution = { supports_cancel: true, supports_streaming: false, supports_retry: true, timeout_ms };
  const credentials = { required: true, kind: 'api_key' };
  const idempotency = { required: false, downstream_idempotent: true };
  const transaction: TransactionContract = {
    modes: ['dry_run', 'plan', 'execute', 'commit', 'compensate', 'reconcile'],
    dry_run_fidelity: 'policy_and_schema',
    requires_plan_before_commit: false,
  };
  const handle = options.credentialHandle ?? DEFAULT_PAYMENTS_CREDENTIAL_HANDLE;
  return {
    connector_id: options.connectorId ?? 'payments',
    version: '1.0.0',
    provider: PAYMENTS_PROVIDER,
    base_url: options.baseUrl ?? DEFAULT_PAYMENTS_BASE_URL,
    auth: { type: 'bearer', credential_handle: handle },
    idempotency: { header: 'Idempotency-Key' },
    request_id_header: 'Request-Id',
    poll_interval_ms: options.pollIntervalMs ?? 250,
    errors: paymentsErrors,
    health: { path: '/_sim/health' },
    resources: [
      { id: 'payments.operations', description: 'Provider operations by ID', uri_template: '/v1/operations/{operation_id}', media_type: 'application/json' },
    ],
    capabilities: [
      {
        id: 'payments.charge',
        description: 'Charge a customer. The provider deduplicates on the derived idempotency key; compensate with a refund.',
        input_schema: chargeInput,
        output_schema: chargeOutput,
        contract: {
          transaction,
          compensation: {
            mode: 'supported',
            compensation_capability_id: 'payments.refund',
            approval_required: false,
            ...(options.compensationWindowMs !== undefined ? { window_ms: options.compensationWindowMs } : {}),
          },
          data: { redaction_required: false, redact_pointers: ['/customer'] },
          execution,
          credentials,
          idempotency,
        },
        retry: { downstream_idempotency: true },
        operations: {
          invoke: {
            request: {
              method: 'POST',
              path: '/v1/charges',
              body: {
                '/amount': { from: '/amount' },
                '/currency': { from: '/currency' },
                '/customer': { from: '/customer', optional: true },
                '/description': { from: '/description', optional: true },
                '/metadata': { from: '/metadata', optional: true },
              },
            },
            provider_operation: { pointer: '/operation_id' },
            pending: { pointer: '/status', values: ['pending'] },
            output: chargeFromChargeView,
            probe: probeByKey,
          },
          commit: 'invoke',
          plan: { preview: true },
          // The refund request; its input is payments.refund's (the compensation capability).
          compensate: refundEffect,
          cancel: cancelOperation,
          reconcile: operationLookup(chargeFromOperationView),
        },
      },
      {
        id: 'payments.refund',
        description: 'Refund (part of) a charge. Also serves the compensating action of payments.charge.',
        input_schema: refundInput,
        output_schema: refundOutput,
        contract: {
          transaction,
          compensation: { mode: 'rollback_not_supported', approval_required: false },
          execution,
          credentials,
          idempotency,
        },
        retry: { downstream_idempotency: true },
        operations: {
          invoke: refundEffect,
          commit: 'invoke',
          plan: { preview: true },
          compensate: refundEffect,
          cancel: cancelOperation,
          reconcile: operationLookup(refundFromOperationView),
        },
      },
    ],
  };
}

/**
 * The payments connector: `createHttpConnector(paymentsConnectorConfig(options), deps)`.
 * `credentials` is the deployment CredentialProvider that resolves the handle.
 */
export function createPaymentsConnector(options: PaymentsConnectorOptions & HttpConnectorDeps): HttpConnector {
  const { credentials, fetch, logger, ...rest } = options;
  return new HttpConnector(paymentsConnectorConfig(rest), {
    ...(credentials !== undefined ? { credentials } : {}),
    ...(fetch !== undefined ? { fetch } : {}),
    ...(logger !== undefined ? { logger } : {}),
  });
}
