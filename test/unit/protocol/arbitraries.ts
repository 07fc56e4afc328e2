/** fast-check arbitraries for valid protocol envelopes (shared by the protocol tests). */
import fc from 'fast-check';
import { TRANSACTION_MODES } from '../../../lib/transactions/status.js';
import { FORBIDDEN_KEYS, inspectJson, type JsonObject } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { Action, TransactionRequest } from '../../../packages/connector-sdk/src/protocol/index.js';

const idArb = fc.stringMatching(/^[A-Za-z0-9._:@/-]{1,40}$/);
const txIdArb = idArb;

export const inputArb: fc.Arbitrary<JsonObject> = fc
  .dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 4 }), { maxKeys: 6 })
  .filter((o) => inspectJson(o, { allowUndefinedProperties: false }) === undefined) as fc.Arbitrary<JsonObject>;

const dateArb = fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());

export const identityArb = fc.record(
  {
    tenant_id: idArb,
    external_account_id: idArb,
    organization_id: idArb,
    workspace_id: idArb,
    user_id: idArb,
    session_id: idArb,
  },
  { requiredKeys: [] },
);

const traceArb = fc.stringMatching(/^[A-Za-z0-9]{1,32}$/);
export const metadataArb = fc.record(
  {
    observability: fc.record(
      { trace_id: traceArb, span_id: traceArb, parent_span_id: traceArb, correlation_id: idArb, original_completed_at: dateArb },
      { requiredKeys: [] },
    ),
    labels: fc.dictionary(
      fc.stringMatching(/^[a-z0-9]{1,20}$/).filter((k) => !FORBIDDEN_KEYS.has(k)),
      fc.string({ maxLength: 20 }).filter((s) => !/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.test(s)),
      {
        maxKeys: 5,
      },
    ),
  },
  { requiredKeys: [] },
);

/** Transaction contexts that satisfy the public rules (commit has plan_id, compensate has compensation_for). */
export const txContextArb = fc
  .record({ mode: fc.constantFrom(...TRANSACTION_MODES), transaction_id: txIdArb, plan_id: idArb, compensation_for: idArb }, { requiredKeys: ['mode'] })
  .map((tx) => {
    const out = { ...tx };
    if (out.mode === 'commit' && out.plan_id === undefined) out.plan_id = 'plan:x';
    if (out.mode === 'compensate' && out.compensation_for === undefined) out.compensation_for = 'action-1';
    return out;
  });

export const actionArb: fc.Arbitrary<Action> = fc.record(
  {
    id: idArb,
    capability_id: idArb,
    input: inputArb,
    idempotency_key: fc.stringMatching(/^[\x21-\x7e]{1,64}$/),
    identity: identityArb,
    metadata: metadataArb,
    transaction: txContextArb,
  },
  { requiredKeys: ['id', 'capability_id', 'input'] },
);

export const transactionRequestArb: fc.Arbitrary<TransactionRequest> = fc
  .record({
    action: actionArb,
    tx: txContextArb,
    transaction_id: txIdArb,
    copyId: fc.boolean(),
    requested_by: fc.record({ id: idArb, kind: fc.constantFrom('user', 'agent', 'service', 'application' as const) }),
    reason: fc.option(
      fc.string({ maxLength: 40 }).filter((s) => !/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.test(s)),
      { nil: undefined },
    ),
    provider_operation: fc.option(fc.record({ provider: fc.constantFrom('payments', 'crm'), operation_id: idArb }), { nil: undefined }),
    reconciliation_cursor: fc.option(fc.stringMatching(/^[A-Za-z0-9]{1,20}$/), { nil: undefined }),
  })
  .map(({ action, tx, transaction_id, copyId, requested_by, reason, provider_operation, reconciliation_cursor }) => {
    const { transaction_id: _drop, ...rest } = tx;
    const transaction = copyId ? { ...rest, transaction_id } : rest;
    const req: TransactionRequest = { action: { ...action, transaction }, transaction_id, requested_by };
    if (reason !== undefined) req.reason = reason;
    if (provider_operation !== undefined) req.provider_operation = provider_operation;
    if (reconciliation_cursor !== undefined) req.reconciliation_cursor = reconciliation_cursor;
    return req;
  });
