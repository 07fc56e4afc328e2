/**
 * The conformance subject for the payments reference connector (the
 * declarative HTTP connector configured for the payments simulator). The
 * kit's planted secret becomes the simulator's only API key; scenarios use
 * the simulator's fault rules and events (no sleeps); the simulator tells the
 * kit what it observes (ledger, pending operations, key rotation, the
 * idempotency keys it was sent).
 */
import type { Action, JsonObject } from '../../packages/connector-sdk/src/protocol/index.js';
import type { ConformanceInstance, ConformanceSubject } from '../../packages/connector-sdk/src/conformance/index.js';
import { createPaymentsConnector, DEFAULT_PAYMENTS_CREDENTIAL_HANDLE } from '../../lib/connectors/reference/payments.js';
import { startPaymentsSimulator } from '../../dev/payments-simulator/server.js';

/** The CLI's module contract: `npx aip-conformance test/support/payments-conformance-subject.ts`. */
export default function paymentsConformanceSubject(): ConformanceSubject {
  return {
    name: 'payments (declarative HTTP connector over the payments simulator)',
    credential_handle: DEFAULT_PAYMENTS_CREDENTIAL_HANDLE,
    async setup(env): Promise<ConformanceInstance> {
      const sim = await startPaymentsSimulator({ apiKeys: [env.secret], seed: 7 });
      // Completion polls are never needed twice here: the first poll is the one a scenario holds.
      const connector = createPaymentsConnector({ baseUrl: sim.url, credentials: env.credentials, logger: env.log, pollIntervalMs: 60_000 });
      // The authority the provider was presented with: the idempotency key of every request that carried one.
      const received: { idempotency_key: string }[] = [];
      sim.onEvent((e) => {
        if (e.type === 'response' && e.idempotency_key !== undefined) received.push({ idempotency_key: e.idempotency_key });
      });
      let n = 0;
      const charge = (mode: 'commit' | 'execute'): Action => {
        n += 1;
        return {
          id: `payments-conformance-${n}`,
          capability_id: 'payments.charge',
          input: { amount: 1000 + n, currency: 'eur', customer: 'cus_conformance' },
          idempotency_key: `payments-conformance-key-${n}`,
          transaction: { mode, transaction_id: `payments-conformance-tx-${n}`, ...(mode === 'commit' ? { plan_id: `plan:payments-conformance-tx-${n}` } : {}) },
        };
      };
      const settle = async (): Promise<void> => {
        sim.setFaults([]);
        sim.releaseDelays();
        await sim.idle();
      };
      return {
        connector,
        provider: {
          effects: () => sim.ledger().length,
          settle,
          isPending: (ref) => sim.operation(ref.operation_id)?.status === 'pending',
          rotateSecret: (next) => sim.setApiKeys([next]),
          received: () => received,
        },
        sampleInput(capability_id, method): JsonObject {
          if (capability_id === 'payments.charge' && method !== 'compensate_typed') return { amount: 100, currency: 'eur' };
          return { charge_id: 'ch_conformance' };
        },
        scenarios: {
          async uncertainCommit() {
            // The provider accepts the charge as pending (an operation ID exists); the completion poll is held.
            sim.setFaults([
              { match: { method: 'POST', path: '/v1/charges' }, fault: 'pending' },
              { match: { method: 'GET', path: '/v1/operations/*' }, fault: { type: 'latency', ms: 600_000, phase: 'after_commit' } },
            ]);
            const waiting = sim.waitForEvent((e) => e.type === 'fault_applied' && e.method === 'GET').then(() => undefined);
            return {
              action: charge('commit'),
              waiting,
              expect_provider_request_id: true,
              verifyOperation: (ref) => (sim.operation(ref.operation_id)?.kind === 'charge' ? undefined : 'the simulator has no such charge operation'),
              cleanup: settle,
            };
          },
          async lostResponse() {
            sim.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: 'drop_after_commit' }]);
            return { action: charge('commit'), cleanup: settle };
          },
          async committedEffect() {
            const before = sim.ledger().length;
            return { action: charge('commit'), effectRecorded: () => sim.ledger().length === before + 1, cleanup: settle };
          },
          async rejectedBeforeEffect() {
            sim.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: 'error_before_commit' }]);
            return { action: charge('commit'), cleanup: settle };
          },
          async retry() {
            const before = sim.ledger().length;
            sim.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: 'drop_after_commit' }]);
            return {
              action: charge('execute'),
              verify: () => {
                const entries = sim.ledger().slice(before);
                if (entries.length !== 1) return `the provider ledger holds ${entries.length} effects after two attempts of one action`;
                return undefined;
              },
              cleanup: settle,
            };
          },
        },
        dispose: () => sim.stop(),
      };
    },
  };
}
