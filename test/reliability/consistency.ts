/**
 * Consistency checker of the reliability suite: after a workload,
 * it reads EVERY item of the table (a full, strongly consistent Scan) and the
 * payments provider's ledger, and reports what was lost, duplicated or stuck,
 * and whether every receipt chain verifies. It is pure (no I/O): give it the
 * scanned items, the ledger and what the clients submitted; the load test
 * (`load.test.ts`) asserts its findings, and any other scenario can reuse it.
 *
 * What it checks
 * - none lost: every action a client got accepted has an action record in a
 *   terminal status (`completed`, `failed`, `cancelled`) with a stored result,
 *   whose status is the one the client last observed; every execute and commit
 *   that ran (leased at least once) has its transaction record, bound to it
 *   (`action_id`), and its result agrees with that transaction (`completed`
 *   with the committed provider operation, `failed` for `failed`, `failed`
 *   with an uncertain error for `outcome_unknown`/`reconciled`); every plan
 *   has its transaction; every action record of the table (retries and the
 *   runtime's own reconcile actions included) is terminal with a result, and
 *   names a transaction that exists unless it never ran (a replay, or a
 *   rejection at admission, which must then have no transaction bound to it).
 * - none duplicated: at most one ledger effect per intent (client amount,
 *   unique per intent) and per transaction (provider operation ID), every
 *   ledger effect belongs to exactly one transaction, each transaction is bound
 *   to one action (no two transactions for one execute/commit); every replay
 *   (`replayed: true`) names the action it replays (`metadata.replayed_from`,
 *   or itself for a resubmission of the same action ID), shares its idempotency
 *   key and principal, carries the original's status and output, and has no
 *   transaction of its own.
 * - none stuck: every transaction record is terminal; a non-terminal one is
 *   `recoverable` when recovery can reach it (`outcome_unknown` not escalated,
 *   with `next_reconcile_at`, which the schedule or the sweeper picks up;
 *   `reconciling`/attempt statuses, which the sweeper re-drives; `planned`,
 *   which expires), otherwise `stuck` (escalated to a human), except one
 *   escalated after every lookup found no operation at the provider
 *   ({@link escalatedWithoutOperation}): when the connector's own probe after a
 *   5xx or a lost answer fails too (a busy machine can time it out), the
 *   provider is asked by the original key until the bound, and a key it never
 *   saw ends with a human, which is the designed end of that recovery path.
 *   It is counted, and the ledger checks below still catch an effect behind
 *   it (an effect that belongs to no transaction). Idempotency
 *   records are `completed`, `in_flight` only while the action they name has
 *   settled (a prompt settlement leaves the reservation as admitted and the key
 *   answers the action's result), or `uncertain` only while their transaction
 *   is `outcome_unknown`; an `in_flight` one whose action is not terminal is
 *   stuck.
 * - chains: each transaction's receipts (read from the table, in `seq` order)
 *   verify with `verifyReceiptChain` against the record's anchor
 *   (`receipt_count`, `receipt_head`), and the last receipt's status is the
 *   record's status.
 * - ledger == commits: ledger charges = transactions `committed` + transactions
 *   `reconciled` whose reconciliation found the original commit completed; a
 *   `failed` transaction has no effect, a `committed` one exactly one (its
 *   result's `operation_id`).
 *
 * Every finding is a line naming the item, so a failing assertion lists them.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { fromAttributeMap } from '../../lib/aws/dynamo/attribute-values.js';
import { actionRecordOf } from '../../lib/aws/dynamo/action-store.js';
import { withKeyAttributes } from '../../lib/aws/dynamo/table-design.js';
import { insideReceiptsOf, receiptOf, transactionRecordOf } from '../../lib/aws/dynamo/transaction-store.js';
import { verifyReceiptChain } from '../../lib/runtime/receipts.js';

/** What a client submitted and had accepted (a 2xx answer carrying an action result). */
export interface SubmittedAction {
  readonly tenant_id: string;
  readonly action_id: string;
  readonly mode: 'execute' | 'plan' | 'commit';
  readonly principal_id: string;
  /** Links the action to its ledger effect: unique per intent (a plan and its commit share it). */
  readonly amount: number;
  readonly idempotency_key?: string;
  /** The action status the client last observed (terminal once it waited). */
  readonly observed_status?: string;
}

