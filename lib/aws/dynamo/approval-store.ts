/**
 * DynamoDB adapter of the ApprovalStore port (lib/ports/approval-store.ts).
 *
 * Item: PK `APPROVAL#<tenant>#<approval_id>`, SK `APPROVAL`. While pending
 * it carries the sparse byStatus index keys GSI3PK `APPROVAL#pending#<tenant>`
 * and GSI3SK `<expires_at>#<approval_id>`; the deciding (final) or expiring
 * write removes them (docs/table-design.md).
 *
 * Decisions: `decisions` holds every decision in order; `approver_keys` (not
 * part of the record) holds the identity key of each approving principal
 * (`principalKey`, lib/auth/identity.ts: the principal ID, the kind ignored),
 * so the write itself refuses a second approval by the same subject
 * (`NOT contains(approver_keys, :me)`, and none of the `<kind>#<id>` keys
 * records written before the identity key hold) and counts the approvals so far
 * (`size(approver_keys)`). A partial approval appends and stays pending; the
 * approval that reaches `policy.min_approvals` (checked in the write) ends it
 * `approved`; a denial ends it `denied`; `withdraw` ends a pending one
 * `withdrawn` with its typed reason (`withdrawal`), conditional on status and
 * revision like every other write.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { principalKey, samePrincipal } from '../../auth/identity.js';
import {
  PRINCIPAL_KINDS,
  PrincipalSchema,
  ScopeSchema,
  Sha256HexSchema,
  TextSchema,
  type JsonObject,
  type Principal,
} from '../../../packages/connector-sdk/src/protocol/index.js';
import type {
  ApprovalRecord,
  ApprovalRef,
  ApprovalStore,
  ApprovalSubject,
  CreateApprovalInput,
  DecideApprovalInput,
  ExpireApprovalInput,
  ListExpiringApprovalsQuery,
  ListPendingApprovalsQuery,
  WithdrawApprovalInput,
} from '../../ports/approval-store.js';
import { APPROVAL_WITHDRAWAL_REASONS, PROPOSAL_PROVIDER_VERDICTS, ResolutionSchema, type ProposalProviderCheck } from '../../ports/approval-store.js';
import type { WriteIntent } from '../../ports/unit-of-work.js';
import type { Page } from '../../ports/transaction-store.js';
import {
  UpdateBuilder,
  checkId,
  checkJson,
  checkLimit,
  checkRevision,
  checkTime,
  compact,
  consistentBatchGet,
  consistentGet,
  encodeCursor,
  invalid,
  mapStoreError,
  type Item,
} from './store-support.js';
import { queryMergedPartitions, queryStatusIndex } from './pagination.js';
import { GSIS, keys, withKeyAttributes } from './table-design.js';
import { packAttributes, unpack, unpackAttributes } from './packed-attributes.js';
import type { IntentMapper, MappedWrite } from './unit-of-work.js';

export interface DynamoApprovalStoreOptions {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly now?: () => Date;
}

const CODE = 'approval.invalid_record' as const;
const LIST_CODE = 'approval.invalid_listing' as const;
const ReasonSchema = TextSchema(2048);

const FIELDS = [
  'tenant_id',
  'approval_id',
  'action_id',
  'transaction_id',
  'capability_id',
  'requested_by',
  'policy',
  'status',
  'decision',
  'decisions',
  'subject',
  'withdrawal',
  'expires_at',
  'created_at',
  'updated_at',
  'revision',
] as const;

/**
 * The attributes an approval item stores packed (./packed-attributes.ts): written whole, never conditioned.
 * `requested_by` and `policy` (their fields are conditioned) and `decisions` (appended to) stay plain.
 */
const PACKED: ReadonlySet<string> = new Set(['subject', 'decision', 'withdrawal']);

