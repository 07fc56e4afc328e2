/**
 * DynamoDB adapter of the ActionStore port (lib/ports/action-store.ts).
 *
 * Item: PK `ACTION#<tenant>#<action_id>`, SK `ACTION` (docs/table-design.md).
 * The raw input is kept in its own attribute `input` (the `action` attribute
 * holds the rest of the envelope) so that redaction is one `REMOVE input,
 * SET input_redacted = true` inside the settling write; reads then present
 * `action.input` as `{redacted: true, hash: input_hash}`.
 *
 * Every write is one conditional UpdateItem/PutItem; a failed condition is
 * classified from the ALL_OLD image returned with the failure.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import {
  ACTION_STATUSES,
  ActionResultSchema,
  ActionSchema,
  PrincipalSchema,
  ProviderOperationRefSchema,
  ReconciliationCursorSchema,
  planInputHash,
  type Action,
  type ActionResult,
  type ActionStatus,
  type JsonObject,
} from '../../../packages/connector-sdk/src/protocol/index.js';
import {
  LEASABLE_ACTION_STATUSES,
  TERMINAL_ACTION_STATUS_LIST,
  type AcquireActionLeaseInput,
  type ActionPatch,
  type ActionRecord,
  type ActionRef,
  type ActionSettlementFacts,
  type ActionStore,
  type CheckFenceInput,
  type CreateActionInput,
  type CreationLease,
  type ReleaseActionLeaseInput,
  type RenewActionLeaseInput,
  type PinActionRouteInput,
  type RedactTerminalInput,
  type RequestCancelInput,
  type SettleActionInput,
  type TransitionActionInput,
} from '../../ports/action-store.js';
import type { WriteIntent } from '../../ports/unit-of-work.js';
import {
  UpdateBuilder,
  checkId,
  checkJson,
  checkLeaseOwner,
  checkRetention,
  checkRevision,
  compact,
  consistentGet,
  epochSeconds,
  invalid,
  type Item,
} from './store-support.js';
import { fullActionEnvelope, leanActionEnvelope } from './derived-attributes.js';
import { packAttributes, unpackAttributes } from './packed-attributes.js';
import { ROUTE_ATTRIBUTE, routeOf, storedRoute } from './route-store.js';
import { TTL_ATTRIBUTE, keys, withKeyAttributes } from './table-design.js';
import type { IntentMapper, MappedWrite } from './unit-of-work.js';

export interface DynamoActionStoreOptions {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
  /** Clock (tests pin it). Default: system time. */
  readonly now?: () => Date;
}

const CODE = 'action.invalid_record' as const;
const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_ACTION_STATUS_LIST);
const NON_TERMINAL: readonly ActionStatus[] = ACTION_STATUSES.filter((s) => !TERMINAL.has(s));

const RECORD_FIELDS = [
  'tenant_id',
  'action_id',
  'principal',
  'capability_id',
  'mode',
  'transaction_id',
  'status',
  'revision',
  'input_redacted',
  'input_hash',
  'result',
  'approval_id',
  'idempotency_key',
  'recovery',
  'actor',
  'fence',
  'attempt',
  'lease_owner',
  'lease_expires_at',
  'released_fence',
  'deferrals',
  'route',
  'settlement',
  'cancel_requested_at',
  'created_at',
  'updated_at',
  TTL_ATTRIBUTE,
] as const;

/**
 * The attributes an action item stores packed (./packed-attributes.ts): written whole, never named by a condition,
 * a projection or a nested update path. `transaction_id` stays plain (a projection reads it).
 */
const PACKED: ReadonlySet<string> = new Set(['action', 'input', 'actor', 'result', 'principal', 'recovery', 'input_hash', 'settlement', ROUTE_ATTRIBUTE]);

/**
 * The record of an action item (exported for readers of raw items, the load checker). The action ID is
 * in the key, so the item stores it nowhere (docs/table-design.md, "Key attributes not stored again"):
 * `tenant_id`, `action_id`, the envelope's `id` and the result's `action_id` are read from the key.
 * An item written before the lean item model stores them, and reads exactly as before.
 */
