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
  idempotencyInFlightError,
  idempotencyKeyHash,
  idempotencyOutcomeUnknownError,
  type AdoptInput,
  type CompleteInput,
  type IdempotencyReservation,
  type IdempotencyScope,
  type IdempotencyStore,
  type OwnerInput,
  type ReserveInput,
  type ReserveOutcome,
} from '../../ports/idempotency-store.js';
import type { WriteIntent } from '../../ports/unit-of-work.js';
import { UpdateBuilder, checkId, checkJson, checkNonNegativeInt, checkRetention, compact, consistentGet, invalid, type Item } from './store-support.js';
import { TTL_ATTRIBUTE, keys, withKeyAttributes } from './table-design.js';
import { packAttributes, unpackAttributes } from './packed-attributes.js';
import type { IntentMapper, MappedWrite, Verdict } from './unit-of-work.js';

export interface DynamoIdempotencyStoreOptions {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly now?: () => Date;
  /** Retention of a reservation (and of a completed result). Default 24 h. */
  readonly retentionSeconds?: number;
  /** retry_after_ms reported for an in-flight reservation. Default 1000. */
  readonly inFlightRetryAfterMs?: number;
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
  'reconciled_by',
  'revision',
  'created_at',
  'updated_at',
  'expires_at',
  TTL_ATTRIBUTE,
] as const;

/** The attributes a reservation item stores packed (./packed-attributes.ts): written whole, never conditioned. */
const PACKED: ReadonlySet<string> = new Set(['fingerprint', 'result']);

/** The reservation of an item; `tenant_id`, `principal_id` and `key_hash` come from the key (stored only by items written before the lean item model). */
function toReservation(stored: Item): IdempotencyReservation {
  const item = withKeyAttributes(unpackAttributes(stored, PACKED));
  const out: Record<string, unknown> = {};
  for (const f of FIELDS) if (item[f] !== undefined) out[f] = item[f];
  // A reservation never updated stores no updated_at: it is its created_at (docs/table-design.md, "Attributes that repeat the item").
  out.updated_at ??= out.created_at;
  return out as unknown as IdempotencyReservation;
}

/** TTL is epoch seconds, rounded up so DynamoDB never deletes before expires_at. */
function keyHeld(existing: IdempotencyReservation): AipError {
  return new AipError('idempotency.key_held', 'The idempotency key is held by an earlier request whose stored result answers this one', {
    details: { action_id: existing.action_id, status: existing.status },
  });
}

function ttlFor(expiresMs: number): number {
  return Math.ceil(expiresMs / 1000);
}

export class DynamoIdempotencyStore implements IdempotencyStore, IntentMapper {
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

  /** Maps a write intent on an idempotency reservation to its conditional item (lib/aws/dynamo/unit-of-work.ts). */
  map(intent: WriteIntent): MappedWrite {
    switch (intent.kind) {
      case 'idempotency.reserve':
        return this.reserveWrite(intent.input);
      case 'idempotency.complete':
        return this.completeWrite(intent.input);
      case 'idempotency.mark_uncertain':
        return this.markUncertainWrite(intent.input);
      case 'idempotency.expire_rejected':
        return this.expireRejectedWrite(intent.input);
      case 'idempotency.adopt':
        return this.adoptWrite(intent.input);
      default:
        throw new AipError('internal.unexpected', `the idempotency store does not write ${intent.kind}`);
    }
  }

