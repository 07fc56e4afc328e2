import { describe, expect, it } from 'vitest';
import type { Action, ActionResult, ProtocolError, TransactionMode } from '../../../packages/connector-sdk/src/protocol/index.js';
import { TRANSACTION_MODES } from '../../../lib/transactions/status.js';
import {
  ConnectorFailure,
  DISPATCH_TABLE,
  FrozenConnectorBase,
  implementationSupport,
  selectMethod,
  type ActionExecutionContext,
  type CancelOutcome,
  type ConnectorManifest,
  type ReconciliationResult,
  type TransactionCheckpointWriter,
} from '../../../packages/connector-sdk/src/index.js';
import { dispatch } from '../../../lib/runtime/attempts/dispatch.js';
import { action, attempt } from './fixtures.js';

const writer: TransactionCheckpointWriter = { checkpoint: async () => undefined };

/** Records which typed method was called; each returns a completed result. */
class Recorder extends FrozenConnectorBase {
  readonly id = 'recorder';
  readonly calls: string[] = [];
  reconcileResult: unknown = { terminal: true, original_commit_completed: true, output: { ok: true } };
  throwOnInvoke: unknown;
  invokeResult: ActionResult | undefined;

  async discover(): Promise<ConnectorManifest> {
    return { connector_id: 'recorder', version: '1.0.0', capabilities: [], implementation_support: {} };
  }
  implementation_support() {
    return implementationSupport({ invocation: true, transaction: true, reconciliation: true, compensation: true });
  }
  #done(method: string, a: Action): ActionResult {
    this.calls.push(method);
    return { action_id: a.id, status: 'completed', output: { method } };
  }
  async invoke_typed(a: Action): Promise<ActionResult> {
    if (this.throwOnInvoke !== undefined) throw this.throwOnInvoke;
    if (this.invokeResult !== undefined) return this.invokeResult;
    return this.#done('invoke_typed', a);
  }
  override async plan_typed(a: Action): Promise<ActionResult> {
    return this.#done('plan_typed', a);
  }
  override async commit_typed(a: Action): Promise<ActionResult> {
    return this.#done('commit_typed', a);
  }
  override async compensate_typed(a: Action): Promise<ActionResult> {
    return this.#done('compensate_typed', a);
  }
  override async reconcile_typed(_a: Action, _ctx: ActionExecutionContext): Promise<ReconciliationResult> {
    this.calls.push('reconcile_typed');
    return this.reconcileResult as ReconciliationResult;
  }
  override async cancel_typed(): Promise<CancelOutcome> {
    this.calls.push('cancel_typed');
    return { accepted: true };
  }
}

function txAction(mode: TransactionMode): Action {
  return action({ transaction: { mode, transaction_id: 'tx-1' } });
}

function ctxFor(mode?: string, extra: Record<string, unknown> = {}) {
  if (mode === undefined) return attempt().context;
  return attempt({ transaction: { transaction_id: 'tx-1', mode: mode as never, ...extra } }, { transaction_checkpoints: writer }).context;
}

describe('dispatch: method selection', () => {
  it('follows the page table for no transaction and each of the seven modes', () => {
    expect(DISPATCH_TABLE).toEqual({
      none: 'invoke_typed',
      execute: 'invoke_typed',
      rollback_not_supported: 'invoke_typed',
      dry_run: 'plan_typed',
      plan: 'plan_typed',
      commit: 'commit_typed',
      compensate: 'compensate_typed',
      reconcile: 'reconcile_typed',
    });
    expect(selectMethod(action())).toBe('invoke_typed');
    for (const mode of TRANSACTION_MODES) expect(selectMethod(txAction(mode))).toBe(DISPATCH_TABLE[mode]);
  });

  it('calls exactly the selected method', async () => {
    for (const mode of [undefined, ...TRANSACTION_MODES]) {
      const c = new Recorder();
      const a = mode === undefined ? action() : txAction(mode);
      const extra = mode === 'reconcile' ? { provider_operation: { provider: 'sim', operation_id: 'op-1' } } : {};
      const outcome = await dispatch(c, 'payments.charge', a, ctxFor(mode, extra));
      expect(outcome.ok).toBe(true);
      expect(c.calls).toEqual([DISPATCH_TABLE[mode ?? 'none']]);
    }
  });
});