/** The record of an approval item; `tenant_id` and `approval_id` come from the key (stored only by items written before the lean item model). */
function toRecord(stored: Item): ApprovalRecord {
  const item = withKeyAttributes(unpackAttributes(stored, PACKED));
  const out: Record<string, unknown> = {};
  for (const f of FIELDS) if (item[f] !== undefined) out[f] = item[f];
  // Records written before min approvals: one approval, and the one decision they hold.
  const policy = out.policy as Record<string, unknown> | undefined;
  if (policy !== undefined && policy !== null && typeof policy === 'object' && policy.min_approvals === undefined) out.policy = { ...policy, min_approvals: 1 };
  out.decisions ??= out.decision !== undefined ? [out.decision] : [];
  return out as unknown as ApprovalRecord;
}

/** The stored attributes of a record: every field but the two its key holds. */
function withoutKey(record: ApprovalRecord): Item {
  const { tenant_id: _tenant, approval_id: _approval, ...rest } = record;
  return rest;
}

/** The key of an approving principal in `approver_keys`: its identity key (one subject, whatever kind its token claims). */
function approverKey(p: Principal): string {
  return `id#${principalKey(p)}`;
}

/** The keys records written before the identity key hold for the same subject (`<kind>#<id>`). */
function legacyApproverKeys(p: Principal): string[] {
  return PRINCIPAL_KINDS.map((kind) => `${kind}#${p.id}`);
}

function holdsApprover(old: Item, p: Principal): boolean {
  const held = Array.isArray(old.approver_keys) ? old.approver_keys : [];
  return [approverKey(p), ...legacyApproverKeys(p)].some((key) => held.includes(key));
}

function approvalsOf(old: Item): number {
  return Array.isArray(old.approver_keys) ? old.approver_keys.length : 0;
}

function minApprovalsOf(old: Item): number {
  const min = (old.policy as { min_approvals?: unknown } | undefined)?.min_approvals;
  return typeof min === 'number' ? min : 1;
}

function current(old: Item) {
  const d = unpack(old.decision, 'decision') as Record<string, unknown> | undefined;
  return {
    current_status: old.status,
    current_revision: old.revision,
    expires_at: old.expires_at,
    approvals: approvalsOf(old),
    min_approvals: minApprovalsOf(old),
    ...(d ? { decision: { decision_id: d.decision_id, decision: d.decision, decided_at: d.decided_at } } : {}),
  };
}

/** A resolution proposal's provider check (only beside a resolution): a JSON answer that says whether it was obtained, and a known verdict. */
function checkProviderCheck(check: unknown, withResolution: boolean): ProposalProviderCheck | undefined {
  if (check === undefined) return undefined;
  const bad = () =>
    invalid(CODE, 'subject.provider_check must be {answer: {obtained, looked_up_at, ...}, verdict} beside a resolution', { field: 'subject.provider_check' });
  if (!withResolution || check === null || typeof check !== 'object' || Array.isArray(check)) throw bad();
  const { answer, verdict, ...rest } = check as Record<string, unknown>;
  if (Object.keys(rest).length > 0 || !(PROPOSAL_PROVIDER_VERDICTS as readonly unknown[]).includes(verdict)) throw bad();
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) throw bad();
  const a = answer as Record<string, unknown>;
  if (typeof a.obtained !== 'boolean' || typeof a.looked_up_at !== 'string') throw bad();
  checkJson(CODE, 'subject.provider_check.answer', answer, true);
  return { answer: answer as JsonObject, verdict: verdict as ProposalProviderCheck['verdict'] };
}

