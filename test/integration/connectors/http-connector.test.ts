/**
 * The declarative HTTP connector, configured for the payments simulator
 * (lib/connectors/reference/payments.ts), over real HTTP on loopback.
 *
 * No sleeps: latency faults are observed through the simulator's events and
 * ended with releaseDelays(); attempts are cut with their AbortSignal or a
 * deadline far shorter than the held response; `idle()` settles the server.
 */
import { createServer } from 'node:net';
import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ConnectorFailure,
  EnvCredentialProvider,
  credentialHandle,
  isConnectorFailure,
  toProtocolError,
  type ExecutionAttempt,
  type OriginalRequestIdentity,
  type TrustedAttemptState,
} from '../../../packages/connector-sdk/src/index.js';
import { dispatch } from '../../../lib/runtime/attempts/dispatch.js';
import { runAttempt } from '../../../lib/runtime/attempts/deadline.js';
import { createExecutionContext } from '../../../packages/connector-sdk/src/host.js';
import {
  createHttpConnector,
  deriveIdempotencyKey,
  originalIdempotencyKey,
  type HttpConnector,
  type HttpConnectorLogLine,
} from '../../../lib/connectors/http/index.js';
import { createPaymentsConnector, paymentsConnectorConfig, PAYMENTS_PROVIDER } from '../../../lib/connectors/reference/payments.js';
import type { Action, Principal, ProviderOperationRef } from '../../../packages/connector-sdk/src/protocol/index.js';
import { reservationIdentity } from '../../../lib/ports/idempotency-store.js';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { startPaymentsSimulator, type PaymentsSimulator, type SimEvent, type SimLogLine } from '../../../dev/payments-simulator/server.js';

const API_KEY = 'sk_test_http_connector_Vb83kQ1x';
const TENANT = 'tenant-a';

let sim: PaymentsSimulator;
let connector: HttpConnector;
let simLogs: SimLogLine[];
let connectorLogs: HttpConnectorLogLine[];
/** Everything a test observed: outputs, failures, checkpoints, cursors, logs. Scanned for the key after each test. */
let observed: string[];

function credentials(key = API_KEY): EnvCredentialProvider {
  return new EnvCredentialProvider({
    connector_id: 'payments',
    references: [{ connector_id: 'payments', handle: 'payments/api_key', tenant_id: TENANT, env: 'PAYMENTS_API_KEY' }],
    env: { PAYMENTS_API_KEY: key },
  });
}

function observe(value: unknown): void {
  observed.push(typeof value === 'string' ? value : `${JSON.stringify(value)} ${inspect(value, { depth: 8 })}`);
  if (isConnectorFailure(value)) observed.push(JSON.stringify(toProtocolError(value)), String(value.stack));
}

beforeEach(async () => {
  simLogs = [];
  connectorLogs = [];
  observed = [];
  sim = await startPaymentsSimulator({ apiKeys: [API_KEY], seed: 3, logger: (l) => simLogs.push(l) });
  connector = createPaymentsConnector({ baseUrl: sim.url, credentials: credentials(), logger: (l) => connectorLogs.push(l), pollIntervalMs: 20 });
});

afterEach(async () => {
  sim.releaseDelays();
  await sim.idle();
  await sim.stop();
  const everything = `${observed.join('\n')}\n${JSON.stringify(connectorLogs)}\n${JSON.stringify(simLogs)}`;
  expect(everything).not.toContain(API_KEY);
});

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

interface Recorded {
  readonly attempt: ExecutionAttempt;
  /** checkpoint:<op> / effect, in the order the connector published them. */
  readonly events: string[];
  readonly checkpoints: { provider_operation: ProviderOperationRef; reconciliation_cursor?: string }[];
  /** The provider ledger size at each effect publication. */
  readonly ledgerAtEffect: number[];
}

let attemptCounter = 0;

const USER_1: Principal = { id: 'user-1', kind: 'user' };

/** The reservation identity the runtime puts in the context for this action's key (see worker.ts). */
function reservationOf(action: Action, opts: { tenant?: string; principal?: Principal } = {}): string {
  const principal = opts.principal ?? USER_1;
  return reservationIdentity({
    tenant_id: opts.tenant ?? TENANT,
    principal_kind: principal.kind,
    principal_id: principal.id,
    key: action.idempotency_key as string,
  });
}

function attemptFor(
  action: Action,
  opts: {
    deadlineMs?: number;
    tenant?: string;
    principal?: Principal;
    provider_operation?: ProviderOperationRef;
    original_request?: OriginalRequestIdentity;
    signal?: AbortSignal;
  } = {},
): Recorded {
  attemptCounter += 1;
  const events: string[] = [];
  const checkpoints: Recorded['checkpoints'] = [];
  const ledgerAtEffect: number[] = [];
  const tx = action.transaction;
  const trusted: TrustedAttemptState = {
    action_id: action.id,
    attempt_id: `att-${attemptCounter}`,
    capability_id: action.capability_id,
    actor: {
      principal: opts.principal ?? USER_1,
      issuer: 'https://issuer.example',
      scheme: 'bearer_jwt',
      scopes: ['payments:write'],
      lifetime: { issued_at: new Date(Date.now() - 60_000), expires_at: new Date(Date.now() + 3_600_000) },
    },
    tenant: { tenant_id: opts.tenant ?? TENANT },
    credential: credentialHandle('payments/api_key'),
    deadline_at: new Date(Date.now() + (opts.deadlineMs ?? 10_000)),
    ...(action.idempotency_key !== undefined
      ? { idempotency: { key: action.idempotency_key, reservation_id: reservationOf(action, opts), attempt_id: `att-${attemptCounter}` } }
      : {}),
    ...(tx !== undefined
      ? {
          transaction: {
            transaction_id: tx.transaction_id ?? `tx-${action.id}`,
            mode: tx.mode,
            ...(tx.plan_id !== undefined ? { plan_id: tx.plan_id } : {}),
            ...(opts.provider_operation !== undefined ? { provider_operation: opts.provider_operation } : {}),
            ...(opts.original_request !== undefined ? { original_request: opts.original_request } : {}),
          },
        }
      : {}),
    trace: { trace_id: 'trace-1', span_id: `span-${attemptCounter}` },
    redaction: { redaction_required: false, input_pointers: [], output_pointers: [] },
    streaming: false,
  };
  const attempt = createExecutionContext(trusted, {
    transaction_checkpoints: {
      async checkpoint(input) {
        checkpoints.push({
          provider_operation: input.provider_operation,
          ...(input.reconciliation_cursor ? { reconciliation_cursor: input.reconciliation_cursor } : {}),
        });
        events.push(`checkpoint:${input.provider_operation.operation_id}`);
        observe(input);
      },
    },
    provider_effect_observer: {
      provider_effect_committed() {
        events.push('effect');
        ledgerAtEffect.push(sim.ledger().length);
      },
    },
    ...(opts.signal ? { parent_signal: opts.signal } : {}),
  });
  return { attempt, events, checkpoints, ledgerAtEffect };
}