describe('dispatch: binding', () => {
  it('rejects an action whose capability differs from the bound one without calling the connector', async () => {
    const c = new Recorder();
    const outcome = await dispatch(c, 'payments.refund', action(), attempt().context);
    expect(c.calls).toEqual([]);
    expect(outcome).toMatchObject({
      ok: false,
      method: 'invoke_typed',
      error: { code: 'connector.capability_mismatch', category: 'validation', retryable: false },
    });
    expect(outcome.ok === false && outcome.error.details).toMatchObject({ bound_capability_id: 'payments.refund', action_capability_id: 'payments.charge' });
  });

  it('rejects a context built for another action', async () => {
    const c = new Recorder();
    const outcome = await dispatch(c, 'payments.charge', action({ id: 'act-2' }), attempt().context);
    expect(c.calls).toEqual([]);
    expect(outcome.ok === false && outcome.error.code).toBe('connector.capability_mismatch');
  });
});

describe('dispatch: reconcile', () => {
  it('requires transaction context', async () => {
    const c = new Recorder();
    const outcome = await dispatch(c, 'payments.charge', txAction('reconcile'), attempt().context);
    expect(c.calls).toEqual([]);
    expect(outcome.ok === false && outcome.error.code).toBe('connector.reconcile_requires_transaction');
  });

  it('requires a durable provider operation ID', async () => {
    const c = new Recorder();
    const outcome = await dispatch(c, 'payments.charge', txAction('reconcile'), ctxFor('reconcile'));
    expect(c.calls).toEqual([]);
    expect(outcome).toMatchObject({
      ok: false,
      operation: 'reconciliation',
      error: { code: 'connector.reconcile_requires_provider_operation', category: 'conflict' },
    });
  });

  it('turns a non-terminal result into transaction.reconciliation_pending, temporary, retryable after 5000 ms, keeping cursor and evidence', async () => {
    const c = new Recorder();
    c.reconcileResult = { terminal: false, cursor: 'page-2', evidence: { provider_status: 'processing', checked: 3 } };
    const outcome = await dispatch(
      c,
      'payments.charge',
      txAction('reconcile'),
      ctxFor('reconcile', { provider_operation: { provider: 'sim', operation_id: 'op-1' } }),
    );
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error).toMatchObject({
      code: 'transaction.reconciliation_pending',
      category: 'temporary',
      retryable: true,
      retry_after_ms: 5000,
      provider_operation: { provider: 'sim', operation_id: 'op-1' },
      details: { reconciliation_cursor: 'page-2', evidence: { provider_status: 'processing', checked: 3 }, connector_operation: 'reconciliation' },
    });
    expect(outcome.reconciliation).toEqual({ terminal: false, cursor: 'page-2', evidence: { provider_status: 'processing', checked: 3 } });
  });

  it('records whether the original commit completed for a terminal result', async () => {
    for (const completed of [true, false]) {
      const c = new Recorder();
      c.reconcileResult = { terminal: true, original_commit_completed: completed, evidence: { provider_status: completed ? 'succeeded' : 'not_found' } };
      const outcome = await dispatch(c, 'payments.charge', txAction('reconcile'), ctxFor('reconcile', { provider_operation_id: 'op-1' }));
      expect(outcome).toMatchObject({
        ok: true,
        result: { status: 'completed', metadata: { reconciliation: { terminal: true, original_commit_completed: completed } } },
        reconciliation: { terminal: true, original_commit_completed: completed },
      });
    }
  });

  it('rejects a malformed reconciliation result (terminal without original_commit_completed)', async () => {
    const c = new Recorder();
    c.reconcileResult = { terminal: true };
    const outcome = await dispatch(c, 'payments.charge', txAction('reconcile'), ctxFor('reconcile', { provider_operation_id: 'op-1' }));
    expect(outcome.ok === false && outcome.error.code).toBe('connector.output_invalid');
  });
});

