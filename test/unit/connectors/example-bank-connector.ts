/**
 * The worked example of docs/connector-authoring.md, kept compiling and
 * tested (authoring-example.test.ts). Keep the two in sync.
 */
import * as z from 'zod';
import { defineCapability, defineConnector, type CredentialProvider } from '../../../packages/connector-sdk/src/index.js';
import { downstreamIdempotencyKey } from '../../../lib/connectors/http/index.js';

/** The provider's client: `submit` answers with an operation ID at once and with the outcome later. */
export interface BankClient {
  submit(
    transfer: { to_account: string; amount_cents: number; currency: string },
    auth: { api_key: string; idempotency_key: string },
  ): Promise<{ operation_id: string; outcome: Promise<{ state: 'settled' | 'pending' }> }>;
  lookup(operation_id: string, auth: { api_key: string }): Promise<{ state: 'settled' | 'pending' | 'rejected' | 'unknown' }>;
}

const TransferInput = z.strictObject({
  to_account: z.string().min(1),
  amount_cents: z.int().positive(),
  currency: z.enum(['EUR', 'USD']),
});
const TransferOutput = z.strictObject({
  transfer_id: z.string(),
  state: z.enum(['settled', 'pending']),
});

export function bankConnector(bank: BankClient, credentials: CredentialProvider) {
  const transfer = defineCapability({
    id: 'bank.transfer',
    description: 'Move money to another account',
    input: TransferInput,
    output: TransferOutput,
    contract: {
      execution: { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 10_000 },
      transaction: { modes: ['execute', 'rollback_not_supported', 'reconcile'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: false },
      credentials: { required: true, kind: 'api_key' },
    },
  }).implement({
    async invoke(input, ctx, call) {
      // 1. The provider's idempotency key derives from the runtime's reservation
      //    (ctx.idempotency.reservation_id), never from the caller's raw key.
      //    Use the secret only while building the request.
      const idempotency_key = downstreamIdempotencyKey(call.action, ctx, 'bank');
      const submitted = await call.withSecret((secret) => secret.withUtf8((api_key) => bank.submit(input, { api_key, idempotency_key })));
      // 2. The provider accepted work: make its operation ID durable BEFORE
      //    awaiting a response that may be lost. `ctx.can_checkpoint` is true
      //    exactly when a checkpoint is possible: `execute` here, not a plain
      //    invocation nor `rollback_not_supported` (no transaction record).
      if (ctx.can_checkpoint) {
        await ctx.transaction_checkpoint.checkpoint({ provider: 'bank', operation_id: submitted.operation_id });
      }
      // 3. Now wait for the outcome, bounded by the deadline minus a margin: at
      //    the margin the SDK fails with a typed, uncertain `sla.timeout_exceeded`
      //    carrying the checkpointed operation. A lost response leaves a
      //    reconcilable operation behind.
      const outcome = await call.withinDeadline(submitted.outcome, { margin_ms: 500 });
      ctx.execution_checkpoints.provider_effect_committed();
      return { transfer_id: submitted.operation_id, state: outcome.state };
    },

    async reconcile(_input, ctx, call) {
      // dispatch guarantees a transaction and a durable provider operation ID here.
      const operation_id = ctx.transaction?.provider_operation_id ?? '';
      const found = await call.withSecret((secret) => secret.withUtf8((api_key) => bank.lookup(operation_id, { api_key })));
      switch (found.state) {
        case 'settled':
        case 'pending':
          return {
            terminal: true,
            original_commit_completed: true,
            output: { transfer_id: operation_id, state: found.state },
            evidence: { provider_state: found.state },
          };
        case 'rejected':
          return { terminal: true, original_commit_completed: false, evidence: { provider_state: 'rejected' } };
        case 'unknown':
          return { terminal: false, evidence: { provider_state: 'unknown' } };
      }
    },
  });

  return defineConnector({ id: 'bank', version: '1.0.0', credentials, capabilities: [transfer] });
}
