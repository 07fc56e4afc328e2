/**
 * DynamoDB adapter of the IdempotencyStore port (lib/ports/idempotency-store.ts).
 *
 * Item: PK `IDEM#<tenant>#<principal_id>#<sha256(key)>`, SK `IDEM`
 * (docs/table-design.md). The raw key is never stored. `ttl` (epoch seconds)
 * and `expires_at` (RFC 3339) carry the retention; every condition that must
 * treat an expired reservation as absent compares `expires_at` with now,
 * because DynamoDB deletes TTL'd items only some time after they expire.
 *
 * There is no DeleteItem anywhere in this adapter.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { ActionResultSchema, IdempotencyKeySchema, Sha256HexSchema } from '../../../packages/connector-sdk/src/protocol/index.js';
import {
  DEFAULT_IDEMPOTENCY_RETENTION_SECONDS,
  DEFAULT_IDEMPOTENCY_RETRY_AFTER_MS,
  idempotencyKeyHash,
  type AdoptInput,
  type CompleteInput,
  type IdempotencyReservation,
  type IdempotencyScope,
  type IdempotencyStore,
  type OwnerInput,
  type ReserveInput,
  type ReserveOutcome,
} from '../../ports/idempotency-store.js';
import {
  UpdateBuilder,
  checkId,
  checkJson,
  checkNonNegativeInt,
  checkRetention,
  compact,
  conditionalPut,
  conditionalUpdate,
  consistentGet,
  invalid,
  type Item,
} from './store-support.js';
import { ITEM_TYPES, TTL_ATTRIBUTE, keys } from './table-design.js';

export interface DynamoIdempotencyStoreOptions {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly now?: () => Date;
  /** Retention of a reservation (and of a completed result). Default 24 h. */
  readonly retentionSeconds?: number;
  /** retry_after_ms reported for an in-flight reservation. Default 1000. */
  readonly inFlightRetryAfterMs?: number;
}

/** A reservation Put built but not sent. */
export interface PreparedReserve {
  readonly put: {
    TableName: string;
    Item: Item;
    ConditionExpression: string;
    ExpressionAttributeNames: Record<string, string>;
    ExpressionAttributeValues: Record<string, unknown>;
  };
  /** The reservation the Put creates. */
  readonly reservation: IdempotencyReservation;
  /** The outcome named by the ALL_OLD image of a failed Put (throws idempotency.fingerprint_mismatch). */
  readonly held: (old: Item | undefined) => Exclude<ReserveOutcome, { outcome: 'reserved' }>;
}

/** An owner-conditioned Update built but not sent. */
export interface PreparedOwnerUpdate {
  readonly update: { TableName: string; Key: { PK: string; SK: string } } & ReturnType<UpdateBuilder['render']>;
  /** idempotency.not_owner from the ALL_OLD image of a failed Update. */
  readonly failure: (old: Item | undefined) => AipError;
}

const CODE = 'idempotency.invalid_request' as const;

const FIELDS = [
  'tenant_id',
  'principal_id',
  'key_hash',
  'fingerprint',
  'status',
  'action_id',
  'fence',
  'transaction_id',
  'result',
  'revision',
  'created_at',
  'updated_at',
  'expires_at',
  TTL_ATTRIBUTE,
] as const;

function toReservation(item: Item): IdempotencyReservation {
  const out: Record<string, unknown> = {};
  for (const f of FIELDS) if (item[f] !== undefined) out[f] = item[f];
  return out as unknown as IdempotencyReservation;
}

/** TTL is epoch seconds, rounded up so DynamoDB never deletes before expires_at. */
function ttlFor(expiresMs: number): number {
  return Math.ceil(expiresMs / 1000);
}