let actionCounter = 0;

function charge(mode: 'commit' | 'execute' | undefined, extra: Partial<Action> = {}): Action {
  actionCounter += 1;
  return {
    id: `act-${actionCounter}`,
    capability_id: 'payments.charge',
    input: { amount: 1250, currency: 'eur', customer: 'cus_1' },
    idempotency_key: `order-${actionCounter}`,
    ...(mode !== undefined
      ? { transaction: { mode, transaction_id: `tx-${actionCounter}`, ...(mode === 'commit' ? { plan_id: `plan:tx-${actionCounter}` } : {}) } }
      : {}),
    ...extra,
  };
}

async function failureOf(p: Promise<unknown>): Promise<ConnectorFailure> {
  const err = await p.then(
    (v) => {
      throw new Error(`expected a failure, got ${JSON.stringify(v)}`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectorFailure);
  observe(err);
  return err as ConnectorFailure;
}

async function resultOf<T>(p: Promise<T>): Promise<T> {
  const v = await p;
  observe(v);
  return v;
}

/** Idempotency-Key of every POST /v1/charges the simulator answered (or dropped), in order. */
function chargeKeys(): { keys: string[]; off: () => void } {
  const keys: string[] = [];
  const off = sim.onEvent((e: SimEvent) => {
    if (e.type === 'response' && e.method === 'POST' && e.path === '/v1/charges' && e.idempotency_key) keys.push(e.idempotency_key);
  });
  return { keys, off };
}

// ---------------------------------------------------------------------------
// Configuration and manifest
// ---------------------------------------------------------------------------

describe('configuration', () => {
  it('is plain JSON: a round-tripped configuration builds the same connector', async () => {
    const json = JSON.parse(JSON.stringify(paymentsConnectorConfig({ baseUrl: sim.url }))) as unknown;
    const fromFile = createHttpConnector(json, { credentials: credentials() });
    expect(await fromFile.discover({})).toEqual(await connector.discover({}));
  });

  it('derives the nine flags from the configured operations', () => {
    expect(connector.implementation_support('payments.charge')).toEqual({
      invocation: true,
      cancellation: true,
      streaming: false,
      retry: true,
      transaction: true,
      reconciliation: true,
      compensation: true,
      approval: false,
      credentials: true,
    });
    expect(connector.implementation_support('payments.unknown')).toBeUndefined();
  });

  it('rejects an invalid configuration with connector.definition_invalid, naming paths only', () => {
    const config = paymentsConnectorConfig({ baseUrl: sim.url }) as Record<string, unknown>;
    let err: unknown;
    try {
      createHttpConnector({ ...config, base_url: 'ftp://example' }, { credentials: credentials() });
    } catch (e) {
      err = e;
    }
    expect(isAipError(err, 'connector.definition_invalid')).toBe(true);
    expect(JSON.stringify((err as { details: unknown }).details)).toContain('base_url');
  });

  it('refuses a configuration that advertises an operation it does not configure', () => {
    const config = paymentsConnectorConfig({ baseUrl: sim.url });
    const [first] = config.capabilities;
    const withoutCancel = { ...config, capabilities: [{ ...first, operations: { ...first!.operations, cancel: undefined } }] };
    let err: unknown;
    try {
      createHttpConnector(JSON.parse(JSON.stringify(withoutCancel)) as unknown, { credentials: credentials() });
    } catch (e) {
      err = e;
    }
    expect(isAipError(err, 'connector.admission_rejected')).toBe(true);
    expect(JSON.stringify((err as { details: unknown }).details)).toContain('execution.supports_cancel requires cancellation');
  });

  it('needs a credential provider when auth is configured', () => {
    expect(() => createHttpConnector(paymentsConnectorConfig({ baseUrl: sim.url }))).toThrow(/CredentialProvider/);
  });

  it('reports readiness through the provider health endpoint', async () => {
    expect(await connector.health({})).toEqual({ ready: true });
    await sim.stop();
    const report = await connector.health({});
    expect(report.ready).toBe(false);
  });
});

// ---------------------------------------------------------------------------
// Idempotency identity
// ---------------------------------------------------------------------------

describe('the idempotency key', () => {
  it('is the same on every retry of the same action, so a lost response is not charged twice', async () => {
    const { keys, off } = chargeKeys();
    const action = charge(undefined);
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: 'drop_after_commit' }]);
    const lost = await failureOf(connector.invoke_typed(action, attemptFor(action).attempt.context));
    expect(lost.uncertain_outcome).toBe(true);
    // A plain invocation of a capability with downstream idempotency may be retried.
    expect(lost.retryable).toBe(true);
    const retried = await resultOf(connector.invoke_typed(action, attemptFor(action).attempt.context));
    off();
    expect(keys).toHaveLength(2);
    expect(keys[0]).toBe(keys[1]);
    expect(sim.ledger()).toHaveLength(1);
    expect((retried.output as { charge_id: string }).charge_id).toBe(sim.ledger()[0]?.resource_id);
  });

  it('is derived exactly as documented from the reservation identity', async () => {
    const { keys, off } = chargeKeys();
    const action = charge('execute');
    await resultOf(connector.invoke_typed(action, attemptFor(action).attempt.context));
    off();
    const identity = { namespace: 'payments', capability_id: 'payments.charge', purpose: 'effect', kind: 'reservation' } as const;
    const expected = deriveIdempotencyKey({ ...identity, reservation_id: reservationOf(action) });
    expect(keys).toEqual([expected]);
    expect(expected).toMatch(/^aip1-[A-Za-z0-9_-]{43}$/);
    // The same caller key of another tenant or another principal, or for a cancel, is another identity.
    expect(deriveIdempotencyKey({ ...identity, reservation_id: reservationOf(action, { tenant: 'tenant-b' }) })).not.toBe(expected);
    expect(deriveIdempotencyKey({ ...identity, reservation_id: reservationOf(action, { principal: { id: 'user-2', kind: 'user' } }) })).not.toBe(expected);
    expect(deriveIdempotencyKey({ ...identity, reservation_id: reservationOf(action), purpose: 'cancel' })).not.toBe(expected);
    // Another tenant's credential is resolved for that tenant only: here it has none, so nothing is sent.
    const other = await failureOf(connector.invoke_typed(action, attemptFor(action, { tenant: 'tenant-b' }).attempt.context));
    expect(other.code).toBe('connector.credentials_unavailable');
    expect(sim.ledger()).toHaveLength(1);
  });

  it('falls back to the action and transaction IDs when the action has no idempotency key', async () => {
    const { keys, off } = chargeKeys();
    const action = charge('execute', { idempotency_key: undefined });
    delete (action as { idempotency_key?: string }).idempotency_key;
    await resultOf(connector.invoke_typed(action, attemptFor(action).attempt.context));
    await resultOf(connector.invoke_typed(action, attemptFor(action).attempt.context));
    off();
    const expected = deriveIdempotencyKey({
      namespace: 'payments',
      capability_id: 'payments.charge',
      purpose: 'effect',
      kind: 'action',
      tenant_id: TENANT,
      action_id: action.id,
      transaction_id: action.transaction?.transaction_id as string,
    });
    expect(keys).toEqual([expected, expected]);
    expect(sim.ledger()).toHaveLength(1);
  });

  it('differs for two principals of one tenant reusing one key and body: two charges, not one', async () => {
    const { keys, off } = chargeKeys();
    const alice = charge(undefined, { idempotency_key: 'shared-key' });
    const bob = charge(undefined, { idempotency_key: 'shared-key', input: alice.input });
    const first = await resultOf(connector.invoke_typed(alice, attemptFor(alice, { principal: { id: 'alice', kind: 'user' } }).attempt.context));
    const second = await resultOf(connector.invoke_typed(bob, attemptFor(bob, { principal: { id: 'bob', kind: 'user' } }).attempt.context));
    off();
    expect(keys).toHaveLength(2);
    expect(keys[0]).not.toBe(keys[1]);
    expect(sim.ledger()).toHaveLength(2);
    expect((first.output as { charge_id: string }).charge_id).not.toBe((second.output as { charge_id: string }).charge_id);
  });
});