  /**
   * Reserves the key for one attempt: absent, or present but expired (TTL
   * deletion lags). A refusal carries who holds it (replay, in flight,
   * uncertain), or is idempotency.fingerprint_mismatch.
   */
  private reserveWrite(input: ReserveInput): MappedWrite<IdempotencyReservation, Exclude<ReserveOutcome, { outcome: 'reserved' }>> {
    const key = this.scopeKey(input);
    if (!Sha256HexSchema.safeParse(input.fingerprint).success)
      throw invalid(CODE, 'fingerprint must be a lower-case sha256 hex digest', { field: 'fingerprint' });
    this.checkOwner(input);
    if (input.transaction_id !== undefined) checkId(CODE, 'transaction_id', input.transaction_id);
    const retention = checkRetention(CODE, 'retention_seconds', input.retention_seconds) ?? this.retentionSeconds;
    const now = this.clock();
    const iso = now.toISOString();
    const expiresMs = now.getTime() + retention * 1000;
    const plain: Item = compact({
      // Not stored again: tenant_id, principal_id, key_hash and the item kind are in the key (toReservation reads them from it).
      ...key,
      fingerprint: input.fingerprint,
      status: 'in_flight',
      action_id: input.action_id,
      fence: input.fence,
      transaction_id: input.transaction_id,
      revision: 1,
      // No updated_at until an update sets it (toReservation reads created_at for it): on the happy path the
      // reservation is never rewritten, so it never stores the same time twice.
      created_at: iso,
      expires_at: new Date(expiresMs).toISOString(),
      [TTL_ATTRIBUTE]: ttlFor(expiresMs),
    });
    const item = packAttributes(plain, PACKED);
    // Absent, or present but expired (TTL deletion lags): the reservation is ours.
    const reservation = toReservation(plain);
    return {
      items: [
        {
          Put: {
            TableName: this.table,
            Item: item,
            ConditionExpression: 'attribute_not_exists(#pk) OR (attribute_exists(#exp) AND #exp <= :now)',
            ExpressionAttributeNames: { '#pk': 'PK', '#exp': 'expires_at' },
            ExpressionAttributeValues: { ':now': iso },
          },
        },
      ],
      refuse: (_at, old) => this.heldOutcome(input, old),
      race: () => this.raced('reserve', input),
      written: () => reservation,
    };
  }

  /** Who holds the key, from the ALL_OLD image of a refused reservation: the refusal's typed error and the outcome it answers. */
  private heldOutcome(input: ReserveInput, old: Item | undefined): Verdict<never, Exclude<ReserveOutcome, { outcome: 'reserved' }>> {
    if (old === undefined) return { error: this.raced('reserve', input) };
    const existing = toReservation(old);
    if (existing.fingerprint !== input.fingerprint) {
      return {
        error: new AipError('idempotency.fingerprint_mismatch', 'The idempotency key was already used with a different request fingerprint', {
          details: { reason: 'fingerprint_mismatch', action_id: existing.action_id, status: existing.status },
        }),
      };
    }
    switch (existing.status) {
      case 'completed':
        if (existing.result !== undefined)
          return { error: keyHeld(existing), current: { outcome: 'completed', result: existing.result, reservation: existing } };
        if (existing.reconciled_by !== undefined) return { error: keyHeld(existing), current: { outcome: 'reconciled', reservation: existing } };
        break;
      case 'uncertain':
        return { error: idempotencyOutcomeUnknownError({ reservation: existing }), current: { outcome: 'uncertain', reservation: existing } };
      case 'in_flight': {
        const held = { outcome: 'in_flight', retry_after_ms: this.retryAfterMs, reservation: existing } as const;
        return { error: idempotencyInFlightError(held), current: held };
      }
    }
    throw new AipError('internal.unexpected', 'idempotency reservation is in an unknown state', { details: { status: String(existing.status) } });
  }

