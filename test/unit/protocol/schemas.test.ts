import { describe, expect, it } from 'vitest';
import {
  ActionResultSchema,
  ActionSchema,
  ActionStatusSchema,
  CapabilitySchema,
  CompensationContractSchema,
  DataContractSchema,
  DryRunFidelitySchema,
  IdSchema,
  IdentityContextSchema,
  PrincipalSchema,
  ProtocolErrorSchema,
  ProviderOperationRefSchema,
  ReceiptSchema,
  TransactionContractSchema,
  TransactionModeSchema,
  TransactionPlanSchema,
  TransactionProtocolStatusSchema,
  TransactionRequestSchema,
  TransactionResultSchema,
  GENESIS_RECEIPT_HASH,
  ID_MAX_LENGTH,
  TRANSACTION_ID_MAX_LENGTH,
  defaultPlanId,
  planInputHash,
  receiptHash,
} from '../../../packages/connector-sdk/src/protocol/index.js';
import { DURABLE_TRANSACTION_STATUSES, TRANSACTION_MODES } from '../../../lib/transactions/status.js';

describe('IdSchema', () => {
  it.each(['a', 'tx-1', 'plan:tx-1', 'user@example.com', 'cap/payments.refund', 'A_b.c:d@e/f-g', 'x'.repeat(ID_MAX_LENGTH)])('accepts %s', (id) =>
    expect(IdSchema.safeParse(id).success).toBe(true),
  );
  it.each(['', 'a b', 'a#b', 'a\nb', 'a\tb', 'a\u0000b', 'é', 'x'.repeat(ID_MAX_LENGTH + 1), 'a?b', 'a%b'])('rejects %j', (id) =>
    expect(IdSchema.safeParse(id).success).toBe(false),
  );
  it('rejects non-strings', () => {
    for (const v of [1, null, undefined, {}, ['a']]) expect(IdSchema.safeParse(v).success).toBe(false);
  });
  it('the default plan ID of the longest transaction ID is still a valid ID', () => {
    const tx = 't'.repeat(TRANSACTION_ID_MAX_LENGTH);
    expect(defaultPlanId(tx)).toBe(`plan:${tx}`);
    expect(IdSchema.safeParse(defaultPlanId(tx)).success).toBe(true);
    expect(TransactionRequestSchema.shape.transaction_id.safeParse(`${tx}t`).success).toBe(false);
  });
});

describe('enumerations quote the pages exactly', () => {
  it('transaction modes are the seven modes', () => {
    expect(TransactionModeSchema.options).toEqual([...TRANSACTION_MODES]);
    expect(TransactionModeSchema.options).toHaveLength(7);
  });
  it('wire status is the twelve durable statuses plus requires_human and cancelled', () => {
    expect(TransactionProtocolStatusSchema.options).toEqual([...DURABLE_TRANSACTION_STATUSES, 'requires_human', 'cancelled']);
    expect(TransactionProtocolStatusSchema.options).toHaveLength(14);
  });
  it('dry-run fidelity levels, weakest first', () => {
    expect(DryRunFidelitySchema.options).toEqual(['schema_only', 'policy_and_schema', 'downstream_validation', 'full_simulation']);
  });
  it('action statuses', () => {
    expect(ActionStatusSchema.options).toEqual(['accepted', 'running', 'requires_human', 'completed', 'failed', 'cancelled']);
  });
});

describe('Principal and IdentityContext', () => {
  it('accepts a principal and rejects unknown kinds and fields', () => {
    expect(PrincipalSchema.parse({ id: 'u1', kind: 'user' })).toEqual({ id: 'u1', kind: 'user' });
    expect(PrincipalSchema.safeParse({ id: 'u1', kind: 'robot' }).success).toBe(false);
    expect(PrincipalSchema.safeParse({ id: 'u1', kind: 'user', role: 'admin' }).success).toBe(false);
  });
  it('identity context is a closed set of optional fields', () => {
    expect(IdentityContextSchema.parse({})).toEqual({});
    expect(IdentityContextSchema.parse({ tenant_id: 't1', external_account_id: 'acct_1' })).toEqual({
      tenant_id: 't1',
      external_account_id: 'acct_1',
    });
    expect(IdentityContextSchema.safeParse({ tenant_id: 't1', password: 'x' }).success).toBe(false);
  });
});