// ---------------------------------------------------------------------------
// Checkpoints
// ---------------------------------------------------------------------------

describe('checkpoints', () => {
  it('checkpoints the provider operation before returning and publishes the effect once the provider holds it', async () => {
    const action = charge('commit');
    const rec = attemptFor(action);
    const result = await resultOf(connector.commit_typed(action, rec.attempt.context));
    rec.events.push('returned');
    const output = result.output as { operation_id: string; charge_id: string; status: string };
    expect(output.status).toBe('succeeded');
    expect(rec.events).toEqual([`checkpoint:${output.operation_id}`, 'effect', 'returned']);
    expect(rec.checkpoints[0]?.provider_operation).toMatchObject({ provider: PAYMENTS_PROVIDER, operation_id: output.operation_id });
    expect(rec.checkpoints[0]?.provider_operation.request_id).toMatch(/^req_/);
    // When the effect was published, the provider's ledger already held it.
    expect(rec.ledgerAtEffect).toEqual([1]);
    expect(rec.attempt.provider_effect_committed).toBe(true);
  });

  it('checkpoints an accepted (pending) operation before polling for its outcome', async () => {
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: 'pending' }]);
    const action = charge('commit');
    const rec = attemptFor(action);
    const firstPoll = sim.waitForEvent((e) => e.type === 'response' && e.method === 'GET');
    const pending = resultOf(connector.commit_typed(action, rec.attempt.context));
    await firstPoll;
    const op = rec.checkpoints[0]?.provider_operation.operation_id as string;
    expect(rec.events).toEqual([`checkpoint:${op}`]);
    expect(sim.operation(op)?.status).toBe('pending');
    sim.resolveOperation(op, 'succeeded');
    const result = await pending;
    expect(result.output).toMatchObject({ operation_id: op, status: 'succeeded', charge_id: sim.operation(op)?.resource_id });
    expect(rec.events).toEqual([`checkpoint:${op}`, 'effect']);
    expect(sim.ledger()).toHaveLength(1);
  });

  it('keeps the checkpointed operation and request ID when the completion wait is lost', async () => {
    sim.setFaults([
      { match: { path: '/v1/charges' }, fault: 'pending' },
      { match: { method: 'GET', path: '/v1/operations/*' }, fault: { type: 'latency', ms: 600_000 } },
    ]);
    const action = charge('commit');
    const rec = attemptFor(action, { deadlineMs: 1_500 });
    const held = sim.waitForEvent((e) => e.type === 'fault_applied' && e.method === 'GET');
    const call = failureOf(connector.commit_typed(action, rec.attempt.context));
    await held;
    expect(rec.checkpoints).toHaveLength(1);
    const failure = await call;
    expect(failure.code).toBe('sla.timeout_exceeded');
    expect(failure.uncertain_outcome).toBe(true);
    expect(failure.retryable).toBe(false);
    expect(failure.provider_operation).toEqual(rec.checkpoints[0]?.provider_operation);
    expect(failure.provider_request_id).toBe(rec.checkpoints[0]?.provider_operation.request_id);
    expect(rec.events).not.toContain('effect');
  });
});

// ---------------------------------------------------------------------------
// Faults
// ---------------------------------------------------------------------------

