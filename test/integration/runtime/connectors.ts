/**
 * Simple test connectors built with defineConnector, and the external
 * "provider" they talk to. The provider is the system on the far side of the
 * connector (not a runtime store): it records every call and keeps its own
 * operations, so reconciliation has something to ask.
 *
 * Behaviour is chosen by the action input's `scenario`:
 *   ok                 accept, checkpoint the provider operation, respond
 *   fail               permanent provider failure (nothing happened)
 *   uncertain          accept, checkpoint, then lose the response (uncertain_outcome)
 *   uncertain_silent   lose the response without checkpointing anything
 *   partial            non-retryable failure recording side_effects_committed + compensation_required
 *   hang               accept, checkpoint, then never answer (the capability deadline fires)
 *   gated              accept, checkpoint, then wait until the test opens the gate (provider.openGate())
 */
import * as z from 'zod';
import { defineCapability, defineConnector } from '../../../packages/connector-sdk/src/define.js';
import type { ActionExecutionContext } from '../../../packages/connector-sdk/src/context.js';
import { ConnectorFailure } from '../../../packages/connector-sdk/src/failure.js';
import { runtimeMemory, type RuntimeMemory } from '../../../packages/connector-sdk/src/memory.js';

export const Scenario = z.enum(['ok', 'fail', 'uncertain', 'uncertain_silent', 'partial', 'hang', 'gated']);
export const TransferInput = z.strictObject({ amount: z.int().min(1).max(1_000_000), to: z.string().min(1).max(64), scenario: Scenario.default('ok') });
export const TransferOutput = z.strictObject({ transfer_id: z.string(), amount: z.int() });

export type ReconcileAnswer = 'committed' | 'not_committed' | 'pending' | 'error';

export interface ProviderCall {
  readonly method: 'invoke' | 'plan' | 'commit' | 'compensate' | 'reconcile';
  readonly capability_id: string;
  readonly action_id: string;
  readonly transaction_id?: string;
  readonly mode?: string;
  readonly provider_operation_id?: string;
  readonly cursor?: string;
  readonly idempotency_key?: string;
  readonly approval?: { approval_ids: readonly string[]; decision_ids: readonly string[]; policy_hashes: readonly string[] };
  readonly memory?: RuntimeMemory;
  readonly tenant?: string;
  readonly actor?: string;
  /** What the probe saw in DynamoDB at call time. */
  readonly probe?: unknown;
}

export class TestProvider {
  readonly calls: ProviderCall[] = [];
  /** provider operation ID → what reconciliation answers. */
  readonly operations = new Map<string, ReconcileAnswer>();
  /** Default answer for operations the test did not set. */
  reconcileDefault: ReconcileAnswer = 'committed';
  /** Optional hook run at every call (the model test reads the durable records here). */
  probe?: (call: Omit<ProviderCall, 'probe'>) => Promise<unknown>;
  #n = 0;
  #gate: { promise: Promise<void>; open: () => void; entered: Promise<void>; enter: () => void } | undefined;