describe('dispatch: failures', () => {
  it('converts a thrown ConnectorFailure, clamping retry for uncertain outcomes unless the capability is retryable', async () => {
    const c = new Recorder();
    c.throwOnInvoke = new ConnectorFailure({
      code: 'payments.timeout',
      category: 'timeout',
      retryable: true,
      uncertain_outcome: true,
      operation: 'invocation',
      source: 'provider:sim',
      provider_request_id: 'r-1',
    });
    const unsafe = await dispatch(c, 'payments.charge', action(), attempt().context);
    expect(unsafe).toMatchObject({ ok: false, error: { code: 'payments.timeout', retryable: false, uncertain_outcome: true, provider_request_id: 'r-1' } });
    const safe = await dispatch(c, 'payments.charge', action(), attempt().context, { capabilityRetryable: true });
    expect(safe.ok === false && safe.error.retryable).toBe(true);
    expect(safe.ok === false && safe.failure).toBeInstanceOf(ConnectorFailure);
  });

  it('maps any other thrown value through map_error with the failing operation', async () => {
    const c = new Recorder();
    c.throwOnInvoke = new Error('ECONNRESET with token sk_live_x');
    const outcome = await dispatch(c, 'payments.charge', action(), attempt().context);
    expect(outcome).toMatchObject({
      ok: false,
      error: { code: 'connector.unexpected_error', uncertain_outcome: true, retryable: false, details: { connector_operation: 'invocation' } },
    });
    expect(JSON.stringify(outcome)).not.toContain('sk_live');
  });

  it('falls back to the SDK normalization when map_error misbehaves', async () => {
    const c = new Recorder();
    c.throwOnInvoke = new Error('x');
    c.map_error = () => ({ code: 'not a code' }) as unknown as ProtocolError;
    const outcome = await dispatch(c, 'payments.charge', action(), attempt().context);
    expect(outcome.ok === false && outcome.error.code).toBe('connector.unexpected_error');
  });

  it('clamps a failed ActionResult the connector returned', async () => {
    const c = new Recorder();
    c.invokeResult = {
      action_id: 'act-1',
      status: 'failed',
      error: { code: 'payments.lost', message: 'm', category: 'temporary', retryable: true, uncertain_outcome: true },
    };
    const outcome = await dispatch(c, 'payments.charge', action(), attempt().context);
    expect(outcome).toMatchObject({ ok: false, error: { code: 'payments.lost', retryable: false } });
  });

  it('rejects a result for another action as invalid output with an uncertain outcome', async () => {
    const c = new Recorder();
    c.invokeResult = { action_id: 'other', status: 'completed' };
    const outcome = await dispatch(c, 'payments.charge', action(), attempt().context);
    expect(outcome).toMatchObject({ ok: false, error: { code: 'connector.output_invalid', uncertain_outcome: true } });
  });
});

describe('FrozenConnectorBase defaults', () => {
  class OnlyInvoke extends FrozenConnectorBase {
    readonly id = 'only-invoke';
    discoverFails = false;
    async discover(): Promise<ConnectorManifest> {
      if (this.discoverFails) throw new Error('upstream 503 with secret sk_live_y');
      return { connector_id: 'only-invoke', version: '1.0.0', capabilities: [], implementation_support: {} };
    }
    implementation_support() {
      return implementationSupport({ invocation: true });
    }
    async invoke_typed(a: Action): Promise<ActionResult> {
      return { action_id: a.id, status: 'completed' };
    }
  }

  it('answers the seven other operations with connector.operation_unsupported, permanent, retryable=false', async () => {
    const c = new OnlyInvoke();
    const ctx = attempt().context;
    const cases: [string, Promise<unknown>][] = [
      ['transaction_plan', c.plan_typed(action(), ctx)],
      ['transaction_commit', c.commit_typed(action(), ctx)],
      ['compensation', c.compensate_typed(action(), ctx)],
      ['cancellation', c.cancel_typed(action(), ctx)],
      ['reconciliation', c.reconcile_typed(action(), ctx)],
      ['emission', c.emit_typed({ kind: 'event', event_type: 'e', payload: {} }, ctx)],
      ['ingestion', c.ingest_typed({ provider: 'p', event_id: 'e', event_type: 't', payload: {}, received_at: '2030-01-01T00:00:00Z' }, ctx)],
    ];
    for (const [operation, p] of cases) {
      const err = await p.catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConnectorFailure);
      expect((err as ConnectorFailure).toJSON()).toMatchObject({
        code: 'connector.operation_unsupported',
        category: 'permanent',
        retryable: false,
        operation,
        source: 'connector:only-invoke',
      });
    }
    const viaDispatch = await dispatch(c, 'payments.charge', txAction('commit'), ctxFor('commit'));
    expect(viaDispatch).toMatchObject({
      ok: false,
      operation: 'transaction_commit',
      error: { code: 'connector.operation_unsupported', category: 'permanent', retryable: false },
    });
  });

  it('reports ready when discovery succeeds and operator-safe detail when it fails', async () => {
    const c = new OnlyInvoke();
    await expect(c.health({})).resolves.toEqual({ ready: true });
    c.discoverFails = true;
    const report = await c.health({});
    expect(report).toEqual({ ready: false, detail: 'discovery failed: connector.unexpected_error' });
  });
});
