/**
 * Shared builders for the connector SDK tests (not a test file).
 */
import type { Action, Capability } from '../../../packages/connector-sdk/src/protocol/index.js';
import { credentialHandle, type ExecutionAttempt, type ExecutionFacilities, type TrustedAttemptState } from '../../../packages/connector-sdk/src/index.js';
import { createExecutionContext } from '../../../packages/connector-sdk/src/host.js';
import type { SequencedStreamChunk } from '../../../packages/connector-sdk/src/index.js';

export const T0 = new Date('2030-01-01T00:00:00.000Z');

export function trusted(overrides: Partial<TrustedAttemptState> = {}): TrustedAttemptState {
  return {
    action_id: 'act-1',
    attempt_id: 'att-1',
    capability_id: 'payments.charge',
    actor: {
      principal: { id: 'user-1', kind: 'user' },
      issuer: 'https://issuer.example',
      scheme: 'bearer_jwt',
      scopes: ['payments:write'],
      lifetime: { issued_at: new Date(T0.getTime() - 60_000), expires_at: new Date(T0.getTime() + 3_600_000) },
    },
    tenant: { tenant_id: 'tenant-a', external_account_id: 'acct-1' },
    credential: credentialHandle('payments/api_key'),
    deadline_at: new Date(T0.getTime() + 30_000),
    idempotency: { key: 'idem-1', reservation_id: 'res-1', attempt_id: 'att-1' },
    approval: {
      approval_ids: ['appr-1'],
      decision_ids: ['dec-1'],
      policy_hashes: ['a'.repeat(64)],
      authorization: { decision: 'allow', scopes: ['payments:write'], policy_id: 'pol-1' },
    },
    trace: { trace_id: 'trace-1', span_id: 'span-1' },
    redaction: { redaction_required: true, input_pointers: ['/card'], output_pointers: [] },
    streaming: false,
    ...overrides,
  };
}

export function attempt(overrides: Partial<TrustedAttemptState> = {}, facilities: ExecutionFacilities = {}): ExecutionAttempt {
  return createExecutionContext(trusted(overrides), facilities);
}

export function action(overrides: Partial<Action> = {}): Action {
  return { id: 'act-1', capability_id: 'payments.charge', input: { amount: 100, currency: 'EUR' }, ...overrides };
}

export function capability(overrides: Partial<Capability> = {}): Capability {
  return {
    id: 'payments.charge',
    kind: 'tool',
    input_schema: { type: 'object' },
    ...overrides,
  };
}

export function execution(overrides: Partial<NonNullable<Capability['execution']>> = {}): NonNullable<Capability['execution']> {
  return { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 1_000, ...overrides };
}

/** A stream sink that records chunks and whose writes complete only when the test says so. */
export class ControlledSink {
  readonly written: SequencedStreamChunk[] = [];
  readonly pending: { chunk: SequencedStreamChunk; resolve: () => void; reject: (e: unknown) => void }[] = [];
  inFlight = 0;
  maxInFlight = 0;

  write(chunk: SequencedStreamChunk): Promise<void> {
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    return new Promise<void>((resolve, reject) => {
      this.pending.push({
        chunk,
        resolve: () => {
          this.inFlight -= 1;
          this.written.push(chunk);
          resolve();
        },
        reject: (e) => {
          this.inFlight -= 1;
          reject(e);
        },
      });
    });
  }
}

/** A sink that persists immediately. */
export class MemorySink {
  readonly written: SequencedStreamChunk[] = [];
  async write(chunk: SequencedStreamChunk): Promise<void> {
    this.written.push(chunk);
  }
}

/** Lets queued microtasks run (no timers involved). */
export async function flushMicrotasks(rounds = 10): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}
