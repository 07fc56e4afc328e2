/**
 * Reconciliation by idempotency key, on the connector side.
 *
 * - the context carries (and freezes) transaction.original_request;
 * - originalIdempotencyKey recomputes exactly the key the original request sent;
 * - defineConnector declares the `idempotency_key` reconcile lookup;
 * - dispatch runs reconcile_typed without an operation ID only with
 *   original_request AND that declaration, and carries the found operation;
 * - ReconciliationResult (and its schema) carries provider_operation;
 * - the HTTP connector's configuration declares and validates the lookup.
 */
import fc from 'fast-check';
import * as z from 'zod';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  DEFAULT_RECONCILE_LOOKUP,
  FrozenConnectorBase,
  ReconciliationResultSchema,
  defineCapability,
  defineConnector,
  implementationSupport,
  originalIdempotencyKey as originalKeyFromSdk,
  reconcileLookupOf,
  type ActionExecutionContext,
  type CapabilityContract,
  type ConnectorManifest,
  type FrozenConnector,
  type ReconcileLookup,
  type ReconciliationResult,
  type TransactionCheckpointWriter,
  type TrustedAttemptState,
} from '../../../packages/connector-sdk/src/index.js';
import { dispatch } from '../../../lib/runtime/attempts/dispatch.js';
import { EnvCredentialProvider } from '../../../packages/connector-sdk/src/index.js';
import { createHttpConnector, downstreamIdempotencyKey, originalIdempotencyKey, type HttpConnectorDeps } from '../../../lib/connectors/http/index.js';
import { paymentsConnectorConfig } from '../../../lib/connectors/reference/payments.js';
import { reservationIdentity } from '../../../lib/ports/idempotency-store.js';
import {
  PRINCIPAL_KINDS,
  type Action,
  type ActionResult,
  type PrincipalKind,
  type ProviderOperationRef,
} from '../../../packages/connector-sdk/src/protocol/index.js';
import { action as makeAction, attempt } from './fixtures.js';

const writer: TransactionCheckpointWriter = { checkpoint: async () => undefined };

/** The payments configuration, optionally without the lookup by key or with a lookup that reads another context value. */
function paymentsConnectorConfigForTest(opts: { byKey?: boolean; keyContext?: string } = {}): unknown {
  const config = JSON.parse(JSON.stringify(paymentsConnectorConfig({ baseUrl: 'http://127.0.0.1:9' }))) as {
    capabilities: { operations: { reconcile: { by_idempotency_key?: { request: { query: Record<string, unknown> } } } } }[];
  };
  for (const cap of config.capabilities) {
    const lookup = cap.operations.reconcile;
    if (opts.byKey === false) delete lookup.by_idempotency_key;
    else if (opts.keyContext !== undefined && lookup.by_idempotency_key)
      lookup.by_idempotency_key.request.query = { idempotency_key: { context: opts.keyContext } };
  }
  return config;
}

function httpDeps(extra: Partial<HttpConnectorDeps> = {}): HttpConnectorDeps {
  return { credentials: new EnvCredentialProvider({ connector_id: 'payments', references: [], env: {} }), ...extra };
}
const OP: ProviderOperationRef = { provider: 'sim', operation_id: 'op-by-key' };

function reconcileAction(id = 'act-r', capability_id = 'payments.charge'): Action {
  return makeAction({ id, capability_id, transaction: { mode: 'reconcile', transaction_id: 'tx-1' } });
}

/** A reconcile attempt's context (no idempotency reservation of its own unless given). */
function reconcileCtx(extra: Record<string, unknown> = {}, overrides: Partial<TrustedAttemptState> = {}): ActionExecutionContext {
  return attempt(
    { action_id: 'act-r', idempotency: undefined, transaction: { transaction_id: 'tx-1', mode: 'reconcile', ...extra }, ...overrides },
    { transaction_checkpoints: writer },
  ).context;
}

const ORIGINAL = { action_id: 'act-orig', capability_id: 'payments.charge', transaction_id: 'tx-1', reservation_id: 'idr-0123' } as const;

// ---------------------------------------------------------------------------
// Context
// ---------------------------------------------------------------------------