/** An optional subject, validated and copied (only the known fields). */
function checkSubject(subject: CreateApprovalInput['subject']): ApprovalSubject | undefined {
  if (subject === undefined) return undefined;
  const bad = () => invalid(CODE, 'subject must be {compensation_for?: {action_id, transaction_id?, owner: {id, kind}}}', { field: 'subject' });
  if (subject === null || typeof subject !== 'object' || Array.isArray(subject)) throw bad();
  if (Object.keys(subject).some((k) => k !== 'compensation_for' && k !== 'resolution' && k !== 'provider_check')) throw bad();
  let resolution: ApprovalSubject['resolution'];
  if (subject.resolution !== undefined) {
    const { transaction_id, ...rest } = subject.resolution as unknown as Record<string, unknown>;
    checkId(CODE, 'subject.resolution.transaction_id', transaction_id);
    const parsed = ResolutionSchema.safeParse(rest);
    if (!parsed.success) throw invalid(CODE, 'subject.resolution is not a valid resolution', { field: 'subject.resolution' });
    resolution = { ...parsed.data, transaction_id: transaction_id as string };
  }
  const provider_check = checkProviderCheck(subject.provider_check, resolution !== undefined);
  const c = subject.compensation_for as Record<string, unknown> | undefined;
  if (c === undefined) return resolution !== undefined ? { resolution, ...(provider_check !== undefined ? { provider_check } : {}) } : {};
  if (c === null || typeof c !== 'object' || Object.keys(c).some((k) => !['action_id', 'transaction_id', 'owner'].includes(k))) throw bad();
  checkId(CODE, 'subject.compensation_for.action_id', c.action_id);
  if (c.transaction_id !== undefined) checkId(CODE, 'subject.compensation_for.transaction_id', c.transaction_id);
  if (!PrincipalSchema.safeParse(c.owner).success) throw bad();
  const owner = c.owner as Principal;
  return {
    compensation_for: compact({
      action_id: c.action_id as string,
      transaction_id: c.transaction_id as string | undefined,
      owner: { id: owner.id, kind: owner.kind },
    }),
    ...(resolution !== undefined ? { resolution } : {}),
    ...(provider_check !== undefined ? { provider_check } : {}),
  };
}

export class DynamoApprovalStore implements ApprovalStore, IntentMapper {
  private readonly client: DynamoDBDocumentClient;
  private readonly table: string;
  private readonly clock: () => Date;

  constructor(options: DynamoApprovalStoreOptions) {
    this.client = options.client;
    this.table = options.tableName;
    this.clock = options.now ?? (() => new Date());
  }

  private checkRef(ref: ApprovalRef): { PK: string; SK: string } {
    if (ref === null || typeof ref !== 'object') throw invalid(CODE, 'input must be an object');
    checkId(CODE, 'tenant_id', ref.tenant_id);
    checkId(CODE, 'approval_id', ref.approval_id);
    return keys.approval(ref.tenant_id, ref.approval_id);
  }

  /** Maps a write intent on an approval to its conditional item (lib/aws/dynamo/unit-of-work.ts). */
  map(intent: WriteIntent): MappedWrite {
    switch (intent.kind) {
      case 'approval.create':
        return this.createWrite(intent.input);
      case 'approval.decide':
        return this.decideWrite(intent.input);
      case 'approval.expire':
        return this.expireWrite(intent.input);
      case 'approval.withdraw':
        return this.withdrawWrite(intent.input);
      default:
        throw new AipError('internal.unexpected', `the approval store does not write ${intent.kind}`);
    }
  }

