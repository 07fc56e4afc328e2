/**
 * DynamoDB adapter of the AtomicWrites port (lib/ports/atomic-writes.ts):
 * one TransactWriteItems per admission, attempt start and settlement, built
 * from the store adapters' own item builders (prepareCreate, prepareReserve,
 * prepareLease, prepareAdopt, prepareRoutePut, prepareSettle,
 * prepareComplete, prepareMarkUncertain), so every part keeps exactly its
 * store's condition, item shape and failure classification.
 *
 * Every part asks for its ALL_OLD image on a failed condition; a cancelled
 * transaction is classified from CancellationReasons[i].Item, never by a
 * second read. A TransactionConflict (another transaction on one of the items
 * in flight) is retried with a short jittered backoff, then reported as a lost
 * race. Limits: at most 5 items per write, far below DynamoDB's 100 items /
 * 4 MB; each item appears once.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type {
  AdmitWriteInput,
  AdmitWriteOutcome,
  AtomicWrites,
  AttemptRead,
  AttemptReadInput,
  SettleWriteInput,
  SettleWriteOutcome,
  StartWriteInput,
  StartWriteOutcome,
} from '../../ports/atomic-writes.js';
import type { PutRouteResult } from '../../ports/route-store.js';
import type { TransactionRecord } from '../../ports/transaction-store.js';
import type { DynamoActionStore } from './action-store.js';
import { fromAttributeMap } from './attribute-values.js';
import type { DynamoIdempotencyStore } from './idempotency-store.js';
import { prepareRoutePut } from './route-store.js';
import { errorName, mapStoreError } from './store-errors.js';
import { consistentBatchGet } from './store-support.js';
import type { DynamoTransactionStore, PreparedCas, TransactItem } from './transaction-store.js';

export interface DynamoAtomicWritesOptions {
  readonly client: DynamoDBDocumentClient;
  /** The store adapters whose items are combined (same table and client). */
  readonly transactions: DynamoTransactionStore;
  readonly actions: DynamoActionStore;
  readonly idempotency: DynamoIdempotencyStore;
  /** Sends after a TransactionConflict before giving up. Default 6. */
  readonly conflictRetries?: number;
}

type Item = Record<string, unknown>;
type Reason = { readonly code: string; readonly old: Item | undefined };

/** The outcome of one TransactWriteItems: written, or cancelled with one reason per item. */
type Sent = { readonly ok: true } | { readonly ok: false; readonly reasons: Reason[] };

export class DynamoAtomicWrites implements AtomicWrites {
  private readonly client: DynamoDBDocumentClient;
  private readonly transactions: DynamoTransactionStore;
  private readonly actions: DynamoActionStore;
  private readonly idempotency: DynamoIdempotencyStore;
  /** The route assignment lives in the action's partition, on the action store's table. */
  private readonly routeTable: string;
  private readonly conflictRetries: number;

  constructor(options: DynamoAtomicWritesOptions) {
    this.client = options.client;
    this.transactions = options.transactions;
    this.actions = options.actions;
    this.idempotency = options.idempotency;
    this.routeTable = options.actions.tableName;
    this.conflictRetries = options.conflictRetries ?? 6;
  }