  /** Classifies a failed owner-conditional write. */
  private notOwner(operation: string, input: OwnerInput | AdoptInput, old: Item | undefined, iso: string): AipError {
    let reason: string;
    if (old === undefined) reason = 'not_found';
    else if (old.action_id !== input.action_id) reason = 'other_action';
    else if (typeof old.expires_at === 'string' && old.expires_at <= iso) reason = 'expired';
    else if (
      operation === 'adopt'
        ? (old.fence as number) >= input.fence
        : operation === 'mark_uncertain' || operation === 'complete'
          ? (old.fence as number) > input.fence
          : old.fence !== input.fence
    )
      reason = 'stale_fence';
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

  /**
   * in_flight|uncertain → completed, storing the result; conditioned on the owning action and a fence at or above the
   * stored one. Restarts the retention. A repeated complete by the same action answers the stored result.
   */
  private completeWrite(input: CompleteInput): MappedWrite<IdempotencyReservation | undefined, never> {
    const key = this.scopeKey(input);
    this.checkOwner(input);
    if (input.result !== undefined || input.reconciled_by === undefined) {
      checkJson(CODE, 'result', input.result, true);
      if (!ActionResultSchema.safeParse(input.result).success) throw invalid(CODE, 'result is not a valid ActionResult', { field: 'result' });
    }
    if (input.reconciled_by !== undefined && (typeof input.reconciled_by !== 'string' || input.reconciled_by.length === 0 || input.reconciled_by.length > 300))
      throw invalid(CODE, 'reconciled_by must be a non-empty string', { field: 'reconciled_by' });
    const retention = checkRetention(CODE, 'retention_seconds', input.retention_seconds) ?? this.retentionSeconds;
    const now = this.clock();
    const iso = now.toISOString();
    const expiresMs = now.getTime() + retention * 1000;
    const b = new UpdateBuilder(PACKED);
    const exp = b.n('expires_at');
    b.condition(`${b.n('action_id')} = ${b.v(input.action_id)}`);
    // The owning action at its admission's fence or any later attempt's: the attempt start does not adopt the key,
    // and the settlement that completes it is committed with the fenced action settlement, which refuses a zombie.
    b.condition(`${b.n('fence')} <= ${b.v(input.fence)}`);
    // A reconciliation completes only the uncertain reservation it resolves (the condition, not a read before it).
    if (input.reconciled_by !== undefined) b.condition(`${b.n('status')} = ${b.v('uncertain')}`);
    else b.condition(`${b.n('status')} IN (${b.v('in_flight')}, ${b.v('uncertain')})`);
    b.condition(`attribute_not_exists(${exp}) OR ${exp} > ${b.v(iso)}`);
    b.set('status', 'completed');
    // Without a result, the reference: the reader resolves the answer from the action and its transaction.
    if (input.result !== undefined) b.set('result', input.result);
    if (input.reconciled_by !== undefined) b.set('reconciled_by', input.reconciled_by);
    b.setExpr('revision', `${b.n('revision')} + ${b.v(1)}`);
    b.set('updated_at', iso);
    b.set('expires_at', new Date(expiresMs).toISOString());
    b.set(TTL_ATTRIBUTE, ttlFor(expiresMs));
    const write = this.ownerWrite('complete', input, key, b, iso);
    return {
      ...write,
      refuse: (at, old) =>
        old !== undefined && old.status === 'completed' && old.action_id === input.action_id && (old.fence as number) <= input.fence
          ? { ...write.refuse(at, old), already: toReservation(old) }
          : write.refuse(at, old),
    };
  }

  /** in_flight → uncertain (outcome_unknown): kept with no expiry; fenced on the owner. */
  private markUncertainWrite(input: OwnerInput): MappedWrite<IdempotencyReservation | undefined, never> {
    const key = this.scopeKey(input);
    this.checkOwner(input);
    const iso = this.clock().toISOString();
    const b = new UpdateBuilder(PACKED);
    // Deliberately no expiry condition: an ambiguous outcome is evidence and is
    // kept even if the in-flight retention ran out (as long as nobody took the key).
    // A newer attempt of the same action may mark it too (fence at or below its own): an attempt that recovers
    // from a predecessor that adopted the key and died settles outcome_unknown, and the key must then answer
    // idempotency.outcome_unknown for good, never expire into a blind re-execution. Only the conservative
    // direction is widened; an older fence (a zombie) is still refused.
    b.condition(`${b.n('action_id')} = ${b.v(input.action_id)}`);
    b.condition(`${b.n('fence')} <= ${b.v(input.fence)}`);
    b.condition(`${b.n('status')} IN (${b.v('in_flight')}, ${b.v('uncertain')})`);
    b.set('status', 'uncertain');
    b.setExpr('revision', `${b.n('revision')} + ${b.v(1)}`);
    b.set('updated_at', iso);
    b.remove('expires_at', TTL_ATTRIBUTE);
    return this.ownerWrite('mark_uncertain', input, key, b, iso);
  }

  /**
   * in_flight → expired now, fenced on the owner: an admission definitively
   * rejected after it reserved the key gives the key back (the next request
   * with it is evaluated afresh). The item is kept (no delete); its retention
   * ends now.
   */
  private expireRejectedWrite(input: OwnerInput): MappedWrite<IdempotencyReservation | undefined, never> {
    const key = this.scopeKey(input);
    this.checkOwner(input);
    const now = this.clock();
    const iso = now.toISOString();
    const b = new UpdateBuilder(PACKED);
    const exp = b.n('expires_at');
    b.condition(`${b.n('action_id')} = ${b.v(input.action_id)}`);
    b.condition(`${b.n('fence')} = ${b.v(input.fence)}`);
    b.condition(`${b.n('status')} = ${b.v('in_flight')}`);
    b.condition(`attribute_not_exists(${exp}) OR ${exp} > ${b.v(iso)}`);
    b.setExpr('revision', `${b.n('revision')} + ${b.v(1)}`);
    b.set('updated_at', iso);
    b.set('expires_at', iso);
    b.set(TTL_ATTRIBUTE, ttlFor(now.getTime()));
    return this.ownerWrite('expire_rejected', input, key, b, iso);
  }

  /** A newer attempt of the same action takes over an in-flight reservation (stored fence < new fence). */
  private adoptWrite(input: AdoptInput): MappedWrite<IdempotencyReservation | undefined, never> {
    const key = this.scopeKey(input);
    this.checkOwner(input);
    const iso = this.clock().toISOString();
    const b = new UpdateBuilder(PACKED);
    const exp = b.n('expires_at');
    b.condition(`${b.n('action_id')} = ${b.v(input.action_id)}`);
    b.condition(`${b.n('fence')} < ${b.v(input.fence)}`);
    b.condition(`${b.n('status')} = ${b.v('in_flight')}`);
    b.condition(`attribute_not_exists(${exp}) OR ${exp} > ${b.v(iso)}`);
    b.set('fence', input.fence);
    b.setExpr('revision', `${b.n('revision')} + ${b.v(1)}`);
    b.set('updated_at', iso);
    return this.ownerWrite('adopt', input, key, b, iso);
  }

  /** One owner-conditioned UpdateItem of the reservation; a refusal is idempotency.not_owner with its reason. */
  private ownerWrite(
    operation: string,
    input: OwnerInput | AdoptInput,
    key: { PK: string; SK: string },
    b: UpdateBuilder,
    iso: string,
  ): MappedWrite<IdempotencyReservation | undefined, never> {
    return {
      items: [{ Update: { TableName: this.table, Key: key, ...b.render() } }],
      refuse: (_at, old) => ({ error: this.notOwner(operation, input, old, iso) }),
      race: () => this.raced(operation, input),
      written: (image) => (image !== undefined ? toReservation(image) : undefined),
    };
  }

  private raced(operation: string, input: { readonly action_id: string }): AipError {
    return new AipError('idempotency.in_flight', `${operation}: a concurrent write to the same reservation won the race`, {
      details: { operation, action_id: input.action_id, reason: 'transaction_conflict' },
    });
  }

  async get(scope: IdempotencyScope): Promise<IdempotencyReservation | undefined> {
    const key = this.scopeKey(scope);
    const item = await consistentGet(this.client, this.table, key);
    if (item === undefined) return undefined;
    if (typeof item.expires_at === 'string' && item.expires_at <= this.clock().toISOString()) return undefined;
    return toReservation(item);
  }
}
