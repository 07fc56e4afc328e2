/**
 * Port: the read an attempt starts from. The action record and the
 * transaction its invocation message names, read strongly consistently in ONE
 * request (the same capacity as two reads). Writes go through the unit of
 * work (lib/ports/unit-of-work.ts).
 */
import type { ActionRecord } from './action-store.js';
import type { TransactionRecord } from './transaction-store.js';

export interface AttemptReadInput {
  readonly tenant_id: string;
  readonly action_id: string;
  /** The transaction the invocation message names, read in the same request. */
  readonly transaction_id?: string;
}

export interface AttemptRead {
  /** The action record (undefined: absent), as `ActionStore.get` returns it. */
  readonly action: ActionRecord | undefined;
  /** Present when the transaction item was read (record undefined: absent), as `TransactionStore.get` returns it. */
  readonly transaction?: { readonly transaction_id: string; readonly record: TransactionRecord | undefined };
}

export interface AttemptReads {
  loadAttempt(input: AttemptReadInput): Promise<AttemptRead>;
}