describe('fault mapping', () => {
  it('error_before_commit: not uncertain (the probe proves nothing was created), retryable per the mapping', async () => {
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: { type: 'error_before_commit', status: 503 } }]);
    const action = charge('commit');
    const rec = attemptFor(action);
    const failure = await failureOf(connector.commit_typed(action, rec.attempt.context));
    expect(failure).toMatchObject({
      code: 'payments.provider_unavailable',
      category: 'temporary',
      retryable: true,
      remote_status: 503,
      uncertain_outcome: false,
      retry_after_ms: 1000,
    });
    expect(failure.redacted_details).toMatchObject({ probe: 'absent' });
    expect(failure.provider_request_id).toMatch(/^req_/);
    expect(rec.events).toEqual([]);
    expect(sim.ledger()).toHaveLength(0);
    // The retry the mapping allows creates exactly one charge.
    await resultOf(connector.commit_typed(action, attemptFor(action).attempt.context));
    expect(sim.ledger()).toHaveLength(1);
  });

  it('error_after_commit: uncertain, with the operation found and checkpointed', async () => {
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 502 } }]);
    const action = charge('commit');
    const rec = attemptFor(action);
    const failure = await failureOf(connector.commit_typed(action, rec.attempt.context));
    expect(failure).toMatchObject({ code: 'payments.provider_unavailable', remote_status: 502, uncertain_outcome: true, retryable: false });
    const entry = sim.ledger()[0];
    expect(failure.provider_operation?.operation_id).toBe(entry?.operation_id);
    expect(rec.checkpoints.map((c) => c.provider_operation.operation_id)).toEqual([entry?.operation_id]);
    expect(failure.redacted_details).toMatchObject({ probe: 'found', provider_status: 'succeeded' });
    expect(rec.events).not.toContain('effect');
    // The protocol error keeps the evidence and never turns the uncertain failure retryable.
    const wire = toProtocolError(failure, { capabilityRetryable: true });
    expect(wire).toMatchObject({ uncertain_outcome: true, retryable: false, provider_operation: failure.provider_operation, remote_status: 502 });
  });

  it('drop_after_commit: uncertain, the lost operation is checkpointed and reconciles by operation lookup', async () => {
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: 'drop_after_commit' }]);
    const action = charge('commit');
    const rec = attemptFor(action);
    const failure = await failureOf(connector.commit_typed(action, rec.attempt.context));
    expect(failure).toMatchObject({ code: 'connector.provider_connection_lost', uncertain_outcome: true, retryable: false, operation: 'transaction_commit' });
    expect(failure.redacted_details).toMatchObject({ request_sent: 'maybe', probe: 'found' });
    const entry = sim.ledger()[0];
    expect(failure.provider_operation?.operation_id).toBe(entry?.operation_id);

    const reconcile: Action = {
      ...action,
      id: `${action.id}-reconcile`,
      transaction: { mode: 'reconcile', transaction_id: action.transaction?.transaction_id as string },
    };
    const r = attemptFor(reconcile, { provider_operation: failure.provider_operation as ProviderOperationRef });
    const outcome = await dispatch(connector, 'payments.charge', reconcile, r.attempt.context);
    observe(outcome);
    expect(outcome.ok).toBe(true);
    expect(outcome.ok && outcome.reconciliation).toMatchObject({ terminal: true, original_commit_completed: true });
    expect(outcome.ok && outcome.result.output).toMatchObject({ charge_id: entry?.resource_id, operation_id: entry?.operation_id, status: 'succeeded' });
  });

  it('latency after_commit beyond the request timeout: the probe in the margin finds the operation, checkpoints it, uncertain with its ref', async () => {
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: { type: 'latency', ms: 600_000, phase: 'after_commit' } }]);
    const action = charge('execute');
    const held = sim.waitForEvent((e) => e.type === 'fault_applied');
    const probed = sim.waitForEvent((e) => e.type === 'response' && e.method === 'GET' && e.path === '/v1/operations');
    // Default margin: min(2 s, a quarter of the remaining time) → the POST times out at ~1.5 s, the probe runs in the last ~0.5 s.
    const rec = attemptFor(action, { deadlineMs: 2_000 });
    const call = failureOf(connector.invoke_typed(action, rec.attempt.context));
    await held;
    const failure = await call;
    await probed;
    const entry = sim.ledger()[0];
    expect(entry?.operation_id).toMatch(/^op_/);
    expect(failure).toMatchObject({ code: 'sla.timeout_exceeded', category: 'timeout', uncertain_outcome: true, retryable: false });
    expect(failure.provider_operation).toEqual({ provider: PAYMENTS_PROVIDER, operation_id: entry?.operation_id });
    expect(failure.redacted_details).toMatchObject({ request_sent: 'maybe', probe: 'found', provider_status: 'succeeded' });
    // Checkpointed before the failure was returned; no effect published (the connector never saw the success).
    expect(rec.checkpoints.map((c) => c.provider_operation.operation_id)).toEqual([entry?.operation_id]);
    expect(rec.events).toEqual([`checkpoint:${entry?.operation_id}`]);
    expect(rec.attempt.provider_operation?.operation_id).toBe(entry?.operation_id);
    expect(connectorLogs.map((l) => l.event)).toContain('provider_operation_checkpointed');
    sim.releaseDelays();
    await sim.idle();
    expect(sim.ledger()).toHaveLength(1);

    // The checkpointed operation reconciles: the charge succeeded, once.
    const reconcile: Action = {
      ...action,
      id: `${action.id}-reconcile`,
      transaction: { mode: 'reconcile', transaction_id: action.transaction?.transaction_id as string },
    };
    const r = attemptFor(reconcile, { provider_operation: failure.provider_operation as ProviderOperationRef });
    const outcome = await dispatch(connector, 'payments.charge', reconcile, r.attempt.context);
    observe(outcome);
    expect(outcome.ok && outcome.reconciliation).toMatchObject({ terminal: true, original_commit_completed: true });
    expect(sim.ledger()).toHaveLength(1);
  });

  it('latency beyond the deadline with the probe held too: uncertain without an operation; the retry replays the committed charge', async () => {
    sim.setFaults([
      { match: { path: '/v1/charges' }, fault: { type: 'latency', ms: 600_000, phase: 'after_commit' } },
      { match: { method: 'GET', path: '/v1/operations' }, fault: { type: 'latency', ms: 600_000 } },
    ]);
    const action = charge('execute');
    const probeHeld = sim.waitForEvent((e) => e.type === 'fault_applied' && e.method === 'GET');
    const rec = attemptFor(action, { deadlineMs: 2_000 });
    const call = failureOf(connector.invoke_typed(action, rec.attempt.context));
    await probeHeld;
    const failure = await call;
    expect(failure).toMatchObject({ code: 'sla.timeout_exceeded', category: 'timeout', uncertain_outcome: true, retryable: false });
    expect(failure.provider_operation).toBeUndefined();
    expect(failure.redacted_details).toMatchObject({ request_sent: 'maybe', probe: 'failed' });
    expect(rec.checkpoints).toEqual([]);
    sim.releaseDelays();
    await sim.idle();
    expect(sim.ledger()).toHaveLength(1);
    const replay = await resultOf(connector.invoke_typed(action, attemptFor(action).attempt.context));
    expect((replay.output as { charge_id: string }).charge_id).toBe(sim.ledger()[0]?.resource_id);
    expect(sim.ledger()).toHaveLength(1);
  });

  it('latency before_commit beyond the request timeout: the key is still in use, so the failure stays uncertain without a ref', async () => {
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: { type: 'latency', ms: 600_000, phase: 'before_commit' } }]);
    const action = charge('execute');
    const probed = sim.waitForEvent((e) => e.type === 'response' && e.method === 'GET' && e.path === '/v1/operations');
    const rec = attemptFor(action, { deadlineMs: 2_000 });
    const failure = await failureOf(connector.invoke_typed(action, rec.attempt.context));
    expect(await probed).toMatchObject({ status: 409 });
    expect(failure).toMatchObject({ code: 'sla.timeout_exceeded', uncertain_outcome: true, retryable: false });
    expect(failure.provider_operation).toBeUndefined();
    // The probe has what is left of the deadline (a quarter of it here, 500 ms). The simulator answers 409 (the key is in use), but
    // on a busy machine that answer can come after the margin: the probe then failed. Both are correct outcomes of that race,
    // and in both the failure stays uncertain, with no reference and no retry offered.
    const details = failure.redacted_details as { request_sent?: unknown; probe?: unknown; probe_status?: unknown };
    expect(details.request_sent).toBe('maybe');
    if (details.probe === 'inconclusive') expect(details.probe_status).toBe(409);
    else expect(details.probe).toBe('failed');
    expect(rec.checkpoints).toEqual([]);
    // The held request commits after the attempt gave up: exactly why the failure had to stay uncertain.
    sim.releaseDelays();
    await sim.idle();
    expect(sim.ledger()).toHaveLength(1);
  });

  it('after a timeout, an "absent" probe answer is not proof: the provider may commit the delayed request afterwards', async () => {
    // A probe whose lookup answers 404 while the delayed request is still held (unlike the simulator's key lookup, which says 409).
    const config = paymentsConnectorConfig({ baseUrl: sim.url, pollIntervalMs: 20 }) as unknown as {
      capabilities: { id: string; operations: Record<string, unknown> }[];
    };
    const chargeCap = config.capabilities.find((c) => c.id === 'payments.charge');
    const invoke = chargeCap?.operations.invoke as { probe: { request: Record<string, unknown> } };
    invoke.probe = { ...invoke.probe, request: { method: 'GET', path: '/v1/operations/{$idempotency_key}' } };
    const blind = createHttpConnector(config, { credentials: credentials(), logger: (l) => connectorLogs.push(l) });
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: { type: 'latency', ms: 600_000, phase: 'before_commit' } }]);
    const action = charge('execute');
    const probed = sim.waitForEvent((e) => e.type === 'response' && e.method === 'GET' && e.path.startsWith('/v1/operations/'));
    const rec = attemptFor(action, { deadlineMs: 2_000 });
    const failure = await failureOf(blind.invoke_typed(action, rec.attempt.context));
    expect(await probed).toMatchObject({ status: 404 });
    expect(failure).toMatchObject({ code: 'sla.timeout_exceeded', uncertain_outcome: true, retryable: false });
    expect(failure.provider_operation).toBeUndefined();
    expect(failure.redacted_details).toMatchObject({ request_sent: 'maybe', probe: 'absent_unproven' });
    sim.releaseDelays();
    await sim.idle();
    // The "absent" answer came before the commit: had the connector believed it, a retry would have been offered for a charge that exists.
    expect(sim.ledger()).toHaveLength(1);
  });

  it('a request held past the deadline (runAttempt) ends sla.timeout_exceeded, uncertain and never retryable, whichever timer fires first', async () => {
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: { type: 'latency', ms: 600_000, phase: 'before_commit' } }]);
    const action = charge('execute');
    // probe_margin_ms 0: the request may use the whole deadline, so the runtime's deadline is what ends the attempt.
    const noMargin = createHttpConnector(
      { ...paymentsConnectorConfig({ baseUrl: sim.url, pollIntervalMs: 20 }), probe_margin_ms: 0 },
      { credentials: credentials() },
    );
    const capability = (await noMargin.discover({})).capabilities.find((c) => c.id === 'payments.charge');
    const outcome = await runAttempt({
      connector: noMargin,
      capability: capability!,
      support: noMargin.implementation_support('payments.charge')!,
      action,
      trusted: {
        attempt_id: 'att-runtime',
        actor: {
          principal: { id: 'user-1', kind: 'user' },
          issuer: 'i',
          scheme: 'bearer_jwt',
          scopes: [],
          lifetime: { issued_at: new Date(Date.now() - 1000), expires_at: new Date(Date.now() + 3_600_000) },
        },
        tenant: { tenant_id: TENANT },
        credential: credentialHandle('payments/api_key'),
        idempotency: { key: action.idempotency_key as string, reservation_id: 'r', attempt_id: 'att-runtime' },
        transaction: { transaction_id: action.transaction?.transaction_id as string, mode: 'execute' },
        trace: { trace_id: 't', span_id: 's' },
        redaction: { redaction_required: false, input_pointers: [], output_pointers: [] },
        action_deadline: new Date(Date.now() + 1_000),
      },
      facilities: { transaction_checkpoints: { checkpoint: async () => undefined } },
    });
    observe(outcome);
    expect(outcome.ok).toBe(false);
    // With no probe margin, the connector's transport timeout and the runtime's deadline are due at the same instant:
    // either may report it (timed_out says which), and both must give the same answer.
    expect(!outcome.ok && outcome.error).toMatchObject({ code: 'sla.timeout_exceeded', uncertain_outcome: true, retryable: false });
  });

  it('a decline is permanent, certain, and keeps the declined operation as evidence', async () => {
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: { type: 'decline', code: 'insufficient_funds' } }]);
    const action = charge('commit');
    const rec = attemptFor(action);
    const failure = await failureOf(connector.commit_typed(action, rec.attempt.context));
    expect(failure).toMatchObject({ code: 'payments.card_declined', category: 'permanent', retryable: false, uncertain_outcome: false, remote_status: 402 });
    expect(failure.redacted_details).toMatchObject({ decline_code: 'insufficient_funds', provider_error_type: 'card_declined' });
    expect(sim.operation(failure.provider_operation?.operation_id as string)?.status).toBe('failed');
    expect(rec.events).toEqual([`checkpoint:${failure.provider_operation?.operation_id}`]);
  });

  it('a refused connection (nothing sent) is certain and retryable', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', () => resolve()));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const offline = createPaymentsConnector({ baseUrl: `http://127.0.0.1:${port}`, credentials: credentials() });
    const action = charge('commit');
    const failure = await failureOf(offline.commit_typed(action, attemptFor(action).attempt.context));
    expect(failure).toMatchObject({ code: 'connector.provider_unreachable', uncertain_outcome: false, retryable: true });
    expect(failure.redacted_details).toMatchObject({ request_sent: 'no' });
  });

  it('a cancelled attempt sends nothing', async () => {
    const action = charge('commit');
    const ac = new AbortController();
    ac.abort();
    const failure = await failureOf(connector.commit_typed(action, attemptFor(action, { signal: ac.signal }).attempt.context));
    expect(failure).toMatchObject({ code: 'connector.attempt_cancelled', uncertain_outcome: false });
    await sim.idle();
    expect(simLogs).toHaveLength(0);
  });

  it('a rejected credential is a typed failure that never echoes the key', async () => {
    const wrong = createPaymentsConnector({ baseUrl: sim.url, credentials: credentials('sk_test_wrong_key_Zt71') });
    const action = charge('commit');
    const failure = await failureOf(wrong.commit_typed(action, attemptFor(action).attempt.context));
    expect(failure).toMatchObject({ code: 'payments.authentication_failed', remote_status: 401, uncertain_outcome: false });
    expect(JSON.stringify(failure)).not.toContain('sk_test_wrong_key_Zt71');
    expect(inspect(failure)).not.toContain('sk_test_wrong_key_Zt71');
  });

  it('a credential handle other than the configured one is refused before sending', async () => {
    const action = charge('commit');
    const other = createExecutionContext(trustedFor(action, 'payments/other_key'), { transaction_checkpoints: { checkpoint: async () => undefined } });
    const failure = await failureOf(connector.commit_typed(action, other.context));
    expect(failure).toMatchObject({ code: 'connector.credentials_unavailable' });
    expect(failure.redacted_details).toMatchObject({ reason: 'credential_handle_mismatch' });
    await sim.idle();
    expect(simLogs).toHaveLength(0);
  });
});

