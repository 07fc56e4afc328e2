import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EnvCredentialProvider, admitConnector, type TransactionCheckpointWriter } from '../../../packages/connector-sdk/src/index.js';
import { runAttempt, type AttemptRequest } from '../../../lib/runtime/attempts/deadline.js';
import type { ProviderOperationRef } from '../../../packages/connector-sdk/src/protocol/index.js';
import { bankConnector, type BankClient } from './example-bank-connector.js';
import { T0, action, trusted } from './fixtures.js';

/** A provider stand-in that accepts the transfer and then loses the response. */
class LossyBank implements BankClient {
  readonly ledger = new Map<string, { state: 'settled'; idempotency_key: string }>();
  readonly keysSeen: string[] = [];
  async submit(_t: unknown, auth: { api_key: string; idempotency_key: string }) {
    this.keysSeen.push(auth.api_key);
    const operation_id = `op-${this.ledger.size + 1}`;
    this.ledger.set(operation_id, { state: 'settled', idempotency_key: auth.idempotency_key });
    return { operation_id, outcome: new Promise<{ state: 'settled' }>(() => undefined) };
  }
  async lookup(operation_id: string) {
    return { state: this.ledger.get(operation_id)?.state ?? ('unknown' as const) };
  }
}

const credentials = new EnvCredentialProvider({
  connector_id: 'bank',
  env: { BANK_KEY: 'bank_live_key' },
  references: [{ connector_id: 'bank', handle: 'payments/api_key', tenant_id: 'tenant-a', env: 'BANK_KEY' }],
});

beforeEach(() => vi.useFakeTimers({ now: T0 }));
afterEach(() => vi.useRealTimers());

describe('the worked example of docs/connector-authoring.md', () => {
  it('admits, checkpoints the provider operation before the lost response, and reconciles it', async () => {
    const bank = new LossyBank();
    const connector = bankConnector(bank, credentials);
    const report = await admitConnector(connector);
    expect(report.admitted).toBe(true);
    const admitted = report.capabilities[0]!;

    const checkpoints: { provider_operation: ProviderOperationRef }[] = [];
    const writer: TransactionCheckpointWriter = { checkpoint: async (c) => void checkpoints.push(c) };
    const { action_id: _a, capability_id: _c, deadline_at: _d, streaming: _s, ...rest } = trusted({ capability_id: 'bank.transfer' });
    const base = (mode: 'execute' | 'reconcile', provider_operation?: ProviderOperationRef): AttemptRequest => ({
      connector,
      capability: admitted.capability,
      support: admitted.implementation_support,
      action: action({
        capability_id: 'bank.transfer',
        input: { to_account: 'DE02', amount_cents: 500, currency: 'EUR' },
        transaction: { mode, transaction_id: 'tx-1' },
      }),
      trusted: { ...rest, transaction: { transaction_id: 'tx-1', mode, ...(provider_operation ? { provider_operation } : {}) } },
      facilities: { transaction_checkpoints: writer },
    });

    // execute: the bank commits but the response never comes back. The connector stops waiting 500 ms
    // before the deadline (call.withinDeadline) and reports the lost wait itself, before the runtime's timer.
    const running = runAttempt(base('execute'));
    await vi.advanceTimersByTimeAsync(9_500);
    const first = await running;
    expect(first).toMatchObject({
      ok: false,
      timed_out: false,
      error: {
        code: 'sla.timeout_exceeded',
        source: 'connector:bank',
        uncertain_outcome: true,
        retryable: false,
        provider_operation: { provider: 'bank', operation_id: 'op-1' },
        details: { margin_ms: 500 },
      },
    });
    expect(checkpoints).toEqual([{ transaction_id: 'tx-1', provider_operation: { provider: 'bank', operation_id: 'op-1' } }]);
    expect(JSON.stringify(first)).not.toContain('bank_live_key');
    expect(bank.keysSeen).toEqual(['bank_live_key']);

    // reconcile: the runtime recovers the operation from the record and asks the bank.
    const second = await runAttempt(base('reconcile', { provider: 'bank', operation_id: 'op-1' }));
    expect(second).toMatchObject({
      ok: true,
      reconciliation: { terminal: true, original_commit_completed: true },
      result: { output: { transfer_id: 'op-1', state: 'settled' } },
    });
    expect(bank.ledger.size).toBe(1);
  });

  it("the guide's checkpoint guard holds in both modes: execute checkpoints, rollback_not_supported runs without a checkpoint", async () => {
    const connector = bankConnector(new SettlingBank(), credentials);
    const admitted = (await admitConnector(connector)).capabilities[0]!;
    const { action_id: _a, capability_id: _c, deadline_at: _d, streaming: _s, ...rest } = trusted({ capability_id: 'bank.transfer' });
    for (const mode of ['execute', 'rollback_not_supported'] as const) {
      const checkpoints: unknown[] = [];
      const outcome = await runAttempt({
        connector,
        capability: admitted.capability,
        support: admitted.implementation_support,
        action: action({
          capability_id: 'bank.transfer',
          input: { to_account: 'DE02', amount_cents: 500, currency: 'EUR' },
          transaction: { mode, transaction_id: `tx-${mode}` },
        }),
        trusted: { ...rest, transaction: { transaction_id: `tx-${mode}`, mode } },
        facilities: { transaction_checkpoints: { checkpoint: async (c) => void checkpoints.push(c) } },
      });
      expect(outcome, mode).toMatchObject({ ok: true, result: { status: 'completed', output: { transfer_id: 'op-1', state: 'settled' } } });
      expect(checkpoints.length, mode).toBe(mode === 'execute' ? 1 : 0);
    }
  });
});

/** A provider stand-in that settles at once. */
class SettlingBank implements BankClient {
  async submit() {
    return { operation_id: 'op-1', outcome: Promise.resolve({ state: 'settled' as const }) };
  }
  async lookup() {
    return { state: 'settled' as const };
  }
}