describe('transaction.original_request in the execution context', () => {
  it('is carried, frozen and detached from the state it was built from', () => {
    const original = { ...ORIGINAL };
    const ctx = reconcileCtx({ original_request: original });
    expect(ctx.transaction?.original_request).toEqual(ORIGINAL);
    expect(Object.isFrozen(ctx.transaction?.original_request)).toBe(true);
    original.action_id = 'tampered' as never;
    expect(ctx.transaction?.original_request?.action_id).toBe('act-orig');
    // Without a reservation the field is absent, not undefined-valued.
    const { reservation_id: _r, ...noReservation } = ORIGINAL;
    const plain = reconcileCtx({ original_request: noReservation });
    expect(Object.keys(plain.transaction?.original_request ?? {})).toEqual(['action_id', 'capability_id', 'transaction_id']);
  });

  it('refuses an original_request with empty identity fields', () => {
    expect(() => reconcileCtx({ original_request: { ...ORIGINAL, action_id: '' } })).toThrow(/invalid trusted attempt state/);
    expect(() => reconcileCtx({ original_request: { ...ORIGINAL, reservation_id: '' } })).toThrow(/invalid trusted attempt state/);
  });
});

// ---------------------------------------------------------------------------
// The key helper
// ---------------------------------------------------------------------------

describe('originalIdempotencyKey', () => {
  it('is exported from the SDK barrel and the HTTP barrel (one function)', () => {
    expect(originalKeyFromSdk).toBe(originalIdempotencyKey);
  });

  it('is undefined without original_request', () => {
    expect(originalIdempotencyKey(reconcileCtx(), 'payments')).toBeUndefined();
    expect(originalIdempotencyKey(attempt().context, 'payments')).toBeUndefined();
  });

  const id = fc.stringMatching(/^[a-z0-9-]{1,8}$/);
  const originalCase = fc.record({
    tenant: fc.option(id, { nil: undefined }),
    principal_kind: fc.constantFrom<PrincipalKind>(...PRINCIPAL_KINDS),
    principal_id: id,
    raw_key: fc.option(fc.stringMatching(/^[\x21-\x7e]{1,12}$/), { nil: undefined }),
    action_id: id,
    capability_id: fc.constantFrom('payments.charge', 'payments.refund'),
    transaction_id: id,
    mode: fc.constantFrom('execute' as const, 'commit' as const, 'compensate' as const),
    namespace: fc.constantFrom('payments', 'payments-eu'),
    purpose: fc.constantFrom('effect' as const, 'cancel' as const),
    reconcile_action_id: id,
    reconcile_raw_key: fc.option(fc.stringMatching(/^[\x21-\x7e]{1,12}$/), { nil: undefined }),
  });

  it('recomputes exactly the key the original request sent, whatever the reconcile action is (property)', () => {
    fc.assert(
      fc.property(originalCase, (c) => {
        const tenant = c.tenant !== undefined ? { tenant: { tenant_id: c.tenant } } : { tenant: undefined };
        const reservationOf = (key: string | undefined) =>
          key === undefined || c.tenant === undefined
            ? undefined
            : reservationIdentity({ tenant_id: c.tenant, principal_kind: c.principal_kind, principal_id: c.principal_id, key });
        // The original attempt, as the runtime builds it.
        const original: Action = makeAction({
          id: `orig-${c.action_id}`,
          capability_id: c.capability_id,
          ...(c.raw_key !== undefined ? { idempotency_key: c.raw_key } : {}),
          transaction: { mode: c.mode, transaction_id: `tx-${c.transaction_id}` },
        });
        const origReservation = reservationOf(c.raw_key);
        const origCtx = attempt(
          {
            action_id: original.id,
            capability_id: original.capability_id,
            ...tenant,
            idempotency: origReservation !== undefined ? { key: c.raw_key as string, reservation_id: origReservation, attempt_id: 'att-1' } : undefined,
            transaction: { transaction_id: `tx-${c.transaction_id}`, mode: c.mode },
          },
          { transaction_checkpoints: writer },
        ).context;
        const sent = downstreamIdempotencyKey(original, origCtx, c.namespace, c.purpose);

        // A later reconcile attempt: another action, maybe its own reservation, the original's identity in original_request.
        const recReservation = reservationOf(c.reconcile_raw_key);
        const recCtx = attempt(
          {
            action_id: `rec-${c.reconcile_action_id}`,
            capability_id: original.capability_id,
            ...tenant,
            idempotency: recReservation !== undefined ? { key: c.reconcile_raw_key as string, reservation_id: recReservation, attempt_id: 'att-9' } : undefined,
            transaction: {
              transaction_id: `tx-${c.transaction_id}`,
              mode: 'reconcile',
              original_request: {
                action_id: original.id,
                capability_id: original.capability_id,
                transaction_id: `tx-${c.transaction_id}`,
                ...(origReservation !== undefined ? { reservation_id: origReservation } : {}),
              },
            },
          },
          { transaction_checkpoints: writer },
        ).context;
        expect(originalIdempotencyKey(recCtx, c.namespace, c.purpose)).toBe(sent);
        expect(sent).toMatch(/^aip1-[A-Za-z0-9_-]{43}$/);
      }),
    );
  });

  it('differs from the reconcile action’s own key, and depends on the trusted tenant without a reservation', () => {
    const { reservation_id: _r, ...noReservation } = ORIGINAL;
    const ctxA = reconcileCtx({ original_request: noReservation }, { tenant: { tenant_id: 'tenant-a' } });
    const ctxB = reconcileCtx({ original_request: noReservation }, { tenant: { tenant_id: 'tenant-b' } });
    const a = originalIdempotencyKey(ctxA, 'payments');
    expect(a).not.toBe(originalIdempotencyKey(ctxB, 'payments'));
    expect(a).not.toBe(downstreamIdempotencyKey(reconcileAction(), ctxA, 'payments'));
  });
});

