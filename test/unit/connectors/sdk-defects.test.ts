/**
 * Defects found in the connector SDK, each pinned by a test.
 */
import * as z from 'zod';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Action, ProviderOperationRef } from '../../../packages/connector-sdk/src/protocol/index.js';
import {
  ADMISSION_RULES,
  ConnectorFailure,
  EnvCredentialProvider,
  admitConnector,
  admitManifest,
  defineCapability,
  defineConnector,
  resolveCredential,
  type ActionExecutionContext,
  type DefinedConnector,
  type TransactionCheckpointWriter,
} from '../../../packages/connector-sdk/src/index.js';
import { dispatch } from '../../../lib/runtime/attempts/dispatch.js';
import { runAttempt, type AttemptRequest } from '../../../lib/runtime/attempts/deadline.js';
import { MemorySink, T0, action, attempt, trusted } from './fixtures.js';

const In = z.strictObject({ amount: z.int().positive() });
const Out = z.strictObject({ id: z.string() });
const OP1: ProviderOperationRef = { provider: 'sim', operation_id: 'op-1' };

const credentials = new EnvCredentialProvider({
  connector_id: 'sim',
  env: { SIM_KEY: 'sim_live_material' },
  references: [{ connector_id: 'sim', handle: 'payments/api_key', tenant_id: 'tenant-a', env: 'SIM_KEY' }],
});

function recordingWriter(): TransactionCheckpointWriter & { calls: unknown[] } {
  const calls: unknown[] = [];
  return { calls, checkpoint: async (c) => void calls.push(c) };
}

/** An AttemptRequest for an admitted capability of `connector`. */
async function requestFor(connector: DefinedConnector, act: Action, writer: TransactionCheckpointWriter = recordingWriter()): Promise<AttemptRequest> {
  const report = await admitConnector(connector);
  const admitted = report.capabilities.find((c) => c.capability_id === act.capability_id);
  if (admitted === undefined) throw new Error(`not admitted: ${JSON.stringify(report.issues)}`);
  const { action_id: _a, capability_id: _c, deadline_at: _d, streaming: _s, ...rest } = trusted({ capability_id: act.capability_id });
  return {
    connector,
    capability: admitted.capability,
    support: admitted.implementation_support,
    action: act,
    trusted: { ...rest, ...(act.transaction ? { transaction: { transaction_id: act.transaction.transaction_id ?? 'tx-1', mode: act.transaction.mode } } : {}) },
    facilities: { transaction_checkpoints: writer, stream_sink: new MemorySink() },
  };
}

beforeEach(() => vi.useFakeTimers({ now: T0 }));
afterEach(() => vi.useRealTimers());