/** One committed provider effect (the simulator's `LedgerEntry`, the fields the checker reads). */
export interface LedgerEffect {
  readonly kind: string;
  readonly operation_id: string;
  readonly amount: number;
  readonly idempotency_key: string;
}

export interface ConsistencyInput {
  /** Every item of the table (`scanAll`). */
  readonly items: readonly Record<string, AttributeValue>[];
  /** Every committed provider effect. */
  readonly ledger: readonly LedgerEffect[];
  /** The actions the clients had accepted (distinct action IDs; retries need not be listed). */
  readonly submitted: readonly SubmittedAction[];
  /** Transaction IDs with a pending reconciliation schedule (e.g. from the Scheduler emulator). */
  readonly scheduled?: ReadonlySet<string>;
}

export interface ConsistencyReport {
  /** Findings, by class. All empty when the data is consistent. */
  readonly lost: string[];
  readonly duplicated: string[];
  readonly stuck: string[];
  readonly chains: string[];
  readonly ledger: string[];
  /** Non-terminal records recovery can still reach (e.g. `outcome_unknown` with a schedule). */
  readonly recoverable: string[];
  readonly counts: Record<string, number>;
}

const TERMINAL_ACTION = new Set(['completed', 'failed', 'cancelled']);
const TERMINAL_TXN = new Set(['dry_run_completed', 'committed', 'compensated', 'failed', 'reconciled', 'rollback_not_supported']);

type Item = Record<string, unknown>;
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const obj = (v: unknown): Item | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Item) : undefined);

/**
 * An `outcome_unknown` record escalated to a human with no provider operation,
 * whose last lookup by the original request's key found none
 * (`operation_found: false`): the provider never showed the operation.
 */
export function escalatedWithoutOperation(item: Item): boolean {
  if (item.status !== 'outcome_unknown' || item.escalated_at === undefined || item.provider_operation !== undefined) return false;
  const evidence = obj(obj(obj(item.error)?.details)?.evidence);
  return evidence?.operation_found === false;
}

interface ActionRow {
  readonly key: string;
  readonly tenant_id: string;
  readonly action_id: string;
  readonly status: string;
  readonly mode?: string;
  readonly transaction_id?: string;
  readonly principal_id?: string;
  readonly idempotency_key?: string;
  readonly fence: number;
  readonly result?: Item;
}

interface TxnRow {
  readonly key: string;
  readonly tenant_id: string;
  readonly transaction_id: string;
  readonly status: string;
  readonly action_id?: string;
  readonly mode?: string;
  /** The item; a result stored once on its action is filled in from it. */
  item: Item;
  /** The record named the action holding its result (`result_ref`). */
  resultByReference?: boolean;
}

function bump(counts: Record<string, number>, key: string, n = 1): void {
  counts[key] = (counts[key] ?? 0) + n;
}