  /** Creates `pending`, revision 1; conditional on the approval ID not existing in the tenant. */
  private createWrite(input: CreateApprovalInput): MappedWrite<ApprovalRecord, never> {
    const key = this.checkRef(input);
    checkId(CODE, 'action_id', input.action_id);
    checkId(CODE, 'capability_id', input.capability_id);
    if (input.transaction_id !== undefined) checkId(CODE, 'transaction_id', input.transaction_id);
    if (!PrincipalSchema.safeParse(input.requested_by).success) throw invalid(CODE, 'requested_by must be {id, kind}', { field: 'requested_by' });
    const p = input.policy as unknown as Record<string, unknown> | undefined;
    if (
      p === undefined ||
      p === null ||
      typeof p !== 'object' ||
      !checkPolicyId(p.policy_id) ||
      !Sha256HexSchema.safeParse(p.policy_hash).success ||
      !Array.isArray(p.approver_scopes) ||
      p.approver_scopes.length > 64 ||
      !p.approver_scopes.every((s) => ScopeSchema.safeParse(s).success) ||
      typeof p.allow_self_approval !== 'boolean' ||
      (p.min_approvals !== undefined && (!Number.isSafeInteger(p.min_approvals) || (p.min_approvals as number) < 1 || (p.min_approvals as number) > 10)) ||
      (p.ttl_ms !== undefined && (!Number.isSafeInteger(p.ttl_ms) || (p.ttl_ms as number) < 1_000 || (p.ttl_ms as number) > 30 * 86_400_000))
    ) {
      throw invalid(CODE, 'policy must be {policy_id, policy_hash (sha256 hex), approver_scopes, allow_self_approval, min_approvals (1-10), ttl_ms?}', {
        field: 'policy',
      });
    }
    const subject = checkSubject(input.subject);
    const expiresAt = checkTime(CODE, 'expires_at', input.expires_at);
    const iso = this.clock().toISOString();
    if (expiresAt <= iso) throw invalid(CODE, 'expires_at must be in the future', { field: 'expires_at' });
    const record: ApprovalRecord = compact({
      tenant_id: input.tenant_id,
      approval_id: input.approval_id,
      action_id: input.action_id,
      transaction_id: input.transaction_id,
      capability_id: input.capability_id,
      requested_by: { id: input.requested_by.id, kind: input.requested_by.kind },
      policy: {
        policy_id: input.policy.policy_id,
        policy_hash: input.policy.policy_hash,
        approver_scopes: [...input.policy.approver_scopes],
        allow_self_approval: input.policy.allow_self_approval,
        min_approvals: input.policy.min_approvals ?? 1,
        ttl_ms: input.policy.ttl_ms,
      },
      status: 'pending',
      decisions: [],
      subject,
      expires_at: expiresAt,
      created_at: iso,
      updated_at: iso,
      revision: 1,
    });
    const exists = (old: Item | undefined) =>
      new AipError('approval.already_exists', `Approval ${input.approval_id} already exists`, {
        details: { approval_id: input.approval_id, ...(old ? current(old) : {}) },
      });
    return {
      items: [
        {
          Put: {
            TableName: this.table,
            Item: packAttributes(
              {
                // Not stored again: tenant_id, approval_id and the item kind are in the key (toRecord reads them from it).
                ...key,
                ...withoutKey(record),
                GSI3PK: keys.approvalPendingIndex(input.tenant_id),
                GSI3SK: keys.approvalPendingIndexSort(expiresAt, input.approval_id),
                GSI4PK: keys.approvalExpiryIndex(keys.approvalExpiryIndexShard(input.tenant_id, input.approval_id)),
                GSI4SK: keys.approvalExpiryIndexSort(expiresAt, input.tenant_id, input.approval_id),
              },
              PACKED,
            ),
            ConditionExpression: 'attribute_not_exists(#pk)',
            ExpressionAttributeNames: { '#pk': 'PK' },
          },
        },
      ],
      refuse: (_at, old) => ({ error: exists(old) }),
      race: () => exists(undefined),
      written: () => record,
    };
  }

