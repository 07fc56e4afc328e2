/**
 * reconcile (admission): needs a transaction ID, an existing record in
 * outcome_unknown and a durable provider operation reference (from the
 * first-class request, else recovered from the record). A compare-and-set
 * moves the record outcome_unknown → reconciling before any handler call.
 */
import { AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { ProviderOperationRef } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { TransactionRecord } from '../../ports/transaction-store.js';
import { RECEIPT_EVENTS } from '../journal.js';
import { loadConnector } from '../deps.js';
import type { Kernel } from '../kernel.js';
import type { RegisteredCapability } from '../registry.js';
import type { Admission, AdmittedAction } from '../pipeline/state.js';
import { requestRecovery } from '../pipeline/action-record.js';

function sameRef(a: ProviderOperationRef, b: ProviderOperationRef): boolean {
  return a.provider === b.provider && a.operation_id === b.operation_id;
}

/**
 * Whether the connector serving a capability can look an operation up by the
 * idempotency key the runtime sent (its `reconcile_lookup` declares
 * `idempotency_key`), so that a record with no checkpointed operation can
 * still be reconciled instead of going to a human at once.
 */
export async function lookupByIdempotencyKey(k: Kernel, reg: RegisteredCapability | undefined): Promise<boolean> {
  if (reg === undefined) return false;
  const connector = (await loadConnector(k.deps.connectors, reg.connector_id))?.connector as
    | { reconcile_lookup?: (capability_id: string) => readonly string[] }
    | undefined;
  return connector?.reconcile_lookup?.(reg.capability_id).includes('idempotency_key') === true;
}

/**
 * The capability whose provider effect a record stands for, i.e. what a
 * reconciliation must ask about: for a compensation through an alternate
 * compensation capability, that capability; otherwise the record's own.
 */
export function ranCapabilityId(record: Pick<TransactionRecord, 'mode' | 'capability_id' | 'data'>): string {
  if (record.mode === 'compensate') {
    const alt = (record.data.compensation as { compensation_capability_id?: unknown } | undefined)?.compensation_capability_id;
    if (typeof alt === 'string') return alt;
  }
  return record.capability_id;
}

export async function admitReconcile(k: Kernel, adm: Admission): Promise<TransactionRecord> {
  const txId = adm.action.transaction?.transaction_id;
  if (txId === undefined) throw new AipError('runtime.transaction_id_required', undefined, { details: { path: '/transaction/transaction_id' } });
  // The reconcile consumer already read the record (strongly consistent): start from it. The
  // begin_reconcile write is a compare-and-set on outcome_unknown and that record's revision; if it
  // loses, decide as before from a fresh read (another reconciliation, or this action's own begin).
  const known = adm.known_transaction;
  if (known !== undefined && known.tenant_id === adm.tenant_id && known.transaction_id === txId) {
    const begun = await beginReconcile(k, adm, txId, known, true);
    if (begun !== undefined) return begun;
    // A schedule's image the begin proved stale: the consumer decides again from a read (its action ID, due time and
    // bound came from the image too).
    if (adm.known_transaction_unread === true)
      throw new AipError('transaction.state_conflict', 'The scheduled record is not current', { details: { transaction_id: txId } });
  }
  const record = await k.deps.transactions.get({ tenant_id: adm.tenant_id, transaction_id: txId });
  if (record === undefined) throw new AipError('transaction.not_found', undefined, { details: { transaction_id: txId } });
  return (await beginReconcile(k, adm, txId, record, false)) as TransactionRecord;
}

/**
 * The checks and the outcome_unknown → reconciling compare-and-set, from
 * `record`. With `mayBeStale`, a lost compare-and-set returns undefined (the
 * caller reads the record again) instead of throwing.
 */
async function beginReconcile(k: Kernel, adm: Admission, txId: string, record: TransactionRecord, mayBeStale: boolean): Promise<TransactionRecord | undefined> {
  if (record.status === 'reconciling' && record.data.reconcile_action_id === adm.action.id) return record; // resubmission
  if (record.status !== 'outcome_unknown') {
    throw new AipError('runtime.reconcile_not_outcome_unknown', undefined, { details: { transaction_id: txId, status: record.status } });
  }
  // Reconcile what actually ran: a compensation through an alternate capability is reconciled against that capability.
  if (ranCapabilityId(record) !== adm.action.capability_id) {
    throw new AipError('runtime.execution_contract_mismatch', undefined, {
      details: { transaction_id: txId, fields: ['capability_id'], capability_id: ranCapabilityId(record) },
    });
  }
  // From the request, or (a reconcile resumed after its approval) from what the request left on the action record.
  const recovery = adm.request !== undefined ? requestRecovery(adm) : 'record' in adm ? (adm as AdmittedAction).record.recovery : undefined;
  const requested = recovery?.provider_operation;
  const known = record.provider_operation;
  if (requested !== undefined && known !== undefined && !sameRef(requested, known)) {
    throw new AipError('transaction.provider_operation_conflict', undefined, {
      details: { transaction_id: txId, current_provider_operation: { provider: known.provider, operation_id: known.operation_id } },
    });
  }
  const ref = requested ?? known;
  // Without an operation ID, only a connector that can look the operation up by the idempotency key the runtime sent.
  if (ref === undefined && !(await lookupByIdempotencyKey(k, adm.reg))) {
    throw new AipError('connector.reconcile_requires_provider_operation', undefined, { details: { transaction_id: txId } });
  }
  let begun: TransactionRecord;
  try {
    begun = await k.write(
      k.journal.transition(
        record,
        { operation: 'begin_reconcile', from: ['outcome_unknown'], to: 'reconciling', data: { reconcile_action_id: adm.action.id } },
        RECEIPT_EVENTS.reconcile_started,
        { action_id: adm.action.id, attempt: record.reconcile_attempts + 1 },
        { actor: adm.principal },
      ),
    );
  } catch (err) {
    if (isAipError(err, 'transaction.state_conflict')) {
      if (mayBeStale) return undefined;
      throw new AipError('runtime.reconcile_not_outcome_unknown', 'Another reconciliation started first', { details: { transaction_id: txId }, cause: err });
    }
    throw err;
  }
  const cursor = recovery?.reconciliation_cursor;
  if (ref !== undefined && ((requested !== undefined && known === undefined) || (cursor !== undefined && cursor !== record.reconciliation_cursor))) {
    // The request supplies recovery data the record lacks: make it durable before the handler runs.
    // A provider operation the runtime never checkpointed is bound by an operator (the authority rule): name them as its evidence.
    const supplied_by = requested !== undefined && known === undefined ? { supplied_by: { ...adm.principal }, source: 'reconcile_request' } : undefined;
    begun = await k.write(k.journal.checkpoint(begun, ref, cursor, supplied_by, { actor: adm.principal }));
  }
  if (adm.written !== undefined) adm.written.transaction = begun;
  return begun;
}
