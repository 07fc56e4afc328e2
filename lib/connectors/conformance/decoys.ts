/**
 * Decoys: untrusted values the kit puts in action bodies. They name a tenant,
 * an account, a credential, an approval, a transaction, a provider operation
 * and an idempotency key that are NOT the trusted context's. A connector that
 * takes any of them as authority (resolves a credential for the decoy tenant,
 * sends the decoy idempotency key or approval to the provider, checkpoints the
 * decoy operation) is caught by `trusted_context`: the page says the connector
 * "does not accept a tenant, principal, credential, approval, route, retry
 * grant, or transaction state from ordinary action input or untrusted
 * metadata".
 *
 * Where they go:
 * - every action body the kit runs: the action's `identity` and its metadata
 *   labels (`apply`);
 * - the input: ONE string field at a time (`inputSlots`, `withValueAt`). The
 *   kit walks the capability's input schema (nested objects and arrays
 *   included) for every place a string is allowed, and also tries the usual
 *   authority names (`tenant_id`, `external_account_id`, `api_key`, ...) where
 *   the schema admits extra fields. Each place gets a decoy tenant, then a
 *   decoy account (the usual names: their own kind), in a call of its own, so
 *   a strict schema still receives decoys in the fields it allows, and one
 *   implausible value never makes the whole input invalid.
 *
 * Every action gets fresh values (so two actions never share a decoy and a
 * connector that deduplicates on one cannot break unrelated scenarios).
 *
 * The kit also replaces each action's idempotency key by one of its own
 * (`plantKey`): a value distinctive enough to be found in what the provider
 * received (`no_raw_idempotency_key`).
 */
import { randomBytes } from 'node:crypto';
import type { Action, JsonObject, JsonValue } from '../../protocol/index.js';

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

