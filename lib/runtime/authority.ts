/**
 * THE authority rule: may this caller do this operation on that target?
 *
 * Every mode and every read asks here, and nothing else decides. The answer
 * depends only on the verified caller (principal, tenants, scopes from the
 * token, or the runtime's own service identity), the operation, and the
 * target's recorded owner (never on anything the request body says).
 *
 * One principle shapes every refusal: a refusal never discloses more than
 * the caller may read. A caller who may read the target (its owner, an
 * operator of the tenant, an approver of an approval) gets the specific
 * refusal; anyone else gets the answer a target that does not exist would
 * get (or, for an ID that is taken and cannot be created again, a conflict
 * that names nothing of the other principal's record).
 *
 * The table is {@link AUTHORITY_TABLE}; docs/authority.md is generated from
 * it (dev/scripts/gen-authority-docs.ts, checked by a test).
 */
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { ErrorCode } from '../../packages/connector-sdk/src/errors/catalogue.js';
import type { Principal } from '../../packages/connector-sdk/src/protocol/index.js';
import { samePrincipal, type CallerIdentity } from '../auth/identity.js';

/** Who the caller is with respect to one target. */
export const AUTHORITY_ROLES = ['service', 'owner', 'operator', 'approver', 'requester', 'compensator'] as const;
export type AuthorityRole = (typeof AUTHORITY_ROLES)[number];

export const AUTHORITY_OPERATIONS = [
  'read',
  'cancel',
  'commit',
  'execute_replay',
  'resubmit',
  'reconcile',
  'reconcile_override',
  'compensate',
  'approve',
  'read_approval',
  'list_operator',
  'operator_reconcile',
  'resolve',
] as const;
export type AuthorityOperation = (typeof AUTHORITY_OPERATIONS)[number];

export type TargetKind = 'action' | 'transaction' | 'plan' | 'approval' | 'compensation_target' | 'tenant';

/** How a refusal is answered. `conceal` strips the details to the target's ID. */
export interface Refusal {
  readonly code: ErrorCode;
  readonly conceal?: boolean;
}

export interface AuthorityRow {
  readonly operation: AuthorityOperation;
  readonly description: string;
  /** Roles allowed to perform the operation. */
  readonly allowed: readonly AuthorityRole[];
  /** Answer to a caller who may read the target but is not allowed to act on it. */
  readonly visible: Refusal | 'by_kind';
  /** Answer to a caller who may not even read the target (or when it does not exist). */
  readonly hidden: Refusal | 'by_kind';
}

const NOT_FOUND_BY_KIND: Readonly<Record<TargetKind, ErrorCode>> = {
  action: 'action.not_found',
  transaction: 'transaction.not_found',
  plan: 'runtime.plan_not_found',
  approval: 'approval.not_found',
  compensation_target: 'runtime.compensation_target_not_found',
  tenant: 'runtime.tenant_forbidden',
};

/**
 * Who may do what. Roles: `service` is the runtime's own service principal
 * (the reconcile consumer and the sweeper), recognised by an identity only
 * the runtime can construct, never by a token's claims; `owner` is the
 * principal recorded on the target (the submitter of an action, the owner of
 * a transaction or plan); `operator` holds the tenant's operator scope;
 * `approver` holds one of an approval's approver scopes; `requester` is the
 * principal an approval was requested for; `compensator` holds a scope the
 * tenant policy lets compensate another principal's work (default: the
 * operator scope).
 */