  /**
   * Sends the items; retries while the only reasons are TransactionConflict.
   * Returns the per-item reasons of a cancellation on a failed condition.
   */
  private async send(items: TransactItem[], onRace: () => AipError): Promise<Sent> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.client.send(new TransactWriteCommand({ TransactItems: items }));
        return { ok: true };
      } catch (err) {
        const name = errorName(err);
        const raw = (err as { CancellationReasons?: unknown }).CancellationReasons;
        const reasons: Reason[] = Array.isArray(raw)
          ? raw.map((r: { Code?: string; Item?: unknown }) => ({ code: r?.Code ?? 'None', old: fromAttributeMap(r?.Item) }))
          : [];
        const conflictOnly =
          name === 'TransactionConflictException' ||
          (name === 'TransactionCanceledException' &&
            reasons.some((r) => r.code === 'TransactionConflict') &&
            !reasons.some((r) => r.code === 'ConditionalCheckFailed'));
        if (conflictOnly) {
          if (attempt >= this.conflictRetries) throw onRace();
          await delay(5 * 2 ** attempt + Math.floor(Math.random() * 10));
          continue;
        }
        if (name === 'TransactionCanceledException' && reasons.some((r) => r.code === 'ConditionalCheckFailed')) return { ok: false, reasons };
        throw mapStoreError(err);
      }
    }
  }

  /** The transaction record after a written part: computed from the held image, else read back (strongly consistent). */
  private async recordAfter(txn: PreparedCas, ref: { tenant_id: string; transaction_id: string }): Promise<TransactionRecord> {
    const computed = txn.after();
    if (computed !== undefined) return computed;
    const record = await this.transactions.get({ tenant_id: ref.tenant_id, transaction_id: ref.transaction_id });
    if (record === undefined) throw new AipError('internal.unexpected', 'transaction vanished after a successful write');
    return record;
  }

  /**
   * One BatchGetItem (ConsistentRead) for the action and its transaction. Keys
   * DynamoDB leaves unprocessed (throttling) are asked again with a short
   * backoff; after 8 rounds the read fails as `transaction.store_unavailable`.
   */
  async loadAttempt(input: AttemptReadInput): Promise<AttemptRead> {
    const action = this.actions.readKey({ tenant_id: input.tenant_id, action_id: input.action_id });
    const txn = input.transaction_id !== undefined ? this.transactions.readKey(input.tenant_id, input.transaction_id) : undefined;
    if (txn !== undefined && txn.table !== action.table) throw new AipError('internal.unexpected', 'the action and transaction stores use different tables');
    const id = (k: { PK: unknown; SK: unknown }) => `${String(k.PK)}|${String(k.SK)}`;
    const found = await consistentBatchGet(this.client, action.table, [action.key, ...(txn !== undefined ? [txn.key] : [])]);
    const actionItem = found.get(id(action.key));
    return {
      action: actionItem !== undefined ? this.actions.recordOf(actionItem) : undefined,
      ...(txn !== undefined && input.transaction_id !== undefined
        ? {
            transaction: {
              transaction_id: input.transaction_id,
              record: this.transactions.recordOf(input.tenant_id, input.transaction_id, found.get(id(txn.key))),
            },
          }
        : {}),
    };
  }

  async admit(input: AdmitWriteInput): Promise<AdmitWriteOutcome> {
    const action = this.actions.prepareCreate(input.action);
    const reservation = input.reservation !== undefined ? this.idempotency.prepareReserve(input.reservation) : undefined;
    const transaction = input.transaction !== undefined ? this.transactions.prepareCreate('create', input.transaction) : undefined;
    const claim = input.claim !== undefined && transaction === undefined ? this.transactions.prepareClaimPlan(input.claim.input, input.claim.held) : undefined;
    const items: TransactItem[] = [{ Put: { ...action.put, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } }];
    const idemAt = reservation !== undefined ? items.push({ Put: { ...reservation.put, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } }) - 1 : -1;
    const txnAt = items.length;
    if (transaction !== undefined) items.push(...transaction.transactItems);
    if (claim !== undefined) items.push(...claim.transactItems);
    const race = () =>
      transaction?.onRace() ??
      claim?.onRace() ??
      new AipError('action.state_conflict', 'admission: a concurrent write to the same items won the race', {
        details: { action_id: input.action.action.id, operation: 'admit', reason: 'transaction_conflict' },
      });

    const sent = await this.send(items, race);
    if (sent.ok) {
      transaction?.committed();
      const claimed = claim !== undefined && input.claim !== undefined ? await this.recordAfter(claim, input.claim.input) : undefined;
      const record = transaction?.record ?? claimed;
      return {
        admitted: true,
        action: action.record,
        ...(reservation !== undefined ? { reservation: reservation.reservation } : {}),
        ...(record !== undefined ? { transaction: record } : {}),
      };
    }
    const failed = (i: number) => sent.reasons[i]?.code === 'ConditionalCheckFailed';
    const out: { -readonly [K in keyof Extract<AdmitWriteOutcome, { admitted: false }>]: Extract<AdmitWriteOutcome, { admitted: false }>[K] } = {
      admitted: false,
    };
    if (failed(0)) {
      const existing = action.existing(sent.reasons[0]?.old);
      if (existing !== undefined) out.existing_action = existing;
    }
    if (reservation !== undefined && failed(idemAt)) {
      try {
        out.reservation = reservation.held(sent.reasons[idemAt]?.old);
      } catch (err) {
        if (!(err instanceof AipError)) throw err;
        out.reservation_error = err;
      }
    }
    if (transaction !== undefined) {
      for (let i = txnAt; i < items.length; i++) {
        if (!failed(i)) continue;
        const old = sent.reasons[i]?.old;
        if (i === txnAt) {
          const existing = transaction.existing(old);
          if (existing !== undefined) out.existing_transaction = existing;
          continue;
        }
        // The existing transaction's own receipt (or plan guard) refuses too: the transaction item decides.
        if (failed(txnAt)) continue;
        const handler = transaction.handlers[i - txnAt];
        throw handler !== undefined ? handler(old) : transaction.onRace();
      }
    }
    if (claim !== undefined) {
      const at = sent.reasons.findIndex((r, i) => i >= txnAt && r.code === 'ConditionalCheckFailed');
      if (at >= 0) out.claim_error = (claim.handlers[at - txnAt] ?? claim.onRace)(sent.reasons[at]?.old);
    }
    if (
      out.existing_action === undefined &&
      out.reservation === undefined &&
      out.reservation_error === undefined &&
      out.existing_transaction === undefined &&
      out.claim_error === undefined
    ) {
      // A condition failed on an item that has no image any more (deleted in between): a lost race.
      throw race();
    }
    return out;
  }

  async startAttempt(input: StartWriteInput): Promise<StartWriteOutcome> {
    const action = this.actions.prepareLease(input.action.input);
    const txn = input.transaction !== undefined ? this.transactions.prepareLease(input.transaction.input, input.transaction.held) : undefined;
    const idem = input.idempotency !== undefined ? this.idempotency.prepareAdopt(input.idempotency) : undefined;
    const route = input.route !== undefined ? prepareRoutePut(this.routeTable, input.route) : undefined;
    const items: TransactItem[] = [{ Update: { ...action.update, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } }];
    const txnAt = items.length;
    if (txn !== undefined) items.push(...txn.transactItems);
    const idemAt = idem !== undefined ? items.push({ Update: { ...idem.update, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } }) - 1 : -1;
    const routeAt = route !== undefined ? items.push({ Put: { ...route.put, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } }) - 1 : -1;
    const race = () =>
      txn?.onRace() ??
      new AipError('action.state_conflict', 'attempt start: a concurrent write to the same items won the race', {
        details: { action_id: input.action.input.action_id, operation: 'acquire_lease', reason: 'transaction_conflict' },
      });
    const sent = await this.send(items, race);
    if (sent.ok) {
      await txn?.afterStamps();
      const record = txn !== undefined && input.transaction !== undefined ? await this.recordAfter(txn, input.transaction.input) : undefined;
      return {
        started: true,
        action: action.leased(input.action.held),
        ...(record !== undefined ? { transaction: record } : {}),
        ...(route !== undefined ? { route: route.created } : {}),
      };
    }
    const failed = (i: number) => i >= 0 && sent.reasons[i]?.code === 'ConditionalCheckFailed';
    const refused: { action?: AipError; transaction?: AipError; idempotency?: AipError; route?: PutRouteResult } = {};
    if (failed(0)) refused.action = action.failure(sent.reasons[0]?.old);
    if (txn !== undefined) {
      for (let i = 0; i < txn.transactItems.length; i++) {
        if (failed(txnAt + i) && refused.transaction === undefined) refused.transaction = (txn.handlers[i] ?? txn.onRace)(sent.reasons[txnAt + i]?.old);
      }
    }
    if (idem !== undefined && failed(idemAt)) refused.idempotency = idem.failure(sent.reasons[idemAt]?.old);
    // The route's only condition is "no assignment yet": a refusal carries the stored one (ALL_OLD); one without an
    // image (deleted in between, which the table never does) is a lost race like any other part's.
    if (route !== undefined && failed(routeAt)) {
      const old = sent.reasons[routeAt]?.old;
      if (old === undefined) throw race();
      refused.route = route.existing(old);
    }
    return { started: false, refused };
  }

  async settle(input: SettleWriteInput): Promise<SettleWriteOutcome> {
    const txn = input.transaction !== undefined ? this.transactions.prepareSettle(input.transaction.input, input.transaction.held) : undefined;
    const action = input.action !== undefined ? this.actions.prepareSettle(input.action) : undefined;
    const idem =
      input.idempotency === undefined
        ? undefined
        : input.idempotency.kind === 'complete'
          ? this.idempotency.prepareComplete(input.idempotency.input)
          : this.idempotency.prepareMarkUncertain(input.idempotency.input);
    const items: TransactItem[] = [...(txn?.transactItems ?? [])];
    const actionAt = action !== undefined ? items.push({ Update: { ...action.update, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } }) - 1 : -1;
    const idemAt = idem !== undefined ? items.push({ Update: { ...idem.update, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } }) - 1 : -1;
    if (items.length === 0) return { settled: true };
    const race = () =>
      txn?.onRace() ??
      new AipError('action.state_conflict', 'settlement: a concurrent write to the same items won the race', {
        details: { ...(input.action !== undefined ? { action_id: input.action.action_id } : {}), operation: 'settle', reason: 'transaction_conflict' },
      });

    const sent = await this.send(items, race);
    if (sent.ok) {
      await txn?.afterStamps();
      const record = txn !== undefined && input.transaction !== undefined ? await this.recordAfter(txn, input.transaction.input) : undefined;
      return { settled: true, ...(record !== undefined ? { transaction: record } : {}) };
    }
    const failed = (i: number) => i >= 0 && sent.reasons[i]?.code === 'ConditionalCheckFailed';
    if (txn !== undefined) {
      for (let i = 0; i < txn.transactItems.length; i++) {
        if (failed(i)) throw (txn.handlers[i] ?? txn.onRace)(sent.reasons[i]?.old);
      }
    }
    const refused: { action?: AipError; idempotency?: AipError } = {};
    if (action !== undefined && failed(actionAt)) refused.action = action.failure(sent.reasons[actionAt]?.old);
    if (idem !== undefined && failed(idemAt)) refused.idempotency = idem.failure(sent.reasons[idemAt]?.old);
    return { settled: false, refused };
  }
}