  /**
   * Records one decision: pending stays pending (a partial approval) or becomes approved|denied; refused after
   * expiry. Computed from `current`, the record the caller read; the write is conditional on its revision and on
   * the approvals it counts, so a stale record only loses the write.
   */
  private decideWrite(input: DecideApprovalInput): MappedWrite<ApprovalRecord | undefined, never> {
    const key = this.checkRef(input);
    const expected = checkRevision(CODE, input.expected_revision);
    checkId(CODE, 'decision_id', input.decision_id);
    if (!PrincipalSchema.safeParse(input.decided_by).success) throw invalid(CODE, 'decided_by must be {id, kind}', { field: 'decided_by' });
    if (input.decision !== 'approved' && input.decision !== 'denied') throw invalid(CODE, 'decision must be approved or denied', { field: 'decision' });
    if (input.reason !== undefined && !ReasonSchema.safeParse(input.reason).success)
      throw invalid(CODE, 'reason must be text of at most 2048 characters', { field: 'reason' });
    const iso = this.clock().toISOString();
    const decidedBy: Principal = { id: input.decided_by.id, kind: input.decided_by.kind };
    const decision = compact({
      decision_id: input.decision_id,
      decided_by: decidedBy,
      decision: input.decision,
      reason: input.reason,
      decided_at: iso,
    });

    // The approvals so far and the approvals needed, from the record the caller holds.
    const held = input.current;
    if (held === undefined || held.approval_id !== input.approval_id || held.tenant_id !== input.tenant_id)
      throw invalid(CODE, 'a decision names the record it was computed from (current)', { field: 'current' });
    const approvalsSoFar = held.decisions.filter((d) => d.decision === 'approved').length;
    const needed = held.policy.min_approvals ?? 1;
    const me = approverKey(decidedBy);
    const final = input.decision === 'denied' || approvalsSoFar + 1 >= needed;

    const b = new UpdateBuilder(PACKED);
    b.condition(`${b.n('status')} = ${b.v('pending')}`);
    b.condition(`${b.n('revision')} = ${b.v(expected)}`);
    b.condition(`${b.n('expires_at')} > ${b.v(iso)}`);
    const empty = b.v([]);
    if (input.decision === 'approved') {
      // Defence in depth: the policy's self-approval rule holds even if a caller forgot it.
      // Only approving is guarded: a requester may always deny (withdraw) their own request. Compared by the
      // identity key (the ID): a token of the requester claiming another kind is still the requester.
      b.condition(`${b.n('requested_by')}.${b.n('id')} <> ${b.v(decidedBy.id)} OR ${b.n('policy')}.${b.n('allow_self_approval')} = ${b.v(true)}`);
      // One approval per principal; the count the outcome below relies on; the threshold from the record itself.
      for (const key of [me, ...legacyApproverKeys(decidedBy)]) b.condition(`NOT contains(${b.n('approver_keys')}, ${b.v(key)})`);
      b.condition(
        approvalsSoFar === 0
          ? `attribute_not_exists(${b.n('approver_keys')}) OR size(${b.n('approver_keys')}) = ${b.v(0)}`
          : `size(${b.n('approver_keys')}) = ${b.v(approvalsSoFar)}`,
      );
      const min = `${b.n('policy')}.${b.n('min_approvals')}`;
      b.condition(final ? `attribute_not_exists(${min}) OR ${min} <= ${b.v(approvalsSoFar + 1)}` : `${min} > ${b.v(approvalsSoFar + 1)}`);
      b.setExpr('approver_keys', `list_append(if_not_exists(${b.n('approver_keys')}, ${empty}), ${b.v([me])})`);
    }
    b.setExpr('decisions', `list_append(if_not_exists(${b.n('decisions')}, ${empty}), ${b.v([decision])})`);
    if (final) {
      b.set('status', input.decision);
      b.set('decision', decision);
      b.remove('GSI3PK', 'GSI3SK', 'GSI4PK', 'GSI4SK');
    }
    b.set('revision', expected + 1);
    b.set('updated_at', iso);
    const refusal = (old: Item | undefined): AipError => {
      if (old === undefined) return this.notFound(input, 'decide');
      if (old.status !== 'pending') return this.alreadyDecided(input, 'decide', old);
      if (typeof old.expires_at === 'string' && old.expires_at <= iso) {
        return new AipError('approval.expired', `Approval ${input.approval_id} expired at ${old.expires_at}`, {
          details: { approval_id: input.approval_id, ...current(old) },
        });
      }
      if (old.revision !== expected) return this.stateConflict(input, 'decide', old, expected);
      if (input.decision === 'approved' && holdsApprover(old, decidedBy)) {
        return new AipError('approval.already_approved_by_caller', `Approval ${input.approval_id} already holds this principal's approval`, {
          details: { approval_id: input.approval_id, ...current(old) },
        });
      }
      const requester = old.requested_by as Principal | undefined;
      if (input.decision === 'approved' && samePrincipal(requester, decidedBy)) {
        return new AipError('approval.self_approval_forbidden', 'The requester may not decide this approval', {
          details: { approval_id: input.approval_id, policy_id: (old.policy as { policy_id?: unknown } | undefined)?.policy_id },
        });
      }
      // The record the outcome was computed from was not the one at this revision.
      return this.stateConflict(input, 'decide', old, expected);
    };
    return this.updateWrite(input, key, b, refusal);
  }