export const AUTHORITY_TABLE: Readonly<Record<AuthorityOperation, AuthorityRow>> = {
  read: {
    operation: 'read',
    description: 'Read an action, its result or stream, a transaction or a plan (GET routes; the transaction view of an action)',
    allowed: ['owner', 'operator', 'service'],
    visible: 'by_kind',
    hidden: 'by_kind',
  },
  cancel: {
    operation: 'cancel',
    description: 'Cancel an action',
    allowed: ['owner', 'operator'],
    visible: 'by_kind',
    hidden: 'by_kind',
  },
  commit: {
    operation: 'commit',
    description: 'Commit a plan (a commit action naming a plan ID)',
    allowed: ['owner'],
    visible: { code: 'runtime.plan_principal_mismatch' },
    hidden: 'by_kind',
  },
  execute_replay: {
    operation: 'execute_replay',
    description: 'Name an existing transaction ID in an execute (the replay gate)',
    allowed: ['owner', 'service'],
    visible: { code: 'runtime.execution_contract_mismatch' },
    hidden: { code: 'runtime.execution_contract_mismatch', conceal: true },
  },
  resubmit: {
    operation: 'resubmit',
    description: 'Submit an action ID that already exists (a resubmission of the same action)',
    allowed: ['owner', 'service'],
    visible: { code: 'runtime.action_conflict' },
    hidden: { code: 'runtime.action_conflict', conceal: true },
  },
  reconcile: {
    operation: 'reconcile',
    description: 'Reconcile an outcome_unknown transaction against its checkpointed provider operation',
    allowed: ['owner', 'operator', 'service'],
    visible: 'by_kind',
    hidden: 'by_kind',
  },
  reconcile_override: {
    operation: 'reconcile_override',
    description: 'Reconcile an escalated (requires_human) transaction, or supply a provider operation where none was checkpointed',
    allowed: ['operator'],
    visible: { code: 'runtime.operator_required' },
    hidden: 'by_kind',
  },
  compensate: {
    operation: 'compensate',
    description: 'Compensate an action (compensation_for names it)',
    allowed: ['owner', 'compensator'],
    visible: { code: 'runtime.compensation_forbidden' },
    hidden: 'by_kind',
  },
  approve: {
    operation: 'approve',
    description: 'Approve or deny a pending approval (the requester only when the policy allows self-approval)',
    allowed: ['approver'],
    visible: { code: 'runtime.approver_forbidden' },
    hidden: 'by_kind',
  },
  read_approval: {
    operation: 'read_approval',
    description: 'See a pending approval (GET /v1/approvals lists only these)',
    allowed: ['approver', 'operator', 'requester'],
    visible: 'by_kind',
    hidden: 'by_kind',
  },
  operator_reconcile: {
    operation: 'operator_reconcile',
    description: 'Reconcile now (POST /v1/operator/transactions/{id}/reconcile): resets the attempt bound once',
    allowed: ['operator'],
    visible: { code: 'runtime.operator_required' },
    hidden: 'by_kind',
  },
  resolve: {
    operation: 'resolve',
    description: 'Record the truth found at the provider for an escalated transaction (POST /v1/operator/transactions/{id}/resolve)',
    allowed: ['operator'],
    visible: { code: 'runtime.operator_required' },
    hidden: 'by_kind',
  },
  list_operator: {
    operation: 'list_operator',
    description: 'The operator listings of stuck work',
    allowed: ['operator'],
    visible: { code: 'runtime.operator_forbidden' },
    hidden: { code: 'runtime.operator_forbidden' },
  },
};

/**
 * The target of an operation, as the durable records describe it. A target
 * that does not exist is `{ kind, tenant_id, id, missing: true }` (or
 * `undefined` where the kind does not matter): nobody may act on it, and the
 * refusal is the kind's not-found answer.
 */
export interface AuthorityTarget {
  readonly kind: TargetKind;
  /** True when no such record exists. */
  readonly missing?: boolean;
  readonly tenant_id: string;
  /** The ID the caller named (the only detail a concealed refusal carries). */
  readonly id?: string;
  /** The recorded owner. */
  readonly owner?: Principal;
  /** Approvals: the policy's approver scopes (any one suffices) and self-approval rule. */
  readonly approver_scopes?: readonly string[];
  readonly allow_self_approval?: boolean;
  /** Approvals: the principal the approval was requested for. */
  readonly requested_by?: Principal;
  /** Details for a visible refusal (what the caller may read anyway). */
  readonly details?: Readonly<Record<string, unknown>>;
}

/** What the rule needs from the configuration. */
export interface AuthorityPolicy {
  readonly operator_scope: string;
  readonly service_principal: Principal;
  /** Scopes that let a principal compensate another principal's work in a tenant (default: the operator scope). */
  compensator_scopes(tenant_id: string): readonly string[];
}

// --- the runtime's own service identity ------------------------------------

/** Caller identities only the runtime constructs (never decoded from a token). */
const SERVICE_CALLERS = new WeakSet<CallerIdentity>();

/** The runtime's own caller identity for its governed reconcile actions. */
export function serviceCaller(
  principal: Principal,
  tenant_id: string,
  scopes: readonly string[],
  extra: { accounts?: readonly string[] } = {},
): CallerIdentity {
  const caller: CallerIdentity = {
    principal: { ...principal },
    tenants: [tenant_id],
    scopes: [...new Set(scopes)],
    ...(extra.accounts !== undefined ? { accounts: [...new Set(extra.accounts)] } : {}),
  };
  SERVICE_CALLERS.add(caller);
  return caller;
}

export function isServiceCaller(caller: CallerIdentity): boolean {
  return SERVICE_CALLERS.has(caller);
}

/** What the action record keeps of the verified caller (an attempt's `actor` is built from it). */
export function recordedActor(
  caller: CallerIdentity,
  runtimeIssuer: string,
): { scheme: string; issuer?: string; scopes: string[]; issued_at?: string; expires_at?: string } {
  if (isServiceCaller(caller)) return { scheme: 'aip_runtime_service', issuer: runtimeIssuer, scopes: [...caller.scopes] };
  return {
    scheme: 'bearer_jwt',
    ...(caller.issuer !== undefined ? { issuer: caller.issuer } : {}),
    scopes: [...caller.scopes],
    ...(caller.issued_at !== undefined ? { issued_at: caller.issued_at } : {}),
    ...(caller.expires_at !== undefined ? { expires_at: caller.expires_at } : {}),
  };
}