  /** Arms the gate: `gated` calls block until openGate(); `entered` resolves when one is inside. */
  armGate(): { entered: Promise<void> } {
    let open!: () => void;
    let enter!: () => void;
    const promise = new Promise<void>((r) => (open = r));
    const entered = new Promise<void>((r) => (enter = r));
    this.#gate = { promise, open, entered, enter };
    return { entered };
  }
  openGate(): void {
    this.#gate?.open();
  }
  async passGate(): Promise<void> {
    if (this.#gate === undefined) return;
    this.#gate.enter();
    await this.#gate.promise;
  }

  /** Downstream idempotency: the same idempotency key always maps to the same provider operation. */
  readonly #byKey = new Map<string, string>();

  nextOperationId(idempotencyKey?: string): string {
    const known = idempotencyKey !== undefined ? this.#byKey.get(idempotencyKey) : undefined;
    if (known !== undefined) return known;
    this.#n += 1;
    const op = `op-${this.#n}`;
    if (idempotencyKey !== undefined) this.#byKey.set(idempotencyKey, op);
    return op;
  }

  count(method: ProviderCall['method'], transaction_id?: string): number {
    return this.calls.filter((c) => c.method === method && (transaction_id === undefined || c.transaction_id === transaction_id)).length;
  }

  async record(method: ProviderCall['method'], capability_id: string, ctx: ActionExecutionContext, action_id: string): Promise<void> {
    const tx = ctx.transaction;
    const memory = runtimeMemory(ctx);
    const call: Omit<ProviderCall, 'probe'> = {
      method,
      capability_id,
      action_id,
      ...(tx ? { transaction_id: tx.transaction_id, mode: tx.mode } : {}),
      ...(tx?.provider_operation_id ? { provider_operation_id: tx.provider_operation_id } : {}),
      ...(tx?.cursor ? { cursor: tx.cursor } : {}),
      ...(ctx.idempotency ? { idempotency_key: ctx.idempotency.key } : {}),
      ...(ctx.approval
        ? { approval: { approval_ids: ctx.approval.approval_ids, decision_ids: ctx.approval.decision_ids, policy_hashes: ctx.approval.policy_hashes } }
        : {}),
      ...(memory ? { memory } : {}),
      ...(ctx.tenant ? { tenant: ctx.tenant.tenant_id } : {}),
      actor: ctx.actor.principal.id,
    };
    const probe = this.probe ? await this.probe(call) : undefined;
    this.calls.push(probe === undefined ? call : { ...call, probe });
  }
}

type Input = z.output<typeof TransferInput>;
export type ScenarioName = z.output<typeof Scenario>;

async function mutate(
  provider: TestProvider,
  method: 'invoke' | 'commit' | 'compensate',
  capability_id: string,
  input: Input,
  ctx: ActionExecutionContext,
  action_id: string,
  fail: (init: ConstructorParameters<typeof ConnectorFailure>[0] extends infer T ? Omit<T & object, 'operation' | 'source'> : never) => ConnectorFailure,
) {
  await provider.record(method, capability_id, ctx, action_id);
  if (input.scenario === 'fail') throw fail({ code: 'pay.declined', category: 'permanent', retryable: false, redacted_details: { reason: 'declined' } });
  if (input.scenario === 'partial') {
    throw fail({
      code: 'pay.partially_applied',
      category: 'permanent',
      retryable: false,
      redacted_details: { side_effects_committed: true, compensation_required: true },
    });
  }
  if (input.scenario === 'uncertain_silent') throw fail({ code: 'pay.connection_reset', category: 'temporary', retryable: false, uncertain_outcome: true });
  const op = provider.nextOperationId(ctx.idempotency?.key);
  const transactional = ctx.transaction !== undefined && ctx.transaction.mode !== 'rollback_not_supported';
  if (transactional) await ctx.transaction_checkpoint.checkpoint({ provider: 'testpay', operation_id: op }, `cursor-${op}`);
  if (input.scenario === 'uncertain')
    throw fail({
      code: 'pay.response_lost',
      category: 'temporary',
      retryable: false,
      uncertain_outcome: true,
      provider_operation: { provider: 'testpay', operation_id: op },
    });
  if (input.scenario === 'gated') await provider.passGate();
  if (input.scenario === 'hang') {
    await new Promise<void>((resolve) => ctx.cancellation.addEventListener('abort', () => resolve(), { once: true }));
    throw fail({ code: 'pay.aborted', category: 'temporary', retryable: false, uncertain_outcome: true });
  }
  provider.operations.set(op, provider.operations.get(op) ?? 'committed');
  return { transfer_id: `tr-${op}`, amount: input.amount };
}

async function reconcile(provider: TestProvider, capability_id: string, ctx: ActionExecutionContext, action_id: string) {
  await provider.record('reconcile', capability_id, ctx, action_id);
  const op = ctx.transaction?.provider_operation_id as string;
  const answer = provider.operations.get(op) ?? provider.reconcileDefault;
  if (answer === 'error')
    throw new ConnectorFailure({ code: 'pay.lookup_failed', operation: 'reconciliation', source: 'connector:testpay', category: 'temporary', retryable: true });
  if (answer === 'pending') return { terminal: false as const, cursor: `cursor-${op}-pending`, evidence: { provider_state: 'pending' } };
  return {
    terminal: true as const,
    original_commit_completed: answer === 'committed',
    ...(answer === 'committed' ? { output: { transfer_id: `tr-${op}`, amount: 1 } } : {}),
    evidence: { provider_state: answer },
  };
}

const fast = { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 10_000 };

export interface ConnectorOptions {
  /** Window of pay.transfer's compensation contract (ms). */
  readonly compensationWindowMs?: number;
}

/** The test connector (`testpay`) with one capability per contract shape the tests need. */
export function testConnector(provider: TestProvider, options: ConnectorOptions = {}) {
  const handlersFor = (capability_id: string) => ({
    invoke: (input: Input, ctx: ActionExecutionContext, call: { action: { id: string }; failure: (i: never) => ConnectorFailure }) =>
      mutate(provider, 'invoke', capability_id, input, ctx, call.action.id, call.failure as never),
    commit: (input: Input, ctx: ActionExecutionContext, call: { action: { id: string }; failure: (i: never) => ConnectorFailure }) =>
      mutate(provider, 'commit', capability_id, input, ctx, call.action.id, call.failure as never),
    reconcile: (_input: Input, ctx: ActionExecutionContext, call: { action: { id: string } }) => reconcile(provider, capability_id, ctx, call.action.id),
    compensate: (input: Input, ctx: ActionExecutionContext, call: { action: { id: string }; failure: (i: never) => ConnectorFailure }) =>
      mutate(provider, 'compensate', capability_id, input, ctx, call.action.id, call.failure as never),
  });

  const transfer = defineCapability({
    id: 'pay.transfer',
    input: TransferInput,
    output: TransferOutput,
    contract: {
      transaction: {
        modes: ['dry_run', 'plan', 'execute', 'commit', 'reconcile', 'rollback_not_supported'],
        dry_run_fidelity: 'schema_only',
        requires_plan_before_commit: true,
      },
      compensation: {
        mode: 'supported',
        compensation_capability_id: 'pay.refund',
        approval_required: false,
        ...(options.compensationWindowMs !== undefined ? { window_ms: options.compensationWindowMs } : {}),
      },
      execution: fast,
      authorization: { scopes: ['pay:write'] },
    },
  }).implement(handlersFor('pay.transfer'));

  const refund = defineCapability({
    id: 'pay.refund',
    input: TransferInput,
    output: TransferOutput,
    contract: { compensation: { mode: 'supported', approval_required: false }, execution: fast },
  }).implement({
    invoke: (input, ctx, call) => mutate(provider, 'invoke', 'pay.refund', input, ctx, call.action.id, call.failure as never),
    compensate: (input, ctx, call) => mutate(provider, 'compensate', 'pay.refund', input, ctx, call.action.id, call.failure as never),
  });

  const quote = defineCapability({
    id: 'pay.quote',
    input: TransferInput,
    output: TransferOutput,
    contract: {
      transaction: { modes: ['dry_run', 'plan', 'commit'], dry_run_fidelity: 'full_simulation', requires_plan_before_commit: false },
      execution: fast,
    },
  }).implement({
    invoke: (input, ctx, call) => mutate(provider, 'invoke', 'pay.quote', input, ctx, call.action.id, call.failure as never),
    plan: async (input, ctx, call) => {
      await provider.record('plan', 'pay.quote', ctx, call.action.id);
      if (input.scenario === 'fail')
        throw call.failure({ code: 'pay.validation_rejected', category: 'validation', retryable: false, redacted_details: { field: 'to' } });
      return { fee: 1, total: input.amount + 1 };
    },
    commit: (input, ctx, call) => mutate(provider, 'commit', 'pay.quote', input, ctx, call.action.id, call.failure as never),
  });

  const retryable = defineCapability({
    id: 'pay.idempotent',
    input: TransferInput,
    output: TransferOutput,
    retry: { downstream_idempotency: true },
    contract: {
      transaction: { modes: ['execute', 'reconcile'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true },
      execution: { ...fast, supports_retry: true },
      idempotency: { required: true, downstream_idempotent: true },
    },
  }).implement((({ compensate: _c, ...h }) => h)(handlersFor('pay.idempotent')));

  const approved = defineCapability({
    id: 'pay.approved',
    input: TransferInput,
    output: TransferOutput,
    approval: { verified_evidence: true },
    contract: {
      transaction: { modes: ['dry_run', 'plan', 'execute', 'commit'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true },
      approval: { required: true, policy_id: 'treasury-two-person', approver_scopes: ['pay:approve'] },
      execution: fast,
    },
  }).implement({ invoke: handlersFor('pay.approved').invoke, commit: handlersFor('pay.approved').commit });

  const secret = defineCapability({
    id: 'pay.secret',
    input: TransferInput,
    output: TransferOutput,
    contract: {
      transaction: { modes: ['plan', 'commit', 'execute'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true },
      data: { redaction_required: true },
      execution: fast,
    },
  }).implement({ invoke: handlersFor('pay.secret').invoke, commit: handlersFor('pay.secret').commit });

  const echo = defineCapability({ id: 'pay.echo', input: TransferInput, output: TransferOutput, contract: { execution: fast } }).implement({
    invoke: (input, ctx, call) => mutate(provider, 'invoke', 'pay.echo', input, ctx, call.action.id, call.failure as never),
  });

  const slow = defineCapability({
    id: 'pay.slow',
    input: TransferInput,
    output: TransferOutput,
    contract: {
      transaction: { modes: ['execute', 'reconcile'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true },
      execution: { ...fast, timeout_ms: 150 },
    },
  }).implement((({ compensate: _c, ...h }) => h)(handlersFor('pay.slow')));

  const voucher = defineCapability({
    id: 'pay.voucher',
    input: TransferInput,
    output: TransferOutput,
    contract: {
      transaction: { modes: ['execute'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true },
      compensation: { mode: 'best_effort', approval_required: true },
      execution: fast,
    },
  }).implement({
    invoke: handlersFor('pay.voucher').invoke,
    compensate: (input, ctx, call) => mutate(provider, 'compensate', 'pay.voucher', input, ctx, call.action.id, call.failure as never),
  });

  const final = defineCapability({
    id: 'pay.final',
    input: TransferInput,
    output: TransferOutput,
    contract: {
      transaction: { modes: ['execute'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true },
      compensation: { mode: 'rollback_not_supported', approval_required: false },
      execution: fast,
    },
  }).implement({ invoke: handlersFor('pay.final').invoke });

  const streamed = defineCapability({
    id: 'pay.statement',
    input: TransferInput,
    output: TransferOutput,
    contract: { execution: { ...fast, supports_streaming: true } },
  }).implement({
    async *stream(input, ctx, call) {
      await provider.record('invoke', 'pay.statement', ctx, call.action.id);
      yield { type: 'progress', progress: 0.5, message: 'half' };
      yield { type: 'text', text: `line for ${input.to}` };
      return { transfer_id: 'statement', amount: input.amount };
    },
  });

  return defineConnector({
    id: 'testpay',
    version: '1.0.0',
    capabilities: [transfer, refund, quote, retryable, approved, secret, echo, slow, voucher, final, streamed],
  });
}

export function transfer(id: string, extra: Record<string, unknown> = {}, input: Partial<Input> = {}) {
  return {
    id,
    capability_id: 'pay.transfer',
    input: { amount: 100, to: 'acct-b', ...input },
    identity: { tenant_id: 'tenant-a', external_account_id: 'acct-1' },
    ...extra,
  };
}