// ---------------------------------------------------------------------------
// Result schema
// ---------------------------------------------------------------------------

describe('ReconciliationResult.provider_operation', () => {
  it('is optional on both branches and must be a ProviderOperationRef', () => {
    expect(ReconciliationResultSchema.safeParse({ terminal: true, original_commit_completed: true, provider_operation: OP }).success).toBe(true);
    expect(
      ReconciliationResultSchema.safeParse({ terminal: false, evidence: { operation_found: false }, provider_operation: { ...OP, request_id: 'req_1' } })
        .success,
    ).toBe(true);
    expect(ReconciliationResultSchema.safeParse({ terminal: true, original_commit_completed: false }).success).toBe(true);
    expect(ReconciliationResultSchema.safeParse({ terminal: false, provider_operation: { provider: 'sim' } }).success).toBe(false);
    expect(ReconciliationResultSchema.safeParse({ terminal: true, original_commit_completed: true, provider_operation: { ...OP, extra: 1 } }).success).toBe(
      false,
    );
    expect(ReconciliationResultSchema.safeParse({ terminal: false, provider_operation: { provider: '', operation_id: 'x' } }).success).toBe(false);
  });
});

// ---------------------------------------------------------------------------
// defineConnector
// ---------------------------------------------------------------------------

const Input = z.strictObject({ amount: z.int().positive(), currency: z.string() });
const Output = z.strictObject({ charge_id: z.string(), state: z.enum(['settled', 'pending']) });
const contract: CapabilityContract = {
  execution: { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 1_000 },
  transaction: { modes: ['execute', 'reconcile'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: false },
};

function chargeCapability(reconcile: 'plain' | 'by_key' | 'none', seen: { keys: (string | undefined)[]; ids: (string | undefined)[] } = { keys: [], ids: [] }) {
  const builder = defineCapability({
    id: 'payments.charge',
    input: Input,
    output: Output,
    contract: reconcile === 'none' ? { execution: contract.execution } : contract,
  });
  const invoke = () => ({ charge_id: 'ch_1', state: 'settled' as const });
  if (reconcile === 'none') return builder.implement({ invoke });
  if (reconcile === 'plain') {
    return builder.implement({
      invoke,
      reconcile: (_input, ctx) => {
        seen.ids.push(ctx.transaction?.provider_operation_id);
        return { terminal: true, original_commit_completed: true, output: { charge_id: 'ch_1', state: 'settled' } };
      },
    });
  }
  return builder.implement({
    invoke,
    reconcile: {
      lookup: ['provider_operation', 'idempotency_key'],
      handler: (_input, ctx) => {
        seen.ids.push(ctx.transaction?.provider_operation_id);
        seen.keys.push(originalIdempotencyKey(ctx, 'bank'));
        if (ctx.transaction?.provider_operation_id !== undefined)
          return { terminal: true, original_commit_completed: true, output: { charge_id: 'ch_1', state: 'settled' } };
        return {
          terminal: true,
          original_commit_completed: true,
          output: { charge_id: 'ch_1', state: 'pending' },
          provider_operation: OP,
          evidence: { lookup: 'idempotency_key' },
        };
      },
    },
  });
}

describe('defineConnector: the reconcile lookup declaration', () => {
  it('declares what the handler says: plain → provider_operation, object form → its lookup, none → []', () => {
    const plain = defineConnector({ id: 'bank', version: '1.0.0', capabilities: [chargeCapability('plain')] });
    const byKey = defineConnector({ id: 'bank', version: '1.0.0', capabilities: [chargeCapability('by_key')] });
    const none = defineConnector({ id: 'bank', version: '1.0.0', capabilities: [chargeCapability('none')] });
    expect(plain.reconcile_lookup('payments.charge')).toEqual(['provider_operation']);
    expect(byKey.reconcile_lookup('payments.charge')).toEqual(['provider_operation', 'idempotency_key']);
    expect(none.reconcile_lookup('payments.charge')).toEqual([]);
    expect(byKey.reconcile_lookup('payments.unknown')).toEqual([]);
    // Both forms claim reconciliation.
    expect(byKey.implementation_support('payments.charge')?.reconciliation).toBe(true);
    expect(plain.implementation_support('payments.charge')?.reconciliation).toBe(true);
  });

  it('types the object form like a plain handler (input, context, literal outputs, provider_operation)', () => {
    const builder = defineCapability({ id: 'payments.charge', input: Input, output: Output, contract });
    builder.implement({
      reconcile: {
        lookup: ['idempotency_key'],
        handler: (input, ctx) => {
          expectTypeOf(input).toEqualTypeOf<{ amount: number; currency: string }>();
          expectTypeOf(ctx).toEqualTypeOf<ActionExecutionContext>();
          return { terminal: true, original_commit_completed: true, output: { charge_id: 'c', state: 'pending' }, provider_operation: OP };
        },
      },
    });
    builder.implement({
      reconcile: {
        lookup: ['provider_operation', 'idempotency_key'],
        // @ts-expect-error 'refunded' is not in the output enum
        handler: () => ({ terminal: true, original_commit_completed: true, output: { charge_id: 'c', state: 'refunded' } }),
      },
    });
    expect(() =>
      builder.implement({
        // @ts-expect-error 'by_magic' is not a ReconcileLookup
        reconcile: { lookup: ['by_magic'], handler: () => ({ terminal: false }) },
      }),
    ).toThrow(/reconcile.lookup must list/);
  });

  it('refuses an empty or unknown lookup, or a declaration without a handler', () => {
    const builder = defineCapability({ id: 'payments.charge', input: Input, output: Output, contract });
    const invoke = () => ({ charge_id: 'c', state: 'settled' as const });
    const handler = () => ({ terminal: false as const });
    expect(() => builder.implement({ invoke, reconcile: { lookup: [], handler } })).toThrow(/reconcile.lookup must list/);
    expect(() => builder.implement({ invoke, reconcile: { lookup: ['by_magic' as ReconcileLookup], handler } })).toThrow(/reconcile.lookup must list/);
    expect(() => builder.implement({ invoke, reconcile: { lookup: ['idempotency_key'] } as never })).toThrow(/needs a handler/);
  });

  it('reconcileLookupOf: the default for connectors without reconcile_lookup, and only known values', () => {
    class Bare extends FrozenConnectorBase {
      readonly id = 'bare';
      async discover(): Promise<ConnectorManifest> {
        return { connector_id: 'bare', version: '1.0.0', capabilities: [], implementation_support: {} };
      }
      implementation_support() {
        return implementationSupport({ invocation: true });
      }
      async invoke_typed(a: Action): Promise<ActionResult> {
        return { action_id: a.id, status: 'completed' };
      }
    }
    expect(reconcileLookupOf(new Bare(), 'x')).toBe(DEFAULT_RECONCILE_LOOKUP);
    const declaring = (reconcile_lookup: () => readonly ReconcileLookup[]): FrozenConnector => Object.assign(new Bare(), { reconcile_lookup });
    expect(
      reconcileLookupOf(
        declaring(() => ['idempotency_key', 'nonsense' as ReconcileLookup]),
        'x',
      ),
    ).toEqual(['idempotency_key']);
    expect(
      reconcileLookupOf(
        declaring(() => {
          throw new Error('boom');
        }),
        'x',
      ),
    ).toEqual(['provider_operation']);
  });
});

// ---------------------------------------------------------------------------
// dispatch
// ---------------------------------------------------------------------------

describe('dispatch: reconcile without a provider operation ID', () => {
  it('no operation ID and no declaration → connector.reconcile_requires_provider_operation, handler not called', async () => {
    const seen = { keys: [] as (string | undefined)[], ids: [] as (string | undefined)[] };
    const plain = defineConnector({ id: 'bank', version: '1.0.0', capabilities: [chargeCapability('plain', seen)] });
    const outcome = await dispatch(plain, 'payments.charge', reconcileAction(), reconcileCtx({ original_request: ORIGINAL }));
    expect(outcome).toMatchObject({
      ok: false,
      operation: 'reconciliation',
      error: { code: 'connector.reconcile_requires_provider_operation', category: 'conflict', details: { idempotency_key_lookup: 'not_declared' } },
    });
    expect(seen.ids).toEqual([]);
  });

  it('no operation ID, a declaration but no original_request → connector.reconcile_requires_provider_operation', async () => {
    const seen = { keys: [] as (string | undefined)[], ids: [] as (string | undefined)[] };
    const byKey = defineConnector({ id: 'bank', version: '1.0.0', capabilities: [chargeCapability('by_key', seen)] });
    const outcome = await dispatch(byKey, 'payments.charge', reconcileAction(), reconcileCtx());
    expect(outcome).toMatchObject({
      ok: false,
      error: { code: 'connector.reconcile_requires_provider_operation', details: { idempotency_key_lookup: 'no_original_request' } },
    });
    expect(seen.keys).toEqual([]);
  });

  it('no operation ID + declaration + original_request → the handler runs, and the found operation reaches the record', async () => {
    const seen = { keys: [] as (string | undefined)[], ids: [] as (string | undefined)[] };
    const byKey = defineConnector({ id: 'bank', version: '1.0.0', capabilities: [chargeCapability('by_key', seen)] });
    const ctx = reconcileCtx({ original_request: ORIGINAL });
    const outcome = await dispatch(byKey, 'payments.charge', reconcileAction(), ctx);
    expect(seen.ids).toEqual([undefined]);
    expect(seen.keys).toEqual([originalIdempotencyKey(ctx, 'bank')]);
    expect(seen.keys[0]).toMatch(/^aip1-/);
    expect(outcome).toMatchObject({
      ok: true,
      reconciliation: { terminal: true, original_commit_completed: true, provider_operation: OP, evidence: { lookup: 'idempotency_key' } },
      result: { status: 'completed', output: { charge_id: 'ch_1', state: 'pending' }, metadata: { reconciliation: { provider_operation: OP } } },
    });
  });

  it('with an operation ID the handler runs as before (original_request or not), without a found operation', async () => {
    const seen = { keys: [] as (string | undefined)[], ids: [] as (string | undefined)[] };
    const byKey = defineConnector({ id: 'bank', version: '1.0.0', capabilities: [chargeCapability('by_key', seen)] });
    const outcome = await dispatch(byKey, 'payments.charge', reconcileAction(), reconcileCtx({ provider_operation_id: 'op-1' }));
    expect(seen.ids).toEqual(['op-1']);
    expect(outcome.ok && outcome.reconciliation).toEqual({ terminal: true, original_commit_completed: true });
  });

  class Scripted extends FrozenConnectorBase {
    readonly id = 'scripted';
    calls = 0;
    constructor(
      readonly result: ReconciliationResult,
      readonly lookup: readonly ReconcileLookup[] = ['provider_operation', 'idempotency_key'],
    ) {
      super();
    }
    async discover(): Promise<ConnectorManifest> {
      return { connector_id: 'scripted', version: '1.0.0', capabilities: [], implementation_support: {} };
    }
    implementation_support() {
      return implementationSupport({ invocation: true, transaction: true, reconciliation: true });
    }
    reconcile_lookup(): readonly ReconcileLookup[] {
      return this.lookup;
    }
    async invoke_typed(a: Action): Promise<ActionResult> {
      return { action_id: a.id, status: 'completed' };
    }
    override async reconcile_typed(): Promise<ReconciliationResult> {
      this.calls += 1;
      return this.result;
    }
  }

  it('a non-terminal result keeps the found operation in the record, on the failure and in its details', async () => {
    const c = new Scripted({ terminal: false, cursor: 'c-1', evidence: { provider_status: 'pending' }, provider_operation: OP });
    const outcome = await dispatch(c, 'payments.charge', reconcileAction(), reconcileCtx({ original_request: ORIGINAL }));
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.reconciliation).toEqual({ terminal: false, cursor: 'c-1', evidence: { provider_status: 'pending' }, provider_operation: OP });
    expect(outcome.error).toMatchObject({
      code: 'transaction.reconciliation_pending',
      retryable: true,
      retry_after_ms: 5000,
      provider_operation: OP,
      details: { reconciliation_cursor: 'c-1', provider_operation: OP },
    });
    expect(outcome.failure?.provider_operation).toEqual(OP);
  });

  it('a non-terminal result without a found operation (nothing found by key) stays pending without one', async () => {
    const c = new Scripted({ terminal: false, evidence: { lookup: 'idempotency_key', operation_found: false } });
    const outcome = await dispatch(c, 'payments.charge', reconcileAction(), reconcileCtx({ original_request: ORIGINAL }));
    expect(!outcome.ok && outcome.error).toMatchObject({ code: 'transaction.reconciliation_pending' });
    expect(!outcome.ok && outcome.error.provider_operation).toBeUndefined();
    expect(outcome.reconciliation).toEqual({ terminal: false, evidence: { lookup: 'idempotency_key', operation_found: false } });
  });

  it('rejects a reported operation other than the one being reconciled', async () => {
    const c = new Scripted({ terminal: true, original_commit_completed: true, provider_operation: OP });
    const outcome = await dispatch(
      c,
      'payments.charge',
      reconcileAction(),
      reconcileCtx({ provider_operation: { provider: 'sim', operation_id: 'op-known' } }),
    );
    expect(outcome).toMatchObject({
      ok: false,
      error: { code: 'connector.output_invalid', details: { reason: 'provider_operation_mismatch' }, provider_operation: { operation_id: 'op-known' } },
    });
    // The same operation echoed back is fine.
    const same = new Scripted({ terminal: true, original_commit_completed: true, provider_operation: { provider: 'sim', operation_id: 'op-known' } });
    const ok = await dispatch(same, 'payments.charge', reconcileAction(), reconcileCtx({ provider_operation: { provider: 'sim', operation_id: 'op-known' } }));
    expect(ok.ok).toBe(true);
  });

  it('a connector declaring only provider_operation is not called without an ID', async () => {
    const c = new Scripted({ terminal: false }, ['provider_operation']);
    const outcome = await dispatch(c, 'payments.charge', reconcileAction(), reconcileCtx({ original_request: ORIGINAL }));
    expect(outcome.ok === false && outcome.error.code).toBe('connector.reconcile_requires_provider_operation');
    expect(c.calls).toBe(0);
  });
});