export class DynamoIdempotencyStore implements IdempotencyStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly table: string;
  private readonly clock: () => Date;
  private readonly retentionSeconds: number;
  private readonly retryAfterMs: number;

  constructor(options: DynamoIdempotencyStoreOptions) {
    this.client = options.client;
    this.table = options.tableName;
    this.clock = options.now ?? (() => new Date());
    this.retentionSeconds = checkRetention(CODE, 'retentionSeconds', options.retentionSeconds) ?? DEFAULT_IDEMPOTENCY_RETENTION_SECONDS;
    this.retryAfterMs = options.inFlightRetryAfterMs ?? DEFAULT_IDEMPOTENCY_RETRY_AFTER_MS;
  }

  private scopeKey(scope: IdempotencyScope): { PK: string; SK: string } {
    if (scope === null || typeof scope !== 'object') throw invalid(CODE, 'input must be an object');
    checkId(CODE, 'tenant_id', scope.tenant_id);
    checkId(CODE, 'principal_id', scope.principal_id);
    if (!IdempotencyKeySchema.safeParse(scope.key).success)
      throw invalid(CODE, 'key must be 1..256 printable ASCII characters without whitespace', { field: 'key' });
    return keys.idempotency(scope.tenant_id, scope.principal_id, idempotencyKeyHash(scope.key));
  }

  private checkOwner(input: OwnerInput | AdoptInput): void {
    checkId(CODE, 'action_id', input.action_id);
    checkNonNegativeInt(CODE, 'fence', input.fence);
  }

  async reserve(input: ReserveInput): Promise<ReserveOutcome> {
    const prepared = this.prepareReserve(input);
    const out = await conditionalPut(this.client, prepared.put);
    if (out.ok) return { outcome: 'reserved', reservation: prepared.reservation };
    return prepared.held(out.old);
  }

  /**
   * Validates a reservation and builds its conditional Put (not sent): absent,
   * or present but expired. `held` turns the ALL_OLD image of a failed Put
   * into the outcome (throws idempotency.fingerprint_mismatch). Shared by
   * reserve() and the composite admission write.
   */
  prepareReserve(input: ReserveInput): PreparedReserve {
    const key = this.scopeKey(input);
    if (!Sha256HexSchema.safeParse(input.fingerprint).success)
      throw invalid(CODE, 'fingerprint must be a lower-case sha256 hex digest', { field: 'fingerprint' });
    this.checkOwner(input);
    if (input.transaction_id !== undefined) checkId(CODE, 'transaction_id', input.transaction_id);
    const retention = checkRetention(CODE, 'retention_seconds', input.retention_seconds) ?? this.retentionSeconds;
    const now = this.clock();
    const iso = now.toISOString();
    const expiresMs = now.getTime() + retention * 1000;
    const item: Item = compact({
      ...key,
      item_type: ITEM_TYPES.idempotency,
      tenant_id: input.tenant_id,
      principal_id: input.principal_id,
      key_hash: idempotencyKeyHash(input.key),
      fingerprint: input.fingerprint,
      status: 'in_flight',
      action_id: input.action_id,
      fence: input.fence,
      transaction_id: input.transaction_id,
      revision: 1,
      created_at: iso,
      updated_at: iso,
      expires_at: new Date(expiresMs).toISOString(),
      [TTL_ATTRIBUTE]: ttlFor(expiresMs),
    });
    // Absent, or present but expired (TTL deletion lags): the reservation is ours.
    return {
      put: {
        TableName: this.table,
        Item: item,
        ConditionExpression: 'attribute_not_exists(#pk) OR (attribute_exists(#exp) AND #exp <= :now)',
        ExpressionAttributeNames: { '#pk': 'PK', '#exp': 'expires_at' },
        ExpressionAttributeValues: { ':now': iso },
      },
      reservation: toReservation(item),
      held: (old) => this.heldOutcome(input, old),
    };
  }

  private heldOutcome(input: ReserveInput, old: Item | undefined): Exclude<ReserveOutcome, { outcome: 'reserved' }> {
    if (old === undefined) throw new AipError('internal.unexpected', 'idempotency reservation condition failed without an item');
    const existing = toReservation(old);
    if (existing.fingerprint !== input.fingerprint) {
      throw new AipError('idempotency.fingerprint_mismatch', 'The idempotency key was already used with a different request fingerprint', {
        details: { reason: 'fingerprint_mismatch', action_id: existing.action_id, status: existing.status },
      });
    }
    switch (existing.status) {
      case 'completed':
        if (existing.result !== undefined) return { outcome: 'completed', result: existing.result, reservation: existing };
        break;
      case 'uncertain':
        return { outcome: 'uncertain', reservation: existing };
      case 'in_flight':
        return { outcome: 'in_flight', retry_after_ms: this.retryAfterMs, reservation: existing };
    }
    throw new AipError('internal.unexpected', 'idempotency reservation is in an unknown state', { details: { status: String(existing.status) } });
  }

  /** Classifies a failed owner-conditional write. */
  private notOwner(operation: string, input: OwnerInput | AdoptInput, old: Item | undefined, iso: string): AipError {
    let reason: string;
    if (old === undefined) reason = 'not_found';
    else if (old.action_id !== input.action_id) reason = 'other_action';
    else if (typeof old.expires_at === 'string' && old.expires_at <= iso) reason = 'expired';
    else if (operation === 'adopt' ? (old.fence as number) >= input.fence : old.fence !== input.fence) reason = 'stale_fence';
    else reason = `status_${String(old.status)}`;
    return new AipError('idempotency.not_owner', `${operation}: the reservation is not owned by this attempt (${reason})`, {
      details: {
        operation,
        reason,
        action_id: input.action_id,
        fence: input.fence,
        ...(old ? { current_action_id: old.action_id, current_fence: old.fence, current_status: old.status, current_revision: old.revision } : {}),
      },
    });
  }

  async complete(input: CompleteInput): Promise<IdempotencyReservation> {
    const prepared = this.prepareComplete(input);
    const out = await conditionalUpdate(this.client, prepared.update);
    if (out.ok) return toReservation(out.item);
    const old = out.old;
    // A repeated complete by the same owner: the stored result stands.
    if (old !== undefined && old.status === 'completed' && old.action_id === input.action_id && old.fence === input.fence) return toReservation(old);
    throw prepared.failure(old);
  }

  /** complete() built but not sent (owner-conditioned update), for the composite settlement write. */
  prepareComplete(input: CompleteInput): PreparedOwnerUpdate {
    const key = this.scopeKey(input);
    this.checkOwner(input);
    checkJson(CODE, 'result', input.result, true);
    if (!ActionResultSchema.safeParse(input.result).success) throw invalid(CODE, 'result is not a valid ActionResult', { field: 'result' });
    const retention = checkRetention(CODE, 'retention_seconds', input.retention_seconds) ?? this.retentionSeconds;
    const now = this.clock();
    const iso = now.toISOString();
    const expiresMs = now.getTime() + retention * 1000;
    const b = new UpdateBuilder();
    const exp = b.n('expires_at');
    b.condition(`${b.n('action_id')} = ${b.v(input.action_id)}`);
    b.condition(`${b.n('fence')} = ${b.v(input.fence)}`);
    b.condition(`${b.n('status')} IN (${b.v('in_flight')}, ${b.v('uncertain')})`);
    b.condition(`attribute_not_exists(${exp}) OR ${exp} > ${b.v(iso)}`);
    b.set('status', 'completed');
    b.set('result', input.result);
    b.setExpr('revision', `${b.n('revision')} + ${b.v(1)}`);
    b.set('updated_at', iso);
    b.set('expires_at', new Date(expiresMs).toISOString());
    b.set(TTL_ATTRIBUTE, ttlFor(expiresMs));
    return { update: { TableName: this.table, Key: key, ...b.render() }, failure: (old) => this.notOwner('complete', input, old, iso) };
  }

  async markUncertain(input: OwnerInput): Promise<IdempotencyReservation> {
    const prepared = this.prepareMarkUncertain(input);
    const out = await conditionalUpdate(this.client, prepared.update);
    if (out.ok) return toReservation(out.item);
    throw prepared.failure(out.old);
  }

  /** markUncertain() built but not sent, for the composite settlement write. */
  prepareMarkUncertain(input: OwnerInput): PreparedOwnerUpdate {
    const key = this.scopeKey(input);
    this.checkOwner(input);
    const iso = this.clock().toISOString();
    const b = new UpdateBuilder();
    // Deliberately no expiry condition: an ambiguous outcome is evidence and is
    // kept even if the in-flight retention ran out (as long as nobody took the key).
    b.condition(`${b.n('action_id')} = ${b.v(input.action_id)}`);
    b.condition(`${b.n('fence')} = ${b.v(input.fence)}`);
    b.condition(`${b.n('status')} IN (${b.v('in_flight')}, ${b.v('uncertain')})`);
    b.set('status', 'uncertain');
    b.setExpr('revision', `${b.n('revision')} + ${b.v(1)}`);
    b.set('updated_at', iso);
    b.remove('expires_at', TTL_ATTRIBUTE);
    return { update: { TableName: this.table, Key: key, ...b.render() }, failure: (old) => this.notOwner('mark_uncertain', input, old, iso) };
  }

  async expireRejected(input: OwnerInput): Promise<IdempotencyReservation> {
    const key = this.scopeKey(input);
    this.checkOwner(input);
    const now = this.clock();
    const iso = now.toISOString();
    const b = new UpdateBuilder();
    const exp = b.n('expires_at');
    b.condition(`${b.n('action_id')} = ${b.v(input.action_id)}`);
    b.condition(`${b.n('fence')} = ${b.v(input.fence)}`);
    b.condition(`${b.n('status')} = ${b.v('in_flight')}`);
    b.condition(`attribute_not_exists(${exp}) OR ${exp} > ${b.v(iso)}`);
    b.setExpr('revision', `${b.n('revision')} + ${b.v(1)}`);
    b.set('updated_at', iso);
    b.set('expires_at', iso);
    b.set(TTL_ATTRIBUTE, ttlFor(now.getTime()));
    const out = await conditionalUpdate(this.client, { TableName: this.table, Key: key, ...b.render() });
    if (out.ok) return toReservation(out.item);
    throw this.notOwner('expire_rejected', input, out.old, iso);
  }

  async adopt(input: AdoptInput): Promise<IdempotencyReservation> {
    const prepared = this.prepareAdopt(input);
    const out = await conditionalUpdate(this.client, prepared.update);
    if (out.ok) return toReservation(out.item);
    throw prepared.failure(out.old);
  }

  /** adopt() built but not sent, for the composite attempt-start write. */
  prepareAdopt(input: AdoptInput): PreparedOwnerUpdate {
    const key = this.scopeKey(input);
    this.checkOwner(input);
    const iso = this.clock().toISOString();
    const b = new UpdateBuilder();
    const exp = b.n('expires_at');
    b.condition(`${b.n('action_id')} = ${b.v(input.action_id)}`);
    b.condition(`${b.n('fence')} < ${b.v(input.fence)}`);
    b.condition(`${b.n('status')} = ${b.v('in_flight')}`);
    b.condition(`attribute_not_exists(${exp}) OR ${exp} > ${b.v(iso)}`);
    b.set('fence', input.fence);
    b.setExpr('revision', `${b.n('revision')} + ${b.v(1)}`);
    b.set('updated_at', iso);
    return { update: { TableName: this.table, Key: key, ...b.render() }, failure: (old) => this.notOwner('adopt', input, old, iso) };
  }

  async get(scope: IdempotencyScope): Promise<IdempotencyReservation | undefined> {
    const key = this.scopeKey(scope);
    const item = await consistentGet(this.client, this.table, key);
    if (item === undefined) return undefined;
    if (typeof item.expires_at === 'string' && item.expires_at <= this.clock().toISOString()) return undefined;
    return toReservation(item);
  }
}
