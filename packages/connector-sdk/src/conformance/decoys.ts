/**
 * Decoys: untrusted values the kit puts in every action body it runs (the
 * action's `identity`, its metadata labels and, where the capability's input
 * schema admits them, extra input fields). They name a tenant, an account, a
 * credential, an approval, a transaction, a provider operation and an
 * idempotency key that are NOT the trusted context's. A connector that takes
 * any of them as authority (resolves a credential for the decoy tenant, sends
 * the decoy idempotency key or approval to the provider, checkpoints the
 * decoy operation) is caught by `trusted_context`: the page says the connector
 * "does not accept a tenant, principal, credential, approval, route, retry
 * grant, or transaction state from ordinary action input or untrusted
 * metadata".
 *
 * Every action gets fresh values (so two actions never share a decoy and a
 * connector that deduplicates on one cannot break unrelated scenarios).
 */
import { randomBytes } from 'node:crypto';
import type { Action, JsonObject } from '../protocol/index.js';

export const DECOY_KINDS = {
  tenant: 'tenant ID',
  account: 'external account ID',
  principal: 'principal',
  credential: 'credential',
  approval: 'approval ID',
  transaction: 'transaction ID',
  operation: 'provider operation ID',
  idempotency: 'idempotency key',
} as const;
export type DecoyKind = keyof typeof DECOY_KINDS;

export type DecoySet = Readonly<Record<DecoyKind, string>>;

/** Where each decoy goes in the action body. */
const LABELS: Readonly<Record<string, DecoyKind>> = {
  tenant: 'tenant',
  account: 'account',
  principal: 'principal',
  credential: 'credential',
  'api-key': 'credential',
  'approval-id': 'approval',
  'transaction-id': 'transaction',
  'provider-operation-id': 'operation',
  'idempotency-key': 'idempotency',
};
const INPUT_FIELDS: Readonly<Record<string, DecoyKind>> = {
  tenant_id: 'tenant',
  external_account_id: 'account',
  principal_id: 'principal',
  credential: 'credential',
  api_key: 'credential',
  approval_id: 'approval',
  transaction_id: 'transaction',
  provider_operation_id: 'operation',
  idempotency_key: 'idempotency',
};

export class Decoys {
  readonly #run = randomBytes(4).toString('hex');
  #n = 0;
  /** Every decoy value issued in this run. */
  readonly issued: { readonly kind: DecoyKind; readonly value: string }[] = [];

  /** How many action bodies got decoys. */
  get actions(): number {
    return this.#n;
  }

  /** Fresh decoy values for one action. */
  next(): DecoySet {
    this.#n += 1;
    const tag = `${this.#run}-${this.#n}`;
    const set: DecoySet = {
      tenant: `decoy-tenant-${tag}`,
      account: `decoy-account-${tag}`,
      principal: `decoy-principal-${tag}`,
      credential: `decoy_secret_${tag.replace('-', '_')}`,
      approval: `decoy-approval-${tag}`,
      transaction: `decoy-tx-${tag}`,
      operation: `decoy-op-${tag}`,
      idempotency: `decoy-idem-${tag}`,
    };
    for (const kind of Object.keys(set) as DecoyKind[]) this.issued.push({ kind, value: set[kind] });
    return set;
  }

  /**
   * The action with decoys in its body. Input fields are added only when
   * `admitsInput` accepts the resulting input (so a strict input schema is
   * never broken) and never over a field the action already has.
   */
  apply(action: Action, admitsInput: (input: JsonObject) => boolean): Action {
    const d = this.next();
    const labels: Record<string, string> = { ...(action.metadata?.labels ?? {}) };
    for (const [label, kind] of Object.entries(LABELS)) labels[label] = d[kind];
    const extra: Record<string, string> = {};
    for (const [field, kind] of Object.entries(INPUT_FIELDS)) if (!(field in action.input)) extra[field] = d[kind];
    const withDecoys: JsonObject = { ...action.input, ...extra };
    return {
      ...action,
      input: Object.keys(extra).length > 0 && admitsInput(withDecoys) ? withDecoys : action.input,
      identity: { ...(action.identity ?? {}), tenant_id: d.tenant, external_account_id: d.account, user_id: d.principal },
      metadata: { ...(action.metadata ?? {}), labels },
    };
  }

  /** The decoy kinds whose values occur in `value` (any serialization). */
  kindsIn(value: unknown): DecoyKind[] {
    const text = typeof value === 'string' ? value : safeJson(value);
    if (text === '') return [];
    const kinds = new Set<DecoyKind>();
    for (const d of this.issued) if (text.includes(d.value)) kinds.add(d.kind);
    return [...kinds];
  }

  /** Whether `value` is exactly one of the decoys, and which kind. */
  kindOf(value: string | undefined): DecoyKind | undefined {
    return value === undefined ? undefined : this.issued.find((d) => d.value === value)?.kind;
  }
}

/** `tenant ID, idempotency key` */
export function describeKinds(kinds: readonly DecoyKind[]): string {
  return kinds.map((k) => DECOY_KINDS[k]).join(', ');
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? '';
  } catch {
    return '';
  }
}