function trustedFor(action: Action, handle: string): TrustedAttemptState {
  return {
    action_id: action.id,
    attempt_id: 'att-other',
    capability_id: action.capability_id,
    actor: {
      principal: { id: 'user-1', kind: 'user' },
      issuer: 'i',
      scheme: 'bearer_jwt',
      scopes: [],
      lifetime: { issued_at: new Date(Date.now() - 1000), expires_at: new Date(Date.now() + 3_600_000) },
    },
    tenant: { tenant_id: TENANT },
    credential: credentialHandle(handle),
    deadline_at: new Date(Date.now() + 10_000),
    transaction: { transaction_id: action.transaction?.transaction_id ?? 'tx', mode: action.transaction?.mode ?? 'commit' },
    trace: { trace_id: 't', span_id: 's' },
    redaction: { redaction_required: false, input_pointers: [], output_pointers: [] },
    streaming: false,
  };
}

// ---------------------------------------------------------------------------
// Reconcile, cancel, compensate, plan
// ---------------------------------------------------------------------------

describe('reconcile', () => {
  it('reports a pending operation as non-terminal (reconciliation_pending) and a settled one as terminal', async () => {
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: 'pending' }]);
    const action = charge('commit');
    const ac = new AbortController();
    const cut = attemptFor(action, { signal: ac.signal });
    const firstPoll = sim.waitForEvent((e) => e.type === 'response' && e.method === 'GET');
    const call = failureOf(connector.commit_typed(action, cut.attempt.context));
    await firstPoll;
    ac.abort();
    const lost = await call;
    expect(lost).toMatchObject({ code: 'connector.attempt_cancelled', uncertain_outcome: true });
    const ref = lost.provider_operation as ProviderOperationRef;

    const reconcile: Action = {
      ...action,
      id: `${action.id}-r1`,
      transaction: { mode: 'reconcile', transaction_id: action.transaction?.transaction_id as string },
    };
    const pending = await dispatch(connector, 'payments.charge', reconcile, attemptFor(reconcile, { provider_operation: ref }).attempt.context);
    observe(pending);
    expect(pending.ok).toBe(false);
    expect(!pending.ok && pending.error).toMatchObject({
      code: 'transaction.reconciliation_pending',
      category: 'temporary',
      retryable: true,
      retry_after_ms: 5000,
    });
    expect(pending.reconciliation).toMatchObject({ terminal: false, evidence: { provider_status: 'pending' } });
    expect(pending.reconciliation?.cursor).toEqual(expect.any(String));

    sim.resolveOperation(ref.operation_id, 'failed', 'expired_card');
    const settled = await resultOf(connector.reconcile_typed(reconcile, attemptFor(reconcile, { provider_operation: ref }).attempt.context));
    expect(settled).toMatchObject({ terminal: true, original_commit_completed: false, evidence: { provider_status: 'failed' } });
  });
});