// --- the rule ----------------------------------------------------------------

const anyOf = (have: readonly string[], wanted: readonly string[] | undefined): boolean => wanted?.some((s) => have.includes(s)) ?? false;

export class Authority {
  readonly #policy: AuthorityPolicy;

  constructor(policy: AuthorityPolicy) {
    this.#policy = policy;
  }

  isOperator(caller: CallerIdentity): boolean {
    return caller.scopes.includes(this.#policy.operator_scope);
  }

  /** The caller's roles with respect to the target (empty when the target does not exist). */
  roles(caller: CallerIdentity, target: AuthorityTarget | undefined): Set<AuthorityRole> {
    const roles = new Set<AuthorityRole>();
    if (target === undefined || target.missing === true || !caller.tenants.includes(target.tenant_id)) return roles;
    if (isServiceCaller(caller) && samePrincipal(caller.principal, this.#policy.service_principal)) roles.add('service');
    if (samePrincipal(caller.principal, target.owner)) roles.add('owner');
    if (this.isOperator(caller)) roles.add('operator');
    if (samePrincipal(caller.principal, target.requested_by)) roles.add('requester');
    if (target.kind === 'approval' && anyOf(caller.scopes, target.approver_scopes)) {
      // The requester approves only where the policy allows self-approval.
      if (!roles.has('requester') || target.allow_self_approval === true) roles.add('approver');
    }
    if (anyOf(caller.scopes, this.#policy.compensator_scopes(target.tenant_id))) roles.add('compensator');
    return roles;
  }

  /** May the caller read the target at all (does a refusal may name it)? */
  mayRead(caller: CallerIdentity, target: AuthorityTarget | undefined): boolean {
    const roles = this.roles(caller, target);
    if (roles.has('owner') || roles.has('operator') || roles.has('service')) return true;
    if (target?.kind === 'approval') return roles.has('approver') || roles.has('requester') || anyOf(caller.scopes, target.approver_scopes);
    return target?.kind === 'compensation_target' && roles.has('compensator');
  }

  /** Allow (the role that allowed it) or undefined. */
  allows(caller: CallerIdentity, operation: AuthorityOperation, target: AuthorityTarget | undefined): AuthorityRole | undefined {
    const roles = this.roles(caller, target);
    return AUTHORITY_TABLE[operation].allowed.find((r) => roles.has(r));
  }

  /** Allows, or throws the typed refusal the table names (see the file comment). */
  require(caller: CallerIdentity, operation: AuthorityOperation, target: AuthorityTarget | undefined): AuthorityRole {
    const role = this.allows(caller, operation, target);
    if (role !== undefined) return role;
    throw this.refusal(caller, operation, target);
  }

  /** The refusal for a caller the table does not allow. */
  refusal(caller: CallerIdentity, operation: AuthorityOperation, target: AuthorityTarget | undefined): AipError {
    const row = AUTHORITY_TABLE[operation];
    const visible = target !== undefined && target.missing !== true && this.mayRead(caller, target);
    const spec = visible ? row.visible : row.hidden;
    const kind = target?.kind ?? 'action';
    let code = spec === 'by_kind' ? NOT_FOUND_BY_KIND[kind] : spec.code;
    // The requester holding an approver scope, where the policy forbids self-approval.
    if (operation === 'approve' && visible && samePrincipal(caller.principal, target?.requested_by) && anyOf(caller.scopes, target?.approver_scopes))
      code = 'runtime.self_approval_forbidden';
    const conceal = spec === 'by_kind' || spec.conceal === true || !visible;
    const idField = kind === 'compensation_target' ? 'compensation_for' : `${kind === 'tenant' ? 'tenant' : kind}_id`;
    const details = conceal
      ? target?.id !== undefined
        ? { [idField]: target.id }
        : {}
      : { ...(target?.id !== undefined ? { [idField]: target.id } : {}), ...(target?.details ?? {}) };
    return new AipError(code, undefined, { details });
  }
}

/** A target that does not exist. */
export function missingTarget(kind: TargetKind, tenant_id: string, id?: string): AuthorityTarget {
  return { kind, tenant_id, missing: true, ...(id !== undefined ? { id } : {}) };
}

/** The authority policy of a runtime configuration. */
export function authorityPolicy(config: {
  operator_scope: string;
  service_principal: Principal;
  tenants: Readonly<Record<string, { compensator_scopes?: readonly string[] | undefined }>>;
}): AuthorityPolicy {
  return {
    operator_scope: config.operator_scope,
    service_principal: config.service_principal,
    compensator_scopes: (tenant_id) => config.tenants[tenant_id]?.compensator_scopes ?? [config.operator_scope],
  };
}