export function actionRecordOf(stored: Item): ActionRecord {
  const item = withKeyAttributes(unpackAttributes(stored, PACKED));
  const out: Record<string, unknown> = {};
  for (const f of RECORD_FIELDS) if (item[f] !== undefined) out[f] = item[f];
  // The envelope's capability, mode and idempotency key are the item's own, stored once (./derived-attributes.ts).
  const envelope = fullActionEnvelope(item.action ?? {}, item) as Record<string, unknown>;
  // A redacted record keeps no raw input: it reads as {redacted: true, hash}.
  const input = item.input_redacted === true ? { redacted: true, hash: item.input_hash } : (item.input ?? {});
  out.action = { id: item.action_id, ...envelope, input };
  const result = out.result as Record<string, unknown> | undefined;
  if (result !== undefined && result !== null && typeof result === 'object') out.result = { action_id: item.action_id, ...result };
  // The pinned route stores no tenant or action ID: the action's own (./route-store.ts routeOf).
  if (item.route !== undefined) out.route = routeOf(item.route as Item, item.tenant_id as string, item.action_id as string, item.capability_id as string);
  out.fence ??= 0;
  out.attempt ??= 0;
  return out as unknown as ActionRecord;
}

const toRecord = actionRecordOf;

/** A result as the action item stores it: without its `action_id`, which is the item's key (checked equal before). */
function storedResult(result: ActionResult | undefined): Omit<ActionResult, 'action_id'> | undefined {
  if (result === undefined) return undefined;
  const { action_id: _key, ...rest } = result;
  return rest;
}

function isStatus(s: unknown): s is ActionStatus {
  return typeof s === 'string' && (ACTION_STATUSES as readonly string[]).includes(s);
}

function checkStatuses(field: string, list: unknown, allowTerminal: boolean): ActionStatus[] {
  if (!Array.isArray(list) || list.length === 0) throw invalid(CODE, `${field} must name at least one status`, { field });
  for (const s of list) {
    if (!isStatus(s)) throw invalid(CODE, `${field} has an unknown action status`, { field });
    if (!allowTerminal && TERMINAL.has(s))
      throw invalid(CODE, `${field} may not contain a terminal status: a terminal action is never rewritten`, { field, status: s });
  }
  return [...list] as ActionStatus[];
}

function current(old: Item) {
  return { current_status: old.status, current_revision: old.revision, current_fence: old.fence ?? 0 };
}

/**
 * What a lease grant sets on the action item, whether an `UpdateItem` of an existing action grants it (`action.lease`)
 * or the action's creation does (`CreateActionInput.lease`): status `running`, the owner, the expiry, and the route
 * pinned with it (stored as the action's route: ./route-store.ts `storedRoute`). The fence and attempt are the
 * caller's (+1, or 1 at creation).
 */
function leaseGrant(lease: CreationLease, ref: ActionRef, now: Date, capability_id: string | undefined): Item {
  checkLeaseOwner(CODE, lease.owner, lease.ttl_ms);
  return compact({
    status: 'running',
    lease_owner: lease.owner,
    lease_expires_at: new Date(now.getTime() + lease.ttl_ms).toISOString(),
    [ROUTE_ATTRIBUTE]: lease.route !== undefined ? storedRoute(lease.route, ref, capability_id) : undefined,
  });
}

export class DynamoActionStore implements ActionStore, IntentMapper {
  private readonly client: DynamoDBDocumentClient;
  private readonly table: string;
  private readonly clock: () => Date;

  constructor(options: DynamoActionStoreOptions) {
    this.client = options.client;
    this.table = options.tableName;
    this.clock = options.now ?? (() => new Date());
  }

  /** The table the action items live in (the composite writes put an action's route item beside it). */
  get tableName(): string {
    return this.table;
  }

  private notFound(ref: ActionRef, operation: string): AipError {
    return new AipError('action.not_found', `No action ${ref.action_id}`, { details: { action_id: ref.action_id, operation } });
  }

  private conflict(ref: ActionRef, operation: string, old: Item, allowed: readonly ActionStatus[], expected?: number, reason?: string): AipError {
    return new AipError(
      'action.state_conflict',
      `${operation}: action is ${String(old.status)} at revision ${String(old.revision)}; expected ${allowed.join('|')}${expected === undefined ? '' : ` at revision ${expected}`}`,
      {
        details: {
          action_id: ref.action_id,
          operation,
          ...current(old),
          ...(expected !== undefined ? { expected_revision: expected } : {}),
          allowed_statuses: [...allowed],
          ...(reason ? { reason } : {}),
        },
      },
    );
  }

  private staleFence(ref: ActionRef, operation: string, old: Item, held: number): AipError {
    return new AipError('action.fence_stale', `${operation}: fence ${held} is not current (current fence ${String(old.fence ?? 0)})`, {
      details: { action_id: ref.action_id, operation, held_fence: held, ...current(old) },
    });
  }