  /** pending → expired once expires_at has passed. */
  private expireWrite(input: ExpireApprovalInput): MappedWrite<ApprovalRecord | undefined, never> {
    const key = this.checkRef(input);
    const expected = checkRevision(CODE, input.expected_revision);
    const iso = this.clock().toISOString();
    return this.closePending(
      key,
      input,
      'expire',
      expected,
      iso,
      (b) => {
        b.condition(`${b.n('expires_at')} <= ${b.v(iso)}`);
        b.set('status', 'expired');
      },
      (old) => {
        if (old.revision !== expected) return this.stateConflict(input, 'expire', old, expected);
        return new AipError('approval.not_expired', `Approval ${input.approval_id} expires at ${String(old.expires_at)}`, {
          details: { approval_id: input.approval_id, ...current(old) },
        });
      },
    );
  }

  /**
   * Closes a pending approval (expire, withdraw): conditional on `pending` at the expected revision, it leaves both
   * indexes. A refusal is classified from the old image: not found, already decided, else `otherwise(old)`.
   */
  private closePending(
    key: Item,
    input: { tenant_id: string; approval_id: string },
    operation: string,
    expected: number,
    iso: string,
    apply: (b: UpdateBuilder) => void,
    otherwise: (old: Item) => AipError,
  ): MappedWrite<ApprovalRecord | undefined, never> {
    const b = new UpdateBuilder(PACKED);
    b.condition(`${b.n('status')} = ${b.v('pending')}`);
    b.condition(`${b.n('revision')} = ${b.v(expected)}`);
    apply(b);
    b.set('revision', expected + 1);
    b.set('updated_at', iso);
    b.remove('GSI3PK', 'GSI3SK', 'GSI4PK', 'GSI4SK');
    return this.updateWrite(input, key, b, (old) => {
      if (old === undefined) return this.notFound(input, operation);
      if (old.status !== 'pending') return this.alreadyDecided(input, operation, old);
      return otherwise(old);
    });
  }

  /** One conditional UpdateItem of the approval item, its refusal classified from the ALL_OLD image. */
  private updateWrite(
    input: { tenant_id: string; approval_id: string },
    key: Item,
    b: UpdateBuilder,
    refusal: (old: Item | undefined) => AipError,
  ): MappedWrite<ApprovalRecord | undefined, never> {
    return {
      items: [{ Update: { TableName: this.table, Key: key, ...b.render() } }],
      refuse: (_at, old) => ({ error: refusal(old) }),
      race: () =>
        new AipError('approval.state_conflict', `Approval ${input.approval_id}: a concurrent write won the race`, {
          details: { approval_id: input.approval_id, reason: 'transaction_conflict' },
        }),
      written: (image) => (image !== undefined ? toRecord(image) : undefined),
    };
  }

  /** pending → withdrawn (the action can no longer succeed), with a typed reason; conditional on status and revision. */
  private withdrawWrite(input: WithdrawApprovalInput): MappedWrite<ApprovalRecord | undefined, never> {
    const key = this.checkRef(input);
    const expected = checkRevision(CODE, input.expected_revision);
    if (!(APPROVAL_WITHDRAWAL_REASONS as readonly string[]).includes(input.reason)) {
      throw invalid(CODE, `reason must be one of ${APPROVAL_WITHDRAWAL_REASONS.join(', ')}`, { field: 'reason' });
    }
    const details = input.details;
    if (
      details !== undefined &&
      (details === null ||
        typeof details !== 'object' ||
        Object.keys(details).length > 8 ||
        Object.entries(details).some(([k, v]) => !/^[a-z_]{1,64}$/.test(k) || typeof v !== 'string' || v.length > 256))
    ) {
      throw invalid(CODE, 'details must map at most 8 snake_case names to short strings', { field: 'details' });
    }
    const iso = this.clock().toISOString();
    return this.closePending(
      key,
      input,
      'withdraw',
      expected,
      iso,
      (b) => {
        b.set('status', 'withdrawn');
        b.set('withdrawal', compact({ reason: input.reason, withdrawn_at: iso, details: details !== undefined ? { ...details } : undefined }));
      },
      (old) => this.stateConflict(input, 'withdraw', old, expected),
    );
  }

  async get(ref: ApprovalRef): Promise<ApprovalRecord | undefined> {
    const key = this.checkRef(ref);
    const item = await consistentGet(this.client, this.table, key);
    return item === undefined ? undefined : toRecord(item);
  }

