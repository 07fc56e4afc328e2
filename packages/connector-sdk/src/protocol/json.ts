import * as z from '../common/zod.js';

/**
 * JSON values as they cross the public envelope.
 *
 * Zod's own recursive JSON schema copies objects key by key, which is both a
 * prototype-pollution hazard (`__proto__` as a key) and a stack hazard (deep
 * nesting). Instead, JSON payload fields are validated by one iterative walk
 * (`inspectJson`) that never copies, never recurses on the JS stack, and
 * enforces the same limits the envelope guard uses. The value that passes is
 * returned unchanged.
 */
export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** Limits applied to every public envelope (and every JSON payload field). */
export const ENVELOPE_LIMITS = {
  /** Maximum nesting depth; the envelope object itself is depth 1. */
  maxDepth: 32,
  /** Maximum number of JSON nodes (objects, arrays and scalars). */
  maxNodes: 20_000,
  /** Maximum approximate serialized size in UTF-16 code units. */
  maxSize: 1_048_576,
  /** Maximum length of one string value or key. */
  maxStringLength: 262_144,
} as const;

/** Keys that are rejected anywhere in an envelope: they pollute or confuse prototypes. */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

export type JsonProblem =
  | { kind: 'too_deep'; path: (string | number)[] }
  | { kind: 'too_large'; path: (string | number)[] }
  | { kind: 'forbidden_key'; path: (string | number)[] }
  | { kind: 'not_json'; path: (string | number)[]; reason: string };

export interface InspectOptions {
  maxDepth?: number;
  maxNodes?: number;
  maxSize?: number;
  maxStringLength?: number;
  /** Allow `undefined` as an object property value (treated as absent). Default true. */
  allowUndefinedProperties?: boolean;
  /** Report FORBIDDEN_KEYS as `forbidden_key`. Default true; hashing turns it off. */
  rejectForbiddenKeys?: boolean;
}

function isPlainObject(v: object): boolean {
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * Walks `value` iteratively and returns the first problem, or undefined when
 * it is plain JSON within the limits. Never throws: a hostile value (proxy,
 * throwing getter) is reported as `not_json`.
 */
export function inspectJson(value: unknown, options: InspectOptions = {}): JsonProblem | undefined {
  const maxDepth = options.maxDepth ?? ENVELOPE_LIMITS.maxDepth;
  const maxNodes = options.maxNodes ?? ENVELOPE_LIMITS.maxNodes;
  const maxSize = options.maxSize ?? ENVELOPE_LIMITS.maxSize;
  const maxString = options.maxStringLength ?? ENVELOPE_LIMITS.maxStringLength;
  const allowUndefined = options.allowUndefinedProperties ?? true;
  const rejectForbidden = options.rejectForbiddenKeys ?? true;

  type Frame = { v: unknown; depth: number; path: (string | number)[] };
  const stack: Frame[] = [{ v: value, depth: 1, path: [] }];
  let nodes = 0;
  let size = 0;
  try {
    while (stack.length > 0) {
      const { v, depth, path } = stack.pop() as Frame;
      nodes += 1;
      if (nodes > maxNodes) return { kind: 'too_large', path };
      if (v === null || typeof v === 'boolean') {
        size += 5;
      } else if (typeof v === 'number') {
        if (!Number.isFinite(v)) return { kind: 'not_json', path, reason: 'non-finite number' };
        size += 24;
      } else if (typeof v === 'string') {
        if (v.length > maxString) return { kind: 'too_large', path };
        size += v.length + 2;
      } else if (typeof v === 'object') {
        if (depth > maxDepth) return { kind: 'too_deep', path };
        if (Array.isArray(v)) {
          if (Object.getPrototypeOf(v) !== Array.prototype) return { kind: 'not_json', path, reason: 'not a plain array' };
          const len = v.length;
          if (len > maxNodes) return { kind: 'too_large', path };
          size += 2 + len;
          for (let i = len - 1; i >= 0; i--) {
            if (!Object.hasOwn(v, i)) return { kind: 'not_json', path: [...path, i], reason: 'sparse array' };
            const d = Object.getOwnPropertyDescriptor(v, i);
            if (d === undefined || !('value' in d)) return { kind: 'not_json', path: [...path, i], reason: 'accessor property' };
            if (d.value === undefined) return { kind: 'not_json', path: [...path, i], reason: 'undefined array element' };
            stack.push({ v: d.value, depth: depth + 1, path: [...path, i] });
          }
        } else {
          if (!isPlainObject(v)) return { kind: 'not_json', path, reason: 'not a plain object' };
          const keys = Object.keys(v);
          if (keys.length > maxNodes) return { kind: 'too_large', path };
          size += 2;
          for (let i = keys.length - 1; i >= 0; i--) {
            const k = keys[i] as string;
            if (rejectForbidden && FORBIDDEN_KEYS.has(k)) return { kind: 'forbidden_key', path: [...path, k] };
            if (k.length > maxString) return { kind: 'too_large', path };
            const d = Object.getOwnPropertyDescriptor(v, k);
            if (d === undefined || !('value' in d)) return { kind: 'not_json', path: [...path, k], reason: 'accessor property' };
            size += k.length + 4;
            if (d.value === undefined) {
              if (!allowUndefined) return { kind: 'not_json', path: [...path, k], reason: 'undefined value' };
              continue;
            }
            stack.push({ v: d.value, depth: depth + 1, path: [...path, k] });
          }
        }
      } else {
        return { kind: 'not_json', path, reason: `unsupported type ${typeof v}` };
      }
      if (size > maxSize) return { kind: 'too_large', path };
    }
  } catch {
    return { kind: 'not_json', path: [], reason: 'value could not be inspected' };
  }
  return undefined;
}

export function isJsonValue(value: unknown): value is JsonValue {
  return inspectJson(value, { allowUndefinedProperties: false }) === undefined;
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && isJsonValue(value);
}

function problemMessage(p: JsonProblem): string {
  switch (p.kind) {
    case 'too_deep':
      return `nested deeper than ${ENVELOPE_LIMITS.maxDepth} levels`;
    case 'too_large':
      return 'exceeds the size limit';
    case 'forbidden_key':
      return 'contains a forbidden key (__proto__, constructor or prototype)';
    case 'not_json':
      return `not plain JSON (${p.reason})`;
  }
}

/** Any JSON value (validated without copying). */
export const JsonValueSchema = z.custom<JsonValue>().check(
  z.superRefine((v, ctx) => {
    const p = inspectJson(v, { allowUndefinedProperties: false });
    if (p !== undefined) ctx.addIssue({ code: 'custom', message: problemMessage(p), path: p.path });
  }),
);

/** A JSON object (not an array, not null), validated without copying. */
export const JsonObjectSchema = z.custom<JsonObject>().check(
  z.superRefine((v, ctx) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      ctx.addIssue({ code: 'custom', message: 'expected a JSON object' });
      return;
    }
    const p = inspectJson(v, { allowUndefinedProperties: false });
    if (p !== undefined) ctx.addIssue({ code: 'custom', message: problemMessage(p), path: p.path });
  }),
);