  private checkRef(ref: ActionRef): void {
    if (ref === null || typeof ref !== 'object') throw invalid(CODE, 'input must be an object');
    checkId(CODE, 'tenant_id', ref.tenant_id);
    checkId(CODE, 'action_id', ref.action_id);
  }

  private checkResult(ref: ActionRef, result: unknown, status?: ActionStatus): void {
    if (result === undefined) return;
    checkJson(CODE, 'result', result, true);
    const parsed = ActionResultSchema.safeParse(result);
    if (!parsed.success)
      throw invalid(CODE, 'result is not a valid ActionResult', { field: 'result', issues: parsed.error.issues.map((i) => i.path.join('.') || '(root)') });
    if (parsed.data.action_id !== ref.action_id) throw invalid(CODE, 'result.action_id must be the action ID', { field: 'result.action_id' });
    if (status !== undefined && parsed.data.status !== status) throw invalid(CODE, `result.status must be ${status}`, { field: 'result.status' });
  }

  /** SET/REMOVE clauses for a patch (shared by transition and settle). */
  private applyPatch(b: UpdateBuilder, to: ActionStatus, patch: ActionPatch, nowMs: number): void {
    if (patch.approval_id !== undefined) b.set('approval_id', checkId(CODE, 'approval_id', patch.approval_id));
    if (patch.transaction_id !== undefined) b.set('transaction_id', checkId(CODE, 'transaction_id', patch.transaction_id));
    if (patch.result !== undefined) b.set('result', storedResult(patch.result));
    if (patch.redact_input === true) {
      // The raw input is removed; reads present {redacted: true, hash: input_hash} (computed at create).
      b.remove('input');
      b.set('input_redacted', true);
    } else if (patch.redacted_input !== undefined) {
      if (!TERMINAL.has(to)) throw invalid(CODE, 'the input is redacted only once the action is terminal', { field: 'patch.redacted_input' });
      checkJson(CODE, 'redacted_input', patch.redacted_input, true);
      // Values at the data contract's pointers replaced; input_hash (of the original input) is kept.
      b.set('input', patch.redacted_input);
      b.set('input_pointers_redacted', true);
    }
    const retention = checkRetention(CODE, 'retention_seconds', patch.retention_seconds);
    if (retention !== undefined && TERMINAL.has(to)) b.set(TTL_ATTRIBUTE, epochSeconds(nowMs) + retention);
  }

  /** Maps a write intent on the action record to its conditional item (lib/aws/dynamo/unit-of-work.ts). */
  map(intent: WriteIntent): MappedWrite {
    switch (intent.kind) {
      case 'action.create':
        return this.createWrite(intent.input);
      case 'action.transition':
        return this.transitionWrite(intent.input);
      case 'action.lease':
        return this.leaseWrite(intent.input, intent.held);
      case 'action.renew_lease':
        return this.renewLeaseWrite(intent.input);
      case 'action.release_lease':
        return this.releaseLeaseWrite(intent.input);
      case 'action.pin_route':
        return this.pinRouteWrite(intent.input);
      case 'action.settle':
        return this.settleWrite(intent.input);
      case 'action.redact':
        return this.redactWrite(intent.input);
      case 'action.request_cancel':
        return this.requestCancelWrite(intent.input);
      case 'action.check_fence':
        return this.checkFenceWrite(intent.input);
      default:
        throw new AipError('internal.unexpected', `the action store does not write ${intent.kind}`);
    }
  }