  async listExpiring(query: ListExpiringApprovalsQuery): Promise<Page<ApprovalRecord>> {
    if (query === null || typeof query !== 'object') throw invalid(LIST_CODE, 'query must be an object');
    const limit = checkLimit(LIST_CODE, query.limit, 25, 100);
    const before = checkTime(LIST_CODE, 'expires_before', query.expires_before);
    let out;
    try {
      // SK = `<expires_at>#<tenant>#<id>`: the index bound keeps every approval expiring at or before `before`.
      // Every write shard and the legacy unsharded partition, merged in index order.
      out = await queryMergedPartitions(this.client, this.table, {
        code: LIST_CODE,
        index: GSIS.byExpiry,
        listing: keys.approvalExpiryIndexLegacy,
        partitions: keys.approvalExpiryIndexPartitions(),
        upTo: before,
        limit,
        cursor: query.cursor,
      });
    } catch (err) {
      throw mapStoreError(err);
    }
    const indexKeys = out.keys;
    const items = await consistentBatchGet(
      this.client,
      this.table,
      indexKeys.map((k) => ({ PK: k.PK, SK: k.SK })),
    );
    const records: ApprovalRecord[] = [];
    for (const k of indexKeys) {
      const item = items.get(`${String(k.PK)}|${String(k.SK)}`);
      if (item === undefined || item.status !== 'pending') continue; // index lag
      records.push(toRecord(item));
    }
    return out.cursor === undefined ? { items: records } : { items: records, cursor: out.cursor };
  }

  async listPending(query: ListPendingApprovalsQuery): Promise<Page<ApprovalRecord>> {
    if (query === null || typeof query !== 'object') throw invalid(LIST_CODE, 'query must be an object');
    checkId(LIST_CODE, 'tenant_id', query.tenant_id);
    const limit = checkLimit(LIST_CODE, query.limit, 25, 100);
    const before = query.expires_before === undefined ? undefined : checkTime(LIST_CODE, 'expires_before', query.expires_before);
    const pk = keys.approvalPendingIndex(query.tenant_id);
    let out;
    try {
      // SK = `<expires_at>#<id>`: the index bound keeps every approval expiring at or before `before`.
      out = await queryStatusIndex(this.client, this.table, { code: LIST_CODE, pk, upTo: before, limit, cursor: query.cursor });
    } catch (err) {
      throw mapStoreError(err);
    }
    const indexKeys = out.Items ?? [];
    const items = await consistentBatchGet(
      this.client,
      this.table,
      indexKeys.map((k) => ({ PK: k.PK, SK: k.SK })),
    );
    const records: ApprovalRecord[] = [];
    for (const k of indexKeys) {
      const item = items.get(`${String(k.PK)}|${String(k.SK)}`);
      // The index can lag a moment behind a decision: re-check on the consistent read.
      if (item === undefined || item.status !== 'pending') continue;
      const record = toRecord(item);
      if (record.tenant_id !== query.tenant_id) continue;
      records.push(record);
    }
    const cursor = encodeCursor(out.LastEvaluatedKey);
    return cursor === undefined ? { items: records } : { items: records, cursor };
  }

  private notFound(ref: ApprovalRef, operation: string): AipError {
    return new AipError('approval.not_found', `No approval ${ref.approval_id}`, { details: { approval_id: ref.approval_id, operation } });
  }

  private alreadyDecided(ref: ApprovalRef, operation: string, old: Item): AipError {
    return new AipError('approval.already_decided', `${operation}: approval ${ref.approval_id} is already ${String(old.status)}`, {
      details: { approval_id: ref.approval_id, operation, ...current(old) },
    });
  }

  private stateConflict(ref: ApprovalRef, operation: string, old: Item, expected: number): AipError {
    return new AipError('approval.state_conflict', `${operation}: approval ${ref.approval_id} is at revision ${String(old.revision)}, expected ${expected}`, {
      details: { approval_id: ref.approval_id, operation, ...current(old), expected_revision: expected },
    });
  }
}

function checkPolicyId(v: unknown): boolean {
  try {
    checkId(CODE, 'policy.policy_id', v);
    return true;
  } catch {
    return false;
  }
}