describe('reconcile by idempotency key (no provider operation ID)', () => {
  /** The identity of `original` as the runtime records it for a later reconcile (same tenant and reservation identity). */
  function originalOf(original: Action, opts: { tenant?: string; principal?: Principal } = {}): OriginalRequestIdentity {
    return {
      action_id: original.id,
      capability_id: original.capability_id,
      transaction_id: original.transaction?.transaction_id as string,
      reservation_id: reservationOf(original, opts),
    };
  }

  /** A reconcile action of its own: another ID and NO idempotency key, so only original_request leads to the original key. */
  function reconcileOf(original: Action, n = 1): Action {
    return {
      id: `${original.id}-reconcile-${n}`,
      capability_id: original.capability_id,
      input: original.input,
      transaction: { mode: 'reconcile', transaction_id: original.transaction?.transaction_id as string },
    };
  }

  it('a lost response whose probe failed too: the reconcile finds the charge by the original key and reports it terminal', async () => {
    sim.setFaults([
      { match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 } },
      { match: { method: 'GET', path: '/v1/operations' }, fault: { type: 'error_before_commit', status: 503 } },
    ]);
    const action = charge('commit');
    const rec = attemptFor(action);
    const failure = await failureOf(connector.commit_typed(action, rec.attempt.context));
    expect(failure).toMatchObject({ code: 'payments.provider_unavailable', remote_status: 504, uncertain_outcome: true, retryable: false });
    // No operation ID anywhere: the runtime would have had to escalate.
    expect(failure.provider_operation).toBeUndefined();
    expect(failure.redacted_details).toMatchObject({ probe: 'inconclusive', probe_status: 503 });
    expect(rec.checkpoints).toEqual([]);
    const entry = sim.ledger()[0];
    expect(sim.ledger()).toHaveLength(1);

    const reconcile = reconcileOf(action);
    const r = attemptFor(reconcile, { original_request: originalOf(action) });
    expect(r.attempt.context.transaction?.provider_operation_id).toBeUndefined();
    // The key the lookup sends is the one the lost charge sent.
    expect(originalIdempotencyKey(r.attempt.context, 'payments')).toBe(entry?.idempotency_key);
    const outcome = await dispatch(connector, 'payments.charge', reconcile, r.attempt.context);
    observe(outcome);
    expect(outcome.ok).toBe(true);
    const found: ProviderOperationRef = { provider: PAYMENTS_PROVIDER, operation_id: entry?.operation_id as string };
    expect(outcome.reconciliation).toMatchObject({
      terminal: true,
      original_commit_completed: true,
      provider_operation: found,
      evidence: { lookup: 'idempotency_key', operation_found: true, provider_status: 'succeeded', remote_status: 200 },
    });
    expect(outcome.ok && outcome.result.output).toMatchObject({ charge_id: entry?.resource_id, operation_id: entry?.operation_id, status: 'succeeded' });
    // Returned, not checkpointed by the connector (the runtime checkpoints it); nothing was charged again.
    expect(r.checkpoints).toEqual([]);
    expect(sim.ledger()).toHaveLength(1);

    // With the found operation checkpointed, the next reconciliation is the ordinary lookup by ID.
    const byId = reconcileOf(action, 2);
    const again = await resultOf(
      connector.reconcile_typed(byId, attemptFor(byId, { provider_operation: found, original_request: originalOf(action) }).attempt.context),
    );
    expect(again).toMatchObject({ terminal: true, original_commit_completed: true, evidence: { provider_status: 'succeeded' } });
    expect(again.provider_operation).toBeUndefined();
  });

  it('the key is the ORIGINAL identity: another reservation (another principal) finds nothing', async () => {
    sim.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 } }]);
    const action = charge('commit');
    await failureOf(connector.commit_typed(action, attemptFor(action).attempt.context));
    expect(sim.ledger()).toHaveLength(1);
    const reconcile = reconcileOf(action);
    const other = originalOf(action, { principal: { id: 'user-2', kind: 'user' } });
    const result = await resultOf(connector.reconcile_typed(reconcile, attemptFor(reconcile, { original_request: other }).attempt.context));
    expect(result).toMatchObject({ terminal: false, evidence: { lookup: 'idempotency_key', operation_found: false, remote_status: 404 } });
    expect(result.provider_operation).toBeUndefined();
  });

  it('a charge that never reached the provider: nothing is found, which is not proof, so the result is non-terminal', async () => {
    sim.setFaults([
      { match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_before_commit', status: 503 } },
      { match: { method: 'GET', path: '/v1/operations' }, fault: { type: 'error_before_commit', status: 503 } },
    ]);
    const action = charge('commit');
    const failure = await failureOf(connector.commit_typed(action, attemptFor(action).attempt.context));
    // The probe failed, so the connector cannot tell the 503 was before the commit.
    expect(failure).toMatchObject({ code: 'payments.provider_unavailable', uncertain_outcome: true });
    expect(failure.provider_operation).toBeUndefined();
    expect(sim.ledger()).toHaveLength(0);

    const reconcile = reconcileOf(action);
    const outcome = await dispatch(connector, 'payments.charge', reconcile, attemptFor(reconcile, { original_request: originalOf(action) }).attempt.context);
    observe(outcome);
    expect(outcome.ok).toBe(false);
    expect(!outcome.ok && outcome.error).toMatchObject({
      code: 'transaction.reconciliation_pending',
      category: 'temporary',
      retryable: true,
      retry_after_ms: 5000,
    });
    expect(!outcome.ok && outcome.error.provider_operation).toBeUndefined();
    expect(outcome.reconciliation).toEqual({
      terminal: false,
      evidence: { lookup: 'idempotency_key', remote_status: 404, provider_request_id: expect.stringMatching(/^req_/), operation_found: false },
    });
    expect(sim.ledger()).toHaveLength(0);
  });

  it('while the provider still holds the original request the result is non-terminal; once it commits, terminal', async () => {
    sim.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'latency', ms: 600_000, phase: 'before_commit' } }]);
    const action = charge('execute');
    const ac = new AbortController();
    const held = sim.waitForEvent((e) => e.type === 'fault_applied');
    const call = failureOf(connector.invoke_typed(action, attemptFor(action, { signal: ac.signal }).attempt.context));
    await held;
    ac.abort();
    const lost = await call;
    expect(lost).toMatchObject({ code: 'connector.attempt_cancelled', uncertain_outcome: true });
    expect(lost.provider_operation).toBeUndefined();

    const reconcile = reconcileOf(action);
    const inProgress = await dispatch(connector, 'payments.charge', reconcile, attemptFor(reconcile, { original_request: originalOf(action) }).attempt.context);
    observe(inProgress);
    expect(inProgress.reconciliation).toMatchObject({
      terminal: false,
      evidence: { lookup: 'idempotency_key', remote_status: 409, operation_found: false, original_request_in_progress: true },
    });

    // The held request commits after the attempt gave up: exactly why "not found yet" could not be terminal.
    sim.releaseDelays();
    await sim.idle();
    expect(sim.ledger()).toHaveLength(1);
    const later = reconcileOf(action, 2);
    const settled = await dispatch(connector, 'payments.charge', later, attemptFor(later, { original_request: originalOf(action) }).attempt.context);
    observe(settled);
    expect(settled.reconciliation).toMatchObject({
      terminal: true,
      original_commit_completed: true,
      provider_operation: { provider: PAYMENTS_PROVIDER, operation_id: sim.ledger()[0]?.operation_id },
    });
  });

  it('a failing lookup is a typed, certain failure (no effect can come from a lookup)', async () => {
    sim.setFaults([{ match: { method: 'GET', path: '/v1/operations' }, fault: { type: 'error_before_commit', status: 503 } }]);
    const action = charge('commit');
    const reconcile = reconcileOf(action);
    const failure = await failureOf(connector.reconcile_typed(reconcile, attemptFor(reconcile, { original_request: originalOf(action) }).attempt.context));
    expect(failure).toMatchObject({
      code: 'payments.provider_unavailable',
      remote_status: 503,
      uncertain_outcome: false,
      retryable: true,
      operation: 'reconciliation',
    });
    expect(failure.redacted_details).toMatchObject({ http_method: 'GET', route: '/v1/operations' });
  });

  it('refund: payments.refund declares and uses the same lookup', async () => {
    const original = charge('execute');
    const paid = await resultOf(connector.invoke_typed(original, attemptFor(original).attempt.context));
    const chargeId = (paid.output as { charge_id: string }).charge_id;
    sim.setFaults([
      { match: { method: 'POST', path: '/v1/refunds' }, fault: 'drop_after_commit' },
      { match: { method: 'GET', path: '/v1/operations' }, fault: { type: 'error_before_commit', status: 503 } },
    ]);
    actionCounter += 1;
    const refund: Action = {
      id: `act-${actionCounter}`,
      capability_id: 'payments.refund',
      input: { charge_id: chargeId, amount: 250 },
      idempotency_key: `refund-${actionCounter}`,
      transaction: { mode: 'execute', transaction_id: `tx-${actionCounter}` },
    };
    const lost = await failureOf(connector.invoke_typed(refund, attemptFor(refund).attempt.context));
    expect(lost).toMatchObject({ uncertain_outcome: true });
    expect(lost.provider_operation).toBeUndefined();
    expect(connector.reconcile_lookup('payments.refund')).toEqual(['provider_operation', 'idempotency_key']);
    const reconcile = reconcileOf(refund);
    const outcome = await dispatch(connector, 'payments.refund', reconcile, attemptFor(reconcile, { original_request: originalOf(refund) }).attempt.context);
    observe(outcome);
    const entry = sim.ledger().find((e) => e.kind === 'refund');
    expect(outcome.reconciliation).toMatchObject({
      terminal: true,
      original_commit_completed: true,
      provider_operation: { operation_id: entry?.operation_id },
    });
    expect(outcome.ok && outcome.result.output).toMatchObject({ refund_id: entry?.resource_id, charge_id: chargeId, amount: 250 });
  });
});