// ---------------------------------------------------------------------------
// The HTTP connector's configuration
// ---------------------------------------------------------------------------

describe('HTTP connector: reconcile.by_idempotency_key', () => {
  it('declares the idempotency_key lookup from configuration', () => {
    const withKey = createHttpConnector(paymentsConnectorConfigForTest(), httpDeps());
    expect(withKey.reconcile_lookup('payments.charge')).toEqual(['provider_operation', 'idempotency_key']);
    expect(withKey.reconcile_lookup('payments.refund')).toEqual(['provider_operation', 'idempotency_key']);
    expect(withKey.reconcile_lookup('payments.unknown')).toEqual([]);
    const withoutKey = createHttpConnector(paymentsConnectorConfigForTest({ byKey: false }), httpDeps());
    expect(withoutKey.reconcile_lookup('payments.charge')).toEqual(['provider_operation']);
  });

  it('refuses a lookup that does not send the ORIGINAL request’s key', () => {
    const config = paymentsConnectorConfigForTest({ keyContext: 'idempotency_key' });
    expect(() => createHttpConnector(config, httpDeps())).toThrow(/configuration is invalid/);
    try {
      createHttpConnector(config, httpDeps());
    } catch (err) {
      expect(JSON.stringify((err as { details?: unknown }).details)).toContain('original_idempotency_key');
    }
  });

  it('without a provider operation ID and without original_request, reconcile_typed is the typed refusal (nothing sent)', async () => {
    const sent: string[] = [];
    const connector = createHttpConnector(
      paymentsConnectorConfigForTest(),
      httpDeps({
        fetch: (async (input: string | URL) => {
          sent.push(String(input));
          return new Response('{}', { status: 500 });
        }) as typeof fetch,
      }),
    );
    const ctx = reconcileCtx();
    const err = await connector.reconcile_typed(reconcileAction(), ctx).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'connector.reconcile_requires_provider_operation', redacted_details: { idempotency_key_lookup: 'no_original_request' } });
    expect(sent).toEqual([]);
  });
});
