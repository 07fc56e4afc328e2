/**
 * execute: a `prepared` record before handler execution, behind the replay
 * gate. When the transaction ID already exists, the action ID, capability ID,
 * full transaction context and identity snapshot must match the stored
 * execution contract (else a conflict naming the differing fields), and the
 * existing state decides (spec README, list 5):
 *
 * - committed, failed: replay the stored terminal result, no connector call;
 * - prepared, committing: conflict, an attempt is in flight;
 * - outcome_unknown, reconciling: reject, reconciliation is required;
 * - reconciled, compensated, compensating: replay the stored terminal state.
 */
import { AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { canonicalJson, type JsonObject } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { CreateTransactionInput, TransactionRecord } from '../../ports/transaction-store.js';
import { RECEIPT_EVENTS } from '../journal.js';
import type { Kernel } from '../kernel.js';
import { withStoredResult } from '../view.js';
import type { Admission } from '../pipeline/state.js';
import { transactionTarget } from '../pipeline/targets.js';
import { retentionFor } from '../retention.js';

const same = (a: unknown, b: unknown) => canonicalJson(a ?? null) === canonicalJson(b ?? null);

/** The stored execution contract's fields that differ from the action's. */
export function executionContractDifferences(record: TransactionRecord, adm: Pick<Admission, 'action'>): string[] {
  const a = adm.action;
  const fields: string[] = [];
  if (record.action_id !== a.id) fields.push('action_id');
  if (record.capability_id !== a.capability_id) fields.push('capability_id');
  if (!same(record.data.transaction_context, a.transaction)) fields.push('transaction');
  if (!same(record.identity, a.identity)) fields.push('identity');
  return fields;
}

export type ReplayGateVerdict = { readonly kind: 'absent' } | { readonly kind: 'replay'; readonly record: TransactionRecord };

/** Applies the replay gate to an existing transaction (throws for conflicts and rejections). */
export function replayGate(record: TransactionRecord, adm: Pick<Admission, 'action'>): ReplayGateVerdict {
  const fields = executionContractDifferences(record, adm);
  if (fields.length > 0) {
    throw new AipError('runtime.execution_contract_mismatch', `The stored execution contract differs in: ${fields.join(', ')}`, {
      details: { transaction_id: record.transaction_id, fields },
    });
  }
  switch (record.status) {
    case 'committed':
    case 'failed':
    case 'reconciled':
    case 'compensated':
    case 'compensating':
      return { kind: 'replay', record };
    case 'prepared':
    case 'committing':
      throw new AipError('runtime.attempt_in_flight', undefined, { details: { transaction_id: record.transaction_id, status: record.status } });
    case 'outcome_unknown':
    case 'reconciling':
      throw new AipError('runtime.reconciliation_required', undefined, {
        details: {
          transaction_id: record.transaction_id,
          status: record.status,
          ...(record.next_reconcile_at ? { earliest_reconcile_at: record.next_reconcile_at } : {}),
        },
      });
    default:
      throw new AipError('runtime.execution_contract_mismatch', undefined, {
        details: { transaction_id: record.transaction_id, fields: ['transaction'], status: record.status },
      });
  }
}

/** The `prepared` record an execute admission creates. */
export function preparedRecordInput(adm: Pick<Admission, 'action' | 'tenant_id' | 'principal'>): Omit<CreateTransactionInput, 'receipt'> {
  return {
    tenant_id: adm.tenant_id,
    transaction_id: adm.action.transaction?.transaction_id as string,
    status: 'prepared',
    mode: 'execute',
    capability_id: adm.action.capability_id,
    action_id: adm.action.id,
    principal: adm.principal,
    ...(adm.action.identity !== undefined ? { identity: adm.action.identity } : {}),
    data: { transaction_context: { ...adm.action.transaction } as JsonObject },
  };
}

/** Step 8 for execute: the replay gate, else a new `prepared` record. */
export async function admitExecute(k: Kernel, adm: Admission): Promise<{ record: TransactionRecord; replay: boolean }> {
  const txId = adm.action.transaction?.transaction_id as string;
  for (let round = 0; round < 2; round++) {
    const existing = await k.deps.transactions.get({ tenant_id: adm.tenant_id, transaction_id: txId });
    if (existing !== undefined) {
      k.authority.require(
        adm.caller,
        'execute_replay',
        transactionTarget(existing, adm.tenant_id, txId, { fields: executionContractDifferences(existing, adm) }),
      );
      const verdict = replayGate(existing, adm);
      // The replay answers the stored result: resolved through the action that holds it (result stored once).
      if (verdict.kind === 'replay') return { record: await withStoredResult(k, verdict.record), replay: true };
    }
    try {
      const record = await k.write(k.journal.create(preparedRecordInput(adm), RECEIPT_EVENTS.prepared, { action_id: adm.action.id }));
      return { record, replay: false };
    } catch (err) {
      // A concurrent execute created it first: apply the gate to what it wrote.
      if (!isAipError(err, 'transaction.already_exists') || round > 0) throw err;
    }
  }
  throw new AipError('internal.unexpected', 'execute admission did not converge');
}

/** rollback_not_supported: a durable marker record; the action runs as a plain invocation (invoke_typed). */
export async function admitRollbackNotSupported(k: Kernel, adm: Admission): Promise<TransactionRecord> {
  const txId = adm.action.transaction?.transaction_id as string;
  try {
    return await k.write(
      k.journal.create(
        {
          tenant_id: adm.tenant_id,
          transaction_id: txId,
          status: 'rollback_not_supported',
          mode: 'rollback_not_supported',
          capability_id: adm.action.capability_id,
          action_id: adm.action.id,
          principal: adm.principal,
          ...(retentionFor(k, adm.action.capability_id) !== undefined ? { retention: retentionFor(k, adm.action.capability_id) } : {}),
          ...(adm.action.identity !== undefined ? { identity: adm.action.identity } : {}),
          data: { transaction_context: { ...adm.action.transaction } as JsonObject },
        },
        RECEIPT_EVENTS.rollback_not_supported,
        { action_id: adm.action.id },
      ),
    );
  } catch (err) {
    if (!isAipError(err, 'transaction.already_exists')) throw err;
    const existing = await k.deps.transactions.get({ tenant_id: adm.tenant_id, transaction_id: txId });
    if (existing !== undefined && existing.action_id === adm.action.id && existing.status === 'rollback_not_supported') return existing;
    const fields = existing ? executionContractDifferences(existing, adm) : ['transaction'];
    throw new AipError('runtime.execution_contract_mismatch', undefined, {
      details: { transaction_id: txId, fields: fields.length > 0 ? fields : ['transaction'] },
    });
  }
}