describe('a stream handler that yields after cancellation', () => {
  it('keeps an effect that happened uncertain, with the checkpointed provider operation', async () => {
    let cancel: (() => void) | undefined;
    const connector = defineConnector({
      id: 'sim',
      version: '1.0.0',
      capabilities: [
        defineCapability({
          id: 'sim.stream',
          input: In,
          output: Out,
          contract: {
            execution: { supports_cancel: false, supports_streaming: true, supports_retry: false, timeout_ms: 5_000 },
            transaction: { modes: ['execute'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: false },
          },
        }).implement({
          async *stream(_input, ctx) {
            await ctx.transaction_checkpoint.checkpoint(OP1);
            ctx.execution_checkpoints.provider_effect_committed();
            // The runtime cancels the attempt here (a client cancel or the deadline, with a typed reason).
            cancel?.();
            yield { type: 'progress', progress: 1 };
            return { id: 'done' };
          },
        }),
      ],
    });
    const act = action({ capability_id: 'sim.stream', input: { amount: 1 }, transaction: { mode: 'execute', transaction_id: 'tx-1' } });
    const a = attempt(
      { capability_id: 'sim.stream', streaming: true, transaction: { transaction_id: 'tx-1', mode: 'execute' } },
      { stream_sink: new MemorySink(), transaction_checkpoints: recordingWriter() },
    );
    cancel = () => a.cancel(new ConnectorFailure({ code: 'sla.timeout_exceeded', operation: 'invocation', source: 'runtime:deadline' }));
    const outcome = await dispatch(connector, 'sim.stream', act, a.context);
    expect(outcome.ok).toBe(false);
    expect(!outcome.ok && outcome.error).toMatchObject({ uncertain_outcome: true, provider_operation: OP1, details: { uncertain_outcome: true } });
  });
});

describe('a timeout the connector reports itself', () => {
  const connector = defineConnector({
    id: 'sim',
    version: '1.0.0',
    capabilities: [
      defineCapability({
        id: 'sim.pay',
        input: In,
        output: Out,
        retry: { downstream_idempotency: true },
        contract: {
          execution: { supports_cancel: false, supports_streaming: false, supports_retry: true, timeout_ms: 5_000 },
          transaction: { modes: ['execute', 'commit'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: false },
        },
      }).implement({
        // Both wait on the provider bounded by the deadline and report the lost wait themselves, claiming retry.
        async invoke(_input, ctx, call) {
          await ctx.transaction_checkpoint.checkpoint(OP1);
          throw call.failure({ code: 'sla.timeout_exceeded', category: 'timeout', retryable: true, uncertain_outcome: true, provider_operation: OP1 });
        },
        async commit(_input, ctx, call) {
          await ctx.transaction_checkpoint.checkpoint(OP1);
          throw call.failure({ code: 'sla.timeout_exceeded', category: 'timeout', retryable: true, uncertain_outcome: true, provider_operation: OP1 });
        },
      }),
    ],
  });

  it('is never retryable on the wire for a commit or an execute, whoever reports it', async () => {
    for (const mode of ['commit', 'execute'] as const) {
      const act = action({
        capability_id: 'sim.pay',
        input: { amount: 1 },
        transaction: { mode, transaction_id: 'tx-1', ...(mode === 'commit' ? { plan_id: 'plan:tx-1' } : {}) },
      });
      const outcome = await runAttempt(await requestFor(connector, act));
      expect(outcome.ok === false && outcome.error, mode).toMatchObject({
        code: 'sla.timeout_exceeded',
        retryable: false,
        uncertain_outcome: true,
        provider_operation: OP1,
      });
    }
  });
});

describe('an SDK error after the provider may have committed', () => {
  const build = (body: (ctx: ActionExecutionContext) => Promise<void>) =>
    defineConnector({
      id: 'sim',
      version: '1.0.0',
      capabilities: [
        defineCapability({
          id: 'sim.pay',
          input: In,
          output: Out,
          contract: {
            execution: { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 5_000 },
            transaction: { modes: ['execute', 'commit'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: false },
          },
        }).implement({
          async invoke(_input, ctx) {
            await body(ctx);
            return { id: 'x' };
          },
          async commit(_input, ctx) {
            await body(ctx);
            return { id: 'x' };
          },
        }),
      ],
    });
  const commitAction = action({
    capability_id: 'sim.pay',
    input: { amount: 1 },
    transaction: { mode: 'commit', transaction_id: 'tx-1', plan_id: 'plan:tx-1' },
  });

  it('a checkpoint conflict after a successful checkpoint is uncertain and carries the known operation', async () => {
    const connector = build(async (ctx) => {
      await ctx.transaction_checkpoint.checkpoint(OP1);
      await ctx.transaction_checkpoint.checkpoint({ provider: 'sim', operation_id: 'op-2' });
    });
    const outcome = await runAttempt(await requestFor(connector, commitAction));
    expect(outcome.ok === false && outcome.error).toMatchObject({
      code: 'transaction.provider_operation_conflict',
      uncertain_outcome: true,
      retryable: false,
      provider_operation: OP1,
      details: { uncertain_outcome: true },
    });
  });

  it('any SDK-internal error after provider_effect_committed is uncertain and carries the known operation', async () => {
    const connector = build(async (ctx) => {
      await ctx.transaction_checkpoint.checkpoint(OP1);
      ctx.execution_checkpoints.provider_effect_committed();
      // The capability was not admitted with streaming: the publisher refuses (an SDK failure, certain by itself).
      await ctx.stream.emit({ type: 'text', text: 'done' });
    });
    const outcome = await runAttempt(await requestFor(connector, commitAction));
    expect(outcome.ok === false && outcome.error).toMatchObject({ code: 'connector.operation_unsupported', uncertain_outcome: true, provider_operation: OP1 });
    // The connector's own typed methods report the same (not only the runtime's dispatch).
    const a = attempt({ capability_id: 'sim.pay', transaction: { transaction_id: 'tx-1', mode: 'commit' } }, { transaction_checkpoints: recordingWriter() });
    const thrown = await connector.commit_typed(commitAction, a.context).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(thrown).toBeInstanceOf(ConnectorFailure);
    expect((thrown as ConnectorFailure).toJSON()).toMatchObject({ uncertain_outcome: true, provider_operation: OP1 });
  });

  it('a typed failure the connector classified itself after a checkpoint (the provider declined) stays certain', async () => {
    const connector = defineConnector({
      id: 'sim',
      version: '1.0.0',
      capabilities: [
        defineCapability({
          id: 'sim.pay',
          input: In,
          output: Out,
          contract: { transaction: { modes: ['execute'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: false } },
        }).implement({
          async invoke(_input, ctx, call) {
            await ctx.transaction_checkpoint.checkpoint(OP1);
            throw call.failure({ code: 'sim.declined', category: 'permanent', provider_operation: OP1 });
          },
        }),
      ],
    });
    const outcome = await runAttempt(
      await requestFor(connector, action({ capability_id: 'sim.pay', input: { amount: 1 }, transaction: { mode: 'execute', transaction_id: 'tx-1' } })),
    );
    expect(outcome.ok === false && outcome.error).toMatchObject({ code: 'sim.declined', uncertain_outcome: false, provider_operation: OP1 });
  });
});

describe('a context kept after its attempt ended', () => {
  it('refuses credential resolution, checkpoints and stream publishing with typed errors', async () => {
    let kept: ActionExecutionContext | undefined;
    const writer = recordingWriter();
    const connector = defineConnector({
      id: 'sim',
      version: '1.0.0',
      credentials,
      capabilities: [
        defineCapability({
          id: 'sim.pay',
          input: In,
          output: Out,
          contract: {
            execution: { supports_cancel: false, supports_streaming: true, supports_retry: false, timeout_ms: 5_000 },
            transaction: { modes: ['execute'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: false },
            credentials: { required: true },
          },
        }).implement({
          async *stream(_input, ctx, call) {
            kept = ctx;
            await call.withSecret(() => undefined);
            return { id: 'x' };
          },
        }),
      ],
    });
    const outcome = await runAttempt(
      await requestFor(connector, action({ capability_id: 'sim.pay', input: { amount: 1 }, transaction: { mode: 'execute', transaction_id: 'tx-1' } }), writer),
    );
    expect(outcome.ok).toBe(true);
    const ctx = kept as ActionExecutionContext;

    const credential = await resolveCredential(credentials, ctx).then(
      (s) => (s.dispose(), 'resolved'),
      (e: unknown) => e,
    );
    expect(credential).toMatchObject({ code: 'connector.attempt_ended' });
    await expect(ctx.transaction_checkpoint.checkpoint(OP1)).rejects.toMatchObject({ code: 'connector.attempt_ended' });
    expect(writer.calls).toEqual([]);
    await expect(ctx.stream.emit({ type: 'text', text: 'late' })).rejects.toMatchObject({ code: 'connector.stream_closed' });
    expect(() => ctx.execution_checkpoints.provider_effect_committed()).toThrow(expect.objectContaining({ code: 'connector.attempt_ended' }));
    expect(ctx.can_checkpoint).toBe(false);
  });
});

describe('admission of a capability that names a compensation capability', () => {
  const Refund = z.strictObject({ charge_id: z.string() });
  const charge = (handlers: 'with_compensate' | 'without') =>
    defineCapability({
      id: 'sim.charge',
      input: In,
      output: Out,
      contract: { compensation: { mode: 'supported', compensation_capability_id: 'sim.refund', approval_required: false } },
    }).implement({
      invoke: async () => ({ id: 'c' }),
      ...(handlers === 'with_compensate' ? { compensate: async () => ({ id: 'r' }) } : {}),
    });
  const refund = (handlers: 'with_compensate' | 'without') =>
    defineCapability({
      id: 'sim.refund',
      input: Refund,
      output: Out,
      contract: { compensation: { mode: 'rollback_not_supported', approval_required: false } },
    }).implement({
      invoke: async () => ({ id: 'r' }),
      ...(handlers === 'with_compensate' ? { compensate: async () => ({ id: 'r' }) } : {}),
    });

  it('requires the compensate handler on the compensation capability the runtime sends compensation to, not on the forward one', () => {
    expect(() => defineConnector({ id: 'sim', version: '1.0.0', capabilities: [charge('without'), refund('with_compensate')] })).not.toThrow();
  });

  it('refuses a compensation capability without a compensate handler, naming it', () => {
    let err: unknown;
    try {
      defineConnector({ id: 'sim', version: '1.0.0', capabilities: [charge('with_compensate'), refund('without')] });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'connector.admission_rejected' });
    expect(JSON.stringify((err as { details: unknown }).details)).toContain('sim.refund');
  });

  it('refuses a compensation capability that is neither in the connector nor resolvable, and admits one that resolves', () => {
    const forward = charge('without').capability;
    const support = {
      invocation: true,
      cancellation: false,
      streaming: false,
      retry: false,
      transaction: false,
      reconciliation: false,
      compensation: false,
      approval: false,
      credentials: false,
    };
    const manifest = { connector_id: 'sim', version: '1.0.0', capabilities: [forward], implementation_support: { 'sim.charge': support } };
    const alone = admitManifest(manifest);
    expect(alone.admitted).toBe(false);
    expect(alone.issues).toEqual([{ capability_id: 'sim.charge', rule: ADMISSION_RULES.compensation_target, detail: 'compensation capability sim.refund' }]);
    // Another connector's capability, resolved by the caller (e.g. the runtime's registry).
    const elsewhere = refund('with_compensate');
    const resolved = admitManifest(manifest, undefined, {
      resolve_capability: (id) => (id === 'sim.refund' ? { capability: elsewhere.capability, implementation_support: elsewhere.derived_support } : undefined),
    });
    expect(resolved).toMatchObject({ admitted: true, issues: [] });
    const notCompensating = refund('without');
    const wrong = admitManifest(manifest, undefined, {
      resolve_capability: (id) =>
        id === 'sim.refund' ? { capability: notCompensating.capability, implementation_support: notCompensating.derived_support } : undefined,
    });
    expect(wrong.admitted).toBe(false);
  });
});