describe('ActionSchema', () => {
  const base = { id: 'a1', capability_id: 'payments.refund', input: { amount: 10 } };
  it('accepts a minimal and a full action', () => {
    expect(ActionSchema.parse(base)).toEqual(base);
    const full = {
      ...base,
      idempotency_key: 'key-1',
      identity: { tenant_id: 't1' },
      metadata: { observability: { trace_id: 'abc', span_id: 'def', original_completed_at: '2025-01-02T03:04:05.678+02:00' }, labels: { env: 'test' } },
      transaction: { mode: 'commit', transaction_id: 'tx1', plan_id: 'plan:tx1' },
    };
    expect(ActionSchema.parse(full)).toEqual(full);
  });
  it('rejects unknown fields at every level of the envelope', () => {
    expect(ActionSchema.safeParse({ ...base, extra: 1 }).success).toBe(false);
    expect(ActionSchema.safeParse({ ...base, transaction: { mode: 'plan', foo: 1 } }).success).toBe(false);
    expect(ActionSchema.safeParse({ ...base, metadata: { observability: { trace_id: 'a', baggage: 'x' } } }).success).toBe(false);
    expect(ActionSchema.safeParse({ ...base, metadata: { other: 1 } }).success).toBe(false);
  });
  it('input must be a JSON object', () => {
    for (const input of [[], 'x', 1, null, undefined, { d: new Date() }, { n: Number.NaN }, { f: () => 1 }]) {
      expect(ActionSchema.safeParse({ ...base, input }).success).toBe(false);
    }
  });
  it('rejects an unknown mode and a non RFC 3339 timestamp', () => {
    expect(ActionSchema.safeParse({ ...base, transaction: { mode: 'rollback' } }).success).toBe(false);
    expect(ActionSchema.safeParse({ ...base, metadata: { observability: { original_completed_at: '2025-01-02 03:04' } } }).success).toBe(false);
  });
  it('the structural schema does not itself apply the commit rule (direct runtime calls bypass it)', () => {
    expect(ActionSchema.safeParse({ ...base, transaction: { mode: 'commit' } }).success).toBe(true);
  });
});

describe('ProtocolError and ActionResult', () => {
  const err = { code: 'sla.timeout_exceeded', message: 'timed out', category: 'timeout', retryable: false };
  it('accepts the twelve-field failure shape (minus operation) with provider fields', () => {
    const full = {
      ...err,
      retry_after_ms: 5000,
      provider_request_id: 'req_1',
      provider_operation: { provider: 'stripe', operation_id: 'op_1', request_id: 'req_1' },
      remote_status: 504,
      uncertain_outcome: true,
      details: { uncertain_outcome: true },
      source: 'connector.payments',
    };
    expect(ProtocolErrorSchema.parse(full)).toEqual(full);
  });
  it.each(['timeout', 'Sla.timeout', 'sla.', '.x', 'sla..x', 'sla.timeout-exceeded', 'sla timeout'])('rejects code %j', (code) =>
    expect(ProtocolErrorSchema.safeParse({ ...err, code }).success).toBe(false),
  );
  it('rejects unknown categories and fields', () => {
    expect(ProtocolErrorSchema.safeParse({ ...err, category: 'oops' }).success).toBe(false);
    expect(ProtocolErrorSchema.safeParse({ ...err, stack: 'x' }).success).toBe(false);
  });
  it('a failed result needs an error; a completed one has none', () => {
    expect(ActionResultSchema.safeParse({ action_id: 'a1', status: 'completed', output: { ok: true } }).success).toBe(true);
    expect(ActionResultSchema.safeParse({ action_id: 'a1', status: 'failed', error: err }).success).toBe(true);
    expect(ActionResultSchema.safeParse({ action_id: 'a1', status: 'failed' }).success).toBe(false);
    expect(ActionResultSchema.safeParse({ action_id: 'a1', status: 'completed', error: err }).success).toBe(false);
    expect(ActionResultSchema.safeParse({ action_id: 'a1', status: 'completed', replayed: true, completed_at: '2025-01-01T00:00:00Z' }).success).toBe(true);
  });
});