/** The metadata labels every action body carries, and the decoy each gets. */
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
/** The usual authority field names, tried at the top level of an input whose schema admits extra fields. */
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
  readonly #keys = new Map<string, string>();
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

  /** The action with decoys (`d`, fresh by default) in its identity and metadata labels; the input is left as it is. */
  apply(action: Action, d: DecoySet = this.next()): Action {
    const labels: Record<string, string> = { ...(action.metadata?.labels ?? {}) };
    for (const [label, kind] of Object.entries(LABELS)) labels[label] = d[kind];
    return {
      ...action,
      identity: { ...(action.identity ?? {}), tenant_id: d.tenant, external_account_id: d.account, user_id: d.principal },
      metadata: { ...(action.metadata ?? {}), labels },
    };
  }

  /**
   * The kit's replacement for a caller's idempotency key: unique to this run
   * and distinctive, the same replacement for the same original key.
   */
  plantKey(original: string): string {
    let planted = this.#keys.get(original);
    if (planted === undefined) {
      planted = `conformance-raw-key-${this.#run}-${this.#keys.size + 1}`;
      this.#keys.set(original, planted);
    }
    return planted;
  }

  /** Every idempotency key the kit planted (see plantKey). */
  get plantedKeys(): readonly string[] {
    return [...this.#keys.values()];
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

/** A place in an input where a string may go, and the decoy kinds the kit puts there. */
export interface InputSlot {
  /** Property names and array indexes from the input's root. */
  readonly path: readonly (string | number)[];
  readonly kinds: readonly DecoyKind[];
}

/** `payer`, `lines[0].reference` */
export function describePath(path: readonly (string | number)[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

const MAX_DEPTH = 6;
const MAX_SLOTS = 64;

type SchemaNode = Readonly<Record<string, unknown>>;

function isNode(v: unknown): v is SchemaNode {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function types(node: SchemaNode): readonly string[] | undefined {
  const t = node.type;
  if (typeof t === 'string') return [t];
  if (Array.isArray(t)) return t.filter((x): x is string => typeof x === 'string');
  return undefined;
}

/**
 * Every place in an input that `schema` (a JSON Schema) allows a string:
 * declared properties (nested objects and array items included, up to a
 * depth and a count), and, where the root admits extra properties, the usual
 * authority names. A string restricted to constants (`enum`, `const`) is no
 * place for a decoy; other restrictions (pattern, length) are left to the
 * caller's validation of the finished input. `$ref`s are not followed.
 */
export function inputSlots(schema: unknown): InputSlot[] {
  const slots = new Map<string, InputSlot>();
  const add = (path: readonly (string | number)[], kinds: readonly DecoyKind[]): void => {
    if (path.length === 0 || slots.size >= MAX_SLOTS) return;
    const key = JSON.stringify(path);
    const known = slots.get(key);
    slots.set(key, { path, kinds: [...new Set([...(known?.kinds ?? []), ...kinds])] });
  };
  const walk = (node: unknown, path: readonly (string | number)[], depth: number): void => {
    if (!isNode(node) || depth > MAX_DEPTH || slots.size >= MAX_SLOTS) return;
    for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
      const alternatives = node[key];
      if (Array.isArray(alternatives)) for (const alt of alternatives) walk(alt, path, depth + 1);
    }
    const t = types(node);
    if (t?.includes('string') === true && node.enum === undefined && node.const === undefined) {
      const last = path.at(-1);
      const named = typeof last === 'string' && path.length === 1 ? INPUT_FIELDS[last] : undefined;
      add(path, named !== undefined ? [named, 'tenant', 'account'] : ['tenant', 'account']);
    }
    const properties = isNode(node.properties) ? node.properties : undefined;
    if (properties !== undefined || t?.includes('object') === true) {
      for (const [name, sub] of Object.entries(properties ?? {})) walk(sub, [...path, name], depth + 1);
      if (path.length === 0 && node.additionalProperties !== false && node.unevaluatedProperties !== false) {
        for (const [name, kind] of Object.entries(INPUT_FIELDS)) if (properties?.[name] === undefined) add([name], [kind]);
      }
    }
    if (t?.includes('array') === true || node.items !== undefined || node.prefixItems !== undefined) {
      if (Array.isArray(node.prefixItems)) {
        for (const [i, sub] of node.prefixItems.entries()) walk(sub, [...path, i], depth + 1);
      } else if (isNode(node.items)) walk(node.items, [...path, 0], depth + 1);
    }
  };
  walk(schema, [], 0);
  return [...slots.values()];
}

/**
 * A copy of `input` with `value` at `path`, creating the objects and arrays
 * on the way (an array index past the end appends). Undefined when the path
 * runs through a value that is neither.
 */
export function withValueAt(input: JsonObject, path: readonly (string | number)[], value: string): JsonObject | undefined {
  const root = structuredClone(input) as JsonObject;
  let here: JsonObject | JsonValue[] = root;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i] as string | number;
    const last = i === path.length - 1;
    const nextIsIndex = typeof path[i + 1] === 'number';
    if (typeof seg === 'number') {
      if (!Array.isArray(here)) return undefined;
      const index = Math.min(seg, here.length);
      if (last) here[index] = value;
      else {
        const existing: JsonValue | undefined = here[index];
        const next: JsonObject | JsonValue[] = isContainer(existing, nextIsIndex) ? existing : nextIsIndex ? [] : {};
        here[index] = next;
        here = next;
      }
    } else {
      if (Array.isArray(here)) return undefined;
      if (last) here[seg] = value;
      else {
        const existing: JsonValue | undefined = here[seg];
        const next: JsonObject | JsonValue[] = isContainer(existing, nextIsIndex) ? existing : nextIsIndex ? [] : {};
        if (existing !== undefined && existing !== next) return undefined;
        here[seg] = next;
        here = next;
      }
    }
  }
  return root;
}

function isContainer(v: JsonValue | undefined, array: boolean): v is JsonObject | JsonValue[] {
  if (v === undefined || v === null || typeof v !== 'object') return false;
  return array ? Array.isArray(v) : !Array.isArray(v);
}