/** Runs every check over the scanned items and the ledger. */
export function checkConsistency(input: ConsistencyInput): ConsistencyReport {
  const lost: string[] = [];
  const duplicated: string[] = [];
  const stuck: string[] = [];
  const chains: string[] = [];
  const ledgerProblems: string[] = [];
  const recoverable: string[] = [];
  const counts: Record<string, number> = {};

  // --- read the items ----------------------------------------------------------------
  const actions = new Map<string, ActionRow>();
  const txns = new Map<string, TxnRow>();
  const receipts = new Map<string, { seq: number; receipt: unknown }[]>();
  const idem: Item[] = [];
  for (const raw of input.items) {
    // The attributes the key holds are not stored again (lib/aws/dynamo/table-design.ts keyAttributes): read from the key.
    const i = withKeyAttributes(fromAttributeMap(raw) ?? {});
    const pk = str(i.PK) ?? '';
    const sk = str(i.SK) ?? '';
    bump(counts, `items`);
    if (sk === 'ACTION') {
      // Read as the action store reads it (the action ID, in the key, is stored nowhere on the item).
      const a = actionRecordOf(i) as unknown as Item;
      const tenant_id = str(a.tenant_id) ?? '';
      const action_id = str(a.action_id) ?? '';
      const idemKey = str(a.idempotency_key);
      const mode = str(a.mode);
      const transaction_id = str(a.transaction_id);
      const principal_id = str(obj(a.principal)?.id);
      const result = obj(a.result);
      actions.set(`${tenant_id}/${action_id}`, {
        key: `${tenant_id}/${action_id}`,
        tenant_id,
        action_id,
        status: str(a.status) ?? '?',
        fence: typeof a.fence === 'number' ? a.fence : 0,
        ...(mode !== undefined ? { mode } : {}),
        ...(transaction_id !== undefined ? { transaction_id } : {}),
        ...(principal_id !== undefined ? { principal_id } : {}),
        ...(idemKey !== undefined ? { idempotency_key: idemKey } : {}),
        ...(result !== undefined ? { result } : {}),
      });
    } else if (sk === 'TXN') {
      // Read as the transaction store reads it (packed attributes unpacked, values stored once rebuilt).
      const record = { ...i, ...(transactionRecordOf(i) as unknown as Item) };
      const tenant_id = str(i.tenant_id) ?? '';
      const transaction_id = str(i.transaction_id) ?? '';
      const action_id = str(i.action_id);
      const mode = str(i.mode);
      txns.set(`${tenant_id}/${transaction_id}`, {
        key: `${tenant_id}/${transaction_id}`,
        tenant_id,
        transaction_id,
        status: str(i.status) ?? '?',
        item: record,
        ...(action_id !== undefined ? { action_id } : {}),
        ...(mode !== undefined ? { mode } : {}),
      });
      // The receipts the record item holds inside (docs/table-design.md, "Receipts inside the record").
      for (const inside of insideReceiptsOf(i)) {
        receipts.set(pk, [...(receipts.get(pk) ?? []), { seq: inside.receipt.seq, receipt: inside.receipt }]);
        bump(counts, 'receipts');
      }
    } else if (sk.startsWith('RCPT#')) {
      const list = receipts.get(pk) ?? [];
      // Read as the transaction store reads it (its transaction ID and seq, in the key, are stored nowhere on the item).
      list.push({ seq: Number(sk.slice('RCPT#'.length)), receipt: receiptOf(i).receipt });
      receipts.set(pk, list);
      bump(counts, 'receipts');
    } else if (sk === 'IDEM') {
      idem.push(i);
    }
  }
  // The result stored once: a record that names the action holding its result (`result_ref`) is read with that
  // result, as the runtime's readers resolve it (lib/runtime/view.ts withStoredResult); a missing holder is lost.
  for (const t of txns.values()) {
    const ref = str(t.item.result_ref);
    if (ref === undefined || t.item.result !== undefined) continue;
    bump(counts, 'results_by_reference');
    const holder = actions.get(`${t.tenant_id}/${ref}`)?.result;
    if (holder === undefined) lost.push(`${t.key}: result_ref ${ref} names no action with a result`);
    else t.item = { ...t.item, result: holder };
    t.resultByReference = true;
  }
  counts.action_records = actions.size;
  counts.transactions = txns.size;
  counts.idempotency_records = idem.length;

  const txnOf = (tenant: string, id: string | undefined) => (id === undefined ? undefined : txns.get(`${tenant}/${id}`));

  // --- none lost: the clients' accepted actions ---------------------------------------
  for (const s of input.submitted) {
    bump(counts, `submitted_${s.mode}`);
    const a = actions.get(`${s.tenant_id}/${s.action_id}`);
    if (a === undefined) {
      lost.push(`${s.tenant_id}/${s.action_id}: accepted ${s.mode} has no action record`);
      continue;
    }
    bump(counts, `actions_${s.mode}_${a.status}`);
    if (s.observed_status !== undefined && s.observed_status !== a.status)
      lost.push(`${a.key}: the client last saw ${s.observed_status}, the record says ${a.status}`);
    if (a.principal_id !== s.principal_id) lost.push(`${a.key}: principal ${a.principal_id ?? '-'} ≠ submitter ${s.principal_id}`);
    if (s.mode === 'plan') {
      const t = txnOf(a.tenant_id, a.transaction_id);
      if (t === undefined && a.status === 'completed') lost.push(`${a.key}: completed plan has no transaction record`);
      if (t !== undefined && str(obj(t.item.plan)?.planning_action_id) !== undefined && str(obj(t.item.plan)?.planning_action_id) !== a.action_id) {
        lost.push(`${a.key}: its transaction ${t.transaction_id} names another planning action`);
      }
    }
  }

  // --- every action record: terminal, with a result, bound to its transaction ---------
  const boundTo = new Map<string, string[]>();
  for (const a of actions.values()) {
    const reconcile = a.mode === 'reconcile';
    bump(counts, reconcile ? `reconcile_actions_${a.status}` : `action_records_${a.status}`);
    if (!TERMINAL_ACTION.has(a.status)) stuck.push(`${a.key}: action ${a.mode ?? 'plain'} is ${a.status}`);
    if (a.result === undefined) {
      lost.push(`${a.key}: action (${a.status}) has no stored result`);
      continue;
    }
    if (str(a.result.status) !== a.status) lost.push(`${a.key}: result status ${str(a.result.status)} ≠ record status ${a.status}`);
    if (a.result.replayed === true) {
      bump(counts, 'replays');
      checkReplay(a);
      continue;
    }
    const t = txnOf(a.tenant_id, a.transaction_id);
    if (a.mode === 'execute' || a.mode === 'commit') {
      // An action that never ran (fence 0) was refused at admission: no transaction is owed, and none may be bound to it.
      if (a.fence === 0) {
        if (a.status !== 'failed') lost.push(`${a.key}: ${a.mode} never ran but is ${a.status}`);
        else if (t !== undefined && t.action_id === a.action_id) {
          lost.push(
            `${a.key}: recorded as failed at admission (${str(obj(a.result.error)?.code) ?? '-'}) while its transaction ${t.transaction_id} went on (${t.status})`,
          );
        } else bump(counts, `rejected_at_admission`);
        continue;
      }
      if (t === undefined) {
        lost.push(`${a.key}: ${a.mode} ran (fence ${a.fence}) but transaction ${a.transaction_id ?? '-'} is missing`);
        continue;
      }
      if (t.action_id !== a.action_id) {
        duplicated.push(`${a.key}: transaction ${t.transaction_id} is bound to ${t.action_id ?? '-'}, not to this ${a.mode}`);
        continue;
      }
      const list = boundTo.get(a.key) ?? [];
      list.push(t.key);
      boundTo.set(a.key, list);
      // The action's result agrees with its transaction's outcome.
      const error = obj(a.result.error);
      const uncertain = error?.uncertain_outcome === true || obj(error?.details)?.uncertain_outcome === true || str(error?.code) === 'sla.timeout_exceeded';
      const agrees =
        t.status === 'committed'
          ? a.status === 'completed' && str(obj(a.result.output)?.operation_id) === str(obj(t.item.provider_operation)?.operation_id)
          : t.status === 'failed'
            ? a.status === 'failed' && !uncertain
            : t.status === 'outcome_unknown' || t.status === 'reconciling' || t.status === 'reconciled'
              ? a.status === 'failed' && uncertain
              : !TERMINAL_TXN.has(t.status);
      if (!agrees)
        lost.push(
          `${a.key}: action ${a.status}${error ? ` (${str(error.code) ?? '-'})` : ''} disagrees with its transaction ${t.transaction_id} (${t.status})`,
        );
    } else if (reconcile && t === undefined) {
      lost.push(`${a.key}: reconcile action names missing transaction ${a.transaction_id ?? '-'}`);
    }
  }

  function checkReplay(a: ActionRow): void {
    const from = str(obj(a.result?.metadata)?.replayed_from) ?? a.action_id;
    const original = actions.get(`${a.tenant_id}/${from}`);
    if (original === undefined) {
      lost.push(`${a.key}: replay of ${from}, which has no action record`);
      return;
    }
    if (from !== a.action_id) {
      bump(counts, 'replays_of_other_action');
      if (original.idempotency_key === undefined || original.idempotency_key !== a.idempotency_key)
        duplicated.push(`${a.key}: replays ${from} without sharing its idempotency key`);
      if (original.principal_id !== a.principal_id) duplicated.push(`${a.key}: replays ${from} of another principal`);
      if (txnOf(a.tenant_id, a.transaction_id) !== undefined) duplicated.push(`${a.key}: a replay with a transaction of its own (${a.transaction_id ?? '-'})`);
    }
    if (str(a.result?.status) !== str(original.result?.status))
      duplicated.push(`${a.key}: replayed status ${str(a.result?.status)} ≠ ${from}'s ${str(original.result?.status)}`);
    if (JSON.stringify(a.result?.output) !== JSON.stringify(original.result?.output)) duplicated.push(`${a.key}: replayed output differs from ${from}'s`);
  }

  // --- transactions: bound once, not stuck, chains verify ------------------------------
  const committedOps = new Map<string, TxnRow>();
  let expectedEffects = 0;
  const byOperation = new Map<string, TxnRow[]>();
  for (const t of txns.values()) {
    bump(counts, `transactions_${t.status}`);
    const escalated = str(t.item.escalated_at) !== undefined;
    if (escalatedWithoutOperation(t.item)) bump(counts, 'escalated_operation_not_found');
    else if (!TERMINAL_TXN.has(t.status)) {
      const nextAt = str(t.item.next_reconcile_at);
      const reachable =
        (t.status === 'outcome_unknown' && !escalated && (nextAt !== undefined || input.scheduled?.has(t.transaction_id) === true)) ||
        t.status === 'reconciling' ||
        t.status === 'prepared' ||
        t.status === 'committing' ||
        t.status === 'compensating' ||
        t.status === 'planned';
      (reachable ? recoverable : stuck).push(
        `${t.key}: ${t.status}${escalated ? ' (escalated)' : ''}${nextAt !== undefined ? `, next_reconcile_at ${nextAt}` : ''}`,
      );
    }
    // Bound to an action that exists and names it.
    if (t.action_id === undefined) lost.push(`${t.key}: transaction names no action`);
    else {
      const a = actions.get(`${t.tenant_id}/${t.action_id}`);
      if (a === undefined) lost.push(`${t.key}: bound action ${t.action_id} has no record`);
      else if (a.transaction_id !== t.transaction_id) duplicated.push(`${t.key}: bound action ${t.action_id} names transaction ${a.transaction_id ?? '-'}`);
    }
    // Receipt chain, anchored on the record.
    const list = (receipts.get(`TXN#${t.tenant_id}#${t.transaction_id}`) ?? []).sort((x, y) => x.seq - y.seq).map((r) => r.receipt);
    const count = typeof t.item.receipt_count === 'number' ? t.item.receipt_count : -1;
    const head = str(t.item.receipt_head);
    const verdict = verifyReceiptChain(list, {
      transaction_id: t.transaction_id,
      expected_count: count,
      ...(head !== undefined ? { expected_head: head } : {}),
      // A result read through its action must still match the digest the settlement's receipt recorded.
      ...(t.resultByReference === true && t.item.result !== undefined ? { result: t.item.result } : {}),
    });
    if (!verdict.valid) chains.push(`${t.key}: chain ${verdict.problem} at seq ${verdict.at_seq} (${list.length} receipts, record says ${count})`);
    else {
      bump(counts, 'chains_verified');
      const last = obj(list[list.length - 1]);
      const wire = escalated ? ['requires_human', t.status] : [t.status];
      if (last !== undefined && !wire.includes(str(last.status) ?? '')) chains.push(`${t.key}: last receipt says ${str(last.status)}, the record ${t.status}`);
      if (list.length === 0) chains.push(`${t.key}: no receipts`);
    }
    // Provider operation → transaction (for the ledger).
    const op = str(obj(t.item.provider_operation)?.operation_id) ?? str(obj(obj(t.item.result)?.output)?.operation_id);
    if (op !== undefined) byOperation.set(op, [...(byOperation.get(op) ?? []), t]);
    const effect = t.status === 'committed' || (t.status === 'reconciled' && reconciledCompleted(t.item));
    if (effect) {
      expectedEffects++;
      if (op === undefined) ledgerProblems.push(`${t.key}: ${t.status} without a provider operation`);
      else committedOps.set(op, t);
    }
    if (t.status === 'reconciled') bump(counts, reconciledCompleted(t.item) ? 'reconciled_effect_found' : 'reconciled_no_effect');
  }
  for (const [op, list] of byOperation)
    if (list.length > 1) duplicated.push(`provider operation ${op} claimed by ${list.length} transactions: ${list.map((t) => t.key).join(', ')}`);
  for (const [a, list] of boundTo) if (list.length > 1) duplicated.push(`${a}: bound to ${list.length} transactions`);

  // --- idempotency records ---------------------------------------------------------------
  for (const r of idem) {
    const status = str(r.status) ?? '?';
    bump(counts, `idempotency_${status}`);
    const t = txnOf(str(r.tenant_id) ?? '', str(r.transaction_id));
    if (status === 'in_flight') {
      const owner = actions.get(`${str(r.tenant_id) ?? ''}/${str(r.action_id) ?? ''}`);
      if (owner === undefined || !TERMINAL_ACTION.has(owner.status))
        stuck.push(`idempotency ${str(r.PK)}: in_flight (action ${str(r.action_id)} is ${owner?.status ?? 'missing'})`);
      else bump(counts, 'idempotency_answered_by_action');
    } else if (status === 'uncertain' && t?.status !== 'outcome_unknown')
      stuck.push(`idempotency ${str(r.PK)}: uncertain while transaction ${str(r.transaction_id)} is ${t?.status ?? 'missing'}`);
  }

  // --- the ledger ------------------------------------------------------------------------
  const charges = input.ledger.filter((e) => e.kind === 'charge');
  counts.ledger_effects = charges.length;
  counts.ledger_expected_from_transactions = expectedEffects;
  const perAmount = new Map<number, number>();
  const perKey = new Map<string, number>();
  for (const e of charges) {
    perAmount.set(e.amount, (perAmount.get(e.amount) ?? 0) + 1);
    perKey.set(e.idempotency_key, (perKey.get(e.idempotency_key) ?? 0) + 1);
    const owners = byOperation.get(e.operation_id) ?? [];
    if (owners.length === 0) ledgerProblems.push(`ledger effect ${e.operation_id} (amount ${e.amount}) belongs to no transaction`);
    const owner = committedOps.get(e.operation_id);
    if (owner === undefined && owners.length > 0)
      ledgerProblems.push(`ledger effect ${e.operation_id} belongs to ${owners.map((t) => `${t.key} (${t.status})`).join(', ')}, which did not commit`);
  }
  for (const [amount, n] of perAmount) if (n > 1) duplicated.push(`intent with amount ${amount}: ${n} ledger effects`);
  for (const [key, n] of perKey) if (n > 1) duplicated.push(`provider idempotency key ${key}: ${n} ledger effects`);
  const effectOps = new Set(charges.map((e) => e.operation_id));
  for (const [op, t] of committedOps) if (!effectOps.has(op)) ledgerProblems.push(`${t.key}: ${t.status} but the ledger has no effect for ${op}`);
  if (charges.length !== expectedEffects) ledgerProblems.push(`ledger has ${charges.length} effects, transactions account for ${expectedEffects}`);
  // Every intent the clients submitted maps to at most one effect; an effect of an unknown amount is foreign.
  const intents = new Set(input.submitted.map((s) => s.amount));
  for (const e of charges) if (!intents.has(e.amount)) ledgerProblems.push(`ledger effect ${e.operation_id}: amount ${e.amount} matches no submitted intent`);

  counts.lost = lost.length;
  counts.duplicates = duplicated.length;
  counts.stuck = stuck.length;
  counts.chain_failures = chains.length;
  counts.ledger_mismatches = ledgerProblems.length;
  counts.recoverable = recoverable.length;
  return { lost, duplicated, stuck, chains, ledger: ledgerProblems, recoverable, counts };
}

/** Did the reconciliation of this `reconciled` record find the original commit completed? */
function reconciledCompleted(item: Item): boolean {
  const result = obj(item.result);
  const rec = obj(obj(result?.metadata)?.reconciliation) ?? obj(obj(result?.output)?.reconciliation) ?? obj(result?.output);
  const flag = rec?.original_commit_completed;
  if (typeof flag === 'boolean') return flag;
  // Fall back on the provider's status in the reconciled output.
  return str(obj(result?.output)?.status) === 'succeeded';
}
