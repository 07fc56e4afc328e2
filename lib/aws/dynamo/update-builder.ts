/**
 * The UpdateItem expression builder of the single-table adapters: attribute
 * names and values become placeholders, the last action on a path wins (so
 * SET and REMOVE never collide), and every action is also kept as an effect
 * so the update can be replayed on a known item image (`applyTo`), which
 * spares reading an item back after a TransactWriteItems.
 */
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { JsonObject } from '../../../packages/connector-sdk/src/protocol/index.js';
import { packed } from './packed-attributes.js';

/** Drops `undefined` properties recursively (DynamoDB cannot store them). */
export function compact<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => compact(v)) as T;
  if (value !== null && typeof value === 'object' && !(value instanceof Uint8Array)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (v !== undefined) Object.defineProperty(out, k, { value: compact(v), enumerable: true, writable: true, configurable: true });
    }
    return out as T;
  }
  return value;
}

type UpdateEffect =
  | { readonly kind: 'set'; readonly attr: string; readonly value: unknown }
  | { readonly kind: 'remove'; readonly attr: string }
  | { readonly kind: 'increment'; readonly attr: string; readonly by: number }
  | { readonly kind: 'set_data'; readonly key: string; readonly value: unknown }
  | { readonly kind: 'opaque' };

/** One UpdateItem's SET/REMOVE actions and conditions, rendered with name and value placeholders. */
export class UpdateBuilder {
  private readonly names = new Map<string, string>();
  private readonly values: Record<string, unknown> = {};
  private valueCount = 0;
  /** Keyed by attribute path: the last action on a path wins, so SET and REMOVE never collide. */
  private readonly actions = new Map<string, { kind: 'set'; expr: string } | { kind: 'remove'; expr: string }>();
  /** What each action does to the item, keyed like `actions`, so that {@link applyTo} can replay the update locally. */
  private readonly effects = new Map<string, UpdateEffect>();
  private readonly conditions: string[] = [];

  /**
   * `packedAttributes`: the attributes the item stores packed (./packed-attributes.ts). A SET of one of them writes
   * it whole, packed; none may be named by a condition or updated at a nested path (the builder refuses both).
   */
  constructor(private readonly packedAttributes: ReadonlySet<string> = new Set()) {}

  n(attr: string): string {
    let p = this.names.get(attr);
    if (p === undefined) {
      p = `#n${this.names.size}`;
      this.names.set(attr, p);
    }
    return p;
  }

  v(value: unknown): string {
    const p = `:v${this.valueCount++}`;
    this.values[p] = compact(value);
    return p;
  }

  set(attr: string, value: unknown): this {
    if (value === undefined) return this;
    const stored = this.packedAttributes.has(attr) ? packed(compact(value)) : compact(value);
    this.actions.set(attr, { kind: 'set', expr: `${this.n(attr)} = ${this.v(stored)}` });
    this.effects.set(attr, { kind: 'set', attr, value: stored });
    return this;
  }

  /** A SET with a free-form expression: {@link applyTo} cannot replay it. Prefer {@link increment}. */
  setExpr(attr: string, expr: string): this {
    this.actions.set(attr, { kind: 'set', expr: `${this.n(attr)} = ${expr}` });
    this.effects.set(attr, { kind: 'opaque' });
    return this;
  }

  /** attr = attr + by, an absent attribute counting as 0 (a counter at 0 need not be stored). */
  increment(attr: string, by = 1): this {
    this.actions.set(attr, { kind: 'set', expr: `${this.n(attr)} = if_not_exists(${this.n(attr)}, ${this.v(0)}) + ${this.v(by)}` });
    this.effects.set(attr, { kind: 'increment', attr, by });
    return this;
  }

  /**
   * data.<key> = value, for every key of `data`. Each value is stored as the item stores the map's values: packed
   * on its own when that is smaller (./packed-attributes.ts `packMapValues`; readers decode with `unpackMapValues`).
   */
  mergeData(data: JsonObject | undefined): this {
    if (data === undefined) return this;
    if (this.packedAttributes.has('data')) throw new AipError('internal.unexpected', 'a packed attribute is written whole, never at a nested path');
    for (const [k, v] of Object.entries(data)) {
      if (v === undefined) continue;
      const stored = packed(compact(v));
      this.actions.set(`data.${k}`, { kind: 'set', expr: `${this.n('data')}.${this.n(k)} = ${this.v(stored)}` });
      this.effects.set(`data.${k}`, { kind: 'set_data', key: k, value: stored });
    }
    return this;
  }

  remove(...attrs: string[]): this {
    for (const attr of attrs) {
      this.actions.set(attr, { kind: 'remove', expr: this.n(attr) });
      this.effects.set(attr, { kind: 'remove', attr });
    }
    return this;
  }

  /**
   * The item as this update leaves it, computed from the exact item it was
   * applied to (`before`), or undefined when the update cannot be replayed
   * locally (a free-form SET, or an item shape DynamoDB itself would have
   * rejected). Used to avoid reading an item back after a TransactWriteItems.
   */
  applyTo(before: Readonly<Record<string, unknown>>): Record<string, unknown> | undefined {
    const after: Record<string, unknown> = structuredClone(before) as Record<string, unknown>;
    for (const e of this.effects.values()) {
      switch (e.kind) {
        case 'opaque':
          return undefined;
        case 'set':
          after[e.attr] = structuredClone(e.value);
          break;
        case 'remove':
          delete after[e.attr];
          break;
        case 'increment': {
          const current = after[e.attr] ?? 0;
          if (typeof current !== 'number') return undefined;
          after[e.attr] = current + e.by;
          break;
        }
        case 'set_data': {
          const data = after.data;
          if (data === null || typeof data !== 'object' || Array.isArray(data)) return undefined;
          (data as Record<string, unknown>)[e.key] = structuredClone(e.value);
          break;
        }
      }
    }
    return after;
  }

  condition(expr: string): this {
    for (const attr of this.packedAttributes) {
      const p = this.names.get(attr);
      if (p !== undefined && new RegExp(`${p}(?![0-9])`).test(expr))
        throw new AipError('internal.unexpected', `a condition cannot name the packed attribute ${attr}`);
    }
    this.conditions.push(expr);
    return this;
  }

  render() {
    const sets = [...this.actions.values()].filter((a) => a.kind === 'set').map((a) => a.expr);
    const removes = [...this.actions.values()].filter((a) => a.kind === 'remove').map((a) => a.expr);
    const parts: string[] = [];
    if (sets.length > 0) parts.push(`SET ${sets.join(', ')}`);
    if (removes.length > 0) parts.push(`REMOVE ${removes.join(', ')}`);
    return {
      UpdateExpression: parts.join(' '),
      ConditionExpression: this.conditions.map((c) => `(${c})`).join(' AND '),
      ExpressionAttributeNames: Object.fromEntries([...this.names].map(([attr, p]) => [p, attr])),
      ExpressionAttributeValues: this.values,
    };
  }
}