describe('cancel', () => {
  it('cancels the retained pending operation (idempotently) and reports a final one as not accepted', async () => {
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: 'pending' }]);
    const action = charge(undefined);
    const ac = new AbortController();
    const rec = attemptFor(action, { signal: ac.signal });
    const firstPoll = sim.waitForEvent((e) => e.type === 'response' && e.method === 'GET');
    const call = failureOf(connector.invoke_typed(action, rec.attempt.context));
    await firstPoll;
    ac.abort();
    const lost = await call;
    expect(lost.uncertain_outcome).toBe(true);
    const op = lost.provider_operation?.operation_id as string;

    // The runtime calls cancel_typed with the same (already cancelled) context.
    const cancelled = await resultOf(connector.cancel_typed(action, rec.attempt.context));
    expect(cancelled).toMatchObject({ accepted: true, provider_operation: { operation_id: op }, redacted_details: { provider_status: 'canceled' } });
    expect(sim.operation(op)?.status).toBe('canceled');
    // A retry of the same cancellation is the same request: the provider replays its answer.
    const again = await resultOf(connector.cancel_typed(action, rec.attempt.context));
    expect(again.accepted).toBe(true);
    expect(sim.ledger()).toHaveLength(0);

    // An operation that already succeeded cannot be cancelled.
    const done = charge('commit');
    const doneRec = attemptFor(done);
    await resultOf(connector.commit_typed(done, doneRec.attempt.context));
    const refused = await resultOf(connector.cancel_typed(done, doneRec.attempt.context));
    expect(refused).toMatchObject({ accepted: false, redacted_details: { remote_status: 409 } });
    expect(sim.ledger()).toHaveLength(1);
  });

  it('without a known provider operation, cancellation is a typed failure', async () => {
    const action = charge(undefined);
    const failure = await failureOf(connector.cancel_typed(action, attemptFor(action).attempt.context));
    expect(failure).toMatchObject({ code: 'connector.provider_operation_unknown', operation: 'cancellation' });
  });
});

