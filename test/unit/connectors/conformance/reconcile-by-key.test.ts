/**
 * The conformance kit's check for connectors that declare the
 * `idempotency_key` reconcile lookup: after the committed-effect scenario, a
 * reconcile with no provider operation ID but `transaction.original_request`
 * must find the operation the effect created.
 */
import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import {
  defineCapability,
  defineConnector,
  downstreamIdempotencyKey,
  originalIdempotencyKey,
  type ActionExecutionContext,
  type HandlerCall,
} from '../../../../packages/connector-sdk/src/index.js';
import { runConformance, type ConformanceSubject } from '../../../../packages/connector-sdk/src/conformance/index.js';

/** An in-process provider: operations by ID and by idempotency key. */
class Ledger {
  readonly byKey = new Map<string, string>();
  readonly ops = new Set<string>();
  create(key: string): string {
    const known = this.byKey.get(key);
    if (known !== undefined) return known;
    const id = `op-${this.ops.size + 1}`;
    this.ops.add(id);
    this.byKey.set(key, id);
    return id;
  }
}

/** `keyOf` is how the reconcile handler computes the key it looks up. */
function subject(name: string, keyOf: (ctx: ActionExecutionContext, call: HandlerCall) => string | undefined, declare = true): ConformanceSubject {
  return {
    name,
    async setup() {
      const ledger = new Ledger();
      const reconcileHandler = (_input: unknown, ctx: ActionExecutionContext, call: HandlerCall) => {
        const byId = ctx.transaction?.provider_operation_id;
        if (byId !== undefined) return ledger.ops.has(byId) ? { terminal: true as const, original_commit_completed: true } : { terminal: false as const };
        const key = keyOf(ctx, call);
        const found = key !== undefined ? ledger.byKey.get(key) : undefined;
        if (found === undefined) return { terminal: false as const, evidence: { operation_found: false } };
        return { terminal: true as const, original_commit_completed: true, provider_operation: { provider: 'ledger', operation_id: found } };
      };
      const builder = defineCapability({
        id: 'ledger.post',
        input: z.strictObject({ amount: z.int().positive() }),
        output: z.strictObject({ operation_id: z.string() }),
        contract: { execution: { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 1_000 } },
      });
      const invoke = (_input: { amount: number }, ctx: ActionExecutionContext, call: HandlerCall) => {
        if (ctx.cancellation.aborted) throw call.failure({ code: 'connector.attempt_cancelled', category: 'conflict' });
        const operation_id = ledger.create(downstreamIdempotencyKey(call.action, ctx, 'ledger'));
        ctx.execution_checkpoints.provider_effect_committed();
        return { operation_id };
      };
      const post = declare
        ? builder.implement({ invoke, reconcile: { lookup: ['provider_operation', 'idempotency_key'], handler: reconcileHandler } })
        : builder.implement({ invoke, reconcile: reconcileHandler });
      return {
        connector: defineConnector({ id: 'ledger', version: '1.0.0', capabilities: [post] }),
        sampleInput: () => ({ amount: 1 }),
        scenarios: {
          async committedEffect() {
            const before = ledger.ops.size;
            return {
              action: { id: 'post-1', capability_id: 'ledger.post', input: { amount: 5 }, idempotency_key: 'K-post-1' },
              effectRecorded: () => ledger.ops.size === before + 1,
            };
          },
        },
      };
    },
  };
}

describe('conformance: reconcile by idempotency key', () => {
  it('passes a connector whose reconcile finds the effect’s operation by the original key', async () => {
    const report = await runConformance(subject('ledger', (ctx) => originalIdempotencyKey(ctx, 'ledger')));
    expect(report.results.filter((r) => r.status === 'failed')).toEqual([]);
    expect(report.results.find((r) => r.id === 'recovery_evidence')?.message).toContain(
      "ledger.post: a reconcile without an operation ID finds the effect's operation by the original idempotency key",
    );
  });

  it('fails a connector that declares the lookup but derives the key from the reconcile action', async () => {
    const report = await runConformance(subject('ledger (wrong key)', (ctx, call) => downstreamIdempotencyKey(call.action, ctx, 'ledger')));
    const result = report.results.find((r) => r.id === 'recovery_evidence');
    expect(result?.status).toBe('failed');
    expect(result?.message).toContain(
      'reconcile_typed(ledger.post) without a provider operation ID after invoke_typed(ledger.post) in the committed-effect scenario: it reports no provider_operation, so the operation the effect created was not found by the original idempotency key',
    );
  });

  it('does not run the check for a connector that does not declare the lookup', async () => {
    const report = await runConformance(subject('ledger (by ID only)', () => undefined, false));
    expect(report.results.filter((r) => r.status === 'failed')).toEqual([]);
    expect(report.results.find((r) => r.id === 'recovery_evidence')?.message).not.toContain('original idempotency key');
  });
});
