import { Console } from 'node:console';
import { Writable } from 'node:stream';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { ManualClock } from '../../../packages/connector-sdk/src/ports/clock.js';
import {
  ActionExecutionContext,
  CONTEXT_REDACTED,
  type ProviderEffectCommittedEvent,
  type TransactionCheckpointWriter,
} from '../../../packages/connector-sdk/src/index.js';
import { createExecutionContext } from '../../../packages/connector-sdk/src/host.js';
import { T0, attempt, trusted } from './fixtures.js';

function recordingWriter(): TransactionCheckpointWriter & { calls: unknown[] } {
  const calls: unknown[] = [];
  return {
    calls,
    async checkpoint(input) {
      calls.push(input);
    },
  };
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('ActionExecutionContext construction', () => {
  it('cannot be constructed outside the runtime factory', () => {
    // @ts-expect-error the construction token is module-private
    const err = thrown(() => new ActionExecutionContext(Symbol('forged'), {}));
    expect(isAipError(err, 'internal.unexpected')).toBe(true);
  });

  it('carries every field of the page from trusted state', () => {
    const ctx = attempt(
      {
        transaction: {
          transaction_id: 'tx-1',
          mode: 'commit',
          plan_id: 'plan:tx-1',
          provider_operation: { provider: 'sim', operation_id: 'op-1' },
          cursor: 'c1',
        },
      },
      { transaction_checkpoints: recordingWriter() },
    ).context;
    expect(ctx.actor).toMatchObject({
      principal: { id: 'user-1', kind: 'user' },
      issuer: 'https://issuer.example',
      scheme: 'bearer_jwt',
      scopes: ['payments:write'],
    });
    expect(ctx.actor.lifetime.expires_at).toBeInstanceOf(Date);
    expect(ctx.tenant).toEqual({ tenant_id: 'tenant-a', external_account_id: 'acct-1' });
    expect(ctx.credential?.id).toBe('payments/api_key');
    expect(ctx.deadline.at).toEqual(new Date(T0.getTime() + 30_000));
    expect(ctx.cancellation).toBeInstanceOf(AbortSignal);
    expect(ctx.idempotency).toEqual({ key: 'idem-1', reservation_id: 'res-1', attempt_id: 'att-1' });
    expect(ctx.approval).toMatchObject({
      approval_ids: ['appr-1'],
      decision_ids: ['dec-1'],
      policy_hashes: ['a'.repeat(64)],
      authorization: { decision: 'allow' },
    });
    expect(ctx.transaction).toEqual({
      transaction_id: 'tx-1',
      mode: 'commit',
      plan_id: 'plan:tx-1',
      provider_operation_id: 'op-1',
      provider_operation: { provider: 'sim', operation_id: 'op-1' },
      cursor: 'c1',
    });
    expect(typeof ctx.transaction_checkpoint.checkpoint).toBe('function');
    expect(typeof ctx.execution_checkpoints.provider_effect_committed).toBe('function');
    expect(typeof ctx.stream.emit).toBe('function');
    expect(ctx.trace).toEqual({ trace_id: 'trace-1', span_id: 'span-1' });
    expect(ctx.redaction).toEqual({ redaction_required: true, input_pointers: ['/card'], output_pointers: [] });
  });

  it('is frozen and detached from the state it was built from', () => {
    const state = trusted();
    const ctx = createExecutionContext(state).context;
    (state.actor.scopes as string[]).push('admin');
    (state.tenant as { tenant_id: string }).tenant_id = 'tenant-evil';
    expect(ctx.actor.scopes).toEqual(['payments:write']);
    expect(ctx.tenant?.tenant_id).toBe('tenant-a');
    expect(Object.isFrozen(ctx)).toBe(true);
    expect(Object.isFrozen(ctx.actor.scopes)).toBe(true);
    expect(() => {
      (ctx as unknown as { tenant: unknown }).tenant = { tenant_id: 'x' };
    }).toThrow();
  });

  it('rejects a trusted state without a valid deadline', () => {
    expect(
      isAipError(
        thrown(() => createExecutionContext(trusted({ deadline_at: new Date('nope') }))),
        'internal.unexpected',
      ),
    ).toBe(true);
  });
});

describe('ActionExecutionContext is not serializable', () => {
  const ctx = attempt().context;

  it('JSON.stringify throws a typed error', () => {
    expect(
      isAipError(
        thrown(() => JSON.stringify(ctx)),
        'connector.context_not_serializable',
      ),
    ).toBe(true);
    expect(
      isAipError(
        thrown(() => JSON.stringify({ payload: { ctx } })),
        'connector.context_not_serializable',
      ),
    ).toBe(true);
  });

  it('structuredClone throws a DataCloneError', () => {
    expect(thrown(() => structuredClone(ctx))).toMatchObject({ name: 'DataCloneError' });
  });

  it('util.inspect and console.log show only a redacted marker', () => {
    expect(inspect(ctx)).toBe(CONTEXT_REDACTED);
    expect(inspect({ ctx }, { depth: 10, showHidden: true })).not.toMatch(/tenant-a|payments\/api_key|idem-1|user-1/);
    expect(`${ctx}`).toBe(CONTEXT_REDACTED);
    let out = '';
    const c = new Console({ stdout: new Writable({ write: (chunk, _e, cb) => ((out += String(chunk)), cb()) }) });
    c.log(ctx);
    c.dir(ctx, { showHidden: true, depth: 10 });
    expect(out).toContain('[REDACTED]');
    expect(out).not.toMatch(/tenant-a|payments\/api_key|idem-1|user-1|appr-1/);
  });
});

describe('deadline and cancellation', () => {
  it('computes remaining time from the clock and never goes negative', () => {
    const clock = new ManualClock(T0);
    const ctx = attempt({}, { clock }).context;
    expect(ctx.deadline.remaining_ms()).toBe(30_000);
    clock.advance(12_500);
    expect(ctx.deadline.remaining_ms()).toBe(17_500);
    clock.advance(60_000);
    expect(ctx.deadline.remaining_ms()).toBe(0);
  });

  it('cancels cooperatively from the attempt handle or a parent signal', () => {
    const a = attempt();
    expect(a.context.cancellation.aborted).toBe(false);
    a.cancel('client_cancelled');
    expect(a.context.cancellation.aborted).toBe(true);
    expect(a.context.cancellation.reason).toBe('client_cancelled');

    const parent = new AbortController();
    const b = attempt({}, { parent_signal: parent.signal });
    parent.abort('shutdown');
    expect(b.context.cancellation.reason).toBe('shutdown');
  });
});

describe('transaction_checkpoint', () => {
  it('is unavailable outside a transactional action: reading it throws a typed error', () => {
    for (const ctx of [
      attempt().context,
      attempt({ transaction: { transaction_id: 'tx-1', mode: 'plan' } }).context,
      attempt({ transaction: { transaction_id: 'tx-1', mode: 'dry_run' } }).context,
    ]) {
      expect(
        isAipError(
          thrown(() => ctx.transaction_checkpoint),
          'connector.transaction_checkpoint_unavailable',
        ),
      ).toBe(true);
      expect(
        isAipError(
          thrown(() => ctx.transaction_checkpoint.checkpoint({ provider: 'p', operation_id: 'o' })),
          'connector.transaction_checkpoint_unavailable',
        ),
      ).toBe(true);
    }
  });

  it('publishes the provider operation and cursor to the durable writer, and the attempt remembers it', async () => {
    const writer = recordingWriter();
    const a = attempt({ transaction: { transaction_id: 'tx-1', mode: 'commit' } }, { transaction_checkpoints: writer });
    await a.context.transaction_checkpoint.checkpoint({ provider: 'sim', operation_id: 'op-9', request_id: 'r-1' }, 'cursor-1');
    expect(writer.calls).toEqual([
      { transaction_id: 'tx-1', provider_operation: { provider: 'sim', operation_id: 'op-9', request_id: 'r-1' }, reconciliation_cursor: 'cursor-1' },
    ]);
    expect(a.provider_operation).toEqual({ provider: 'sim', operation_id: 'op-9', request_id: 'r-1' });
    expect(a.reconciliation_cursor).toBe('cursor-1');
  });

  it('rejects an empty reference and a different reference than the one already checkpointed', async () => {
    const writer = recordingWriter();
    const a = attempt(
      { transaction: { transaction_id: 'tx-1', mode: 'reconcile', provider_operation: { provider: 'sim', operation_id: 'op-1' } } },
      { transaction_checkpoints: writer },
    );
    await expect(a.context.transaction_checkpoint.checkpoint({ provider: '', operation_id: 'x' })).rejects.toMatchObject({
      code: 'transaction.invalid_provider_operation',
    });
    await expect(a.context.transaction_checkpoint.checkpoint({ provider: 'sim', operation_id: 'op-2' })).rejects.toMatchObject({
      code: 'transaction.provider_operation_conflict',
    });
    await a.context.transaction_checkpoint.checkpoint({ provider: 'sim', operation_id: 'op-1' }, 'cursor-2');
    expect(writer.calls).toHaveLength(1);
  });

  it('the same operation again (a replay with its own request ID) keeps the durable reference: nothing written, or only a new cursor with it', async () => {
    const writer = recordingWriter();
    const known = { provider: 'sim', operation_id: 'op-1', request_id: 'req-1' };
    const a = attempt({ transaction: { transaction_id: 'tx-1', mode: 'execute', provider_operation: known } }, { transaction_checkpoints: writer });
    await a.context.transaction_checkpoint.checkpoint({ provider: 'sim', operation_id: 'op-1', request_id: 'req-2' });
    expect(writer.calls).toEqual([]);
    await a.context.transaction_checkpoint.checkpoint({ provider: 'sim', operation_id: 'op-1', request_id: 'req-3' }, 'cursor-2');
    expect(writer.calls).toEqual([{ transaction_id: 'tx-1', provider_operation: known, reconciliation_cursor: 'cursor-2' }]);
    expect(a.provider_operation).toEqual(known);
    expect(a.reconciliation_cursor).toBe('cursor-2');
  });

  it('requires the runtime to supply a writer for a transactional attempt', () => {
    expect(
      isAipError(
        thrown(() => attempt({ transaction: { transaction_id: 'tx-1', mode: 'execute' } })),
        'internal.unexpected',
      ),
    ).toBe(true);
  });
});

describe('execution_checkpoints.provider_effect_committed', () => {
  it('notifies the installed observer with attempt identifiers only, and swallows observer failures', () => {
    const events: ProviderEffectCommittedEvent[] = [];
    const clock = new ManualClock(T0);
    const a = attempt(
      { transaction: { transaction_id: 'tx-1', mode: 'execute' } },
      { clock, transaction_checkpoints: recordingWriter(), provider_effect_observer: { provider_effect_committed: (e) => events.push(e) } },
    );
    expect(a.context.execution_checkpoints.provider_effect_committed()).toBeUndefined();
    expect(events).toEqual([{ action_id: 'act-1', attempt_id: 'att-1', capability_id: 'payments.charge', transaction_id: 'tx-1', at: T0 }]);
    expect(a.provider_effect_committed).toBe(true);

    const b = attempt(
      {},
      {
        provider_effect_observer: {
          provider_effect_committed: () => {
            throw new Error('observer down');
          },
        },
      },
    );
    expect(() => b.context.execution_checkpoints.provider_effect_committed()).not.toThrow();
    expect(b.provider_effect_committed).toBe(true);
  });

  it('works without an observer (the notification is process-local)', () => {
    const a = attempt();
    a.context.execution_checkpoints.provider_effect_committed();
    expect(a.provider_effect_committed).toBe(true);
  });
});
