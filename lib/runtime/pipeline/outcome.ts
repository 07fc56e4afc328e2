import type { ActionResult, TransactionResult } from '../../../packages/connector-sdk/src/protocol/index.js';
import { DISPOSITION_HTTP, type SubmitDisposition, type SubmitOutcome } from '../types.js';
import type { Admission } from './state.js';

/** Builds a SubmitOutcome; the TransactionResult is attached only on the TransactionRequest path. */
export function submitOutcome(
  adm: Pick<Admission, 'action' | 'tenant_id' | 'request'>,
  disposition: SubmitDisposition,
  action_result: ActionResult,
  transaction_result?: TransactionResult,
): SubmitOutcome {
  return {
    disposition,
    http_status: DISPOSITION_HTTP[disposition],
    action_id: adm.action.id,
    tenant_id: adm.tenant_id,
    action_result,
    ...(adm.request !== undefined && transaction_result !== undefined ? { transaction_result } : {}),
  };
}