describe('ProviderOperationRef', () => {
  it('provider and operation ID must be non-empty', () => {
    expect(ProviderOperationRefSchema.safeParse({ provider: 'p', operation_id: 'o' }).success).toBe(true);
    expect(ProviderOperationRefSchema.safeParse({ provider: '', operation_id: 'o' }).success).toBe(false);
    expect(ProviderOperationRefSchema.safeParse({ provider: 'p', operation_id: '' }).success).toBe(false);
    expect(ProviderOperationRefSchema.safeParse({ provider: 'p', operation_id: '   ' }).success).toBe(false);
    expect(ProviderOperationRefSchema.safeParse({ provider: 'p' }).success).toBe(false);
  });
});

describe('capability contracts', () => {
  it('TransactionContract has exactly three declarations', () => {
    const c = { modes: ['plan', 'commit'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true };
    expect(TransactionContractSchema.parse(c)).toEqual(c);
    expect(Object.keys(TransactionContractSchema.shape).sort()).toEqual(['dry_run_fidelity', 'modes', 'requires_plan_before_commit']);
    expect(TransactionContractSchema.safeParse({ ...c, compensation: 'supported' }).success).toBe(false);
    expect(TransactionContractSchema.safeParse({ ...c, modes: [] }).success).toBe(false);
    expect(TransactionContractSchema.safeParse({ ...c, modes: ['plan', 'plan'] }).success).toBe(false);
    expect(TransactionContractSchema.safeParse({ modes: ['plan'], dry_run_fidelity: 'schema_only' }).success).toBe(false);
  });
  it('CompensationContract: four modes, optional capability and window, approval flag', () => {
    for (const mode of ['not_required', 'supported', 'best_effort', 'rollback_not_supported']) {
      expect(CompensationContractSchema.safeParse({ mode, approval_required: false }).success).toBe(true);
    }
    expect(
      CompensationContractSchema.safeParse({ mode: 'supported', compensation_capability_id: 'payments.refund', window_ms: 86_400_000, approval_required: true })
        .success,
    ).toBe(true);
    expect(CompensationContractSchema.safeParse({ mode: 'supported', window_ms: 0, approval_required: true }).success).toBe(false);
    expect(CompensationContractSchema.safeParse({ mode: 'maybe', approval_required: true }).success).toBe(false);
  });
  it('DataContract redact pointers are RFC 6901 pointers', () => {
    expect(DataContractSchema.safeParse({ redaction_required: true, redact_pointers: ['', '/card/number', '/a~1b/~0c'] }).success).toBe(true);
    expect(DataContractSchema.safeParse({ redaction_required: true, redact_pointers: ['card/number'] }).success).toBe(false);
    expect(DataContractSchema.safeParse({ redaction_required: true, redact_pointers: ['/a~2'] }).success).toBe(false);
  });
  it('accepts a full capability and rejects unknown fields', () => {
    const cap = {
      id: 'payments.charge',
      kind: 'tool',
      description: 'Charge a card',
      input_schema: { type: 'object', properties: { amount: { type: 'integer' } }, required: ['amount'] },
      output_schema: { type: 'object' },
      transaction: { modes: ['dry_run', 'plan', 'commit', 'reconcile'], dry_run_fidelity: 'downstream_validation', requires_plan_before_commit: true },
      compensation: { mode: 'supported', compensation_capability_id: 'payments.refund', window_ms: 3_600_000, approval_required: true },
      data: { redaction_required: true, redact_pointers: ['/card'], retention_days: 30 },
      execution: { supports_cancel: false, supports_streaming: false, supports_retry: true, timeout_ms: 30_000 },
      approval: { required: true, policy_id: 'pol-1', approver_scopes: ['payments:approve'], allow_self_approval: false },
      credentials: { required: true, kind: 'api_key', scopes: ['charges:write'] },
      idempotency: { required: true, downstream_idempotent: true },
      authorization: { scopes: ['payments:charge'] },
    };
    expect(CapabilitySchema.parse(cap)).toEqual(cap);
    expect(CapabilitySchema.safeParse({ ...cap, kind: 'prompt' }).success).toBe(false);
    expect(CapabilitySchema.safeParse({ ...cap, secret: 'x' }).success).toBe(false);
    expect(CapabilitySchema.safeParse({ ...cap, execution: { ...cap.execution, timeout_ms: 0 } }).success).toBe(false);
  });
});

describe('TransactionRequest, TransactionPlan, TransactionResult', () => {
  const action = { id: 'a1', capability_id: 'payments.charge', input: { amount: 5 }, transaction: { mode: 'plan' as const } };
  it('TransactionRequest requires transaction_id and requested_by', () => {
    const req = { action, transaction_id: 'tx1', requested_by: { id: 'u1', kind: 'user' } };
    expect(TransactionRequestSchema.parse(req)).toEqual(req);
    expect(TransactionRequestSchema.safeParse({ action, requested_by: req.requested_by }).success).toBe(false);
    expect(TransactionRequestSchema.safeParse({ action, transaction_id: 'tx1' }).success).toBe(false);
    expect(
      TransactionRequestSchema.safeParse({
        ...req,
        reason: 'month end',
        metadata: { ticket: 'T-1' },
        provider_operation: { provider: 'p', operation_id: 'o' },
        reconciliation_cursor: 'opaque',
      }).success,
    ).toBe(true);
  });

  const input = { amount: 5 };
  const plan = {
    plan_id: 'plan:tx1',
    transaction_id: 'tx1',
    capability_id: 'payments.charge',
    planned_by: { id: 'agent-7', kind: 'agent' },
    planning_action_id: 'a1',
    input_hash: planInputHash('payments.charge', input),
    input_snapshot: { redacted: false, hash: planInputHash('payments.charge', input), value: input },
    identity_snapshot: { tenant_id: 't1', external_account_id: 'acct' },
    approval_required: true,
    approval_policy: { policy_id: 'tenant-default', source: 'tenant_default' },
    compensation: { mode: 'best_effort', approval_required: false },
    data: { redaction_required: false },
    idempotency: { idempotency_key: 'k1', contract: { required: true } },
    service_level: { supports_cancel: true, supports_streaming: false, supports_retry: false, timeout_ms: 10_000 },
    downstream_validation: { fidelity: 'downstream_validation', status: 'completed', output: { ok: true }, validated_at: '2025-01-01T00:00:00Z' },
    created_at: '2025-01-01T00:00:00Z',
    expires_at: '2025-01-01T00:15:00Z',
  };
  it('TransactionPlan retains the listed facts', () => {
    expect(TransactionPlanSchema.parse(plan)).toEqual(plan);
  });
  it('a redacted snapshot carries only the hash', () => {
    const redacted = { ...plan, input_snapshot: { redacted: true, hash: plan.input_hash } };
    expect(TransactionPlanSchema.safeParse(redacted).success).toBe(true);
    expect(TransactionPlanSchema.safeParse({ ...plan, input_snapshot: { redacted: true, hash: plan.input_hash, value: input } }).success).toBe(false);
    expect(TransactionPlanSchema.safeParse({ ...plan, input_snapshot: { redacted: false, hash: plan.input_hash } }).success).toBe(false);
    expect(TransactionPlanSchema.safeParse({ ...plan, input_hash: 'ABC' }).success).toBe(false);
  });
  it('TransactionResult with a receipt chain', () => {
    const r0 = {
      seq: 0,
      transaction_id: 'tx1',
      status: 'planned' as const,
      revision: 1,
      at: '2025-01-01T00:00:00Z',
      prev_hash: GENESIS_RECEIPT_HASH,
      event: 'transaction.planned',
    };
    const receipt0 = { ...r0, hash: receiptHash(r0) };
    const r1 = {
      seq: 1,
      transaction_id: 'tx1',
      status: 'committing' as const,
      revision: 2,
      at: '2025-01-01T00:01:00Z',
      prev_hash: receipt0.hash,
      event: 'transaction.claimed',
    };
    const receipts = [receipt0, { ...r1, hash: receiptHash(r1) }];
    for (const r of receipts) expect(ReceiptSchema.parse(r)).toEqual(r);
    const result = {
      transaction_id: 'tx1',
      plan_id: 'plan:tx1',
      status: 'requires_human',
      action_result: { action_id: 'a2', status: 'requires_human' },
      plan,
      provider_operation: { provider: 'p', operation_id: 'o' },
      reconciliation_cursor: 'c',
      earliest_reconcile_at: '2025-01-01T00:00:05Z',
      receipts,
    };
    expect(TransactionResultSchema.parse(result)).toEqual(result);
    expect(TransactionResultSchema.safeParse({ ...result, status: 'done' }).success).toBe(false);
  });
});