  /** A creation: conditional on the action ID not existing in the tenant (revision 1, fence 0, attempt 0). */
  private createWrite(input: CreateActionInput): MappedWrite<ActionRecord, ActionRecord> {
    if (input === null || typeof input !== 'object') throw invalid(CODE, 'input must be an object');
    const tenant = checkId(CODE, 'tenant_id', input.tenant_id);
    if (!PrincipalSchema.safeParse(input.principal).success) throw invalid(CODE, 'principal must be {id, kind}', { field: 'principal' });
    checkJson(CODE, 'action', input.action, true);
    const parsed = ActionSchema.safeParse(input.action);
    if (!parsed.success)
      throw invalid(CODE, 'action is not a valid Action envelope', {
        field: 'action',
        issues: parsed.error.issues.slice(0, 20).map((i) => i.path.join('.') || '(root)'),
      });
    const action: Action = input.action;
    const ref = { tenant_id: tenant, action_id: action.id };
    const status = input.status ?? 'accepted';
    if (!isStatus(status)) throw invalid(CODE, 'unknown action status', { field: 'status' });
    if (status === 'running') throw invalid(CODE, 'an action enters running only through acquireLease', { field: 'status' });
    if (input.lease !== undefined && status !== 'accepted') throw invalid(CODE, 'only an accepted action is created leased', { field: 'lease' });
    if (input.redact_input === true && !TERMINAL.has(status))
      throw invalid(CODE, 'the input can be redacted at creation only for a terminal action', { field: 'redact_input' });
    this.checkResult(ref, input.result, TERMINAL.has(status) ? status : undefined);
    const transactionId = input.transaction_id ?? action.transaction?.transaction_id;
    if (transactionId !== undefined) checkId(CODE, 'transaction_id', transactionId);
    if (input.approval_id !== undefined) checkId(CODE, 'approval_id', input.approval_id);
    if (input.recovery !== undefined) {
      const ok =
        typeof input.recovery === 'object' &&
        input.recovery !== null &&
        (input.recovery.provider_operation === undefined || ProviderOperationRefSchema.safeParse(input.recovery.provider_operation).success) &&
        (input.recovery.reconciliation_cursor === undefined || ReconciliationCursorSchema.safeParse(input.recovery.reconciliation_cursor).success);
      if (!ok) throw invalid(CODE, 'recovery must hold a provider operation reference and/or a reconciliation cursor', { field: 'recovery' });
    }
    if (input.actor !== undefined) {
      const a = input.actor as unknown as Record<string, unknown>;
      const ok =
        typeof a === 'object' &&
        a !== null &&
        typeof a.scheme === 'string' &&
        a.scheme.length > 0 &&
        a.scheme.length <= 64 &&
        Array.isArray(a.scopes) &&
        a.scopes.length <= 256 &&
        a.scopes.every((x) => typeof x === 'string' && x.length <= 200) &&
        (a.issuer === undefined || (typeof a.issuer === 'string' && a.issuer.length <= 2048)) &&
        (a.issued_at === undefined || typeof a.issued_at === 'string') &&
        (a.expires_at === undefined || typeof a.expires_at === 'string');
      if (!ok) throw invalid(CODE, 'actor must be {scheme, scopes, issuer?, issued_at?, expires_at?}', { field: 'actor' });
    }
    const retention = checkRetention(CODE, 'retention_seconds', input.retention_seconds);

    const now = this.clock();
    const iso = now.toISOString();
    const inputHash = planInputHash(action.capability_id, action.input);
    // The envelope without its input (an attribute of its own) and its ID (the key's).
    const { input: rawInput, id: _key, ...envelope } = action;
    if (input.redacted_input !== undefined && !TERMINAL.has(status))
      throw invalid(CODE, 'a redacted input is stored at creation only for a terminal action', { field: 'redacted_input' });
    const storedInput: JsonObject | undefined = input.redact_input === true ? undefined : (input.redacted_input ?? rawInput);
    const plain: Item = compact({
      // Not stored again: tenant_id, action_id and the item kind are in the key (toRecord reads them from it).
      ...keys.action(tenant, action.id),
      principal: input.principal,
      capability_id: action.capability_id,
      mode: action.transaction?.mode,
      transaction_id: transactionId,
      status,
      revision: 1,
      // Nor are the envelope's fields that repeat the item's own (./derived-attributes.ts): toRecord rebuilds them.
      action: leanActionEnvelope(envelope, { capability_id: action.capability_id, mode: action.transaction?.mode, idempotency_key: action.idempotency_key }),
      input: storedInput,
      input_redacted: input.redact_input === true ? true : undefined,
      input_hash: inputHash,
      result: storedResult(input.result),
      approval_id: input.approval_id,
      idempotency_key: action.idempotency_key,
      recovery: input.recovery === undefined ? undefined : compact({ ...input.recovery }),
      actor: input.actor === undefined ? undefined : compact({ ...input.actor, scopes: [...input.actor.scopes] }),
      fence: 0,
      attempt: 0,
      created_at: iso,
      updated_at: iso,
      [TTL_ATTRIBUTE]: retention !== undefined && TERMINAL.has(status) ? epochSeconds(now.getTime()) + retention : undefined,
      // Created leased: the first attempt's lease as `action.lease` grants it, in the creation's own write.
      ...(input.lease !== undefined ? { ...leaseGrant(input.lease, ref, now, action.capability_id), fence: 1, attempt: 1 } : {}),
    });
    const item = packAttributes(plain, PACKED);
    const record = toRecord(plain);
    return {
      items: [{ Put: { TableName: this.table, Item: item, ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': 'PK' } } }],
      refuse: (_at, old) => ({
        error: new AipError('action.already_exists', `Action ${action.id} already exists`, {
          details: { action_id: action.id, ...(old ? { current_status: old.status, current_revision: old.revision } : {}) },
        }),
        ...(old !== undefined ? { current: toRecord(old) } : {}),
      }),
      race: () => this.raced(ref, 'create'),
      written: () => record,
    };
  }

  /** Compare-and-set status change (optionally fenced). Leaving `running` releases the lease. */
  private transitionWrite(input: TransitionActionInput): MappedWrite<ActionRecord | undefined, never> {
    this.checkRef(input);
    const from = checkStatuses('from', input.from, false);
    if (!isStatus(input.to)) throw invalid(CODE, 'unknown target status', { field: 'to' });
    if (input.to === 'running' && !from.includes('running')) throw invalid(CODE, 'an action enters running only through acquireLease', { field: 'to' });
    const expected = checkRevision(CODE, input.expected_revision);
    if (input.fence !== undefined) checkRevision(CODE, input.fence, 'fence');
    const patch = input.patch ?? {};
    if (patch.redact_input === true && !TERMINAL.has(input.to))
      throw invalid(CODE, 'the input is redacted only when the action becomes terminal', { field: 'patch.redact_input' });
    this.checkResult(input, patch.result, TERMINAL.has(input.to) ? input.to : undefined);
    const nowMs = this.clock().getTime();
    const b = new UpdateBuilder(PACKED);
    b.condition(`${b.n('status')} IN (${from.map((s) => b.v(s)).join(', ')})`);
    b.condition(`${b.n('revision')} = ${b.v(expected)}`);
    if (input.fence !== undefined) b.condition(`${b.n('fence')} = ${b.v(input.fence)}`);
    b.set('status', input.to);
    b.set('revision', expected + 1);
    b.set('updated_at', new Date(nowMs).toISOString());
    if (input.to !== 'running') b.remove('lease_owner', 'lease_expires_at');
    this.applyPatch(b, input.to, patch, nowMs);
    return this.updateWrite(input, 'transition', b, (old) => {
      if (input.fence !== undefined && (old.fence ?? 0) !== input.fence) return this.staleFence(input, 'transition', old, input.fence);
      return this.conflict(input, 'transition', old, from, expected);
    });
  }

  /**
   * A new lease: fence+1, attempt+1, status `running`; refused while another owner's lease is live. The record
   * after the write is computed from `held`, the record read at the expected revision, when it is given.
   */
  private leaseWrite(input: AcquireActionLeaseInput, held: ActionRecord | undefined): MappedWrite<ActionRecord | undefined, never> {
    this.checkRef(input);
    const expected = checkRevision(CODE, input.expected_revision);
    const from = checkStatuses('from', input.from ?? LEASABLE_ACTION_STATUSES, false);
    const now = this.clock();
    const iso = now.toISOString();
    const b = new UpdateBuilder(PACKED);
    const exp = b.n('lease_expires_at');
    b.condition(`${b.n('status')} IN (${from.map((s) => b.v(s)).join(', ')})`);
    b.condition(`${b.n('revision')} = ${b.v(expected)}`);
    b.condition(`attribute_not_exists(${exp}) OR ${exp} <= ${b.v(iso)} OR ${b.n('lease_owner')} = ${b.v(input.owner)}`);
    // The route is pinned only when the record read at `expected` held none (the port's contract): the revision
    // condition makes it put-if-absent, and a held record that holds one is refused below (a route is never
    // overwritten). The held image is the one the revision condition names (checked below), so its capability is the
    // action's; a capability the caller names instead is checked by the write itself.
    const grant = leaseGrant(input, input, now, held?.capability_id ?? input.action_capability_id);
    for (const [name, value] of Object.entries(grant)) b.set(name, value);
    b.set('revision', expected + 1);
    b.set('updated_at', iso);
    b.setExpr('fence', `${b.n('fence')} + ${b.v(1)}`);
    b.setExpr('attempt', `${b.n('attempt')} + ${b.v(1)}`);
    if (input.route !== undefined && held === undefined && input.action_capability_id !== undefined)
      b.condition(`${b.n('capability_id')} = ${b.v(input.action_capability_id)}`);
    const expiresAt = grant.lease_expires_at as string;
    const classify = (old: Item): AipError => {
      const live = typeof old.lease_expires_at === 'string' && old.lease_expires_at > iso && old.lease_owner !== input.owner;
      if (live && from.includes(old.status as ActionStatus)) {
        return new AipError('action.lease_held', `Action ${input.action_id} is leased until ${String(old.lease_expires_at)}`, {
          details: { action_id: input.action_id, ...current(old), lease_owner: old.lease_owner, lease_expires_at: old.lease_expires_at, fence: old.fence ?? 0 },
        });
      }
      return this.conflict(input, 'acquire_lease', old, from, expected);
    };
    const leased = (from: ActionRecord): ActionRecord => ({
      ...from,
      status: 'running',
      revision: expected + 1,
      updated_at: iso,
      lease_owner: input.owner,
      lease_expires_at: expiresAt,
      fence: from.fence + 1,
      attempt: from.attempt + 1,
      ...(input.route !== undefined ? { route: input.route } : {}),
    });
    if (held !== undefined && (held.revision !== expected || held.action_id !== input.action_id))
      throw invalid(CODE, 'the held record is not the one the lease was conditioned on', { field: 'expected_revision' });
    if (held?.route !== undefined && input.route !== undefined)
      throw invalid(CODE, 'the action has a pinned route: a route is never overwritten', { field: 'route' });
    return this.updateWrite(input, 'acquire_lease', b, classify, held !== undefined ? () => leased(held) : undefined);
  }

  /** Extends the caller's lease; conditional on owner and fence (does not change the fence). */
  private renewLeaseWrite(input: RenewActionLeaseInput): MappedWrite<ActionRecord | undefined, never> {
    this.checkRef(input);
    checkLeaseOwner(CODE, input.owner, input.ttl_ms);
    const fence = checkRevision(CODE, input.fence, 'fence');
    const now = this.clock();
    const iso = now.toISOString();
    const b = new UpdateBuilder(PACKED);
    b.condition(`${b.n('status')} = ${b.v('running')}`);
    b.condition(`${b.n('fence')} = ${b.v(fence)}`);
    b.condition(`${b.n('lease_owner')} = ${b.v(input.owner)}`);
    b.setExpr('revision', `${b.n('revision')} + ${b.v(1)}`);
    b.set('updated_at', iso);
    b.set('lease_expires_at', new Date(now.getTime() + input.ttl_ms).toISOString());
    return this.updateWrite(input, 'renew_lease', b, (old) => {
      if ((old.fence ?? 0) !== fence || old.lease_owner !== input.owner) return this.staleFence(input, 'renew_lease', old, fence);
      return this.conflict(input, 'renew_lease', old, ['running']);
    });
  }

  /** See ReleaseActionLeaseInput: the lease given back by an attempt certified not to have reached the provider. */
  private releaseLeaseWrite(input: ReleaseActionLeaseInput): MappedWrite<ActionRecord | undefined, never> {
    this.checkRef(input);
    checkLeaseOwner(CODE, input.owner, 1);
    const fence = checkRevision(CODE, input.fence, 'fence');
    const b = new UpdateBuilder(PACKED);
    b.condition(`${b.n('status')} = ${b.v('running')}`);
    b.condition(`${b.n('fence')} = ${b.v(fence)}`);
    b.condition(`${b.n('lease_owner')} = ${b.v(input.owner)}`);
    b.setExpr('revision', `${b.n('revision')} + ${b.v(1)}`);
    b.set('updated_at', this.clock().toISOString());
    b.set('released_fence', fence);
    b.setExpr('deferrals', `if_not_exists(${b.n('deferrals')}, ${b.v(0)}) + ${b.v(1)}`);
    b.remove('lease_owner', 'lease_expires_at');
    return this.updateWrite(input, 'release_lease', b, (old) => {
      if ((old.fence ?? 0) !== fence || old.lease_owner !== input.owner) return this.staleFence(input, 'release_lease', old, fence);
      return this.conflict(input, 'release_lease', old, ['running']);
    });
  }

  /**
   * See PinActionRouteInput: the route of an action that runs without a lease (a preview calling its handler),
   * conditioned on a non-terminal status and the revision the caller read holding no route (put-if-absent).
   */
  private pinRouteWrite(input: PinActionRouteInput): MappedWrite<ActionRecord | undefined, never> {
    this.checkRef(input);
    const expected = checkRevision(CODE, input.expected_revision);
    const b = new UpdateBuilder(PACKED);
    b.condition(`${b.n('status')} IN (${NON_TERMINAL.map((s) => b.v(s)).join(', ')})`);
    b.condition(`${b.n('revision')} = ${b.v(expected)}`);
    b.set('revision', expected + 1);
    b.set('updated_at', this.clock().toISOString());
    b.set(ROUTE_ATTRIBUTE, storedRoute(input.route, input));
    return this.updateWrite(input, 'pin_route', b, (old) => this.conflict(input, 'pin_route', old, NON_TERMINAL, expected));
  }

  /** Fenced terminal settlement: sets the result, releases the lease, optionally redacts the input. */
  private settleWrite(input: SettleActionInput): MappedWrite<ActionRecord | undefined, never> {
    this.checkRef(input);
    const fence = checkRevision(CODE, input.fence, 'fence');
    if (!TERMINAL.has(input.to)) throw invalid(CODE, 'settle lands in completed, failed or cancelled', { field: 'to' });
    const from = checkStatuses('from', input.from ?? ['running'], false);
    const expected = input.expected_revision === undefined ? undefined : checkRevision(CODE, input.expected_revision);
    if (input.result === undefined) throw invalid(CODE, 'settle needs a result', { field: 'result' });
    this.checkResult(input, input.result, input.to);
    const nowMs = this.clock().getTime();
    const b = new UpdateBuilder(PACKED);
    b.condition(`${b.n('fence')} = ${b.v(fence)}`);
    b.condition(`${b.n('status')} IN (${from.map((s) => b.v(s)).join(', ')})`);
    if (expected !== undefined) b.condition(`${b.n('revision')} = ${b.v(expected)}`);
    b.set('status', input.to);
    b.setExpr('revision', `${b.n('revision')} + ${b.v(1)}`);
    b.set('updated_at', new Date(nowMs).toISOString());
    b.remove('lease_owner', 'lease_expires_at');
    if (input.settlement !== undefined) b.set('settlement', this.checkSettlement(input.settlement));
    const patch: ActionPatch = compact({
      result: input.result,
      redact_input: input.redact_input,
      redacted_input: input.redacted_input,
      retention_seconds: input.retention_seconds,
    });
    this.applyPatch(b, input.to, patch, nowMs);
    const classify = (old: Item): AipError => {
      if ((old.fence ?? 0) !== fence) return this.staleFence(input, 'settle', old, fence);
      return this.conflict(input, 'settle', old, from, expected);
    };
    return this.updateWrite(input, 'settle', b, classify);
  }

  /** ActionRecord.settlement, validated: the attempt's ID (a lease owner's form), an optional operation and cursor. */
  private checkSettlement(facts: ActionSettlementFacts): Item {
    const ok =
      facts !== null &&
      typeof facts === 'object' &&
      (facts.provider_operation === undefined || ProviderOperationRefSchema.safeParse(facts.provider_operation).success) &&
      (facts.reconciliation_cursor === undefined || ReconciliationCursorSchema.safeParse(facts.reconciliation_cursor).success);
    if (!ok) throw invalid(CODE, 'settlement must hold an attempt ID, and optionally a provider operation and a cursor', { field: 'settlement' });
    if (facts.attempt_id !== true) checkLeaseOwner(CODE, facts.attempt_id, 1);
    return compact({ ...facts });
  }

  /** See RedactTerminalInput. */
  private redactWrite(input: RedactTerminalInput): MappedWrite<ActionRecord | undefined, never> {
    this.checkRef(input);
    const expected = checkRevision(CODE, input.expected_revision);
    if (input.redact_input !== true && input.redacted_input === undefined)
      throw invalid(CODE, 'redactTerminal needs redact_input or redacted_input', { field: 'redact_input' });
    const nowMs = this.clock().getTime();
    const b = new UpdateBuilder(PACKED);
    const terminal = [...TERMINAL] as ActionStatus[];
    b.condition(`${b.n('status')} IN (${terminal.map((s) => b.v(s)).join(', ')})`);
    b.condition(`${b.n('revision')} = ${b.v(expected)}`);
    b.setExpr('revision', `${b.n('revision')} + ${b.v(1)}`);
    b.set('updated_at', new Date(nowMs).toISOString());
    this.applyPatch(
      b,
      'completed',
      compact({ redact_input: input.redact_input, redacted_input: input.redacted_input, retention_seconds: input.retention_seconds }),
      nowMs,
    );
    return this.updateWrite(input, 'redactTerminal', b, (old) => this.conflict(input, 'redactTerminal', old, terminal, expected));
  }

  /** A ConditionCheck of the action item: `fence` is still the current one (see CheckFenceInput). */
  private checkFenceWrite(input: CheckFenceInput): MappedWrite<undefined, never> {
    this.checkRef(input);
    const fence = checkRevision(CODE, input.fence, 'fence');
    const b = new UpdateBuilder(PACKED);
    b.condition(`${b.n('fence')} = ${b.v(fence)}`);
    const { ConditionExpression, ExpressionAttributeNames, ExpressionAttributeValues } = b.render();
    return {
      items: [
        {
          ConditionCheck: {
            TableName: this.table,
            Key: keys.action(input.tenant_id, input.action_id),
            ConditionExpression,
            ExpressionAttributeNames,
            ExpressionAttributeValues,
          },
        },
      ],
      refuse: (_at, old) => ({ error: old === undefined ? this.notFound(input, 'check_fence') : this.staleFence(input, 'check_fence', old, fence) }),
      race: () => this.raced(input, 'check_fence'),
      written: () => undefined,
    };
  }

  /** Records a cancellation request on a non-terminal action (idempotent: a second request answers the record unchanged). */
  private requestCancelWrite(input: RequestCancelInput): MappedWrite<ActionRecord | undefined, never> {
    this.checkRef(input);
    const expected = input.expected_revision === undefined ? undefined : checkRevision(CODE, input.expected_revision);
    const iso = this.clock().toISOString();
    const b = new UpdateBuilder(PACKED);
    b.condition(`${b.n('status')} IN (${NON_TERMINAL.map((s) => b.v(s)).join(', ')})`);
    b.condition(`attribute_not_exists(${b.n('cancel_requested_at')})`);
    if (expected !== undefined) b.condition(`${b.n('revision')} = ${b.v(expected)}`);
    b.set('cancel_requested_at', iso);
    b.setExpr('revision', `${b.n('revision')} + ${b.v(1)}`);
    b.set('updated_at', iso);
    const write = this.updateWrite(input, 'request_cancel', b, (old) =>
      this.conflict(input, 'request_cancel', old, NON_TERMINAL, expected, TERMINAL.has(String(old.status)) ? 'terminal' : undefined),
    );
    return {
      ...write,
      // Already requested and still open: idempotent, the record as it is.
      refuse: (at, old) =>
        old !== undefined && old.cancel_requested_at !== undefined && !TERMINAL.has(String(old.status))
          ? { ...write.refuse(at, old), already: toRecord(old) }
          : write.refuse(at, old),
    };
  }

  /** The table and key of the action item, the ref checked as `get` checks it (for the attempt read, lib/aws/dynamo/attempt-reads.ts). */
  readKey(ref: ActionRef): { readonly table: string; readonly key: { PK: string; SK: string } } {
    this.checkRef(ref);
    return { table: this.table, key: keys.action(ref.tenant_id, ref.action_id) };
  }

  /** The record of an action item read strongly consistently by a composite read. */
  recordOf(item: Item): ActionRecord {
    return toRecord(item);
  }

  async get(ref: ActionRef): Promise<ActionRecord | undefined> {
    this.checkRef(ref);
    const item = await consistentGet(this.client, this.table, keys.action(ref.tenant_id, ref.action_id));
    return item === undefined ? undefined : toRecord(item);
  }

  /**
   * One conditional UpdateItem of the action item; a failed condition is classified from its ALL_OLD image.
   * The record after the write: its new image when it was sent alone, else `computed` (when the step held the
   * record the write is conditioned on), else undefined (a TransactWriteItems returns no image).
   */
  private updateWrite(
    ref: ActionRef,
    operation: string,
    b: UpdateBuilder,
    classify: (old: Item) => AipError,
    computed?: () => ActionRecord,
  ): MappedWrite<ActionRecord | undefined, never> {
    return {
      items: [{ Update: { TableName: this.table, Key: keys.action(ref.tenant_id, ref.action_id), ...b.render() } }],
      refuse: (_at, old) => ({ error: old === undefined ? this.notFound(ref, operation) : classify(old) }),
      race: () => this.raced(ref, operation),
      written: (image) => (image !== undefined ? toRecord(image) : computed?.()),
    };
  }

  private raced(ref: ActionRef, operation: string): AipError {
    return new AipError('action.state_conflict', `${operation}: a concurrent write to the same items won the race`, {
      details: { action_id: ref.action_id, operation, reason: 'transaction_conflict' },
    });
  }
}
