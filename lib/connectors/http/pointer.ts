/**
 * RFC 6901 JSON Pointers and the placeholder templates of the declarative
 * HTTP connector. Pure functions, no I/O.
 *
 * Templates: `{/pointer}` reads the template's document (the action input in
 * a request mapping, the provider response in a response mapping) and
 * `{$name}` reads a trusted context value (see CONTEXT_VALUES in config.ts).
 * `{{` and `}}` are literal braces.
 */
import { FORBIDDEN_KEYS, type JsonObject, type JsonValue } from '@aip-runtime/connector-sdk/protocol';

/** Splits a pointer into unescaped reference tokens. `''` is the whole document. */
export function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new TypeError('a JSON pointer is empty or starts with "/"');
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** True when no token is `__proto__`, `constructor` or `prototype`. */
export function isSafePointer(pointer: string): boolean {
  try {
    return parsePointer(pointer).every((t) => !FORBIDDEN_KEYS.has(t));
  } catch {
    return false;
  }
}

/** Reads the value at `pointer`, or undefined when any step is missing. */
export function getPointer(doc: unknown, pointer: string): JsonValue | undefined {
  let cur: unknown = doc;
  for (const token of parsePointer(pointer)) {
    if (FORBIDDEN_KEYS.has(token)) return undefined;
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
      cur = cur[Number(token)];
    } else if (cur !== null && typeof cur === 'object') {
      if (!Object.hasOwn(cur, token)) return undefined;
      cur = (cur as Record<string, unknown>)[token];
    } else {
      return undefined;
    }
    if (cur === undefined) return undefined;
  }
  return cur as JsonValue;
}

/**
 * Writes `value` at `pointer` inside `root` (an object), creating
 * intermediate objects. The empty pointer replaces the whole document: the
 * new root is returned. `-` appends to an array.
 */
export function setPointer(root: JsonValue, pointer: string, value: JsonValue): JsonValue {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) return value;
  if (tokens.some((t) => FORBIDDEN_KEYS.has(t))) throw new TypeError('forbidden key in JSON pointer');
  let cur: JsonValue = root;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as string;
    const last = i === tokens.length - 1;
    if (Array.isArray(cur)) {
      const index = token === '-' ? cur.length : /^(0|[1-9][0-9]*)$/.test(token) ? Number(token) : -1;
      if (index < 0 || index > cur.length) throw new TypeError('JSON pointer index out of range');
      if (last) {
        cur[index] = value;
      } else {
        const next = cur[index];
        if (next === undefined || next === null || typeof next !== 'object') cur[index] = {};
        cur = cur[index] as JsonValue;
      }
    } else if (cur !== null && typeof cur === 'object') {
      const obj = cur as JsonObject;
      if (last) {
        obj[token] = value;
      } else {
        const next = Object.hasOwn(obj, token) ? obj[token] : undefined;
        if (next === undefined || next === null || typeof next !== 'object') obj[token] = {};
        cur = obj[token] as JsonValue;
      }
    } else {
      throw new TypeError('JSON pointer walks through a scalar');
    }
  }
  return root;
}

/** One piece of a parsed template. */
export type TemplatePart = { readonly text: string } | { readonly pointer: string } | { readonly context: string };

/** Parses `literal{/pointer}literal{$name}`; throws a TypeError on an unbalanced brace. */
export function parseTemplate(template: string): TemplatePart[] {
  const parts: TemplatePart[] = [];
  let text = '';
  let i = 0;
  while (i < template.length) {
    const ch = template[i] as string;
    if (ch === '{' && template[i + 1] === '{') {
      text += '{';
      i += 2;
      continue;
    }
    if (ch === '}' && template[i + 1] === '}') {
      text += '}';
      i += 2;
      continue;
    }
    if (ch === '}') throw new TypeError('unbalanced "}" in template');
    if (ch !== '{') {
      text += ch;
      i += 1;
      continue;
    }
    const end = template.indexOf('}', i + 1);
    if (end < 0) throw new TypeError('unbalanced "{" in template');
    const inner = template.slice(i + 1, end);
    if (text !== '') parts.push({ text });
    text = '';
    if (inner.startsWith('$')) {
      if (!/^\$[a-z_]+$/.test(inner)) throw new TypeError('invalid context placeholder in template');
      parts.push({ context: inner.slice(1) });
    } else if (inner === '' || inner.startsWith('/')) {
      parsePointer(inner);
      parts.push({ pointer: inner });
    } else {
      throw new TypeError('a template placeholder is {/json/pointer} or {$context_name}');
    }
    i = end + 1;
  }
  if (text !== '') parts.push({ text });
  return parts;
}
