import { describe, expect, it } from 'vitest';
import {
  CONNECTOR_OPERATIONS,
  CONNECTOR_OPERATION_GROUPS,
  IMPLEMENTATION_FLAGS,
  ImplementationSupportSchema,
  OPTIONAL_TYPED_METHODS,
  TYPED_METHOD_OPERATION,
  implementationSupport,
  isConnectorOperation,
} from '../../../packages/connector-sdk/src/index.js';

describe('ConnectorOperation values', () => {
  it('are exactly the twelve serialized values of the page', () => {
    expect([...CONNECTOR_OPERATIONS]).toEqual([
      'discovery',
      'admission',
      'health',
      'invocation',
      'cancellation',
      'streaming',
      'transaction_plan',
      'transaction_commit',
      'reconciliation',
      'compensation',
      'emission',
      'ingestion',
    ]);
  });

  it('fall into the four groups of the page, each value in exactly one group', () => {
    const grouped = Object.values(CONNECTOR_OPERATION_GROUPS).flat();
    expect(grouped.sort()).toEqual([...CONNECTOR_OPERATIONS].sort());
  });

  it('recognises only the twelve values', () => {
    expect(isConnectorOperation('invocation')).toBe(true);
    expect(isConnectorOperation('invoke')).toBe(false);
    expect(isConnectorOperation(undefined)).toBe(false);
  });

  it('map each typed method to its operation, with seven optional methods besides invoke_typed', () => {
    expect(TYPED_METHOD_OPERATION).toEqual({
      invoke_typed: 'invocation',
      plan_typed: 'transaction_plan',
      commit_typed: 'transaction_commit',
      compensate_typed: 'compensation',
      cancel_typed: 'cancellation',
      reconcile_typed: 'reconciliation',
      emit_typed: 'emission',
      ingest_typed: 'ingestion',
    });
    expect(OPTIONAL_TYPED_METHODS).toHaveLength(7);
    expect(OPTIONAL_TYPED_METHODS).not.toContain('invoke_typed');
  });
});

describe('implementation support flags', () => {
  it('are exactly the nine independent flags of the page', () => {
    expect([...IMPLEMENTATION_FLAGS]).toEqual([
      'invocation',
      'cancellation',
      'streaming',
      'retry',
      'transaction',
      'reconciliation',
      'compensation',
      'approval',
      'credentials',
    ]);
  });

  it('build a frozen record with all nine, unspecified flags false', () => {
    const s = implementationSupport({ invocation: true, retry: true });
    expect(Object.keys(s)).toEqual([...IMPLEMENTATION_FLAGS]);
    expect(s.invocation && s.retry).toBe(true);
    expect(s.cancellation || s.credentials).toBe(false);
    expect(Object.isFrozen(s)).toBe(true);
  });

  it('reject a record with a missing or an extra flag', () => {
    const full = implementationSupport();
    expect(ImplementationSupportSchema.safeParse(full).success).toBe(true);
    const { approval: _dropped, ...missing } = full;
    expect(ImplementationSupportSchema.safeParse(missing).success).toBe(false);
    expect(ImplementationSupportSchema.safeParse({ ...full, idempotency: true }).success).toBe(false);
  });
});