describe('compensation', () => {
  it('refunds a charge through the compensation capability (payments.refund) and directly on payments.charge', async () => {
    const original = charge('commit');
    const result = await resultOf(connector.commit_typed(original, attemptFor(original).attempt.context));
    const charge_id = (result.output as { charge_id: string }).charge_id;

    // The runtime rewrites the compensating action to the compensation capability.
    const routed: Action = {
      id: 'comp-1',
      capability_id: 'payments.refund',
      input: { charge_id, amount: 500 },
      idempotency_key: 'comp-key-1',
      transaction: { mode: 'compensate', transaction_id: 'tx-comp-1', compensation_for: original.id },
    };
    const rec = attemptFor(routed);
    const refund = await resultOf(connector.compensate_typed(routed, rec.attempt.context));
    expect(refund.output).toMatchObject({ charge_id, amount: 500, status: 'succeeded' });
    expect(rec.events).toEqual([`checkpoint:${(refund.output as { operation_id: string }).operation_id}`, 'effect']);

    // Unrouted: compensate_typed on the charge itself takes the refund input.
    const direct: Action = {
      ...routed,
      id: 'comp-2',
      capability_id: 'payments.charge',
      input: { charge_id },
      idempotency_key: 'comp-key-2',
      transaction: { mode: 'compensate', transaction_id: 'tx-comp-2', compensation_for: original.id },
    };
    const rest = await resultOf(connector.compensate_typed(direct, attemptFor(direct).attempt.context));
    expect(rest.output).toMatchObject({ charge_id, amount: 750 });
    expect(sim.ledger().map((e) => e.kind)).toEqual(['charge', 'refund', 'refund']);

    // A charge-shaped input is not a compensation input.
    const wrong: Action = { ...direct, id: 'comp-3', input: { amount: 1, currency: 'eur' } };
    const failure = await failureOf(connector.compensate_typed(wrong, attemptFor(wrong).attempt.context));
    expect(failure.code).toBe('connector.input_invalid');
  });

  it('maps refund business rejections', async () => {
    const original = charge('commit');
    const result = await resultOf(connector.commit_typed(original, attemptFor(original).attempt.context));
    const charge_id = (result.output as { charge_id: string }).charge_id;
    const tooMuch: Action = { id: 'refund-1', capability_id: 'payments.refund', input: { charge_id, amount: 999_999 }, idempotency_key: 'refund-key-1' };
    const failure = await failureOf(connector.invoke_typed(tooMuch, attemptFor(tooMuch).attempt.context));
    expect(failure).toMatchObject({
      code: 'payments.refund_exceeds_charge',
      category: 'validation',
      retryable: false,
      uncertain_outcome: false,
      redacted_details: { refundable_amount: 1250 },
    });
    const missing: Action = { id: 'refund-2', capability_id: 'payments.refund', input: { charge_id: 'ch_missing' }, idempotency_key: 'refund-key-2' };
    expect(await failureOf(connector.invoke_typed(missing, attemptFor(missing).attempt.context))).toMatchObject({
      code: 'payments.resource_missing',
      category: 'not_found',
    });
  });
});

describe('plan', () => {
  it('previews the request without credentials or network', async () => {
    const action = charge(undefined, { transaction: { mode: 'plan', transaction_id: 'tx-plan' } });
    const result = await resultOf(connector.plan_typed(action, attemptFor(action).attempt.context));
    expect(result.output).toEqual({
      fidelity: 'preview',
      request: {
        method: 'POST',
        route: '/v1/charges',
        path: '/v1/charges',
        query: {},
        body: { amount: 1250, currency: 'eur', customer: 'cus_1' },
        idempotency_header: 'Idempotency-Key',
      },
    });
    await sim.idle();
    expect(simLogs).toHaveLength(0);
  });
});

describe('secrets and logs', () => {
  it('logs identifiers only and never the key, whatever the outcome', async () => {
    const ok = charge('commit');
    await resultOf(connector.commit_typed(ok, attemptFor(ok).attempt.context));
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: 'drop_after_commit' }]);
    const lost = charge('commit');
    await failureOf(connector.commit_typed(lost, attemptFor(lost).attempt.context));
    const events = new Set(connectorLogs.map((l) => l.event));
    expect(events).toEqual(new Set(['provider_request', 'provider_operation_checkpointed', 'provider_effect_committed']));
    for (const line of connectorLogs) {
      expect(
        Object.keys(line).every((k) =>
          [
            'level',
            'event',
            'connector_id',
            'capability_id',
            'action_id',
            'operation',
            'method',
            'route',
            'outcome',
            'provider_request_id',
            'provider_operation_id',
          ].includes(k),
        ),
      ).toBe(true);
    }
    expect(JSON.stringify(connectorLogs)).not.toContain(API_KEY);
    expect(JSON.stringify(connectorLogs)).not.toContain('cus_1');
  });
});
